"""TensorRT-LLM's EAGLE-3 draft: `fc`'s input width, the draft vocabulary, the decoder
layers (with `eh_proj` where `eagle_config` asks for it), `fc` over as many aux states as the
launch captures, the norm flags it honours, the embedding and head it may take from the
target, `d2t`, and the aux layers: ONLY the user's `eagle3_layers_to_capture` (output-of
counting) — the draft's own ids are never read — else the default {1, L//2-1, L-4}."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.aux_counting import default_capture_ids
from draftfit.engines import shapes
from draftfit.engines.procedure.capture import target_width
from draftfit.engines.procedure.dimensions import decoder_layers as build_layers
from draftfit.engines.procedure.dimensions import final_norm, settled_layer
from draftfit.engines.procedure.layers import llama_layer
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.procedure.vocabulary import (
    Built,
    expect_embedding,
    expect_head,
    settled_vocabulary,
)
from draftfit.engines.procedure.window import IGNORED_WINDOW, check_sliding_window
from draftfit.engines.view import (
    FAILS,
    ONES,
    SHARED,
    UNINITIALISED,
    AuxCapture,
    Dims,
    Norms,
    Vocabulary,
)
from draftfit.location import Location, config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.MISSING_CONFIG_FIELD,
    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
    rule_ids.NORM_FLAG_IGNORED,
)
EMITS_STAGE = "engine procedure: TensorRT-LLM's draft parameters"

USER_SETTING = "speculative_config.eagle3_layers_to_capture"
SERVE = "serving settings"


def launch_capture_before(layers: tuple[int, ...]) -> tuple[int, ...] | None:
    """`eagle3_layers_to_capture` ids (output-of) in capture-before counting. None when -1 is
    among them: TensorRT-LLM captures the final hidden state after the final norm for it,
    which is no layer's output, so it cannot be compared with trained layer ids."""
    if -1 in layers:
        return None
    return tuple(sorted({i + 1 for i in layers}))


