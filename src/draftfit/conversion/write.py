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

Every byte range written is recorded (:class:`Region`). Bytes that pass through Python (the
headers, rewritten tensors, `fc`'s input blocks moved into ascending aux order a few rows at
a time, and copies where the kernel cannot copy) are hashed as they are written and read
back against that hash before the output is swapped into place; bytes the kernel copied
(and holes kept as holes) are not read back unless `verify` asks for a full re-read, which
compares them with the source.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

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
from draftfit.output.progress import Progress, progress_for
from draftfit.records import field, frozen, record
from draftfit.version import __version__

if TYPE_CHECKING:
    from typing import BinaryIO

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


class OutputMismatchError(DraftfitError):
    """A written byte range reads back other than it was written (or than its source)."""


@frozen
class Region:
    """One byte range of an output file and how it got there.

    Attributes:
        file: the output file's name.
        offset: where the range starts in it.
        size: its length.
        digest: the hash of the bytes as Python wrote them; None for a kernel copy.
        copied_from: (file, offset) the bytes were copied from; None for new bytes.
    """

    file: str
    offset: int
    size: int
    digest: bytes | None = None
    copied_from: tuple[Path, int] | None = None


def _hasher() -> hashlib.blake2b:
    return hashlib.blake2b(digest_size=16)


@record
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
    names += list(plan.documents)
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
    verify: bool = False,
    notify: Callable[[str], None] | None = None,
    before_copy: Callable[[], None] | None = None,
    before_swap: Callable[[], None] | None = None,
) -> WriteResult:
    """Write `plan` to `out` atomically: a marked temporary sibling, then a swap.

    Leftover temporary siblings of earlier, killed converts to `out` are removed first, each
    told to `notify` (one line) as it goes. `force` allows replacing a previous draftfit
    output (never anything else). Before the swap, the bytes Python wrote are read back
    against their hashes; `verify` also reads back every kernel-copied range and compares it
    with its source. `before_copy` runs once the temporary folder is marked, as the copying
    starts; `before_swap` once everything is written and read back: when it raises, the
    temporary folder is removed and the output left as it was.
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
        if before_copy is not None:
            before_copy()
        regions = _write_into(plan, checkpoint, tmp, shown)
        with _naming(shown):
            verify_regions(tmp, regions, full=verify)
        if before_swap is not None:
            before_swap()
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


def _write_into(plan: Plan, checkpoint: Checkpoint, folder: Path, shown: Path) -> list[Region]:
    """Write every output file into `folder`; returns the weight files' byte ranges."""
    names = output_files(plan)
    shards = sorted(names)
    weight_map: dict[str, str] = {}
    regions: list[Region] = []
    total = 0
    planned = sum(_byte_size(t) for t in plan.tensors)
    with progress_for(f"writing {shown}", planned) as advance:
        for shard in shards:
            tensors = [t for t in plan.tensors if t.shard == shard]
            # Keep the source layout (sequential reads); new tensors go last.
            tensors.sort(
                key=lambda t: (
                    t.copied_from is None,
                    t.copied_from.file if t.copied_from else "",
                    t.copied_from.byte_range[0]
                    if t.copied_from and t.copied_from.byte_range
                    else 0,
                )
            )
            name = names[shard]
            with _naming(shown / name):
                total += _write_shard(folder / name, tensors, checkpoint, advance, regions)
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
    for name, document in plan.documents.items():
        with _naming(shown / name):
            _write_json(folder / name, document)
    for name in plan.copy_files:
        if name in (MARKER, MARKER_PART):
            continue
        source = checkpoint.root / name
        if source.is_file():
            with _naming(shown / name):
                import shutil  # here: most drafts have no other files to copy

                # A new file (mode 0o666 less the umask, like `cp`), not the source's mode.
                shutil.copyfile(source, folder / name)
    return regions


def _byte_size(tensor: OutputTensor) -> int:
    """The bytes `tensor` takes in the output (for the progress bar only)."""
    if tensor.data is not None:
        return len(tensor.data)
    if tensor.copied_from is not None and tensor.copied_from.byte_range is not None:
        begin, end = tensor.copied_from.byte_range
        return max(end - begin, 0)
    return 0


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _write_shard(
    path: Path,
    tensors: list[OutputTensor],
    checkpoint: Checkpoint,
    advance: Progress,
    regions: list[Region],
) -> int:
    prefix, layout = build_header(((t.name, t.dtype, t.shape) for t in tensors), {"format": "pt"})
    data_bytes = 0
    with path.open("wb") as handle:
        handle.write(prefix)
        regions.append(Region(path.name, 0, len(prefix), _digest_of(prefix)))
        handles: dict[str, BinaryIO] = {}
        try:
            for tensor, (_, begin, end) in zip(tensors, layout, strict=True):
                offset = len(prefix) + begin
                if tensor.data is not None:
                    handle.write(tensor.data)
                    digest = _digest_of(tensor.data)
                    regions.append(Region(path.name, offset, len(tensor.data), digest))
                elif tensor.column_blocks is not None:
                    regions.append(
                        _copy_blocks(checkpoint, tensor, handle, end - begin, handles, path.name)
                    )
                else:
                    regions += _copy_range(
                        checkpoint, tensor, handle, end - begin, handles, path.name, offset
                    )
                data_bytes += end - begin
                advance(end - begin)
        finally:
            for source in handles.values():
                source.close()
        handle.flush()
        if os.fstat(handle.fileno()).st_size != handle.tell():
            handle.truncate(handle.tell())  # the length, when the last bytes are a hole
        os.fsync(handle.fileno())
    return data_bytes


