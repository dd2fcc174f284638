"""Room for a conversion's output, checked before anything is written.

An output takes about what its tensors take in the source, plus new headers and small files.
A sparse source (a file with holes, such as a draft padded to a large vocabulary and never
filled) counts at its written size, `st_blocks * 512`, not at its length: the copy leaves
its holes as holes (:mod:`draftfit.conversion.write`), so the output takes the same room. When
the output's filesystem has less free space than that, `convert` stops with one line,
"needs N GB, M GB free", before writing, rather than filling the disk and failing midway.
"""

from __future__ import annotations

import os
from pathlib import Path

from draftfit.checkpoint.model import Checkpoint
from draftfit.conversion.plan import Plan
from draftfit.errors import UsageError

# Room for what the estimate leaves out: the new headers, config.json, the marker, and the
# filesystem's own blocks for them.
OVERHEAD = 4 * 1024 * 1024


def bytes_needed(plan: Plan, checkpoint: Checkpoint) -> int:
    """The room the output of `plan` takes: for each source file, the bytes copied from it,
    at most what that file has written on disk; new and rearranged tensors and copied
    files in full."""
    copied: dict[str, int] = {}
    needed = OVERHEAD
    for tensor in plan.tensors:
        if tensor.data is not None:
            needed += len(tensor.data)
        elif tensor.column_blocks is not None and tensor.copied_from is not None:
            # rearranged, not copied: counted in full (only its all-zero rows stay holes)
            begin, end = tensor.copied_from.byte_range or (0, 0)
            needed += max(end - begin, 0)
        elif tensor.copied_from is not None and tensor.copied_from.byte_range is not None:
            begin, end = tensor.copied_from.byte_range
            copied[tensor.copied_from.file] = copied.get(tensor.copied_from.file, 0) + max(
                end - begin, 0
            )
    for name, count in copied.items():
        needed += min(count, _written_size(checkpoint, name, count))
    for name in plan.copy_files:
        needed += _written_size(checkpoint, name, 0)
    return needed


def _written_size(checkpoint: Checkpoint, name: str, default: int) -> int:
    """The bytes `name` of the checkpoint has on disk (`st_blocks * 512`; its length where
    the platform does not say), or `default` when it cannot be looked at."""
    try:
        local = checkpoint.access.local_path(name) if checkpoint.access else checkpoint.root / name
        if local is None:
            return default
        info = os.stat(local)
    except OSError:
        return default
    blocks = getattr(info, "st_blocks", None)
    return info.st_size if blocks is None else blocks * 512


def check_free_space(needed: int, folder: Path, shown: Path) -> None:
    """Refuse, with one line, an output `shown` of `needed` bytes in `folder` (or in the
    folder above it that exists yet) when that filesystem has less free space."""
    existing = next((p for p in (folder, *folder.parents) if p.exists()), folder)
    free = free_bytes(existing)
    if needed > free:
        raise UsageError(
            f"not enough free space for {shown}: needs {gigabytes(needed)}, "
            f"{gigabytes(free)} free on that filesystem; nothing written (free space, or "
            "write the output elsewhere)"
        )


def gigabytes(count: int) -> str:
    """`count` bytes in GB (10^9), with the precision a person needs to compare two."""
    value = count / 1e9
    return f"{value:.1f} GB" if value >= 1 else f"{value:.3f} GB"


def free_bytes(folder: Path) -> int:
    """The bytes free to an unprivileged writer on `folder`'s filesystem (what
    `shutil.disk_usage` reports, read with `os.statvfs` where it exists: `shutil` costs a
    few milliseconds of every convert's start)."""
    if hasattr(os, "statvfs"):
        info = os.statvfs(folder)
        return info.f_bavail * info.f_frsize
    import shutil

    return shutil.disk_usage(folder).free
