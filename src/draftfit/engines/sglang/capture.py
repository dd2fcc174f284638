"""SGLang's aux-layer capture: the TARGET runner reads aux ids only from
`eagle_config.eagle_aux_hidden_state_layer_ids`, adding 1 (with per-target exceptions),
and before 0.5.11 its CUDA-graph runner re-sets them to the default."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.aux_counting import default_capture_ids
from draftfit.draft.target import Target
from draftfit.engines.procedure.capture import uses_aux
from draftfit.engines.procedure.state import BuildState, get_path
from draftfit.engines.profile import Profile
from draftfit.engines.view import AuxCapture
from draftfit.location import config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS,)
EMITS_STAGE = "engine procedure: SGLang's aux-layer capture"

NESTED_IDS_POINTER = "/eagle_config/eagle_aux_hidden_state_layer_ids"
AUTOTUNE_FLAG = "--disable-flashinfer-autotune"


def _shift_mode(state: BuildState) -> str:
    """How this target class turns written ids into capture-before indices."""
    arch = state.target.architecture if state.target else None
    for cls, mode in state.value("aux_ids_shift_exceptions") or []:
        if cls == arch:
            return str(mode)
    return "plus-one"


def aux_capture(state: BuildState) -> None:
    """Step: fill `view.aux`: the layers SGLang captures, and the CUDA-graph runner that
    re-sets them to the default where this version does."""
    keys = list(state.value("aux_ids_read_from") or [])
    ids: tuple[int, ...] | None = None
    read_from = None
    for key in keys:
        value = get_path(state.visible, key)
        if isinstance(value, list) and value and all(isinstance(i, int) for i in value):
            ids, read_from = tuple(value), "/" + key.replace(".", "/")
            break
    t = state.target
    L = t.num_layers if t else None
    mode = _shift_mode(state)
    use_aux = uses_aux(state)
    used: tuple[int, ...] | None = None
    if not use_aux:
        used = ()
    elif ids is not None:
        used = _decode(ids, mode, L)
    elif L is not None:
        used = default_capture_ids(L)
        if mode == "plus-one-default-too":
            used = tuple(i + 1 for i in used)
    rng = state.value("aux_ids_valid_range")
    valid = None
    if L is not None and isinstance(rng, list):
        high = L if mode == "as-is-if-max-is-L" else L + rng[1]
        valid = (rng[0], high)
    convention = {
        "plus-one": "output-of",
        "plus-one-default-too": "output-of",
        "plus-one-if-first-is-1": "output-of when the first id is 1, else capture-before",
        "as-is-if-max-is-L": "output-of unless the last id is the layer count",
    }[mode]
    capture = state.view.capture
    aux = AuxCapture(
        used=used,
        read_from=read_from,
        keys_read=tuple("/" + k.replace(".", "/") for k in keys),
        expected_count=capture.aux_states if use_aux else None,
        count_from=capture.count_from,
        valid_range=valid,
        citations=state.citations("aux_ids_read_from", "aux_ids_convention", "aux_ids_default")
        + (state.citations("aux_ids_shift_exceptions") if mode != "plus-one" else ()),
        read_convention=convention,
        write_pointer=NESTED_IDS_POINTER if keys else None,
        encode=(lambda cb: _encode(cb, mode, L)) if keys else None,
    )
    state.view.aux = aux
    if ids is None or not used or L is None:
        return
    defaults: tuple[int, ...] = default_capture_ids(L)
    if mode == "plus-one-default-too":
        defaults = tuple(i + 1 for i in defaults)
    if tuple(sorted(set(used))) == tuple(sorted(set(defaults))):
        return
    arch = t.architecture if t else None
    sticky = arch in (state.value("aux_capture_flags_sticky") or [])
    if state.value("aux_ids_cuda_graph_ignored") and not _graphs_off(state, sticky):
        if sticky:
            # Flags set for the defaults are never cleared: eager passes capture both.
            aux.used = tuple(sorted(set(defaults) | set(used)))
        state.event(
            rule_ids.AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS,
            f"{state.profile.title}'s CUDA-graph runner re-sets the captured layers to the "
            f"default {list(defaults)} (capture-before), "
            + (
                f"and `{arch or ''}` never clears a "
                "layer once flagged, so eager passes capture the defaults and the draft's "
                f"layers {list(used)} together"
                if sticky
                else "so graphed decode/verify steps do not use the draft's layers "
                + str(list(used))
            ),
            config_at(read_from or NESTED_IDS_POINTER),
            ("aux_ids_cuda_graph_ignored",) + (("aux_capture_flags_sticky",) if sticky else ()),
            fix="use SGLang 0.5.11 or later, or serve with --disable-cuda-graph",
        )


def _graphs_off(state: BuildState, sticky: bool) -> bool:
    """Whether the launch turns CUDA graphs off (`--disable-cuda-graph`), so no graph
    runner re-sets the captured layers; where FlashInfer's autotune also flags the
    default layers of a sticky target, `--disable-flashinfer-autotune` is needed too."""
    serve = state.serve
    if serve is None or serve.cuda_graphs is not False:
        return False
    autotune = state.value("aux_ids_autotune_reset") == "sticky-flags-only"
    return not (sticky and autotune and AUTOTUNE_FLAG not in serve.words)


def aux_ids_to_write(
    profile: Profile, target: Target | None, capture_before: tuple[int, ...]
) -> tuple[int, ...] | None:
    """The ids to write at `eagle_config.eagle_aux_hidden_state_layer_ids` so that SGLang at
    `profile.version` captures exactly `capture_before` next to `target` (which decides
    the counting rule); None when this target class cannot be made to capture them."""
    arch = target.architecture if target else None
    mode = "plus-one"
    for cls, rule in profile.value("aux_ids_shift_exceptions") or []:
        if cls == arch:
            mode = rule
    return _encode(tuple(capture_before), mode, target.num_layers if target else None)


def _decode(ids: tuple[int, ...], mode: str, L: int | None) -> tuple[int, ...]:
    """Written ids -> the capture-before indices this target class captures."""
    if mode == "plus-one-if-first-is-1":
        return tuple(i + 1 for i in ids) if ids and ids[0] == 1 else tuple(ids)
    if mode == "as-is-if-max-is-L":
        return tuple(ids) if L is not None and max(ids) == L else tuple(i + 1 for i in ids)
    return tuple(i + 1 for i in ids)


def _encode(cb: tuple[int, ...], mode: str, L: int | None) -> tuple[int, ...] | None:
    """Capture-before indices -> ids to write so that `_decode` gives them back, or None."""
    for candidate in (tuple(i - 1 for i in cb), tuple(cb)):
        if candidate and min(candidate) >= 0 and _decode(candidate, mode, L) == tuple(cb):
            return candidate
    return None
