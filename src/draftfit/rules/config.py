"""DF1xx — config route, method and architecture: does the engine accept the config at all?

Detection lives in the engine module (it knows the version's parsing rules); these rules
document and report what it found.
"""

from __future__ import annotations

from collections.abc import Iterator

from draftfit.draft.dialects import non_eagle_kind
from draftfit.rule_ids import (
    DRAFT_KV_LAYER_COUNT,
    DRAFT_SLIDING_WINDOW_IGNORED,
    INVALID_SPECULATORS_CONFIG,
    METHOD_GUESSED_AS_DRAFT_MODEL,
    METHOD_MISMATCH,
    METHOD_NOT_DETECTED_FROM_PATH,
    METHOD_UNSUPPORTED,
    MISSING_ARCHITECTURES,
    MISSING_CONFIG_FIELD,
    MISSING_DRAFT_VOCAB_SIZE,
    MULTI_LAYER_DRAFT_UNSUPPORTED,
    NOT_AN_EAGLE_DRAFT,
    SPECULATORS_CONFIG_WITH_MODEL_TYPE,
    SPECULATORS_FORMAT_UNSUPPORTED,
    UNKNOWN_DRAFT_METHOD,
    UNSUPPORTED_ACTIVATION,
    UNSUPPORTED_DRAFT_ARCHITECTURE,
    UNSUPPORTED_LAYER_MODEL_TYPE,
    UNSUPPORTED_SPECULATORS_TYPE,
    RuleId,
)
from draftfit.rules.base import Context, Scope, Violation, config_at, event_rule, rule

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[RuleId, ...] = (
    UNKNOWN_DRAFT_METHOD,
    NOT_AN_EAGLE_DRAFT,
)
EMITS_STAGE = "rule's own check"


@event_rule(
    UNSUPPORTED_DRAFT_ARCHITECTURE,
    "the engine does not register the draft architecture the config resolves to",
)
def unsupported_draft_architecture() -> None:
    """## What it checks
    The draft's `architectures[0]`, after the engine's rewrite (vLLM prefixes `Eagle3` for
    method eagle3 unless the name starts with it or, in later versions, ends with it), is a
    draft class the engine version registers.

    ## Why it matters
    The engine refuses to start: `Model architectures [...] are not supported for now`.

    ## Example
    A Qwen-style EAGLE-3 draft declaring `Qwen3ForCausalLM` becomes `Eagle3Qwen3ForCausalLM`,
    which older vLLM versions do not register.

    ## Fix
    Declare an architecture the version registers (`LlamaForCausalLMEagle3`, or
    `LlamaForCausalLM` for Llama-style draft layers on versions without it);
    `draftfit convert --to vllm` rewrites it.
    """


@event_rule(MISSING_ARCHITECTURES, "the draft config has no architectures list")
def missing_architectures() -> None:
    """## What it checks
    A plain (non-speculators) draft config has a non-empty `architectures` list.

    ## Why it matters
    vLLM's EAGLE config wrapper iterates over it and fails before building anything. SGLang
    picks the draft class from `architectures[0]` and fails while building the draft's
    model config. TensorRT-LLM's two-model path looks the class up the same way; its
    one-model path builds its EAGLE-3 class whatever `architectures` says.

    ## Example
    A hand-written config with dims but no `architectures`.

    ## Fix
    Add `"architectures": ["LlamaForCausalLMEagle3"]`.
    """


@event_rule(
    UNSUPPORTED_SPECULATORS_TYPE,
    "the engine does not know this speculators_model_type",
)
def unsupported_speculators_type() -> None:
    """## What it checks
    `speculators_model_type` is one the engine version accepts (vLLM: `eagle3` once it reads
    speculators configs; no version accepts the EAGLE-1 `eagle` type).

    ## Why it matters
    vLLM raises `Expected one of: ... Please ensure you're loading a speculators-format model`.

    ## Example
    A checkpoint converted with `speculators convert --algorithm eagle` (type `eagle`).

    ## Fix
    Convert it to a plain config for the engine (`draftfit convert --to vllm`).
    """


@event_rule(
    INVALID_SPECULATORS_CONFIG,
    "the speculators config lacks a part `vllm serve <draft>` needs",
)
def invalid_speculators_config() -> None:
    """## What it checks
    A speculators-format config has `speculators_config.proposal_methods[0].speculative_tokens`
    and `speculators_config.verifier.name_or_path`.

    ## Why it matters
    Only the `vllm serve <draft>` route reads them (to find the verifier and the number of
    speculative tokens) and raises `No proposal methods found in speculators config` or
    `Invalid speculators config structure`. Serving with `--model TARGET
    --speculative-config` never validates them, so this is info, not an error.

    ## Example
    `"proposal_methods": []`.

    ## Fix
    Write the structure the speculators library writes.
    """


