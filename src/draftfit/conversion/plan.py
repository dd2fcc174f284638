"""A conversion plan: every edit, with its safety, before anything is written.

Like a linter's fixes, each edit is *safe* (meaning kept exactly: renames between known
conventions, restructuring a config, moving aux ids with their counting shifted, deriving
`t2d` from `d2t`, listing the aux ids ascending with `fc`'s input blocks moved to match),
*unsafe* (changes values or guesses: assuming default aux layers, dropping a trained tensor
the engine cannot use; applied only with `--unsafe-fixes`) or *display-only* (needs a
human: a hidden size that does not match the target means retraining). The plan also lists
the output tensors and where each one's bytes come from, so the writer can copy them
verbatim (or, for `fc`'s input blocks, in another order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.checkpoint.model import TensorInfo
from draftfit.records import field, frozen, record

if TYPE_CHECKING:
    from typing import Any

SAFE = "safe"
UNSAFE = "unsafe"
DISPLAY_ONLY = "display-only"


@frozen
class Edit:
    """One change the conversion makes (or would make)."""

    # set-config, delete-config, rename-tensor, add-tensor, drop-tensor, move-aux-ids,
    # reorder-aux-ids
    action: str
    target: str  # JSON pointer or tensor name
    description: str
    safety: str = SAFE

    def to_dict(self, applied: bool) -> dict[str, Any]:
        return {
            "action": self.action,
            "target": self.target,
            "description": self.description,
            "safety": self.safety,
            "applied": applied,
        }


@record
class OutputTensor:
    """A tensor of the output: copied verbatim from the draft's tensor `copied_from`, or new
    bytes in `data`.

    `column_blocks`, when set, rearranges the copy: the last dimension is cut into that many
    equal blocks, and output block `j` is the source's block `column_blocks[j]`, row by row
    (`fc.weight`'s input columns, one block per aux layer, moved into ascending layer
    order); the writer streams it through a bounded buffer."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    copied_from: TensorInfo | None = None
    data: bytes | None = None
    shard: int = 0
    column_blocks: tuple[int, ...] | None = None


@record
class Plan:
    """Everything a conversion will write."""

    convention: str
    origin: str
    config: dict[str, Any]
    tensors: list[OutputTensor]
    edits: list[Edit] = field(default_factory=list)
    copy_files: list[str] = field(default_factory=list)
    shards: int = 1
    unsafe_allowed: bool = False
    # JSON files other than config.json written with new content (by name), not copied.
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)

    def applied(self, edit: Edit) -> bool:
        return edit.safety == SAFE or (edit.safety == UNSAFE and self.unsafe_allowed)

    @property
    def pending(self) -> list[Edit]:
        """Edits that were not applied (unsafe without --unsafe-fixes, or display-only)."""
        return [e for e in self.edits if not self.applied(e)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "convention": self.convention,
            "source": self.origin,
            "edits": [e.to_dict(self.applied(e)) for e in self.edits],
            "tensors": [
                {
                    "name": t.name,
                    "dtype": t.dtype,
                    "shape": list(t.shape),
                    "from": t.copied_from.name if t.copied_from is not None else None,
                    "derived": t.copied_from is None,
                    "shard": t.shard,
                    "column_blocks": list(t.column_blocks) if t.column_blocks else None,
                }
                for t in self.tensors
            ],
            "copy_files": list(self.copy_files),
            "config": self.config,
            **({"documents": dict(self.documents)} if self.documents else {}),
            "summary": {
                "safe": sum(1 for e in self.edits if e.safety == SAFE),
                "unsafe": sum(1 for e in self.edits if e.safety == UNSAFE),
                "display_only": sum(1 for e in self.edits if e.safety == DISPLAY_ONLY),
                "not_applied": len(self.pending),
            },
        }
