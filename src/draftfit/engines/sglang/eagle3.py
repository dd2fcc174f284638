"""SGLang's EAGLE-3 (and EAGLE-1) draft: `fc`'s input width, the draft vocabulary (a null
one may take the target's head), the layer count and the KV pool it sizes, the decoder
layers (`midlayer` before 0.5.12, `layers.{i}` after), `fc`, the norm flags each class
honours, the embedding, head and `d2t`, the draft window a launch flag gives, and the
parameters of a quantized draft. Aux-layer capture is in :mod:`.capture`."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.engines import shapes
from draftfit.engines.draft_quant import add_quantized_parameters, read_draft_quant
from draftfit.engines.procedure.capture import target_width, uses_aux
from draftfit.engines.procedure.dimensions import decoder_layers as build_layers
from draftfit.engines.procedure.dimensions import eagle1_layers, final_norm, settled_layer
from draftfit.engines.procedure.layers import llama_layer
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.procedure.vocabulary import (
    Built,
    expect_embedding,
    expect_head,
    settled_vocabulary,
)
from draftfit.engines.procedure.window import IGNORED_WINDOW, check_sliding_window
from draftfit.engines.serve import first_release_where
from draftfit.engines.sglang.classes import LLAMA_EAGLE3, MLA_EAGLE3
from draftfit.engines.view import FAILS, SHARED, UNINITIALISED, Dims, Event, Norms, Vocabulary
from draftfit.location import config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.DRAFT_KV_LAYER_COUNT,
    rule_ids.LM_HEAD_MISSING_REDUCED_VOCAB,
    rule_ids.MISSING_CONFIG_FIELD,
    rule_ids.MISSING_DRAFT_VOCAB_SIZE,
    rule_ids.MULTI_LAYER_DRAFT_UNSUPPORTED,
    rule_ids.NORM_FLAG_IGNORED,
)
EMITS_STAGE = "engine procedure: SGLang's draft parameters"

# The server flag that gives a Llama EAGLE-3 draft a sliding window (the recipe in
# `sglang.engine` passes it; it imports this module, so the name is spelled in both).
DRAFT_WINDOW_FLAG = "--speculative-draft-window-size"


def fc_width(state: BuildState) -> bool:
    """Step: the width of the target states `fc` reads; a null `target_hidden_size` is
    refused where the class reads it."""
    v = state.visible
    if (
        "target_hidden_size" in v
        and v["target_hidden_size"] is None
        and state.family == LLAMA_EAGLE3
    ):
        state.refuse(
            rule_ids.MISSING_CONFIG_FIELD,
            "`target_hidden_size` is null: SGLang reads it with hasattr and multiplies it "
            "by the number of aux states to size `fc` (TypeError)",
            config_at("/target_hidden_size"),
            ("target_hidden_size_supported",),
            fix="remove the key, or set it to the target's hidden size",
        )
        return False
    state.view.capture.target_hidden_size = state.vint("target_hidden_size") or state.vint(
        "hidden_size"
    )
    return True


def draft_vocabulary(state: BuildState) -> bool:
    """Step: `draft_vocab_size` missing or null: refused where the class reads it; a null
    one with an untied head otherwise takes the target's head."""
    v = state.visible
    V = state.vint("vocab_size")
    title = state.profile.title
    tied = bool(v.get("tie_word_embeddings", False))
    rule = state.family_value("draft_vocab_size_required", state.family) or "never"
    if "draft_vocab_size" not in v:
        if rule == "always" or (rule == "untied-only" and not tied):
            state.refuse(
                rule_ids.MISSING_DRAFT_VOCAB_SIZE,
                f"`draft_vocab_size` is missing: {title} reads `config."
                "draft_vocab_size` while building the draft (AttributeError)",
                config_at("/draft_vocab_size"),
                ("draft_vocab_size_required",),
                fix="set `draft_vocab_size` to the rows of `lm_head.weight`",
            )
            return False
        state.view.vocabulary = Vocabulary(V, V)
        return True
    if v["draft_vocab_size"] is None and not tied:
        if state.value("draft_vocab_size_null") == "error":
            state.refuse(
                rule_ids.MISSING_DRAFT_VOCAB_SIZE,
                f"`draft_vocab_size` is null: {title} builds the draft head with "
                "None rows and fails",
                config_at("/draft_vocab_size"),
                ("draft_vocab_size_null",),
                fix="set `draft_vocab_size` to the rows of `lm_head.weight`",
            )
            return False
        state.view.vocabulary = Vocabulary(V, V, head_from_target=True)
        return True
    state.view.vocabulary = Vocabulary(V, state.vint("draft_vocab_size") or V)
    return True


