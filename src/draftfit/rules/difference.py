"""DF8xx — differences between a draft and a reference (`draftfit diff`).

Detection lives in :mod:`draftfit.commands.diff_findings`, which compares the two checkpoints
through each engine's view; these entries document the codes (`draftfit rule DF803`). Error severity
means the difference changes what the engine builds or runs; info means spelling or raw.
"""

from __future__ import annotations

from collections.abc import Callable

from draftfit.rule_ids import (
    AUX_LAYERS_DIFFER,
    CONFIG_KEY_DIFFERS,
    DIMENSION_DIFFERS,
    DRAFT_CLASS_DIFFERS,
    EMBEDDING_PRESENCE_DIFFERS,
    ENGINE_VERDICT_DIFFERS,
    METHOD_DIFFERS,
    NORM_BEHAVIOUR_DIFFERS,
    PARAMETER_DIFFERS,
    SPELLING_ONLY,
    TENSOR_DTYPE_DIFFERS,
    TENSOR_NAME_DIFFERS,
    VOCAB_MAP_DIFFERS,
    RuleId,
)
from draftfit.rules.base import Check, DocHolder, Scope, documented_rule


def _diff_rule(rule_id: RuleId, summary: str) -> Callable[[DocHolder], Check]:
    """Declare a DF8xx code; `draftfit.commands.diff_findings` does the detection."""
    return documented_rule(rule_id, summary, lambda ctx: iter(()), scope=Scope.DIFF)


@_diff_rule(
    METHOD_DIFFERS,
    "the two checkpoints are different kinds of draft (EAGLE-3 vs EAGLE-1)",
)
def method_differs() -> None:
    """## What it checks
    Both checkpoints are the same kind of draft.

    ## Why it matters
    An EAGLE-3 head and an EAGLE-1 head are different models with different inputs; nothing
    else is comparable.

    ## Example
    An EAGLE-1 `fc [H, 2H]` draft against an EAGLE-3 reference.

    ## Fix
    Compare against a reference of the same kind.
    """


@_diff_rule(
    DRAFT_CLASS_DIFFERS,
    "the engine builds a different draft class for each",
)
def draft_class_differs() -> None:
    """## What it checks
    The engine resolves both checkpoints to the same draft class (names registered as
    aliases of one class, such as `LlamaForCausalLMEagle3` and `Eagle3LlamaForCausalLM` in
    vLLM, count as the same).

    ## Why it matters
    Different classes build different layers (Llama vs Qwen3 vs MLA attention).

    ## Example
    A speculators draft with a `qwen3` layer config (`Eagle3Qwen3ForCausalLM` where vLLM has it)
    against a Llama-layer reference.

    ## Fix
    Nothing to fix if intended; the drafts are different models.
    """


@_diff_rule(
    DIMENSION_DIFFERS,
    "a dimension or setting the draft class reads differs",
)
def dimension_differs() -> None:
    """## What it checks
    Every value the draft class reads, compared after the engine's own defaults and
    derivations: hidden size, heads, KV heads, `head_dim` (declared, else hidden/heads),
    intermediate size, target hidden size, vocab and draft vocab, number of layers and of aux
    states, activation, RMSNorm epsilon, RoPE settings, biases, sliding window.

    ## Why it matters
    Each changes what the engine builds or computes: `head_dim` 112 vs 128 changes every
    attention shape; `rope_theta` changes every rotary embedding.

    ## Example
    `head_dim` 128 in the reference and missing in the draft, whose 7168/64 gives 112.

    ## Fix
    Make the config describe the trained model (e.g. declare `head_dim`).
    """


@_diff_rule(
    AUX_LAYERS_DIFFER,
    "the engine feeds them different target layers, or they were trained on different ones",
)
def aux_layers_differ() -> None:
    """## What it checks
    The trained aux layers (converted to capture-before counting from wherever and however
    each producer wrote them) and the layers the engine will actually capture for each.

    ## Why it matters
    Drafts read the target's hidden states at those layers; different layers mean different
    inputs.

    ## Example
    A SpecForge draft nesting `[1, 15, 28]` (capture-before `[2, 16, 29]`) against a
    speculators draft with top-level `[1, 15, 28]`.

    ## Fix
    Write the trained ids where the engine reads them, in its counting.
    """


@_diff_rule(NORM_BEHAVIOUR_DIFFERS, "the engine runs different norm placements")
def norm_behaviour_differs() -> None:
    """## What it checks
    The norm placement the engine runs for each checkpoint (`norm_before_residual`,
    `norm_before_fc`, `fc_norm`, `norm_output`), after the engine's defaults: vLLM's
    speculators adaptor defaults `norm_before_residual` to true, plain configs to false.

    ## Why it matters
    The draft computes something else than it was trained to.

    ## Example
    A speculators draft (`norm_before_residual: true`) against a SpecForge draft (no key,
    i.e. false).

    ## Fix
    Nothing to fix if both are right for their training; otherwise write the trained value.
    """


