"""What `fc` reads, the part every engine shares: how many aux states it is built for,
whether the draft reads them at all, the norms over them, and the order they are joined in.
Each engine's own steps decide `fc`'s input width, which norm flags it honours and which
layers it captures (:attr:`EngineView.aux`)."""

from __future__ import annotations

from draftfit.engines import shapes
from draftfit.engines.procedure.state import BuildState, get_path, layer_indices
from draftfit.engines.view import ONES, Norms


def aux_count(state: BuildState, family: str) -> tuple[int, str]:
    """N, the number of aux states `fc` is built for: fact `aux_count_rule` lists, per
    class family, the config keys tried in order (an int is N, a list gives its length);
    none means a fixed 3."""
    keys = state.family_value("aux_count_rule", family)
    if not keys:
        return 3, "a fixed count of 3"
    for key in keys:
        value = get_path(state.visible, key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, f"`{key}`"
        if isinstance(value, list) and value:
            return len(value), f"the length of `{key}`"
    return 3, "the default of 3 (" + ", ".join(f"`{k}`" for k in keys) + " not set)"


def aux_states(state: BuildState) -> None:
    """Step: N, the aux states `fc` is built for, and what decided it (:func:`aux_count`)."""
    capture = state.view.capture
    capture.aux_states, capture.count_from = aux_count(state, state.family)


def aux_switch(state: BuildState) -> None:
    """Step: whether the draft reads aux states at all: `eagle_config.use_aux_hidden_state`
    false switches them (and `fc`) off where the version reads it."""
    ec = state.eagle_config()
    state.view.capture.use_aux_hidden_state = not (
        state.value("use_aux_hidden_state_supported") and ec.get("use_aux_hidden_state") is False
    )


def uses_aux(state: BuildState) -> bool:
    """Whether the draft reads aux states (an engine without the switch always does)."""
    return state.view.capture.use_aux_hidden_state is not False


def target_width(state: BuildState) -> int:
    """The width of each target state `fc` reads, as the engine's step settled it."""
    T = state.view.capture.target_hidden_size
    assert T is not None, "fc's input width is settled before fc is built"
    return T


def settled_norms(state: BuildState) -> Norms:
    """The norm flags the engine's norms step recorded."""
    norms = state.view.capture.norms
    assert norms is not None, "the norm flags are settled before the norms are built"
    return norms


def aux_norms(state: BuildState) -> None:
    """Step: norms over the aux states before `fc`: `input_norm` [N·T] over their
    concatenation (`norm_before_fc`), or one `fc_norm.k` [T] per state (`fc_norm`); then
    the number of aux states `fc` reads."""
    norms = settled_norms(state)
    use_aux = uses_aux(state)
    n_aux, T = state.view.capture.aux_states, target_width(state)
    input_norm = norms.norm_before_fc and use_aux
    if state.traits.fc_norm_replaces_input_norm and norms.fc_norm:
        input_norm = False
    if input_norm:
        state.expect(
            "input_norm.weight",
            shapes.aux_input_norm(n_aux, T),
            ONES,
            state.citations("norm_before_fc_supported"),
        )
    if norms.fc_norm and use_aux:
        for k in layer_indices(n_aux):  # one aux state per captured layer
            state.expect(
                f"fc_norm.{k}.weight",
                shapes.aux_fc_norm(T),
                ONES,
                state.citations("fc_norm_supported"),
            )
    state.view.capture.num_aux_states = n_aux if use_aux else 0


def concat_order(state: BuildState) -> None:
    """Step: the order this version joins the captured states into `fc`'s input."""
    if state.view.aux is not None:
        state.view.aux.concat_order = state.profile.peek("aux_concat_order")