def _digest_of(data: bytes) -> bytes:
    hasher = _hasher()
    hasher.update(data)
    return hasher.digest()


def _copy_range(
    checkpoint: Checkpoint,
    tensor: OutputTensor,
    out: BinaryIO,
    size: int,
    handles: dict[str, BinaryIO],
    name: str,
    offset: int,
) -> list[Region]:
    """Copy `tensor`'s source bytes to the end of `out` (output file `name`, at `offset`);
    returns the ranges written, the kernel's and Python's apart."""
    info = tensor.copied_from
    if info is None or info.byte_range is None:
        raise UsageError(
            f"`{tensor.name}` has no contiguous bytes to copy (a non-contiguous "
            "tensor in a .bin file); re-save the source with safetensors"
        )
    start, end = info.byte_range
    if end - start != size:
        raise UsageError(f"`{tensor.name}`: {end - start} source bytes for a {size}-byte tensor")
    local, source = _source(checkpoint, info.file, handles)
    copied, regions = _copy_keeping_holes(local, source, start, size, out, name, offset)
    if copied != size:
        raise InputChangedError(
            f"{local} ended after {copied} of the {size} bytes of `{info.name}` its header "
            "promises (was it changed while converting?); run `draftfit check` on the input"
        )
    return regions


def _source(
    checkpoint: Checkpoint, file: str, handles: dict[str, BinaryIO]
) -> tuple[Path, BinaryIO]:
    """The local path of the checkpoint's `file` and its open handle, opened once per
    conversion (kept in `handles`)."""
    local = checkpoint.access.local_path(file) if checkpoint.access else checkpoint.root / file
    if local is None:
        raise UsageError("converting needs a local copy of the checkpoint")
    source = handles.get(file)
    if source is None:
        source = handles[file] = local.open("rb")
    return local, source