def layer_count(state: BuildState) -> bool:
    """Step: the decoder layers built; several are refused where the class builds one,
    and a draft KV pool sized from `num_nextn_predict_layers` is refused too."""
    n_layers = state.vint("num_hidden_layers") or 1
    policy = state.family_value("multi_layer_policy", state.family)
    if n_layers != 1 and policy == "refused":
        state.refuse(
            rule_ids.MULTI_LAYER_DRAFT_UNSUPPORTED,
            f"`num_hidden_layers` is {n_layers}: {state.profile.title} raises `ValueError: "
            "EAGLE3 currently only supports 1 layer`",
            config_at("/num_hidden_layers"),
            ("multi_layer_policy",),
            fix="use SGLang 0.5.12 or later (Llama-style drafts), or a one-layer draft",
        )
        return False
    _kv_pool_layers(state, n_layers)
    state.view.dimensions.num_layers = n_layers
    return True


def _kv_pool_layers(state: BuildState, n_layers: int) -> None:
    """The draft worker sizes its KV pool from `num_nextn_predict_layers` when present."""
    nextn = state.visible.get("num_nextn_predict_layers")
    rule = state.value("draft_kv_layers_source")
    if not isinstance(nextn, int) or isinstance(nextn, bool) or nextn >= n_layers:
        return
    if rule == "num_nextn_predict_layers-if-positive" and nextn <= 0:
        return
    if rule not in (
        "num_nextn_predict_layers-if-present",
        "num_nextn_predict_layers-if-positive",
    ):
        return
    state.refuse(
        rule_ids.DRAFT_KV_LAYER_COUNT,
        f"`num_nextn_predict_layers` is {nextn}: {state.profile.title} sizes the draft's KV "
        f"cache with it instead of the {n_layers} decoder layer(s), "
        + (
            "a zero-layer pool: IndexError the first time the draft runs (while start-up "
            "captures its CUDA graphs, else at the first request)"
            if nextn == 0
            else "too few layers for the draft"
        ),
        config_at("/num_nextn_predict_layers"),
        ("draft_kv_layers_source",),
        fix="remove `num_nextn_predict_layers` from the draft config (it is the target's "
        "MTP setting, copied over)",
    )


def _layer(state: BuildState, k: int, d: Dims, citations: tuple[str, ...]) -> None:
    v = state.visible
    llama_layer(
        state,
        k,
        d,
        first_width=2 * d.hidden,
        citations=citations,
        attn_bias=False,
        o_bias=any(bool(v.get(key)) for key in state.value("o_proj_bias_keys") or []),
        mlp_bias=False,
        input_norm=k == 0,
        hidden_norm=True,
        qk_norm=False,
    )
    if k > 0:  # built, loaded if stored, never applied (later_layer_pre_norm)
        state.expect(
            f"layers.{k}.input_layernorm.weight",
            shapes.hidden_vector(d.hidden),
            None,
            state.citations("later_layer_pre_norm"),
        )


def decoder_layers(state: BuildState) -> bool:
    """Step: the decoder layers' parameters and the final norm."""
    src = state.citations(
        "mla_weight_mapping" if state.family == MLA_EAGLE3 else "eagle3_weight_mapping"
    )
    if not build_layers(state, src, _layer):
        return False
    final_norm(state, src)
    return True


