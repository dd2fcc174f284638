"""vLLM's EAGLE-3 (and EAGLE-1) draft: `fc`'s input width, the draft vocabulary, the decoder
layers, `fc`, the norm flags it honours, the embedding and head it shares with the target,
`d2t`, and the window and norm flags it ignores. Aux-layer capture is in :mod:`.capture`,
quantized drafts in :mod:`.quantization`."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.engines import shapes
from draftfit.engines.procedure.capture import target_width, uses_aux
from draftfit.engines.procedure.dimensions import (
    decoder_layers as build_layers,
)
from draftfit.engines.procedure.dimensions import (
    eagle1_layers,
    final_norm,
    settled_layer,
)
from draftfit.engines.procedure.layers import llama_layer
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.procedure.vocabulary import (
    Built,
    expect_embedding,
    expect_head,
    is_reduced,
    settled_vocabulary,
)
from draftfit.engines.procedure.window import IGNORED_WINDOW, check_sliding_window
from draftfit.engines.profile import Profile
from draftfit.engines.serve import first_release_where
from draftfit.engines.view import SHARED, UNINITIALISED, Dims, Norms, Vocabulary
from draftfit.engines.vllm.route import QWEN3_EAGLE3
from draftfit.location import Location, config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.D2T_IGNORED_BY_ENGINE,
    rule_ids.MISSING_CONFIG_FIELD,
    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
    rule_ids.NORM_BEFORE_RESIDUAL_DEFAULT,
    rule_ids.NORM_FLAG_IGNORED,
)
EMITS_STAGE = "engine procedure: vLLM's draft parameters"

# The fact saying, per class family, whether the draft's own sliding window is applied.
WINDOW_FACT = "draft_sliding_window_honoured"


def fc_width(state: BuildState) -> bool:
    """Step: the width of the target states `fc` reads (`target_hidden_size`, else the
    draft's hidden size); a null one is refused."""
    if "target_hidden_size" in state.visible and state.visible["target_hidden_size"] is None:
        state.refuse(
            rule_ids.MISSING_CONFIG_FIELD,
            "`target_hidden_size` is null: vLLM multiplies it by the number of aux states "
            "to size `fc` and fails with a TypeError",
            config_at("/target_hidden_size"),
            ("aux_count_rule",),
            fix="remove the key, or set it to the target's hidden size",
        )
        return False
    state.view.capture.target_hidden_size = state.vint("target_hidden_size") or state.vint(
        "hidden_size"
    )
    return True


def draft_vocabulary(state: BuildState) -> bool:
    """Step: the rows of the head (`draft_vocab_size`, else `vocab_size`), refused where
    this version reads the key directly."""
    V = state.vint("vocab_size")
    Vd = state.vint("draft_vocab_size")
    if Vd is None:
        if state.value("draft_vocab_size_required"):
            present_null = "draft_vocab_size" in state.visible
            state.refuse(
                rule_ids.MISSING_DRAFT_VOCAB_SIZE,
                "`draft_vocab_size` is "
                + ("null" if present_null else "missing")
                + f": {state.profile.title} reads it directly when building the draft lm_head",
                config_at("/draft_vocab_size"),
                ("draft_vocab_size_required",),
                fix="set `draft_vocab_size` to the rows of `lm_head.weight`",
            )
            return False
        Vd = V
    state.view.vocabulary = Vocabulary(V, Vd)
    return True


def layer_count(state: BuildState) -> None:
    """Step: the decoder layers built (one before this version builds several)."""
    n_layers = state.vint("num_hidden_layers") or 1
    state.view.dimensions.num_layers = n_layers if state.value("multi_layer_drafts") else 1


def _layer(state: BuildState, k: int, d: Dims, citations: tuple[str, ...]) -> None:
    v = state.visible
    llama_layer(
        state,
        k,
        d,
        first_width=2 * d.hidden,
        citations=citations,
        attn_bias=bool(v.get("attention_bias")) and bool(state.value("attention_bias_supported")),
        o_bias=bool(v.get("attention_bias")),
        mlp_bias=bool(v.get("mlp_bias")),
        input_norm=True,
        hidden_norm=k == 0,
        qk_norm=state.family == QWEN3_EAGLE3,
    )


def decoder_layers(state: BuildState) -> bool:
    """Step: the decoder layers' parameters and the final norm."""
    src = state.citations("eagle3_weight_mapping")
    if not build_layers(state, src, _layer):
        return False
    final_norm(state, src)
    return True


def fc(state: BuildState) -> None:
    """Step: `fc` [H, N·T] over the aux states, where the draft reads them."""
    if uses_aux(state):
        c = state.view.capture
        state.expect(
            "fc.weight",
            shapes.fc(settled_layer(state).hidden, c.aux_states, target_width(state), c.count_from),
            UNINITIALISED,
            state.citations("aux_count_rule", "eagle3_weight_mapping"),
        )


def flag_visible(state: BuildState, name: str) -> bool:
    """Whether a norm flag is on *and* this version implements it."""
    value = state.visible.get(name)
    nested = None
    ec = state.visible.get("eagle_config")
    if isinstance(ec, dict) and name == "norm_before_fc" and state.value("norm_before_fc_nested"):
        nested = ec.get(name)
    on = bool(nested) if nested is not None else bool(value)
    return on and bool(state.value(f"{name}_supported"))


def norms(state: BuildState) -> None:
    """Step: the norm flags on *and* honoured by this version."""
    state.view.capture.norms = Norms(
        norm_before_fc=flag_visible(state, "norm_before_fc"),
        fc_norm=flag_visible(state, "fc_norm"),
        norm_output=flag_visible(state, "norm_output"),
        norm_before_residual=bool(state.value("norm_before_residual_supported"))
        and bool(state.visible.get("norm_before_residual", False)),
    )


def embedding(state: BuildState) -> None:
    """Step: a missing embedding is the target's."""
    expect_embedding(state, SHARED)


def head(state: BuildState) -> None:
    """Step: `lm_head`, the target's where a missing one is shared, else left uninitialised."""
    shared = state.value("lm_head_shared_when_missing")
    cites = state.citations("lm_head_shared_when_missing")
    expect_head(state, Built(SHARED if shared else UNINITIALISED, cites))


def d2t(state: BuildState) -> None:
    """Step: the `d2t` parameter, where this version builds one, and a stored one it drops."""
    vocab = settled_vocabulary(state)
    V, Vd = vocab.vocab_size, vocab.draft_vocab_size
    Vt = state.target.vocab_size if state.target else None
    d2t_rule = state.value("d2t_parameter")
    d2t_exists = d2t_rule == "always" or (
        d2t_rule == "when-reduced" and (Vd != (Vt if Vt is not None else V))
    )
    vocab.d2t_parameter = d2t_exists
    if d2t_exists:
        state.expect(
            "d2t", shapes.d2t(Vd, unknown_mismatches=True), None, state.citations("d2t_parameter")
        )
    if is_reduced(vocab) and "d2t" in state.draft.tensors and not state.value("d2t_loaded"):
        state.event(
            rule_ids.D2T_IGNORED_BY_ENGINE,
            f"{state.profile.title} drops the stored `d2t` (it looks for the name after "
            "renaming it), so draft token i is proposed as target token i",
            Location(None, tensor=state.draft.raw("d2t")),
            ("d2t_loaded",),
            fix="use vLLM 0.9.1 or later",
        )


def _window_advice(state: BuildState, size: int, how: object) -> tuple[str, str]:
    """vLLM applies a draft's window from the release its class family reads it."""
    family = state.family

    def honours(later: Profile) -> bool:
        value = later.value(WINDOW_FACT)
        return isinstance(value, dict) and value.get(family, value.get("*")) is True

    first = first_release_where(state.profile, honours)
    why = f"does not apply it to `{state.view.draft_class}`: {IGNORED_WINDOW}"
    if how == "index-error":
        why = (
            "indexes the draft's `layer_types` with the target-wide layer number: "
            "IndexError while building the draft"
        )
    if first is None:
        return why, (
            "no vLLM release read applies a sliding window to this draft class; expect "
            f"lower acceptance on prompts longer than {size} tokens"
        )
    return why, f"use vLLM {first} or later, which applies the draft's window"


def sliding_window(state: BuildState) -> None:
    """Step: a draft window this version does not apply (DF130)."""
    check_sliding_window(state, _window_advice)


def flags(state: BuildState) -> None:
    """Step: norm flags the checkpoint sets but this version ignores or defaults
    differently."""
    cfg = state.config
    p = state.profile
    speculators = state.route == "speculators"
    for name in ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output"):
        raw = cfg.get(name)
        if raw is None and not speculators:
            raw = state.visible.get(name)
        nested = None
        ec = cfg.get("eagle_config")
        if isinstance(ec, dict) and name in ec:
            nested = ec.get(name)
        on = bool(raw) or bool(nested)
        if not on:
            continue
        supported = state.value(f"{name}_supported")
        copied = True
        if speculators:
            copied = name in (state.value("speculators_copied_fields") or [])
        if not supported or not copied:
            where = f"/{name}" if raw else f"/eagle_config/{name}"
            state.event(
                rule_ids.NORM_FLAG_IGNORED,
                f"`{name}` is true, but {p.title} "
                + (
                    "does not implement it"
                    if not supported
                    else "does not copy it from speculators configs"
                )
                + ": the draft runs without the norm it was trained with",
                config_at(where),
                (f"{name}_supported",) + (("speculators_copied_fields",) if speculators else ()),
                fix="use a vLLM version that implements it",
            )
    default = state.view.capture.norm_before_residual_default
    if speculators and default is not None:
        state.event(
            rule_ids.NORM_BEFORE_RESIDUAL_DEFAULT,
            f"`norm_before_residual` is not written; vLLM's speculators adaptor defaults it to "
            f"`{str(default).lower()}`, while the speculators library's own default is `false`",
            config_at("/norm_before_residual"),
            ("speculators_norm_before_residual_default",),
            fix="write `norm_before_residual` explicitly with the value used in training",
        )


def context(state: BuildState) -> None:
    """Step: whether this version sizes the draft's positions from the target's."""
    state.view.max_position_raised = bool(state.value("max_position_raised"))


def eagle1_draft(state: BuildState) -> None:
    """Step: an EAGLE-1 draft's layers, `fc`, and the target's embedding."""
    H, V = eagle1_layers(state, state.citations("eagle_weight_mapping"))
    state.expect(
        "embed_tokens.weight",
        shapes.embedding(V, H, values=False),
        SHARED,
        state.citations("embedding_sharing"),
    )