def _ids(ids: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


def _launch_layers(state: BuildState) -> tuple[int, ...] | None:
    """The launch's `eagle3_layers_to_capture`, where this version takes that setting."""
    s = state.serve
    if s is None or s.layers_to_capture is None or not state.value("aux_ids_user_key"):
        return None
    return s.layers_to_capture


def fc_width(state: BuildState) -> bool:
    """Step: the width of the target states `fc` reads (`target_hidden_size` where this
    version reads it); a null one is refused."""
    v = state.visible
    H = state.vint("hidden_size")
    tsh_supported = bool(state.value("target_hidden_size_supported"))
    if tsh_supported and "target_hidden_size" in v and v["target_hidden_size"] is None:
        state.refuse(
            rule_ids.MISSING_CONFIG_FIELD,
            f"`target_hidden_size` is null: {state.profile.title} reads it with hasattr and "
            "multiplies it by the number of aux states (TypeError)",
            config_at("/target_hidden_size"),
            ("target_hidden_size_supported",),
            fix="remove the key, or set it to the target's hidden size",
        )
        return False
    width = (state.vint("target_hidden_size") or H) if tsh_supported else H
    state.view.capture.target_hidden_size = width
    return True


def draft_vocabulary(state: BuildState) -> bool:
    """Step: `draft_vocab_size`, refused where this version reads it and it is missing; a
    null one is the full vocabulary (no d2t)."""
    V = state.vint("vocab_size")
    if "draft_vocab_size" not in state.visible:
        if state.value("draft_vocab_size_required"):
            state.refuse(
                rule_ids.MISSING_DRAFT_VOCAB_SIZE,
                f"`draft_vocab_size` is missing: {state.profile.title} reads "
                "`config.draft_vocab_size` while building the draft (AttributeError)",
                config_at("/draft_vocab_size"),
                ("draft_vocab_size_required",),
                fix="set `draft_vocab_size` to the rows of `lm_head.weight`",
            )
            return False
        state.view.vocabulary = Vocabulary(V, V)
        return True
    state.view.vocabulary = Vocabulary(V, state.vint("draft_vocab_size") or V)
    return True


def layer_count(state: BuildState) -> None:
    """Step: the decoder layers built (one where this version builds one)."""
    n_layers = state.vint("num_hidden_layers") or 1
    supported = state.value("multi_layer_policy") == "supported"
    state.view.dimensions.num_layers = n_layers if supported else 1


def _eh_proj(state: BuildState) -> bool:
    """Whether the layer projects [embedding, hidden] before attention (`eh_proj`)."""
    flags = state.value("eagle_config_flags_supported") or []
    return bool(state.eagle_config().get("eh_proj_before_attn")) and (
        "eagle_config.eh_proj_before_attn" in flags
    )


def _layer(state: BuildState, k: int, d: Dims, citations: tuple[str, ...]) -> None:
    v = state.visible
    regular_next = state.value("later_layer_input") == "next-layer-regular" and (
        state.eagle_config().get("next_layer_regular", True)
    )
    regular = _eh_proj(state) or (regular_next and k > 0)
    bias_ok = bool(state.value("attention_bias_supported"))
    attn_bias = bool(v.get("attention_bias")) and bias_ok
    H = d.hidden
    llama_layer(
        state,
        k,
        d,
        first_width=H if regular else 2 * H,
        later_width=H if regular else 2 * H,
        citations=citations,
        attn_bias=attn_bias,
        o_bias=attn_bias,
        mlp_bias=bool(v.get("mlp_bias")) and bias_ok,
        input_norm=not regular,
        hidden_norm=True,
        qk_norm=False,
    )


def decoder_layers(state: BuildState) -> bool:
    """Step: the decoder layers' parameters, `enorm` and `eh_proj` where the layer projects
    its inputs first, and the final norm."""
    src = state.citations("eagle3_weight_mapping")
    if not build_layers(state, src, _layer):
        return False
    if _eh_proj(state):
        H = settled_layer(state).hidden
        flags = state.citations("eagle_config_flags_supported")
        state.expect("enorm.weight", shapes.hidden_vector(H), ONES, flags)
        state.expect("eh_proj.weight", shapes.eh_proj(H), UNINITIALISED, flags)
    final_norm(state, src)
    return True


def aux_states(state: BuildState) -> None:
    """Step: as many aux states as the launch's `eagle3_layers_to_capture` names, else 3
    (TensorRT-LLM reads no switch that turns them off)."""
    capture = state.view.capture
    layers = _launch_layers(state)
    if layers is not None:
        n = len(set(layers))
        capture.aux_states = n
        capture.count_from = f"the launch's `eagle3_layers_to_capture`, {n} layer(s)"
    elif state.value("aux_ids_user_key"):
        capture.aux_states = 3
        capture.count_from = "the default of 3 (no `eagle3_layers_to_capture` passed)"
    else:
        capture.aux_states, capture.count_from = 3, "a fixed count of 3"


def fc(state: BuildState) -> None:
    """Step: `fc` (and its bias where the config asks), where this version builds it."""
    c = state.view.capture
    if not (state.value("fc_exists_when") == "always" or c.aux_states > 1):
        return
    H = settled_layer(state).hidden
    state.expect(
        "fc.weight",
        shapes.fc(H, c.aux_states, target_width(state), c.count_from),
        UNINITIALISED,
        state.citations("aux_count_rule", "fc_exists_when"),
    )
    if state.value("fc_bias_rule") == "config-bias" and state.visible.get("bias"):
        bias = shapes.hidden_vector(H)
        state.expect("fc.bias", bias, UNINITIALISED, state.citations("fc_bias_rule"))


def norms(state: BuildState) -> None:
    """Step: the norm flags on *and* honoured by this version."""
    v = state.visible
    ec = state.eagle_config()
    state.view.capture.norms = Norms(
        norm_before_fc=bool(ec.get("norm_before_fc"))
        and bool(state.value("norm_before_fc_supported")),
        fc_norm=bool(v.get("fc_norm")) and bool(state.value("fc_norm_supported")),
        norm_output=bool(v.get("norm_output") or ec.get("return_hidden_post_norm"))
        and bool(state.value("norm_output_supported")),
    )


def embedding(state: BuildState) -> None:
    """Step: the draft builds its own embedding where `fc` reads states of another width
    than its own (where the version does), else a missing one is the target's."""
    sharing = state.value("embedding_sharing")
    H = settled_layer(state).hidden
    own = sharing == "shared-unless-target-hidden-differs" and target_width(state) != H
    settled_vocabulary(state).embedding_shared = not own
    expect_embedding(state, UNINITIALISED if own else SHARED)


def head(state: BuildState) -> None:
    """Step: `lm_head`, the target's where the checkpoint stores none and the version
    takes it from the target."""
    head_rule = state.value("lm_head_rule")
    has_head = any("lm_head" in name for name in state.checkpoint.tensors)
    from_target = head_rule == "checkpoint-else-target" and not has_head
    built = Built(SHARED if from_target else UNINITIALISED, state.citations("lm_head_rule"))
    expect_head(state, built)


def d2t(state: BuildState) -> None:
    """Step: the `d2t` map, where this version builds one (a missing one fails)."""
    vocab = settled_vocabulary(state)
    Vd = vocab.draft_vocab_size
    d2t_rule = state.value("d2t_parameter")
    d2t_exists = d2t_rule == "always" or (d2t_rule == "when-reduced" and Vd != vocab.vocab_size)
    vocab.d2t_parameter = d2t_exists
    if d2t_exists:
        citations = state.citations("d2t_parameter", "missing_tensor_policy")
        state.expect("d2t", shapes.d2t(Vd), FAILS, citations)


def aux_capture(state: BuildState) -> None:
    """Step: fill `view.aux`: the layers the launch names, else the default."""
    L = state.target.num_layers if state.target else None
    user_key = state.value("aux_ids_user_key") or None
    layers, s = _launch_layers(state), state.serve
    used: tuple[int, ...] | None = default_capture_ids(L) if L is not None else None
    launch_setting, launch_location, unused = "", None, ""
    if layers is None and s is not None and s.layers_to_capture is not None:
        unused = (
            f"the launch's `eagle3_layers_to_capture: {_ids(s.layers_to_capture)}` is not "
            f"a setting {state.profile.title} has"
        )
    if layers is not None and s is not None:
        used = launch_capture_before(layers)
        launch_setting = f"`{USER_SETTING}: {_ids(layers)}` ({s.given_by})"
        launch_location = Location(
            f"{SERVE} ({s.given_by})", "/speculative_config/eagle3_layers_to_capture"
        )
    capture = state.view.capture
    state.view.aux = AuxCapture(
        used=used,
        read_from=None,
        keys_read=(),
        expected_count=capture.aux_states,
        count_from=capture.count_from,
        valid_range=(1, L) if L is not None else None,
        citations=state.citations("aux_ids_read_from", "aux_ids_default", "aux_ids_user_key"),
        read_convention="output-of",
        write_pointer=None,
        user_setting=USER_SETTING if user_key else None,
        encode=(lambda cb: tuple(i - 1 for i in cb)) if user_key else None,
        launch_setting=launch_setting,
        launch_location=launch_location,
        launch_unused=unused,
    )


def _window_advice(state: BuildState, size: int, how: object) -> tuple[str, str]:
    """TensorRT-LLM has neither a config key nor a setting for a draft's window."""
    return f"does not apply a draft's sliding window: {IGNORED_WINDOW}", (
        "TensorRT-LLM has no setting for a draft's sliding window; expect lower "
        f"acceptance on prompts longer than {size} tokens, or serve the draft with an "
        "engine version that applies it"
    )


def sliding_window(state: BuildState) -> None:
    """Step: a draft window this version does not apply (DF130)."""
    check_sliding_window(state, _window_advice)


def flags(state: BuildState) -> None:
    """Step: norm flags the checkpoint sets but this version ignores."""
    v = state.visible
    ec = state.eagle_config()
    run = state.view.capture.norms
    assert run is not None
    checks = [
        (
            "norm_before_residual",
            bool(v.get("norm_before_residual")),
            False,
            "/norm_before_residual",
        ),
        (
            "norm_before_fc",
            bool(v.get("norm_before_fc") or ec.get("norm_before_fc")),
            run.norm_before_fc and not run.fc_norm,
            "/eagle_config/norm_before_fc" if ec.get("norm_before_fc") else "/norm_before_fc",
        ),
        ("fc_norm", bool(v.get("fc_norm")), run.fc_norm, "/fc_norm"),
        (
            "norm_output",
            bool(v.get("norm_output") or ec.get("return_hidden_post_norm")),
            run.norm_output,
            "/norm_output",
        ),
    ]
    for name, on, honoured, where in checks:
        if not on or honoured:
            continue
        why = "does not implement it"
        if name == "norm_before_fc" and v.get(name) and not ec.get(name):
            why = "reads it only from `eagle_config.norm_before_fc`"
        elif name == "norm_before_fc" and run.fc_norm:
            why = "applies `fc_norm` instead when both are set"
        state.event(
            rule_ids.NORM_FLAG_IGNORED,
            f"`{name}` is true, but {state.profile.title} {why}: the draft runs without the "
            "norm it was trained with",
            config_at(where),
            (f"{name}_supported",),
            fix="use a TensorRT-LLM version that implements it, or another engine",
        )