def fc(state: BuildState) -> None:
    """Step: `fc` over the aux states (built even where they are switched off) and its
    bias where this version builds one."""
    c = state.view.capture
    H = settled_layer(state).hidden
    state.expect(
        "fc.weight",
        shapes.fc(H, c.aux_states, target_width(state), c.count_from),
        UNINITIALISED if uses_aux(state) else None,
        state.citations("aux_count_rule", "eagle3_weight_mapping"),
    )
    bias_rule = state.value("fc_bias_rule")
    if bias_rule == "always" or (bias_rule == "config-bias" and state.visible.get("bias")):
        bias = shapes.hidden_vector(H)
        state.expect("fc.bias", bias, UNINITIALISED, state.citations("fc_bias_rule"))


def norms(state: BuildState) -> None:
    """Step: which norm flags are on *and* implemented by this version's class."""
    v = state.visible
    fam = state.family
    ec = state.eagle_config()
    nested = ec.get("norm_before_fc") if state.value("norm_before_fc_nested") else None
    before_fc = bool(nested) if nested is not None else bool(v.get("norm_before_fc"))
    state.view.capture.norms = Norms(
        norm_before_fc=before_fc and bool(state.family_value("norm_before_fc_supported", fam)),
        fc_norm=bool(v.get("fc_norm") or v.get("use_aux_norm"))
        and bool(state.family_value("fc_norm_supported", fam)),
        norm_output=bool(v.get("norm_output"))
        and bool(state.family_value("norm_output_supported", fam)),
    )


def embedding(state: BuildState) -> None:
    """Step: the draft builds its own embedding where `fc` reads states of another width
    than its own (and the head is its own), else a missing one is the target's."""
    vocab = settled_vocabulary(state)
    H = settled_layer(state).hidden
    own = (
        "target_hidden_size" in state.visible
        and target_width(state) != H
        and not vocab.head_from_target
    )
    vocab.embedding_shared = not own
    expect_embedding(state, UNINITIALISED if own else SHARED)


def head(state: BuildState) -> None:
    """Step: `lm_head`, none where it is tied to the embedding or taken from the target."""
    vocab = settled_vocabulary(state)
    V, Vd = vocab.vocab_size, vocab.draft_vocab_size
    tied = bool(state.visible.get("tie_word_embeddings", False))
    if tied and Vd is not None and V is not None and Vd != V:
        state.event(
            rule_ids.LM_HEAD_MISSING_REDUCED_VOCAB,
            f"`tie_word_embeddings` is true: {state.profile.title} makes the draft head its "
            f"embedding, which it replaces by the target's ({V} rows), so a draft vocabulary "
            f"of {Vd} and its `d2t` no longer line up with the logits",
            config_at("/tie_word_embeddings"),
            ("tied_lm_head",),
            fix='set "tie_word_embeddings": false and store the trained `lm_head.weight`',
        )
    if tied or vocab.head_from_target:
        return
    expect_head(state, Built(UNINITIALISED, state.citations("lm_head_shared_when_missing")))


def d2t(state: BuildState) -> None:
    """Step: the `d2t` map, required where this version fails without one."""
    vocab = settled_vocabulary(state)
    required = state.value("d2t_handling") == "required"
    state.expect(
        "d2t",
        shapes.d2t(vocab.draft_vocab_size),
        FAILS if required else None,
        state.citations("d2t_handling"),
    )
    vocab.d2t_parameter = True


def _launch_gives_window(state: BuildState, size: int) -> bool:
    """`--speculative-draft-window-size SIZE` in the launch, on a Llama EAGLE-3 draft of a
    version that has the flag: the draft runs with the window it was trained with."""
    serve = state.serve
    return (
        serve is not None
        and serve.draft_window_size == size
        and state.family == LLAMA_EAGLE3
        and state.value("sliding_window_source") == "server-flag"
    )


