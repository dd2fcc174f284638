"""The checkpoint a conversion plan *would* write, in memory, so it can be checked.

Recipes use it to say what an engine version does with the draft after the `draftfit
convert` step they recommend, without writing anything: renamed tensors keep pointing at the
input's bytes, derived tensors (a `d2t` built from `t2d`) are served from memory. A tensor
whose column blocks the plan moves (`fc.weight` put in ascending aux order) keeps pointing
at the input's bytes in the input's order: its header is the output's, and no check reads
an `fc`'s values (a recipe carries the input's value findings over).
"""

from __future__ import annotations

from pathlib import Path

from draftfit.checkpoint.model import Checkpoint, TensorInfo
from draftfit.conversion.plan import Plan
from draftfit.records import replace

_MEMORY = "<planned>"


class _PlannedAccess:
    """Reads planned bytes from memory and everything else from the input checkpoint."""

    # Headers are read exactly, like a local checkpoint's (the bytes are at hand).
    prefetch = 8

    def __init__(self, base: Checkpoint, blobs: dict[str, bytes]) -> None:
        self.base = base
        self.blobs = blobs

    def size(self, rel: str) -> int:
        if rel in self.blobs:
            return len(self.blobs[rel])
        return (
            self.base.access.size(rel)
            if self.base.access
            else (self.base.root / rel).stat().st_size
        )

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        if rel in self.blobs:
            return self.blobs[rel][start:end]
        return self.base.read_range(rel, start, end)

    def read_all(self, rel: str) -> bytes:
        return self.read_range(rel, 0, self.size(rel))

    def local_path(self, rel: str) -> Path | None:
        return None if rel in self.blobs else self.base.root / rel


def preview_checkpoint(plan: Plan, base: Checkpoint, origin: str | None = None) -> Checkpoint:
    """The converted checkpoint as draftfit would read it back, without writing it;
    `origin`: the path it will be written to, where known (a launch that names that path
    then names this draft)."""
    tensors: dict[str, TensorInfo] = {}
    blobs: dict[str, bytes] = {}
    for out in plan.tensors:
        if out.copied_from is not None:
            tensors[out.name] = replace(out.copied_from, name=out.name)
        elif out.data is not None:
            rel = f"{_MEMORY}/{out.name}"
            blobs[rel] = out.data
            tensors[out.name] = TensorInfo(out.name, out.dtype, out.shape, rel, (0, len(out.data)))
    return Checkpoint(
        root=base.root,
        origin=origin or f"{base.origin} (after `draftfit convert --to {plan.convention}`)",
        config=plan.config,
        tensors=tensors,
        weight_format=base.weight_format,
        weight_files=list(base.weight_files),
        files=list(base.files),
        access=_PlannedAccess(base, blobs),
        memo=base.memo.child(blobs),
        planned=True,
    )
