"""What `draftfit diff` reads of each side: the checkpoint, its description, and the view
and verdict of one engine version from the side's check; the target's layer count both
sides' aux ids are read against; the facts each side's view gives (the layers captured,
the norms run) and the config as flat JSON pointers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.checkpoint import Checkpoint
from draftfit.draft.aux_counting import default_capture_ids
from draftfit.draft.description import LAYER_FIELDS, DraftDescription
from draftfit.draft.target import Target
from draftfit.engines.view import EngineView
from draftfit.records import record
from draftfit.report import EngineResult, Finding, Report

if TYPE_CHECKING:
    from typing import Any


@record
class Side:
    """One side of a comparison for one engine version: the checkpoint, its description,
    the engine's view, and that version's result and findings from the side's check."""

    checkpoint: Checkpoint
    draft: DraftDescription
    view: EngineView
    result: EngineResult
    findings: list[Finding]


def side_of(checkpoint: Checkpoint, report: Report, index: int) -> Side:
    """One side of the comparison for the profile at `index`: its description, the
    engine view the check built, and the check's result and findings for that version."""
    result = report.engines[index]
    key = result.key
    findings = [f for f in report.findings if key in f.engines]
    return Side(checkpoint, report.kept().draft, result.kept().view, result, findings)


def target_layers(
    target: Target | None, a: DraftDescription, b: DraftDescription
) -> tuple[int | None, str | None]:
    """The target's layer count, or one implied by an aux list in the default pattern.

    Without a target, a written list `[2, L//2, L-3]` (capture-before) or `[1, L//2-1, L-4]`
    (output-of) names L: that is how both checkpoints' captured layers can be compared.
    """
    if target is not None and target.num_layers:
        return target.num_layers, None
    for draft in (a, b):
        for aux in draft.aux:
            for ids in (tuple(aux.ids), aux.capture_before()):
                if len(ids) == 3 and ids == default_capture_ids(ids[2] + 3):
                    layers = ids[2] + 3
                    return layers, (
                        f"no --target: a {layers}-layer target is assumed, because "
                        f"`{aux.pointer}` {list(aux.ids)} is the default aux pattern for it"
                    )
    return None, None


def profile_raises_context(side: Side) -> bool:
    """Whether the engine raises the draft's `max_position_embeddings` to the target's
    context length itself (then a difference in it changes nothing)."""
    return side.view.max_position_raised is True


def norms_run(side: Side) -> dict[str, Any]:
    """The norm flags the engine runs for one side (`{}` when it resolved none)."""
    norms = side.view.capture.norms
    return norms.flags() if norms is not None else {}


def used_layers(side: Side, layers: int | None) -> tuple[int, ...] | None:
    """The target layers the engine captures for this side (capture-before ids, sorted,
    each once), or None when they cannot be known (no target for the default ids)."""
    aux = side.view.aux
    if aux is None:
        return None
    if aux.used is not None:
        return tuple(sorted(set(aux.used)))
    if aux.read_from is None and layers:
        return default_capture_ids(layers)
    if aux.read_from is not None:
        for x in side.draft.aux:
            if x.pointer == aux.read_from:
                return tuple(sorted(set(x.ids)))
    return None


def trained_layers(draft: DraftDescription, layers: int | None) -> tuple[int, ...] | None:
    """The layers the draft was trained on (capture-before ids, sorted, each once), or None
    when its config does not say."""
    ids = draft.trained_capture_before(layers)
    return tuple(sorted(set(ids))) if ids is not None else None


def layer_key(draft: DraftDescription, pointer: str) -> str:
    """`pointer` with the draft's decoder sub-config prefix taken off for a decoder field,
    so that `/transformer_layer_config/hidden_size` and `/hidden_size` compare as one key."""
    base = draft.layer_config_pointer
    if base and pointer.startswith(base + "/"):
        rest = pointer[len(base) :]
        if rest.strip("/").split("/")[0] in LAYER_FIELDS:
            return rest
    return pointer


def flat_config(value: Any, pointer: str = "") -> dict[str, Any]:
    """Every leaf of a config as JSON pointer -> value (lists as tuples, so they compare)."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            token = str(key).replace("~", "~0").replace("/", "~1")
            out.update(flat_config(item, f"{pointer}/{token}"))
        return out
    return {pointer or "/": tuple(value) if isinstance(value, list) else value}
