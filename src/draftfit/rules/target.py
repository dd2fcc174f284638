"""DF5xx — the draft next to its target (verifier): capability, widths, context length."""

from __future__ import annotations

from draftfit.rule_ids import (
    DRAFT_CONTEXT_REFUSED,
    DRAFT_CONTEXT_SHORTER_THAN_TARGET,
    DRAFT_INHERITS_TARGET_QUANTIZATION,
    SHARED_EMBEDDING_WIDTH_MISMATCH,
    TARGET_CAPABILITY_UNKNOWN,
    TARGET_HIDDEN_SIZE_MISMATCH,
    TARGET_NOT_EAGLE3_CAPABLE,
)
from draftfit.rules.base import event_rule


@event_rule(
    TARGET_NOT_EAGLE3_CAPABLE,
    "the engine cannot run EAGLE-3 with this target",
    needs_target=True,
)
def target_not_eagle3_capable() -> None:
    """## What it checks
    The target can feed EAGLE-3 its aux hidden states in this engine version: older vLLM
    versions also require the target's text `model_type` to contain an allow-listed
    family (`llama`, `qwen`, ... grown per release); every version requires the target class
    to implement the EAGLE-3 interface (`SupportsEagle3`).

    ## Why it matters
    vLLM refuses to start: `Eagle3 is only supported for ... models` or `Model does not
    support EAGLE3 interface`.

    ## Example
    A Kimi-K2 target (`kimi_k2`, `DeepseekV3ForCausalLM`) on a vLLM version whose allow-list
    lacks it.

    ## Fix
    Use an engine version that supports the target family.
    """


@event_rule(
    TARGET_HIDDEN_SIZE_MISMATCH,
    "the draft expects target hidden states of another width",
    needs_target=True,
)
def target_hidden_size_mismatch() -> None:
    """## What it checks
    The width of the target hidden states the draft consumes (`target_hidden_size`, else the
    draft's `hidden_size`) equals the target's `hidden_size`; for EAGLE-1 the draft's
    `hidden_size` itself must equal it.

    ## Why it matters
    Not checked at load: the `fc` matmul fails at the first speculative step.

    ## Example
    A 4096-wide draft trained for Llama-3.1-8B next to Llama-3.3-70B (8192).

    ## Fix
    Use a draft trained for this target (set `target_hidden_size` only if `fc` really takes
    states of that width).
    """


@event_rule(
    SHARED_EMBEDDING_WIDTH_MISMATCH,
    "a draft without its own embedding borrows one of another width",
    needs_target=True,
)
def shared_embedding_width_mismatch() -> None:
    """## What it checks
    A draft that stores no `embed_tokens.weight` has the target's hidden size, since the
    engine then shares the target's embedding table.

    ## Why it matters
    vLLM asserts `hidden_states and input_embeds must have the same last dimension` during
    start-up.

    ## Example
    A 2048-wide draft with `target_hidden_size: 4096` and no stored embedding.

    ## Fix
    Store the draft's own `embed_tokens.weight` `[vocab_size, hidden_size]`.
    """


@event_rule(
    DRAFT_CONTEXT_SHORTER_THAN_TARGET,
    "the draft's rotary cache is shorter than the target's context",
    needs_target=True,
)
def draft_context_shorter_than_target() -> None:
    """## What it checks
    The draft's `max_position_embeddings` is at least the target's, on engine versions that
    size the draft's rotary cache from the draft config.

    ## Why it matters
    Long prompts index past the draft's rotary cache: device-side asserts or garbage drafts
    beyond that length (the official EAGLE-3 Llama drafts say 2048).

    ## Example
    `max_position_embeddings: 2048` next to a 131,072-token target.

    ## Fix
    Raise the draft's `max_position_embeddings` to the target's, or cap `--max-model-len`.
    """


@event_rule(
    TARGET_CAPABILITY_UNKNOWN,
    "draftfit has no record of whether the target class supports EAGLE-3",
    needs_target=True,
)
def target_capability_unknown() -> None:
    """## What it checks
    Whether draftfit's data says if the target's class implements the engine's EAGLE-3
    interface at this version.

    ## Why it matters
    draftfit does not guess: for classes first seen in a later release, or never recorded,
    it says so rather than call the pair compatible or incompatible.

    ## Example
    A `TeleChat3ForCausalLM` target on a vLLM release older than the first one draftfit has
    a record of it for.

    ## Fix
    Check the target's model class in that vLLM release for `SupportsEagle3`.
    """


@event_rule(
    DRAFT_CONTEXT_REFUSED,
    "the engine refuses a draft whose context is shorter than the target's",
    needs_target=True,
)
def draft_context_refused() -> None:
    """## What it checks
    The draft config's `max_position_embeddings` is at least the target's context length
    where the engine version refuses a shorter draft (SGLang: the draft model config is
    built with the server's context length).

    ## Why it matters
    SGLang raises `ValueError: User-specified context_length ... is greater than the derived
    context_length ...` at start-up unless `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1` is
    set; in older releases that variable does not enlarge the rotary cache, and long prompts
    fail with illegal memory accesses.

    ## Example
    A draft with `max_position_embeddings: 2048` next to a 131,072-token target.

    ## Fix
    Set the draft's `max_position_embeddings` to the target's (the draft was trained with
    rotary embeddings, which extend to any position), or cap `--context-length`.
    """


@event_rule(
    DRAFT_INHERITS_TARGET_QUANTIZATION,
    "the draft takes the target's --quantization and is not quantized that way",
    needs_target=True,
)
def draft_inherits_target_quantization() -> None:
    """## What it checks
    A quantized target (its config.json has a `quantization_config`) next to a draft without
    one, on SGLang: SGLang builds the draft with the quantization method given for the target
    on the command line (`--quantization`).

    ## Why it matters
    A launch that passes `--quantization awq` (or gptq, compressed-tensors, ...) for the
    target makes SGLang look for that method's config in the draft's directory, and start-up
    fails (`ValueError: Cannot find the config file for awq`). Without `--quantization`,
    SGLang reads each model's own config and nothing happens, so this is a note, not an
    error.

    ## Example
    An AWQ target and a bf16 SpecForge draft launched with `--quantization awq_marlin`.

    ## Fix
    Leave `--quantization` out (SGLang reads the target's method from its config.json) or,
    where the release has it, pass `--speculative-draft-model-quantization unquant`.
    """
