"""Write a planned conversion: new safetensors headers, tensor bytes copied verbatim.

Bytes are never decoded: each output shard gets a freshly built header, then every tensor's
byte range is copied from its source file with `os.copy_file_range` (kernel-side, where
available) or a bounded buffer, so memory stays flat whatever the checkpoint size; a hole in
a sparse source stays a hole in the output (the free space checked before writing,
:mod:`draftfit.conversion.space`, counts on it). Everything is written into a temporary
folder beside the output, marked as draftfit's, and swapped into place only when complete
(:mod:`draftfit.conversion.output`); a failure (an exception, a full disk, a signal) leaves
no partial output and the previous one intact. The input is only ever opened for reading.
An OS error names the output path it concerns.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from draftfit.checkpoint.model import Checkpoint
from draftfit.checkpoint.safetensors import build_header
from draftfit.conversion.output import (
    COMPLETE,
    MARKER,
    MARKER_PART,
    Marker,
    make_parent,
    make_temp_folder,
    real_output_path,
    remove_leftovers,
    remove_owned,
    signals_deferred,
    swap_into_place,
    sync_folder,
    write_marker,
)
from draftfit.conversion.plan import OutputTensor, Plan
from draftfit.conversion.space import bytes_needed, check_free_space
from draftfit.errors import DraftfitError, UsageError
from draftfit.progress import Progress, progress_for
from draftfit.version import __version__

CHUNK = 8 * 1024 * 1024
# Bytes per copy_file_range call: a signal is acted on between calls, so this bounds how
# long Ctrl-C or SIGTERM waits.
KERNEL_CHUNK = 64 * 1024 * 1024
# Data parts of one tensor's bytes kept as such, holes between them left as holes; a
# source cut into more parts than this is copied whole.
MAX_SEGMENTS = 4096
# copy_file_range errors that only mean "not here": fall back to read/write.
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF}


class InputChangedError(DraftfitError):
    """A source file no longer holds the bytes its header promised (changed while copying)."""


@dataclass
class WriteResult:
    """Where the output went, and the leftovers of interrupted converts removed first."""

    out: Path
    removed_leftovers: list[Path] = field(default_factory=list)


def output_files(plan: Plan) -> dict[int, str]:
    """The weight file name of each shard of `plan`."""
    shards = sorted({t.shard for t in plan.tensors}) or [0]
    if len(shards) == 1:
        return {shards[0]: "model.safetensors"}
    return {s: f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i, s in enumerate(shards)}


def planned_names(plan: Plan) -> list[str]:
    """Every file the output of `plan` will hold (besides the marker)."""
    names = list(output_files(plan).values())
    if len(names) > 1:
        names.append("model.safetensors.index.json")
    names.append("config.json")
    names += [n for n in plan.copy_files if n not in (MARKER, MARKER_PART)]
    return sorted(set(names))


def plan_digest(plan: Plan) -> str:
    """sha256 of the plan as JSON: tells two outputs of different plans apart."""
    import hashlib  # here, not at import: only a conversion needs it

    text = json.dumps(plan.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_plan(
    plan: Plan,
    checkpoint: Checkpoint,
    out: Path,
    force: bool = False,
    engines: Iterable[str] = (),
    notify: Callable[[str], None] | None = None,
) -> WriteResult:
    """Write `plan` to `out` atomically: a marked temporary sibling, then a swap.

    Leftover temporary siblings of earlier, killed converts to `out` are removed first, each
    told to `notify` (one line) as it goes. `force` allows replacing a previous draftfit
    output (never anything else).
    """
    shown = out
    out = real_output_path(out)
    with _naming(out.parent):
        removed = remove_leftovers(out)
    for leftover in removed:
        if notify is not None:
            notify(f"removed {leftover} (left by an interrupted convert)")
    with _naming(out.parent):
        check_free_space(bytes_needed(plan, checkpoint), out.parent, shown)
        make_parent(out.parent)
    names = planned_names(plan)
    marker = Marker(
        source=str(checkpoint.root),
        convention=plan.convention,
        engines=list(engines),
        plan_sha256=plan_digest(plan),
        files=names,
        draftfit_version=__version__,
    )
    tmp: Path | None = None
    try:
        with signals_deferred():  # the temporary folder is never without its marker
            with _naming(out.parent):
                tmp = make_temp_folder(out)
            with _naming(shown / MARKER):
                write_marker(tmp, marker)
        _write_into(plan, checkpoint, tmp, shown)
        marker.state = COMPLETE
        with _naming(shown / MARKER):
            write_marker(tmp, marker)
            sync_folder(tmp)
        with signals_deferred(), _naming(shown):
            previous = swap_into_place(tmp, out, force)
            sync_folder(out.parent)
    except BaseException:
        if tmp is not None:
            with signals_deferred():
                remove_owned(tmp, [*names, MARKER, MARKER_PART])
        raise
    if previous is not None:
        old = Marker.read(previous)
        with signals_deferred():
            if old is not None:
                remove_owned(previous, old.owned())
            else:
                with contextlib.suppress(OSError):
                    previous.rmdir()  # the empty folder that was replaced
    return WriteResult(out, removed)


@contextlib.contextmanager
def _naming(path: Path) -> Iterator[None]:
    """Give an OS error raised inside the block the user's path, when it names none or a
    temporary one (the message then says which output file could not be written)."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, DraftfitError) or exc.errno is None:
            raise
        filename = str(exc.filename) if exc.filename is not None else ""
        if filename and ".draftfit-" not in filename:
            raise
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def _write_into(plan: Plan, checkpoint: Checkpoint, folder: Path, shown: Path) -> None:
    names = output_files(plan)
    shards = sorted(names)
    weight_map: dict[str, str] = {}
    total = 0
    planned = sum(_byte_size(t) for t in plan.tensors)
    with progress_for(f"writing {shown}", planned) as advance:
        for shard in shards:
            tensors = [t for t in plan.tensors if t.shard == shard]
            # Keep the source layout (sequential reads); new tensors go last.
            tensors.sort(
                key=lambda t: (
                    t.source is None,
                    t.source.file if t.source else "",
                    t.source.byte_range[0] if t.source and t.source.byte_range else 0,
                )
            )
            name = names[shard]
            with _naming(shown / name):
                total += _write_shard(folder / name, tensors, checkpoint, advance)
            weight_map.update({t.name: name for t in tensors})
    if len(shards) > 1:
        index = "model.safetensors.index.json"
        with _naming(shown / index):
            _write_json(
                folder / index,
                {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))},
            )
    with _naming(shown / "config.json"):
        _write_json(folder / "config.json", plan.config)
    for name in plan.copy_files:
        if name in (MARKER, MARKER_PART):
            continue
        source = checkpoint.root / name
        if source.is_file():
            with _naming(shown / name):
                # A new file (mode 0o666 less the umask, like `cp`), not the source's mode.
                shutil.copyfile(source, folder / name)