@event_rule(
    SPECULATORS_FORMAT_UNSUPPORTED,
    "the engine version cannot parse speculators-format configs",
)
def speculators_format_unsupported() -> None:
    """## What it checks
    The engine version understands the speculators format.

    ## Why it matters
    Older versions hand the config to transformers, which fails on the missing `model_type`.

    ## Example
    An `Eagle3DraftModel` checkpoint served with a vLLM version older than its speculators
    adaptor.

    ## Fix
    Upgrade vLLM or convert the draft to a plain config (`draftfit convert --to vllm`).
    """


@event_rule(
    UNSUPPORTED_LAYER_MODEL_TYPE,
    "the speculators transformer_layer_config type has no engine draft class",
)
def unsupported_layer_model_type() -> None:
    """## What it checks
    For an eagle3 speculators config, `transformer_layer_config.model_type` is one the engine
    version maps to a draft class (recent vLLM: `llama` or `qwen3`; older versions build
    every type as a Llama layer).

    ## Why it matters
    vLLM raises `Unsupported model_type ... for Eagle3 speculator`.

    ## Example
    `"model_type": "mistral"` in `transformer_layer_config`.

    ## Fix
    Train the draft with a llama (or qwen3) decoder layer.
    """


@event_rule(
    METHOD_MISMATCH,
    "the speculative method does not match the checkpoint's kind",
)
def method_mismatch() -> None:
    """## What it checks
    The method the engine runs (`--method`, or vLLM's guess from the directory name when
    none is given) matches the kind of draft stored (EAGLE-3 or EAGLE-1).

    ## Why it matters
    vLLM builds the wrong class: an EAGLE-3 checkpoint served with `method: eagle` becomes
    `EagleLlamaForCausalLMEagle3` (not registered) or fails on `fc` shapes and unknown
    `midlayer`/`hidden_norm` names.

    ## Example
    An EAGLE-3 draft in `./EAGLE3-llama` on a vLLM version that maps `eagle3-` to `eagle`.

    ## Fix
    Pass the method explicitly: `--speculative-config '{"method": "eagle3", ...}'`.
    """


@event_rule(
    METHOD_NOT_DETECTED_FROM_PATH,
    "without an explicit method, vLLM would guess a different one from the path",
)
def method_not_detected_from_path() -> None:
    """## What it checks
    What vLLM picks when `speculative_config` has no `method`: it looks for `eagle-` and
    `eagle3` in the lower-cased draft path (in older versions `eagle3-` meant EAGLE-1) and
    otherwise runs a plain `draft_model`.

    ## Why it matters
    A draft in `./mydraft` served without `method` is loaded as an ordinary LM and fails,
    or runs as the wrong kind of head. Reported as info because passing the method fixes it;
    with `draftfit check --method auto` it is an error.

    ## Example
    `./kimi-draft` contains neither substring.

    ## Fix
    Always pass `"method": "eagle3"` (or `"eagle"`) in `--speculative-config`.
    """


@event_rule(
    METHOD_UNSUPPORTED,
    "the engine version has no drafting for this method",
)
def method_unsupported() -> None:
    """## What it checks
    The engine version implements the method.

    ## Why it matters
    The engine refuses the speculative config.

    ## Example
    An EAGLE-3 draft with a vLLM release from before EAGLE-3 support.

    ## Fix
    Upgrade the engine.
    """


@event_rule(
    MISSING_DRAFT_VOCAB_SIZE,
    "the engine version needs draft_vocab_size and the config lacks it",
)
def missing_draft_vocab_size() -> None:
    """## What it checks
    `draft_vocab_size` is set when the engine version reads it directly (later vLLM versions
    default it to `vocab_size`).

    ## Why it matters
    Building the draft lm_head fails with an AttributeError/TypeError.

    ## Example
    A plain EAGLE-3 config without `draft_vocab_size` on an older vLLM.

    ## Fix
    Set `draft_vocab_size` to the rows of `lm_head.weight`.
    """


