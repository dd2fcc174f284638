"""Aux-layer ids: where a draft config writes them, and the two ways they are counted.

Aux-layer conventions (docs/aux-counting.md): id `k` in **capture-before**
counting means the residual stream entering target layer `k` (= output of layer `k-1`,
= HF `hidden_states[k]`); in **output-of** counting it means the output of layer `k`.
`capture-before = output-of + 1`. Internally draftfit compares *capture-before* indices,
i.e. physical target layers; this module holds every conversion between the two and the
default layers a target of `L` layers gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import TYPE_CHECKING

from draftfit.draft.dialects import (
    ANGELSLIM,
    EAGLE_OFFICIAL,
    MODELOPT,
    SPECFORGE,
    SPECULATORS,
    Dialect,
)
from draftfit.records import frozen

if TYPE_CHECKING:
    from typing import Any, TypeGuard


class AuxCounting(Enum):
    """How aux-layer ids are counted (docs/aux-counting.md); shown by its name."""

    CAPTURE_BEFORE = "capture-before"  # id k: the residual stream entering target layer k
    OUTPUT_OF = "output-of"  # id k: the output of target layer k

    def __str__(self) -> str:
        return self.value


CAPTURE_BEFORE = AuxCounting.CAPTURE_BEFORE
OUTPUT_OF = AuxCounting.OUTPUT_OF

TOP_AUX = "/eagle_aux_hidden_state_layer_ids"
NESTED_AUX = "/eagle_config/eagle_aux_hidden_state_layer_ids"
NESTED_LAYER_IDS = "/eagle_config/layer_ids"


@frozen
class AuxIds:
    """Aux-layer ids as written at one place in the config.

    Attributes:
        ids: the ids exactly as written.
        pointer: where (JSON pointer into config.json).
        convention: the counting convention the writer used.
        why: one line on how the convention was decided.
    """

    ids: tuple[int, ...]
    pointer: str
    convention: AuxCounting
    why: str

    def capture_before(self) -> tuple[int, ...]:
        """The ids in capture-before counting (HF `hidden_states` index)."""
        shift = 1 if self.convention == OUTPUT_OF else 0
        return tuple(i + shift for i in self.ids)


def aux_locations(config: Mapping[str, Any], dialect: Dialect) -> list[AuxIds]:
    """Every place aux ids were written, most authoritative (what training used) first."""
    found: list[AuxIds] = []
    top = config.get("eagle_aux_hidden_state_layer_ids")
    if _int_list(top):
        found.append(
            AuxIds(
                tuple(top),
                TOP_AUX,
                CAPTURE_BEFORE,
                "the top-level key is written in capture-before counting (speculators, vLLM)",
            )
        )
    eagle_config = config.get("eagle_config")
    if isinstance(eagle_config, dict):
        nested = eagle_config.get("eagle_aux_hidden_state_layer_ids")
        if _int_list(nested):
            convention, why = _nested_convention(tuple(nested), dialect)
            found.append(AuxIds(tuple(nested), NESTED_AUX, convention, why))
        layer_ids = eagle_config.get("layer_ids")
        if _int_list(layer_ids):
            found.append(
                AuxIds(
                    tuple(layer_ids),
                    NESTED_LAYER_IDS,
                    CAPTURE_BEFORE,
                    "`eagle_config.layer_ids` is vLLM's own key (capture-before counting)",
                )
            )
    return found


def _nested_convention(ids: tuple[int, ...], dialect: Dialect) -> tuple[AuxCounting, str]:
    """The counting of ids nested under `eagle_config`, with the reason: always output-of.

    The reason names the producer when the dialect is one whose writer is known to use
    output-of counting (SpecForge, ModelOpt, AngelSlim, the official EAGLE repository, the
    speculators library), else it cites the convention. The ids themselves are not looked
    at here: a nested list that equals the capture-before default for the target (as in
    drafts published for SGLang's DeepSeek-family loaders, e.g. `[2, 30, 58]` for 61
    layers) is re-read as capture-before only by :func:`resolve_with_target`, once the
    target's layer count is known.
    """
    producer = dialect.title
    if dialect.name in (SPECFORGE, MODELOPT, ANGELSLIM, EAGLE_OFFICIAL, SPECULATORS):
        return OUTPUT_OF, f"{producer} writes nested ids in output-of counting"
    return OUTPUT_OF, "nested `eagle_config` ids are output-of counting by convention"


def resolve_with_target(aux: AuxIds, target_layers: int | None) -> AuxIds:
    """Refine a nested list's convention using the target's layer count.

    A nested list equal to the capture-before default `[2, L//2, L-3]` (and not to the
    output-of default `[1, L//2-1, L-4]`) was written in capture-before counting: no
    producer's output-of default starts at 2, and SGLang's DeepSeek-family loaders read
    such a list unshifted.
    """
    if aux.pointer != NESTED_AUX or aux.convention != OUTPUT_OF or not target_layers:
        return aux
    capture_default = default_capture_ids(target_layers)
    if tuple(aux.ids) == capture_default:
        return AuxIds(
            aux.ids,
            aux.pointer,
            CAPTURE_BEFORE,
            f"the nested list equals the capture-before default {list(capture_default)} for a "
            f"{target_layers}-layer target, so it is read as capture-before counting",
        )
    return aux


def default_capture_ids(num_layers: int) -> tuple[int, int, int]:
    """The default aux layers every engine and trainer uses, in capture-before counting."""
    return (2, num_layers // 2, num_layers - 3)


def default_output_of_ids(num_layers: int) -> tuple[int, int, int]:
    """The same default layers in output-of counting (each id one lower)."""
    return (1, num_layers // 2 - 1, num_layers - 4)


def _int_list(value: object) -> TypeGuard[list[int]]:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    )