def _byte_size(tensor: OutputTensor) -> int:
    """The bytes `tensor` takes in the output (for the progress bar only)."""
    if tensor.data is not None:
        return len(tensor.data)
    if tensor.source is not None and tensor.source.byte_range is not None:
        begin, end = tensor.source.byte_range
        return max(end - begin, 0)
    return 0


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _write_shard(
    path: Path, tensors: list[OutputTensor], checkpoint: Checkpoint, advance: Progress
) -> int:
    prefix, layout = build_header(((t.name, t.dtype, t.shape) for t in tensors), {"format": "pt"})
    data_bytes = 0
    with path.open("wb") as handle:
        handle.write(prefix)
        handles: dict[str, BinaryIO] = {}
        try:
            for tensor, (_, begin, end) in zip(tensors, layout, strict=True):
                if tensor.data is not None:
                    handle.write(tensor.data)
                else:
                    _copy_range(checkpoint, tensor, handle, end - begin, handles)
                data_bytes += end - begin
                advance(end - begin)
        finally:
            for source in handles.values():
                source.close()
        handle.truncate(handle.tell())  # the length, when the last bytes are a hole
        handle.flush()
        os.fsync(handle.fileno())
    return data_bytes


def _copy_range(
    checkpoint: Checkpoint,
    tensor: OutputTensor,
    out: BinaryIO,
    size: int,
    handles: dict[str, BinaryIO],
) -> None:
    info = tensor.source
    if info is None or info.byte_range is None:
        raise UsageError(
            f"`{tensor.name}` has no contiguous bytes to copy (a non-contiguous "
            "tensor in a .bin file); re-save the source with safetensors"
        )
    start, end = info.byte_range
    if end - start != size:
        raise UsageError(f"`{tensor.name}`: {end - start} source bytes for a {size}-byte tensor")
    local = (
        checkpoint.access.local_path(info.file)
        if checkpoint.access
        else (checkpoint.root / info.file)
    )
    if local is None:
        raise UsageError("converting needs a local copy of the checkpoint")
    source = handles.get(info.file)
    if source is None:
        source = handles[info.file] = local.open("rb")
    copied = _copy_keeping_holes(local, source, start, size, out)
    if copied != size:
        raise InputChangedError(
            f"{local} ended after {copied} of the {size} bytes of `{info.name}` its header "
            "promises (was it changed while converting?); run `draftfit check` on the input"
        )


