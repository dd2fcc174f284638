"""Run the value checks' reads: every float tensor of the draft (a sample, or every byte),
and the target's embedding and head rows next to the draft's.

The result, :class:`~draftfit.values.facts.ValueFacts`, is computed once per draft, target
and mode (`diff` and `matrix` check a draft many times) and read by the value rules.
Nothing here raises for a bad checkpoint: what cannot be read or decoded is recorded as
skipped, and the rules report it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint.dtypes import FLOAT_DTYPES
from draftfit.checkpoint.model import Checkpoint, TensorInfo
from draftfit.draft.dialects import EAGLE_OFFICIAL, SPECFORGE, SPECULATORS
from draftfit.errors import DraftfitError
from draftfit.output.progress import Progress, progress_for
from draftfit.values import FULL, MODES
from draftfit.values.decode import FLOAT_DECODABLE
from draftfit.values.facts import Comparison, Coverage, Skipped, TensorFacts, ValueFacts
from draftfit.values.plan import (
    EMBED_SAMPLE_ROWS,
    count_rows,
    full_rows,
    row_bytes,
    rows_and_width,
    sampled_rows,
    split_ranges,
)
from draftfit.values.stats import ComparisonAccumulator, TensorAccumulator, blocks_of
from draftfit.values.target_weights import (
    TargetWeights,
    TargetWeightsMissing,
    open_target_weights,
)

if TYPE_CHECKING:
    from draftfit.draft.description import DraftDescription
    from draftfit.draft.target import Target

EMBED = "embed_tokens.weight"
HEAD = "lm_head.weight"
FC = "fc.weight"
# Producers whose EAGLE-3 training keeps the target's embedding frozen by default.
FREEZING_PRODUCERS = {
    SPECFORGE: "SpecForge loads the target's embedding and freezes it",
    EAGLE_OFFICIAL: "the official EAGLE trainer loads the target's embedding and freezes it",
    SPECULATORS: "speculators freezes the embedding unless `embed_requires_grad` is true",
}


def scan_values(
    checkpoint: Checkpoint, draft: DraftDescription, target: Target | None, mode: str
) -> ValueFacts:
    """The value facts of `checkpoint` (next to `target`), read once per checkpoint, target
    and mode (kept by the checkpoint's memo: `matrix` checks every version with them)."""
    if mode not in MODES:
        raise ValueError(f"unknown value mode {mode!r}")
    key = ("value facts", mode, target.origin if target is not None else None)
    return checkpoint.memo.own(key, lambda: _scan(checkpoint, draft, target, mode))


def _is_remote(checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint's weights are read over the network (no local path for them)."""
    if checkpoint.access is None or not checkpoint.weight_files:
        return False
    try:
        return checkpoint.access.local_path(checkpoint.weight_files[0]) is None
    except OSError:  # a refused name: the reader reports it; nothing is read from it
        return False


def _scan(
    checkpoint: Checkpoint, draft: DraftDescription, target: Target | None, mode: str
) -> ValueFacts:
    facts = ValueFacts(mode)
    facts.serving_dtype, facts.serving_dtype_source = _serving_dtype(draft, target)
    facts.embed_frozen, facts.frozen_evidence = _frozen(draft)
    facts.initializer_range = _initializer_range(draft)
    if checkpoint.weight_format == "bin":
        facts.skipped.append(
            Skipped(
                "value checks",
                checkpoint.weight_files[0] if checkpoint.weight_files else None,
                "value checks read safetensors weights only (PyTorch .bin storages are not "
                "decoded)",
            )
        )
        return facts
    weights = _target_weights(facts, draft, target)
    tensors = [
        (canonical, info) for canonical, info in draft.tensors.items() if info.dtype in FLOAT_DTYPES
    ]
    plans = {canonical: _plan(canonical, info, mode, weights) for canonical, info in tensors}
    total = sum(
        count_rows(plan) * (row_bytes(info.dtype, info.shape) or 0)
        for (canonical, info) in tensors
        if (plan := plans[canonical]) is not None
    )
    remote = _is_remote(checkpoint)
    with progress_for(
        "reading weights" if mode == FULL else "reading sampled rows",
        total,
        enabled=mode == FULL or remote or (weights is not None and weights.remote),
    ) as progress:
        local = checkpoint.access.local_path if checkpoint.access is not None else None
        reader = _Reader(checkpoint.read_range, progress, mode != FULL, local)
        try:
            for canonical, info in tensors:
                plan = plans[canonical]
                if plan is None:
                    facts.skipped.append(_undecodable(draft.raw(canonical), info))
                    continue
                try:
                    facts.tensors[canonical] = _tensor_facts(
                        reader, canonical, draft.raw(canonical), info, plan, draft
                    )
                except OSError as exc:
                    reason = f"cannot read: {exc.strerror or exc}"
                    facts.skipped.append(Skipped("tensor", info.file, reason, info.name))
            if weights is not None:
                _compare_all(facts, draft, reader, weights, mode, progress)
        finally:
            reader.close()
        facts.bytes_read = reader.bytes_read
    return facts


def _plan(
    canonical: str, info: TensorInfo, mode: str, weights: TargetWeights | None
) -> list[tuple[int, int]] | None:
    per_row = row_bytes(info.dtype, info.shape)
    if info.dtype not in FLOAT_DECODABLE or info.byte_range is None or per_row is None:
        return None
    rows, _ = rows_and_width(info.shape)
    if info.byte_range[1] - info.byte_range[0] != rows * per_row:
        return None  # damaged (DF010): the bytes do not hold the declared shape
    if mode == FULL:
        return full_rows(rows, per_row)
    compared = weights is not None and (
        canonical == EMBED
        or (canonical == HEAD and weights.head is not None and weights.head.shape == info.shape)
    )
    if compared:
        return split_ranges(sampled_rows(rows, per_row, EMBED_SAMPLE_ROWS), per_row)
    return split_ranges(sampled_rows(rows, per_row), per_row)


def _undecodable(raw: str, info: TensorInfo) -> Skipped:
    per_row = row_bytes(info.dtype, info.shape)
    rows, _ = rows_and_width(info.shape)
    if info.byte_range is None:
        reason = "its bytes are not stored contiguously"
    elif per_row is not None and info.byte_range[1] - info.byte_range[0] != rows * per_row:
        reason = "its byte span does not match its dtype and shape"
    else:
        reason = f"draftfit cannot decode {info.dtype} values"
    return Skipped("tensor", info.file, reason, raw)


class _Reader:
    """Ranged reads of whole rows, counted, reported to the progress bar, and (in sampled
    mode) remembered, so the embedding rows read for statistics serve the comparison too."""

    def __init__(
        self,
        read: Callable[[str, int, int], bytes],
        progress: Progress,
        cache: bool,
        local: Callable[[str], Path | None] | None = None,
    ) -> None:
        self.read = read
        self.local = local
        self._fds: dict[Path, int] = {}
        self.progress = progress
        self.cache: dict[tuple[str, int, int], bytes] | None = {} if cache else None
        self.bytes_read = 0

    def runs(
        self, info: TensorInfo, plan: list[tuple[int, int]], remember: bool = False
    ) -> Iterator[tuple[int, int, bytes | memoryview, list[int]]]:
        """(first row, end row, stored bytes, rows of each range of `plan` in them): in
        full mode from a local file, consecutive ranges the page cache holds come as one
        run (so the work done per run is done once for several ranges); else one range at
        a time."""
        assert info.byte_range is not None
        path = self.local(info.file) if self.local else None
        if self.cache is None and path is not None:
            per_row = row_bytes(info.dtype, info.shape) or 0
            yield from self._stream(path, info.byte_range[0], per_row, plan)
            return
        for start, end, data in self.raw(info, plan, remember=remember):
            yield start, end, data, [end - start]

    def raw(
        self,
        info: TensorInfo,
        plan: list[tuple[int, int]],
        read: Callable[[str, int, int], bytes] | None = None,
        remember: bool = False,
    ) -> Iterator[tuple[int, int, bytes | memoryview]]:
        """(first row, end row, stored bytes) for each range of `plan`."""
        assert info.byte_range is not None
        per_row = row_bytes(info.dtype, info.shape) or 0
        base = info.byte_range[0]
        path = self.local(info.file) if self.local and read is None else None
        if self.cache is None and path is not None:
            for start, _, window, rows in self._stream(path, base, per_row, plan):
                for view, count in blocks_of(window, rows, per_row):  # each range on its own
                    yield start, start + count, view
                    start += count
            return
        reader = read or self.read
        if path is not None:
            reader = self._pread(path)
        for start, end in plan:
            lo, hi = base + start * per_row, base + end * per_row
            key = (info.file, lo, hi)
            data = self.cache.get(key) if self.cache is not None and read is None else None
            if data is None:
                data = reader(info.file, lo, hi)
                if len(data) != hi - lo:
                    raise OSError(f"short read of {info.file} at {lo}")
                self.bytes_read += len(data)
                self.progress(len(data))
                if self.cache is not None and read is None and remember:
                    self.cache[key] = data
            yield start, end, data

    def _pread(self, path: Path) -> Callable[[str, int, int], bytes]:
        """Ranged reads of a local file through one descriptor, kept open until `close`."""
        fd = self._fds.get(path)
        if fd is None:
            fd = self._fds[path] = os.open(path, os.O_RDONLY)

        def read(_: str, start: int, end: int) -> bytes:
            return os.pread(fd, end - start, start)

        return read

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def _stream(
        self, path: Path, base: int, per_row: int, plan: list[tuple[int, int]]
    ) -> Iterator[tuple[int, int, memoryview, list[int]]]:
        """Full mode, local file: the ranges of `plan` mapped read-only (no copy out of the
        page cache), each map unmapped before the next, so resident memory stays one map:
        (first row, end row, the map's bytes, rows of each range in it). Each view is valid
        until the next one is yielded.

        A window of consecutive ranges (:func:`_windows`) already in the page cache is mapped
        whole, so the work done per map is done once for several ranges; one that is not is
        mapped a range at a time (on this path the disk sets the pace, and small maps keep
        the kernel's reads in order). Before each map, the kernel is asked to read the bytes
        that follow it in the file, so a cold file's reads and the scan overlap."""
        import mmap

        fd = os.open(path, os.O_RDONLY)
        try:
            file_size = os.fstat(fd).st_size
            for window in _windows(plan, per_row):
                first, end = window[0][0], window[-1][1]
                offset, size = base + first * per_row, (end - first) * per_row
                if offset + size > file_size:  # mapping past the end would fault on access
                    raise OSError(f"short read of {path.name} at {offset}")
                whole = len(window) > 1 and _cached(fd, offset, size)
                for part in [window] if whole else [[r] for r in window]:
                    start = base + part[0][0] * per_row
                    length = (part[-1][1] - part[0][0]) * per_row
                    _read_ahead(fd, start + length, READ_AHEAD_BYTES)
                    rows = [b - a for a, b in part]
                    if not length:
                        yield part[0][0], part[-1][1], memoryview(b""), rows
                        continue
                    aligned = start - start % mmap.ALLOCATIONGRANULARITY
                    mapped = mmap.mmap(
                        fd, length + start - aligned, access=mmap.ACCESS_READ, offset=aligned
                    )
                    if hasattr(mmap, "MADV_SEQUENTIAL"):
                        mapped.madvise(mmap.MADV_SEQUENTIAL)
                    view = memoryview(mapped)[start - aligned :]
                    try:
                        self.bytes_read += length
                        self.progress(length)
                        yield part[0][0], part[-1][1], view, rows
                    finally:
                        view.release()
                        with contextlib.suppress(BufferError):  # in use: closed when freed
                            mapped.close()
        finally:
            os.close(fd)


# Before each map, the kernel is asked to read this many bytes of the file beyond it (past
# a tensor's end, the next tensor's: stored after it, and scanned next).
READ_AHEAD_BYTES = 8 * 1024 * 1024
# Up to this many bytes of consecutive ranges already in the page cache are mapped at once:
# one map, unmap and thread hand-off per window instead of per 8 MB range takes a fifth off
# a warm 10 GB scan, while resident memory stays a few tens of MB. (From the disk, maps this
# large made the scan a quarter slower, so a window not in the page cache is mapped a range
# at a time.)
WINDOW_BYTES = 32 * 1024 * 1024


def _cached(fd: int, offset: int, size: int) -> bool:
    """Whether the `size` bytes at `offset` look already read into the page cache: their
    first, middle and last bytes can be read without waiting for the disk
    (`RWF_NOWAIT`). False where the system cannot tell."""
    flag = getattr(os, "RWF_NOWAIT", None)
    if flag is None or size <= 0:
        return False
    probe = bytearray(1)
    for at in (offset, offset + size // 2, offset + size - 1):
        try:
            if os.preadv(fd, [probe], at, flag) != 1:
                return False
        except OSError:  # EAGAIN: not in the page cache; anything else: cannot tell
            return False
    return True


def _windows(plan: list[tuple[int, int]], per_row: int) -> list[list[tuple[int, int]]]:
    """`plan`'s ranges grouped into runs of contiguous ranges of at most WINDOW_BYTES (a
    range larger than that is a window of its own)."""
    windows: list[list[tuple[int, int]]] = []
    for start, end in plan:
        last = windows[-1] if windows else None
        if (
            last is not None
            and last[-1][1] == start
            and (end - last[0][0]) * per_row <= WINDOW_BYTES
        ):
            last.append((start, end))
        else:
            windows.append([(start, end)])
    return windows


def _read_ahead(fd: int, offset: int, size: int) -> None:
    """Ask the kernel to start reading `size` bytes at `offset` into the page cache; it
    returns at once (pages already cached cost nothing). Advice only: nothing where the
    call does not exist, and a read error is reported by the read itself."""
    if hasattr(os, "posix_fadvise"):
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, offset, size, os.POSIX_FADV_WILLNEED)


def _tensor_facts(
    reader: _Reader,
    canonical: str,
    raw: str,
    info: TensorInfo,
    plan: list[tuple[int, int]],
    draft: DraftDescription,
) -> TensorFacts:
    rows, _ = rows_and_width(info.shape)
    facts = TensorFacts(
        canonical, raw, info.file, info.dtype, info.shape, Coverage(count_rows(plan), rows)
    )
    chunk_width = None
    if canonical == FC and draft.num_aux_states and draft.num_aux_states > 1:
        chunk_width = draft.target_hidden_size
    _, width = rows_and_width(info.shape)
    accumulator = TensorAccumulator(facts, chunk_width)
    for start, end, data, blocks in reader.runs(info, plan, remember=canonical in (EMBED, HEAD)):
        accumulator.add(data, end - start, width, blocks)
    return accumulator.finish()


def _target_weights(
    facts: ValueFacts, draft: DraftDescription, target: Target | None
) -> TargetWeights | None:
    head = draft.tensors.get(HEAD)
    need_head = head is not None and bool(head.shape) and head.shape[0] == target_vocab(target)
    if target is None or not (draft.has(EMBED) or need_head):
        return None
    try:
        return open_target_weights(target, need_head=need_head)
    except TargetWeightsMissing as exc:
        reason = str(exc)
    except DraftfitError as exc:
        reason = str(exc)
    what = "embedding comparison" if draft.has(EMBED) else "lm_head comparison"
    facts.skipped.append(Skipped(what, None, f"the target's weights: {reason}"))
    return None


def _compare_all(
    facts: ValueFacts,
    draft: DraftDescription,
    reader: _Reader,
    weights: TargetWeights,
    mode: str,
    progress: Progress,
) -> None:
    pairs = [("embedding", EMBED, weights.embedding), ("lm_head", HEAD, weights.head)]
    for what, canonical, theirs in pairs:
        mine = draft.tensors.get(canonical)
        if mine is None or theirs is None:
            continue
        if what == "lm_head" and (
            mine.shape != theirs.shape or (weights.head_tied and draft.has(EMBED))
        ):
            continue  # a reduced-vocabulary head has no row-for-row counterpart
        problem = _comparable(mine, theirs, weights)
        if problem is not None:
            facts.skipped.append(Skipped(f"{what} comparison", theirs.file, problem, theirs.name))
            continue
        per_row = row_bytes(mine.dtype, mine.shape) or 0
        rows, _ = rows_and_width(mine.shape)
        if mode == FULL and not weights.remote:
            plan = full_rows(rows, per_row)
        else:
            plan = split_ranges(sampled_rows(rows, per_row, EMBED_SAMPLE_ROWS), per_row)
        comparison = Comparison(
            what, draft.raw(canonical), theirs.name, theirs.file, Coverage(count_rows(plan), rows)
        )
        accumulator = ComparisonAccumulator(comparison)
        try:
            _, width = rows_and_width(mine.shape)
            target_rows = reader.raw(theirs, plan, read=weights.access.read_range)
            for (start, end, data), (_, _, other) in zip(
                reader.raw(mine, plan), target_rows, strict=True
            ):
                accumulator.add_raw(
                    start, end - start, width, data, mine.dtype, other, theirs.dtype
                )
        except (OSError, DraftfitError) as exc:
            facts.skipped.append(
                Skipped(f"{what} comparison", theirs.file, f"cannot read: {exc}", theirs.name)
            )
            continue
        result = accumulator.finish()
        if what == "embedding":
            facts.embedding = result
        else:
            facts.head = result
    if reader.cache is not None:
        reader.cache.clear()


def target_vocab(target: Target | None) -> int | None:
    return target.vocab_size if target is not None else None


def _comparable(mine: TensorInfo, theirs: TensorInfo, weights: TargetWeights) -> str | None:
    if len(mine.shape) != 2 or mine.shape != theirs.shape:
        return (
            f"the target's `{theirs.name}` has shape {list(theirs.shape)}, the draft's "
            f"{list(mine.shape)}: no row-for-row comparison"
        )
    if theirs.dtype not in FLOAT_DECODABLE or theirs.byte_range is None:
        return f"draftfit cannot decode the target's {theirs.dtype} `{theirs.name}`"
    scale = weights.quantized(theirs)
    if scale is not None:
        return (
            f"the target's `{theirs.name}` is block-quantized (scales in `{scale}`); its rows "
            "are not compared"
        )
    return None


def _serving_dtype(draft: DraftDescription, target: Target | None) -> tuple[str | None, str | None]:
    """The dtype the engine serves in: the target's declared dtype, else the draft's."""
    sources = []
    if target is not None:
        sources += [(target.text_config, "the target"), (target.config, "the target")]
    sources.append((draft.config, "the draft"))
    for config, who in sources:
        for key in ("torch_dtype", "dtype"):
            value = config.get(key)
            if isinstance(value, str):
                return value, f"{who}'s `{key}`"
    return None, None


def _initializer_range(draft: DraftDescription) -> float | None:
    """The config's `initializer_range` (the std of HF's weight initialiser), if usable.
    No engine reads it, so it is not in the config schema: a value of another type is
    simply not used."""
    for config in (draft.config, draft.config.get("transformer_layer_config")):
        value = config.get("initializer_range") if isinstance(config, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def _frozen(draft: DraftDescription) -> tuple[bool | None, str]:
    """Whether the producer froze the embedding during training, and why draftfit thinks so."""
    value = draft.config.get("embed_requires_grad")
    if isinstance(value, bool):
        return (not value), f"config.json says `embed_requires_grad: {str(value).lower()}`"
    reason = FREEZING_PRODUCERS.get(draft.dialect.name)
    if reason is not None:
        return True, reason
    return None, "draftfit cannot tell whether the producer froze the embedding"
