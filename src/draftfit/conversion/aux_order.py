"""Aux ids written out of order: list them ascending, and move `fc`'s input blocks with them.

Every engine captures the aux hidden states inside the target's layer loop and feeds `fc`
the concatenation in ascending layer order, whatever order the ids are written in (the
engine data's `aux_concat_order`; rule DF310). `fc` maps `concat(h_a, h_b, h_c)` (N blocks
of the target's hidden size, one per aux layer, in the order of the written ids) to the
draft's hidden size, so a draft trained with the states in the written order is served
with its input blocks permuted. The same draft, losslessly rearranged, lists the ids
ascending and has `fc.weight`'s input-column blocks (and, where the draft has them, the
blocks of `input_norm.weight` over the concatenation and the per-state `fc_norm.{k}`
norms) in that order: the engine then computes exactly what the draft was trained to.

Only a plain `fc.weight` (BF16, F16 or F32, `[hidden, N × target hidden]`, stored
contiguously: :func:`draftfit.draft.tensor_names.fc_blocks_problem`) is rearranged this way:
a quantized `fc` (packed int4, FP8 with block scales, ...) keeps its columns in packed words
or shares scales across them, and is left as it is, with the ids as written (DF310 then
still applies).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from draftfit.conversion.plan import OutputTensor
from draftfit.records import frozen, replace

if TYPE_CHECKING:
    from draftfit.draft.description import DraftDescription

# The plan's edit that lists the aux ids ascending and moves `fc`'s input blocks with them.
REORDER_AUX_IDS = "reorder-aux-ids"
_FC_NORM = re.compile(r"^fc_norm\.(\d+)\.weight$")


@frozen
class AuxOrder:
    """How a conversion puts the aux ids in ascending order.

    Attributes:
        ids: the ids, ascending (in the counting they were given in).
        blocks: for each output block `j`, the source block it is taken from.
        width: the columns of one block (the target's hidden size).
    """

    ids: tuple[int, ...]
    blocks: tuple[int, ...]
    width: int


def block_order(ids: tuple[int, ...]) -> tuple[int, ...] | None:
    """The source block of each output block when `ids` are listed ascending; None when they
    already are, or when an id repeats (DF306: the order cannot say which block is which)."""
    ascending = tuple(sorted(ids))
    if ids == ascending or len(set(ids)) != len(ids):
        return None
    return tuple(ids.index(i) for i in ascending)


def reorder_tensors(out: list[OutputTensor], order: AuxOrder, draft: DraftDescription) -> None:
    """Rearrange the planned output tensors `out` (named as the output names them) for
    `order`: `fc.weight` and `input_norm.weight` get their column blocks moved (new bytes,
    written by :mod:`draftfit.conversion.write`); `fc_norm.{j}` takes the bytes of the
    source's `fc_norm.{blocks[j]}`, copied verbatim."""
    for index, tensor in enumerate(out):
        if tensor.name in ("fc.weight", "input_norm.weight"):
            out[index] = replace(tensor, column_blocks=order.blocks)
            continue
        match = _FC_NORM.match(tensor.name)
        if match is not None:
            source = draft.tensors[f"fc_norm.{order.blocks[int(match.group(1))]}.weight"]
            out[index] = replace(tensor, dtype=source.dtype, shape=source.shape, copied_from=source)