def _copy_keeping_holes(local: Path, source: BinaryIO, start: int, size: int, out: BinaryIO) -> int:
    """Copy `size` bytes of `source` from `start` to the end of `out` as :func:`_stream`
    does, but only the parts that hold data: a hole in the source (a sparse file) stays a
    hole in the output, which then takes the room the source takes, not its length (what
    the free-space check counts). Returns how many bytes were copied or skipped as holes."""
    segments = _data_segments(local, start, start + size)
    if segments is None:
        return _stream(source, start, size, out)
    out.flush()
    base = out.tell()
    for begin, end in segments:
        out.seek(base + begin - start)
        copied = _stream(source, begin, end - begin, out)
        if copied != end - begin:
            return begin - start + copied
    out.seek(base + size)  # a hole at the end: the shard's final length makes it
    return size


def _data_segments(local: Path, start: int, end: int) -> list[tuple[int, int]] | None:
    """The `[begin, end)` parts of `local` between `start` and `end` that hold data (holes
    left out), found with SEEK_DATA / SEEK_HOLE on a separate descriptor; None where that
    is not available, the file is shorter than `end`, or it has more parts than is worth
    listing (then everything is copied)."""
    if not hasattr(os, "SEEK_DATA") or end <= start:
        return None
    try:
        fd = os.open(local, os.O_RDONLY)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_size < end:
            return None  # ends early: the plain copy reports it
        segments: list[tuple[int, int]] = []
        position = start
        while position < end and len(segments) < MAX_SEGMENTS:
            try:
                begin = os.lseek(fd, position, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # only a hole is left
                    break
                return None
            if begin >= end:
                break
            stop = min(os.lseek(fd, begin, os.SEEK_HOLE), end)
            segments.append((begin, stop))
            position = stop
        return segments if position >= end or len(segments) < MAX_SEGMENTS else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _stream(source: BinaryIO, start: int, size: int, out: BinaryIO) -> int:
    """Copy `size` bytes from `source` at `start` to the current end of `out`; returns how
    many were copied (fewer only when `source` ends early)."""
    out.flush()
    copied = 0
    if hasattr(os, "copy_file_range"):
        try:
            out_offset = out.tell()
            while copied < size:
                n = os.copy_file_range(
                    source.fileno(),
                    out.fileno(),
                    min(size - copied, KERNEL_CHUNK),
                    start + copied,
                    out_offset + copied,
                )
                if n == 0:
                    break
                copied += n
            out.seek(out_offset + copied)
        except OSError as exc:
            if exc.errno not in _NO_KERNEL_COPY:
                raise
            out.seek(out_offset + copied)
    if copied < size:
        source.seek(start + copied)
        for chunk in _chunks(source, size - copied):
            out.write(chunk)
            copied += len(chunk)
    return copied


def _chunks(source: BinaryIO, size: int) -> Iterable[bytes]:
    remaining = size
    while remaining:
        chunk = source.read(min(CHUNK, remaining))
        if not chunk:
            return
        remaining -= len(chunk)
        yield chunk
