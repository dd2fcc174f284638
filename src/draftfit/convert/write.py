"""Write a planned conversion: new safetensors headers, tensor bytes copied verbatim.

Bytes are never decoded: each output shard gets a freshly built header, then every tensor's
byte range is copied from its source file with `os.copy_file_range` (kernel-side, where
available) or a bounded buffer, so memory stays flat whatever the checkpoint size. Everything
is written into a temporary folder beside the output and renamed into place only when
complete; a failure (an exception, a full disk, Ctrl-C) leaves no partial output. The input
is only ever opened for reading.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from draftfit.checkpoint.model import Checkpoint
from draftfit.checkpoint.safetensors import build_header
from draftfit.convert.plan import OutputTensor, Plan
from draftfit.errors import OutputExistsError, UsageError

CHUNK = 8 * 1024 * 1024


def check_output_path(source: Path, out: Path, force: bool) -> None:
    """Refuse an output inside the input, the input itself, or a non-empty folder."""
    src = source.resolve()
    dst = out.resolve()
    if dst == src or src in dst.parents:
        raise UsageError(f"output {out} is inside the input checkpoint {source}; choose another")
    if dst in src.parents:
        raise UsageError(f"output {out} contains the input checkpoint {source}; choose another")
    if dst.exists() and not dst.is_dir():
        raise OutputExistsError(f"output {out} exists and is not a directory")
    if dst.is_dir() and any(dst.iterdir()) and not force:
        raise OutputExistsError(f"output {out} exists and is not empty (use --force to replace it)")


def write_plan(plan: Plan, checkpoint: Checkpoint, out: Path) -> None:
    """Write `plan` to `out` atomically (temporary sibling folder, then rename)."""
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.draftfit-", dir=out.parent))
    try:
        _write_into(plan, checkpoint, tmp)
        _replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace(tmp: Path, out: Path) -> None:
    if not out.exists():
        os.rename(tmp, out)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.draftfit-old-", dir=out.parent))
    os.rmdir(old)
    os.rename(out, old)
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _write_into(plan: Plan, checkpoint: Checkpoint, folder: Path) -> None:
    shards = sorted({t.shard for t in plan.tensors}) or [0]
    names = (
        {0: "model.safetensors"}
        if len(shards) == 1
        else {
            s: f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i, s in enumerate(shards)
        }
    )
    weight_map: dict[str, str] = {}
    total = 0
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
        name = names[shard if len(shards) > 1 else 0]
        total += _write_shard(folder / name, tensors, checkpoint)
        weight_map.update({t.name: name for t in tensors})
    if len(shards) > 1:
        _write_json(
            folder / "model.safetensors.index.json",
            {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))},
        )
    _write_json(folder / "config.json", plan.config)
    for name in plan.copy_files:
        source = checkpoint.root / name
        if source.is_file():
            shutil.copy2(source, folder / name)


def _write_json(path: Path, data: object) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _write_shard(path: Path, tensors: list[OutputTensor], checkpoint: Checkpoint) -> int:
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
        finally:
            for source in handles.values():
                source.close()
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
    _stream(source, start, size, out)


def _stream(source: BinaryIO, start: int, size: int, out: BinaryIO) -> None:
    """Copy `size` bytes from `source` at `start` to the current end of `out`."""
    out.flush()
    copied = 0
    if hasattr(os, "copy_file_range"):
        try:
            out_offset = out.tell()
            while copied < size:
                n = os.copy_file_range(
                    source.fileno(),
                    out.fileno(),
                    min(size - copied, 1 << 30),
                    start + copied,
                    out_offset + copied,
                )
                if n == 0:
                    break
                copied += n
            out.seek(out_offset + copied)
        except OSError:
            out.seek(out_offset + copied)
    if copied < size:
        source.seek(start + copied)
        for chunk in _chunks(source, size - copied):
            out.write(chunk)
            copied += len(chunk)
    if copied != size:
        raise OSError(f"short read: copied {copied} of {size} bytes")


def _chunks(source: BinaryIO, size: int) -> Iterable[bytes]:
    remaining = size
    while remaining:
        chunk = source.read(min(CHUNK, remaining))
        if not chunk:
            return
        remaining -= len(chunk)
        yield chunk