def _window_advice(state: BuildState, size: int, how: object) -> tuple[str, str]:
    """SGLang reads no window from the draft config; Llama EAGLE-3 drafts take one from
    `--speculative-draft-window-size` where the version has that flag."""
    why = f"reads no sliding window from the draft config: {IGNORED_WINDOW}"
    if state.family != LLAMA_EAGLE3:
        return why, (
            "SGLang applies `--speculative-draft-window-size` to Llama EAGLE-3 drafts "
            f"only; `{state.view.draft_class}` has no setting for it: expect lower "
            f"acceptance on prompts longer than {size} tokens"
        )
    if state.value("sliding_window_source") == "server-flag":
        return why, f"launch SGLang with `{DRAFT_WINDOW_FLAG} {size}`"
    first = first_release_where(
        state.profile, lambda later: later.value("sliding_window_source") == "server-flag"
    )
    where = f"SGLang {first} or later" if first else "an SGLang version that has it"
    return why, (
        f"this version has no `{DRAFT_WINDOW_FLAG}`: use {where} and launch it with "
        f"`{DRAFT_WINDOW_FLAG} {size}`"
    )


def sliding_window(state: BuildState) -> None:
    """Step: a draft window this version does not apply (DF130)."""
    check_sliding_window(state, _window_advice, _launch_gives_window)


def flags(state: BuildState) -> None:
    """Step: norm flags (and `eagle_config` switches) the checkpoint sets but this
    version's class does not implement."""
    v = state.visible
    ec = state.eagle_config()
    run = state.view.capture.norms
    assert run is not None
    never = set(state.value("flags_never_read") or [])
    checks = [
        ("norm_before_residual", bool(v.get("norm_before_residual")), False),
        (
            "norm_before_fc",
            bool(v.get("norm_before_fc") or ec.get("norm_before_fc")),
            run.norm_before_fc,
        ),
        ("fc_norm", bool(v.get("fc_norm") or v.get("use_aux_norm")), run.fc_norm),
        ("norm_output", bool(v.get("norm_output")), run.norm_output),
        ("eagle_config.eh_proj_before_attn", bool(ec.get("eh_proj_before_attn")), False),
        (
            "eagle_config.return_hidden_post_norm",
            bool(ec.get("return_hidden_post_norm")),
            False,
        ),
    ]
    for name, on, honoured in checks:
        if not on or honoured:
            continue
        if name in never:
            citations = state.profile.item_sources("flags_never_read", name)
        else:
            citations = state.citations(f"{name}_supported")
        where = "/" + name.replace(".", "/")
        if name == "norm_before_fc" and not v.get(name):
            where = "/eagle_config/norm_before_fc"
        state.view.add(
            Event(
                rule_ids.NORM_FLAG_IGNORED,
                f"`{name.split('.')[-1]}` is true, but {state.profile.title}'s "
                f"`{state.view.draft_class}` does not implement it: the draft runs without "
                "the norm it was trained with",
                config_at(where),
                citations,
                "use an SGLang version that implements it, or another engine",
            )
        )


def quantized_parameters(state: BuildState) -> None:
    """Step: the parameters a quantized draft's layers register: SGLang builds the decoder
    layers (and, from the version in `draft_quant_lm_head`, lm_head) with the draft's
    own quantization config on a launch without `--quantization`; fc never."""
    q = read_draft_quant(state.config)
    if q is None or state.value("draft_quant_config_source") != "draft":
        return
    if q.method not in (state.value("draft_quant_methods") or []) or q.scheme is None:
        return
    params: list[str] = (state.value("compressed_tensors_params") or {}).get(q.scheme) or []
    if not params:
        return
    lm_head = bool(state.value("draft_quant_lm_head"))
    citations = state.citations("draft_quant_config_source", "compressed_tensors_params")

    def quantizable(module: str) -> bool:
        return module.endswith("_proj") or (module == "lm_head" and lm_head)

    add_quantized_parameters(state.view, q, params, quantizable, citations)
    state.view.resolution.draft_quantization_scheme = q.scheme


def eagle1_draft(state: BuildState) -> None:
    """Step: an EAGLE-1 draft's layers, `fc` and its bias, and the target's embedding."""
    src = state.citations("eagle_weight_mapping")
    qwen2 = state.view.draft_class == "Qwen2ForCausalLMEagle"
    H, V = eagle1_layers(state, src, attn_bias=qwen2)
    bias = shapes.hidden_vector(H)
    state.expect("fc.bias", bias, UNINITIALISED, state.citations("eagle_fc_bias"))
    state.expect("embed_tokens.weight", shapes.embedding(V, H, values=False), SHARED, src)