@event_rule(
    SPECULATORS_CONFIG_WITH_MODEL_TYPE,
    "a speculators config also carries a top-level model_type",
)
def speculators_config_with_model_type() -> None:
    """## What it checks
    A config with speculators keys has no top-level `model_type`.

    ## Why it matters
    vLLM only takes the speculators route when `model_type` is absent; otherwise it parses
    the file as a plain HF config, never flattens `transformer_layer_config`, and the draft
    cannot be built.

    ## Example
    A hand-edited speculators config with `"model_type": "llama"` added at the top.

    ## Fix
    Remove the top-level `model_type`.
    """


@event_rule(
    MISSING_CONFIG_FIELD,
    "the decoder config lacks a dimension the draft class needs",
)
def missing_config_field() -> None:
    """## What it checks
    The decoder config (top level, or `transformer_layer_config` for speculators) has
    `hidden_size`, `num_attention_heads` and `intermediate_size`.

    ## Why it matters
    The engine cannot build the draft layer.

    ## Example
    A speculators config whose `transformer_layer_config` was trimmed to a few keys.

    ## Fix
    Write the full decoder config.
    """


@rule(
    UNKNOWN_DRAFT_METHOD,
    "the checkpoint is neither recognisably EAGLE-3 nor EAGLE-1",
    scope=Scope.CHECKPOINT,
)
def unknown_draft_method(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Whether the checkpoint can be identified as an EAGLE-3 or EAGLE-1 draft (from
    `speculators_model_type`, the architecture name, the `fc` width or layer-0 shapes) when
    no `--method` is given.

    ## Why it matters
    Every other check depends on the method; engines that are not told it guess from the
    directory name.

    ## Example
    A plain `LlamaForCausalLM` config with no `fc.weight`.

    ## Fix
    Pass `--method eagle3` or `--method eagle` (and the same method to the engine).
    """
    if ctx.checkpoint.config is not None and ctx.method is None:
        other = non_eagle_kind(ctx.checkpoint.config)
        if other is not None:
            name, what = other
            yield Violation(
                f"the checkpoint is a {name} draft ({what}), not an EAGLE draft: no EAGLE-3 or "
                "EAGLE-1 draft class loads it",
                config_at("/architectures"),
                "serve it with the method made for it, in an engine release that has one "
                "(not with method eagle3 or eagle)",
            )
            return
        yield Violation(
            "cannot tell whether this is an EAGLE-3 or an EAGLE-1 draft: "
            + "; ".join(ctx.draft.method_evidence),
            config_at("/architectures"),
            "pass --method eagle3 or --method eagle",
        )


@rule(
    NOT_AN_EAGLE_DRAFT,
    "the checkpoint is a drafter of another kind (DFlash, DSpark, XPress, MTP)",
    scope=Scope.CHECKPOINT,
)
def not_an_eagle_draft(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Whether the checkpoint is a drafter that is not an EAGLE draft at all: a speculators
    `xpress`, `dflash`, `dflash2`, `dspark` or `mtp` config, or a DFlash / DSpark / XPress
    architecture (z-lab, TensorRT-LLM, DeepSpec).

    ## Why it matters
    These drafters read the target's hidden states too, but their heads, tensors and serving
    methods differ from EAGLE's: served with method `eagle3` they are refused or load the
    wrong class. draftfit's EAGLE checks do not describe how they are served.

    ## Example
    A speculators 0.9 `xpress` draft (`XPressSpeculator`, `token_embed`, `down_h`, `readout`).

    ## Fix
    Serve it with its own method where the engine release has one (vLLM accepts speculators
    `dflash` from 0.20.0, `dspark` from 0.25.0, `dflash2` from 0.29.0; none accepts `xpress`
    up to 0.34.0), never with `eagle3`.
    """
    other = non_eagle_kind(ctx.checkpoint.config)
    if other is None:
        return
    name, what = other
    yield Violation(
        f"this is a {name} draft ({what}), not an EAGLE draft: EAGLE-3 / EAGLE-1 serving and "
        "draftfit's EAGLE checks do not apply to it",
        config_at(
            "/speculators_model_type"
            if "speculators_model_type" in (ctx.checkpoint.config or {})
            else "/architectures/0"
        ),
        'serve it with the method made for it (e.g. vLLM `"method": "dflash"` where the '
        "release accepts it), not with eagle3",
    )


@event_rule(
    METHOD_GUESSED_AS_DRAFT_MODEL,
    "without a method, vLLM runs the EAGLE head as an ordinary draft model",
)
def method_guessed_as_draft_model() -> None:
    """## What it checks
    With `draftfit check --method auto` (an engine given no method): whether vLLM's guess
    from the draft path falls back to the plain `draft_model` method.

    ## Why it matters
    Where vLLM's plain draft-model method accepts an EAGLE checkpoint, it runs it as an
    ordinary language model, without the target's hidden states: it loads (with parts
    uninitialised) and every draft is garbage. Confirmed by running vLLM 0.34.0 on a draft
    stored in `./mydraft`. Versions without that method refuse it outright (method-mismatch).

    ## Example
    `--speculative-config '{"model": "./mydraft", "num_speculative_tokens": 3}'`.

    ## Fix
    Pass `"method": "eagle3"` (or `"eagle"`).
    """


@event_rule(
    UNSUPPORTED_ACTIVATION,
    "the draft's activation is not one the engine's draft MLP supports",
)
def unsupported_activation() -> None:
    """## What it checks
    The decoder config's `hidden_act` is one the engine's draft MLP implements (vLLM: `silu`).

    ## Why it matters
    vLLM raises `Unsupported activation` while building the draft (confirmed by running
    vLLM 0.34.0).

    ## Example
    `"hidden_act": "gelu"` copied from a non-Llama target.

    ## Fix
    Train the draft with `silu`.
    """


@event_rule(
    MULTI_LAYER_DRAFT_UNSUPPORTED,
    "the engine version builds only one-layer EAGLE-3 drafts and refuses this one",
)
def multi_layer_draft_unsupported() -> None:
    """## What it checks
    `num_hidden_layers` of an EAGLE-3 draft is 1 where the engine version refuses anything
    else (older SGLang, and its MLA draft class in every version).

    ## Why it matters
    SGLang raises `ValueError: EAGLE3 currently only supports 1 layer` while building the
    draft, after the target is loaded.

    ## Example
    A two-layer speculators draft (`layers.0.*`, `layers.1.*`) on an older SGLang.

    ## Fix
    Use an engine version that builds multi-layer drafts (`draftfit matrix` lists them), or a
    one-layer draft.
    """


@event_rule(
    DRAFT_KV_LAYER_COUNT,
    "the engine sizes the draft's KV cache from a config key that gives too few layers",
)
def draft_kv_layer_count() -> None:
    """## What it checks
    A draft config that carries `num_nextn_predict_layers` (often copied from a DeepSeek or
    Kimi target config) does not give fewer layers than the draft has, on engine versions
    that size the draft's KV-cache pool from it (later SGLang versions use only a positive
    value).

    ## Why it matters
    SGLang builds a KV pool with that many layers: `0` gives an empty pool and an
    IndexError the first time the draft runs, after the target is loaded: while start-up
    captures the draft's CUDA graphs (the default), else at the first request.

    ## Example
    An MLA draft for Kimi-K2 whose config keeps the target's `num_nextn_predict_layers: 0`,
    on an SGLang version that uses the value as it is.

    ## Fix
    Remove `num_nextn_predict_layers` from the draft config.
    """


@event_rule(
    DRAFT_SLIDING_WINDOW_IGNORED,
    "the draft was trained with a sliding window the engine version does not apply",
)
def draft_sliding_window_ignored() -> None:
    """## What it checks
    A draft whose config (or speculators `transformer_layer_config`) marks a layer
    `sliding_attention` in `layer_types` and sets `sliding_window`, on an engine version
    that does not apply that window to the draft's attention.

    ## Why it matters
    The draft was trained to attend only to the last `sliding_window` positions; served
    without the window it attends over the whole context, which it never saw in training.
    Short prompts are unaffected; acceptance drops as prompts grow past the window.
    speculators 0.7 and later train drafts with a window by default. One vLLM release
    (0.10.1, Llama drafts) instead fails while it builds such a draft, so it does not start;
    that finding says so and is an error.

    ## Example
    A speculators EAGLE-3 draft with `layer_types: ["sliding_attention"]` and
    `sliding_window: 2048` on a vLLM release that does not yet read the window for its draft
    class, on any SGLang launch without `--speculative-draft-window-size`, or on
    TensorRT-LLM.

    ## Fix
    vLLM: use the first release that applies the window for the draft's class (Llama drafts
    got it earlier than Qwen3 drafts; the finding names the release). SGLang reads no window
    from the config: pass `--speculative-draft-window-size N` (Llama EAGLE-3 drafts), where
    the version has the flag. TensorRT-LLM has no setting for it: expect lower acceptance on
    long prompts, or serve the draft with another engine.
    """