@_diff_rule(
    PARAMETER_DIFFERS,
    "a parameter the engine loads is missing on one side or has another shape",
)
def parameter_differs() -> None:
    """## What it checks
    Every parameter the engine builds, compared by canonical name (so `midlayer.*` and
    `layers.0.*` match): present on both sides, with the same shape.

    ## Why it matters
    A parameter missing on one side is uninitialised or borrowed there; a different shape is
    a different model.

    ## Example
    `lm_head.weight` `[32000, 7168]` vs `[163840, 7168]`.

    ## Fix
    Nothing to fix if intended.
    """


@_diff_rule(VOCAB_MAP_DIFFERS, "the draft vocabularies (d2t) differ")
def vocab_map_differs() -> None:
    """## What it checks
    The bytes of the two `d2t` maps (a few hundred KB, read and hashed).

    ## Why it matters
    Different maps mean the drafts propose different target tokens for the same draft id.

    ## Example
    Two drafts whose 32,000-token vocabularies were selected from different data.

    ## Fix
    Nothing to fix if intended.
    """


@_diff_rule(
    ENGINE_VERDICT_DIFFERS,
    "the engine refuses or crashes on one checkpoint but not on the other",
)
def engine_verdict_differs() -> None:
    """## What it checks
    `draftfit check` on each side: one is incompatible with the engine version and the other
    is not.

    ## Why it matters
    The two do not even both run.

    ## Example
    A draft with `model.`-prefixed tensor names against the same draft with bare names.

    ## Fix
    Run `draftfit check` on the incompatible one.
    """


@_diff_rule(
    SPELLING_ONLY,
    "written differently, resolved the same way by the engine",
)
def spelling_only() -> None:
    """## What it checks
    Differences the engine resolves the same way: `architectures` names that map to one
    class, config formats (speculators `transformer_layer_config` vs a flat config), tensor
    naming conventions, aux ids written in another place or counting convention that denote
    the same layers, `head_dim` declared vs derived to the same value.

    ## Why it matters
    They are the noise of a raw diff; listing them says why they do not matter.

    ## Example
    `Eagle3DraftModel` vs `LlamaForCausalLMEagle3` under a vLLM version that registers both.

    ## Fix
    None needed.
    """


@_diff_rule(
    EMBEDDING_PRESENCE_DIFFERS,
    "one side stores embed_tokens, the other borrows the target's",
)
def embedding_presence_differs() -> None:
    """## What it checks
    Whether each side stores `embed_tokens.weight`.

    ## Why it matters
    Producers store a copy of the target's embedding; engines then share the target's, so
    the two usually run the same. They differ only if the stored table is not the target's.

    ## Example
    A speculators draft (embedding stored) against a SpecForge draft (not stored).

    ## Fix
    None needed when the stored table is the target's.
    """


@_diff_rule(
    CONFIG_KEY_DIFFERS,
    "raw config.json difference (key on one side, or another value)",
)
def config_key_differs() -> None:
    """## What it checks
    config.json key by key (JSON pointers), with decoder fields of nested conventions mapped
    onto one name (`/transformer_layer_config/hidden_size` compares with `/hidden_size`).

    ## Why it matters
    The raw view beneath the semantic one, for completeness.

    ## Example
    `/speculators_config/...` keys only on the speculators side.

    ## Fix
    None needed unless a semantic finding points at it.
    """


@_diff_rule(
    TENSOR_DTYPE_DIFFERS,
    "a tensor is stored in another dtype (the engine casts to the serving dtype)",
)
def tensor_dtype_differs() -> None:
    """## What it checks
    The stored dtype of every tensor both sides have.

    ## Why it matters
    Engines cast weights to the serving dtype, so it rarely changes behaviour; it changes
    checkpoint size and can hint at a different export path.

    ## Example
    `fc.weight` F32 vs BF16.

    ## Fix
    None needed.
    """


@_diff_rule(
    TENSOR_NAME_DIFFERS,
    "a tensor only one side stores, that the engine ignores",
)
def tensor_name_differs() -> None:
    """## What it checks
    Tensors stored on one side only that the engine skips (`t2d`, `mask_hidden`).

    ## Why it matters
    They do not change what runs; listed for completeness.

    ## Example
    `t2d` in a SpecForge draft and not in a ModelOpt export.

    ## Fix
    None needed.
    """