def _copy_blocks(
    checkpoint: Checkpoint,
    tensor: OutputTensor,
    out: BinaryIO,
    size: int,
    handles: dict[str, BinaryIO],
    name: str,
) -> Region:
    """Copy `tensor`'s source bytes to the end of `out` (output file `name`) with the blocks
    of its last dimension in the order `tensor.column_blocks` gives, a few rows at a time
    (at most :data:`CHUNK` bytes in memory, whatever the tensor's size); rows that are all
    zero bytes are left as a hole (a sparse source stays sparse). Returns the range written,
    with the hash of its bytes, read back before the output is put in place."""
    info, order = tensor.copied_from, tensor.column_blocks
    assert order is not None
    if info is None or info.byte_range is None:
        raise UsageError(f"`{tensor.name}` has no contiguous bytes to rearrange")
    start, end = info.byte_range
    rows = 1
    for dim in tensor.shape[:-1]:
        rows *= dim
    row = size // rows if rows else 0
    block = row // len(order) if order else 0
    if end - start != size or rows * row != size or block * len(order) != row:
        raise UsageError(
            f"`{tensor.name}`: {end - start} source bytes do not split into {rows} rows of "
            f"{len(order)} blocks"
        )
    local, source = _source(checkpoint, info.file, handles)
    out.flush()
    offset = out.tell()
    hasher = _hasher()
    per_chunk = max(1, CHUNK // row) if row else 1
    source.seek(start)
    for first in range(0, rows, per_chunk):
        count = min(per_chunk, rows - first)
        data = source.read(count * row)
        if len(data) != count * row:
            raise InputChangedError(
                f"{local} ended inside the bytes of `{info.name}` its header promises (was it "
                "changed while converting?); run `draftfit check` on the input"
            )
        view = memoryview(data)
        moved = b"".join(
            view[r * row + b * block : r * row + (b + 1) * block]
            for r in range(count)
            for b in order
        )
        hasher.update(moved)
        if moved.count(0) == len(moved):
            out.seek(len(moved), os.SEEK_CUR)  # a hole reads back as the same zeros
        else:
            out.write(moved)
    return Region(name, offset, size, hasher.digest())


def _copy_keeping_holes(
    local: Path, source: BinaryIO, start: int, size: int, out: BinaryIO, name: str, offset: int
) -> tuple[int, list[Region]]:
    """Copy `size` bytes of `source` from `start` to the end of `out` (output file `name`, at
    `offset`) as :func:`_stream_regions` does, but only the parts that hold data: a hole in
    the source (a sparse file) stays a hole in the output, which then takes the room the
    source takes, not its length (what the free-space check counts). Returns how many bytes
    were copied or skipped as holes, and the ranges written (a hole is recorded like a
    kernel copy: compared with its source only on a full re-read)."""
    segments = _data_segments(local, start, start + size)
    if segments is None:
        return _stream_regions(source, start, size, out, name, offset, local)
    out.flush()
    base = out.tell()
    regions: list[Region] = []
    position = start
    for begin, end in segments:
        if begin > position:
            regions.append(
                Region(name, offset + position - start, begin - position, None, (local, position))
            )
        out.seek(base + begin - start)
        copied, written = _stream_regions(
            source, begin, end - begin, out, name, offset + begin - start, local
        )
        regions += written
        if copied != end - begin:
            return begin - start + copied, regions
        position = end
    if position < start + size:
        regions.append(
            Region(
                name, offset + position - start, start + size - position, None, (local, position)
            )
        )
    out.seek(base + size)  # a hole at the end: the shard's final length makes it
    return size, regions


def _stream_regions(
    source: BinaryIO, start: int, size: int, out: BinaryIO, name: str, offset: int, local: Path
) -> tuple[int, list[Region]]:
    """:func:`_stream` for one range, with the regions it wrote: the kernel's part (read back
    only on a full re-read) and Python's part with the hash taken while writing it."""
    hasher = _hasher()
    kernel, copied = _stream(source, start, size, out, hasher)
    regions = [Region(name, offset, kernel, None, (local, start))] if kernel else []
    if copied > kernel:
        regions.append(
            Region(name, offset + kernel, copied - kernel, hasher.digest(), (local, start + kernel))
        )
    return copied, regions


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


def _stream(
    source: BinaryIO, start: int, size: int, out: BinaryIO, hasher: hashlib.blake2b
) -> tuple[int, int]:
    """Copy `size` bytes from `source` at `start` to the current end of `out`: by the kernel
    where it can, else through a bounded buffer, hashed into `hasher`. Returns the bytes the
    kernel copied and the bytes copied in all (fewer than `size` only when `source` ends
    early)."""
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
                _start_writeback(out.fileno(), out_offset + copied, n)
                copied += n
            out.seek(out_offset + copied)
        except OSError as exc:
            if exc.errno not in _NO_KERNEL_COPY:
                raise
            out.seek(out_offset + copied)
    kernel = copied
    if copied < size:
        source.seek(start + copied)
        for chunk in _chunks(source, size - copied):
            out.write(chunk)
            hasher.update(chunk)
            copied += len(chunk)
    return kernel, copied


def _start_writeback(fd: int, offset: int, size: int) -> None:
    """Have the kernel start writing a just-copied range to the disk now, while the next one
    is copied, rather than all at the closing fsync (Linux starts the writeback of dirty
    pages on POSIX_FADV_DONTNEED; it drops only pages that are already clean)."""
    if hasattr(os, "posix_fadvise"):
        with contextlib.suppress(OSError):
            os.posix_fadvise(fd, offset, size, os.POSIX_FADV_DONTNEED)


def verify_regions(folder: Path, regions: Iterable[Region], full: bool = False) -> None:
    """Read back what was written to `folder`: each range Python wrote against the hash taken
    while writing it, and with `full` each kernel-copied range against its source (an
    OutputMismatchError names the first that differs)."""
    by_file: dict[str, list[Region]] = {}
    for region in regions:
        if region.digest is not None or full:
            by_file.setdefault(region.file, []).append(region)
    for name, wanted in by_file.items():
        with (folder / name).open("rb") as handle:
            for region in wanted:
                got = _digest_range(handle, region.offset, region.size)
                if region.digest is not None:
                    expected, against = region.digest, "as they were written"
                else:
                    assert region.copied_from is not None
                    source_path, source_offset = region.copied_from
                    with source_path.open("rb") as source:
                        expected = _digest_range(source, source_offset, region.size)
                    against = f"as bytes {source_offset}- of {source_path}"
                if got != expected:
                    raise OutputMismatchError(
                        f"{name}: bytes {region.offset}-{region.offset + region.size} do not "
                        f"read back {against}; nothing written (was the input changed while "
                        "converting, or is the disk failing?)"
                    )


def _digest_range(handle: BinaryIO, offset: int, size: int) -> bytes:
    hasher = _hasher()
    handle.seek(offset)
    for chunk in _chunks(handle, size):
        hasher.update(chunk)
    return hasher.digest()


def _chunks(source: BinaryIO, size: int) -> Iterable[bytes]:
    remaining = size
    while remaining:
        chunk = source.read(min(CHUNK, remaining))
        if not chunk:
            return
        remaining -= len(chunk)
        yield chunk
