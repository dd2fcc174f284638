"""DF5xx — the draft next to its target (verifier): capability, widths, context length,
quantization, attention and KV-cache geometry, and whether the draft was trained for it."""

from __future__ import annotations

from collections.abc import Iterator

from draftfit.draft.verifier_identity import MISMATCH, REVISION, VerifierCheck, check_verifier
from draftfit.rule_ids import (
    DRAFT_BUILT_WITH_TARGET_QUANTIZATION,
    DRAFT_CONTEXT_REFUSED,
    DRAFT_CONTEXT_SHORTER_THAN_TARGET,
    DRAFT_HEAD_SHARE_CHECK_FAILS,
    DRAFT_HEAD_SIZE_FALLBACK,
    DRAFT_HEAD_SIZE_UNSUPPORTED,
    DRAFT_INHERITS_TARGET_QUANTIZATION,
    DRAFT_KV_PAGE_SIZE_REFUSED,
    DRAFT_KV_TRANSFER_SIZE_DIFFERS,
    EMBEDDING_FROM_ANOTHER_TARGET,
    SHARED_EMBEDDING_WIDTH_MISMATCH,
    TARGET_CAPABILITY_UNKNOWN,
    TARGET_HIDDEN_SIZE_MISMATCH,
    TARGET_NOT_EAGLE3_CAPABLE,
    TARGET_QUANTIZATION_NOT_MODELLED,
    TARGET_ROTATION_UNCHECKED,
    TARGET_ROTATION_UNCOMPENSATED,
    VERIFIER_DIFFERS_FROM_TARGET,
    RuleId,
)
from draftfit.rules.base import Consequence, Context, Scope, Violation, config_at, event_rule, rule

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[RuleId, ...] = (VERIFIER_DIFFERS_FROM_TARGET,)
EMITS_STAGE = "rule's own check"


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
    Not checked at load: the `fc` matmul fails the first time the draft reads the target's
    states, in the start-up warm-up where the engine runs the draft on them (vLLM's V2 model
    runner), else at the first speculative step.

    ## Example
    A 4096-wide draft trained for Llama-3.1-8B next to Llama-3.3-70B (8192).

    ## Fix
    Use a draft trained for this target (set `target_hidden_size` only if `fc` really takes
    states of that width). The finding's fix reads the stored `fc.weight`: when its input
    width is a multiple of the target's and not of the width the config says, the config is
    wrong (set `target_hidden_size`); in the opposite case the draft was trained for another
    model, and no config edit serves it here.
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


@event_rule(
    TARGET_ROTATION_UNCOMPENSATED,
    "the target's hidden states are rotated (QuaRot) and the draft reads them unrotated",
    needs_target=True,
)
def target_rotation_uncompensated() -> None:
    """## What it checks
    The target was quantized with ModelSlim's QuaRot (its `quant_model_description.json` has
    `optional.quarot.rotation_map.global_rotation` or `metadata.quarot`, or the folder holds
    `optional/quarot.safetensors`), and the engine version loads the draft's `fc` (and, for
    a draft without its own embedding, the target's rotated embedding) as stored.

    ## Why it matters
    QuaRot multiplies the target's residual stream by an orthogonal matrix `Q`: the target's
    outputs do not change, but the hidden states the draft reads are `XQ`, not the `X` it was
    trained on. Nothing fails; acceptance drops to about zero (vllm-project/vllm-ascend#7038: mean
    acceptance length 1.07 with `Qwen3-32B-w8a8-quarot`, 3.09 once `fc` is anti-rotated).
    Upstream vLLM does not serve ModelSlim checkpoints and has no rotation handling; the
    vllm-ascend plugin releases draftfit's data names anti-rotate EAGLE-3 drafts on load
    (vllm-project/vllm-ascend#6914, #7038), but only when the description names the
    rotation file, and EAGLE-1 drafts never. SGLang (NPU) reads ModelSlim checkpoints but
    not the rotation (sgl-project/sglang#30524 is open). TensorRT-LLM does not serve
    ModelSlim checkpoints and is not checked.

    A draft whose speculators config names this very QuaRot checkpoint as its verifier (the
    same model name as the target's, one that says QuaRot) was trained on the rotated model
    and is not flagged; the rotation is a seeded random Hadamard matrix that can differ
    between exports (seed, block size), so a draft trained on another rotated copy, or on
    the base model, is.

    ## Example
    `Qwen3-32B-w8a8-QuaRot` (msModelSlim, `export_extra_info: true`) next to
    `RedHatAI/Qwen3-32B-speculator.eagle3`, on a vLLM release whose vllm-ascend plugin does
    not anti-rotate drafts.

    ## Fix
    Serve with a vLLM release whose vllm-ascend plugin anti-rotates the draft (the finding
    names it), with a description that names the rotation (re-export the target with
    msModelSlim's QuaRot `export_extra_info: true`); do not also pre-rotate the draft, or it
    is rotated twice.
    Otherwise use a draft trained on the rotated target, or multiply `fc.weight` by
    blockdiag(Q, Q, Q) (and store `embed_tokens.weight` times Q^T) yourself.
    """


@event_rule(
    DRAFT_BUILT_WITH_TARGET_QUANTIZATION,
    "the engine builds the unquantized draft with the target's quantization",
    needs_target=True,
)
def draft_built_with_target_quantization() -> None:
    """## What it checks
    A quantized target (its config.json has a `quantization_config`) next to a draft without
    one, on the vLLM release that builds the draft's decoder layers with the target's
    quantization config (`vllm_config.quant_config`). Earlier releases build them
    unquantized, later ones with the draft's own config.

    ## Why it matters
    For weight-only packed methods (AWQ, GPTQ, compressed-tensors int4 / NVFP4) the layers
    have `qweight` / `weight_packed` and no `weight`, so loading the draft's bf16 weights
    fails at start-up with a `KeyError`. For FP8 and INT8 methods the layers take the
    draft's weights in the quantized dtype next to scales the draft does not store, left at
    their initial values; the loader does not notice, and the draft's proposals are garbage
    (vllm-project/vllm#26402; acceptance 0 in vllm-project/vllm#9534).

    ## Example
    `Qwen/Qwen3-8B-FP8` next to a bf16 SpecForge EAGLE-3 draft on that release.

    ## Fix
    Serve with a vLLM release that builds the draft with its own quantization config.
    """


@event_rule(
    TARGET_QUANTIZATION_NOT_MODELLED,
    "the engine builds the draft with a target quantization draftfit has no record of",
    needs_target=True,
)
def target_quantization_not_modelled() -> None:
    """## What it checks
    As DF517, for a target `quant_method` (or compressed-tensors scheme) whose parameters
    draftfit has no record of in this vLLM version.

    ## Why it matters
    The draft's decoder layers are built with the target's method; whether an unquantized
    draft's weights load into them, and compute the right thing, depends on that method.
    draftfit does not guess.

    ## Example
    A `bitsandbytes` target next to a bf16 draft on that release.

    ## Fix
    Serve with a vLLM release that does not give the draft the target's quantization.
    """


@event_rule(
    TARGET_ROTATION_UNCHECKED,
    "draftfit could not tell whether the target's hidden states are rotated for the draft",
    needs_target=True,
)
def target_rotation_unchecked() -> None:
    """## What it checks
    Whether draftfit could complete the QuaRot check of DF516: the target's ModelSlim
    description (`quant_model_description.json`) was readable (locally, or fetched from the
    Hub when no larger than the JSON reader's cap; offline, only from the local cache), and,
    for a rotated target, draftfit has a record of the engine version's handling.

    ## Why it matters
    A rotated target makes an unrotated draft's proposals worthless without any error; when
    the check cannot be made, draftfit says so rather than calling the pair compatible on a
    guess.

    ## Example
    An offline check of a Hub target whose description is not in the local cache.

    ## Fix
    Check with the target's files available (download `quant_model_description.json`), or
    for a vLLM version draftfit has no vllm-ascend record of, check that the plugin
    anti-rotates the draft's `fc` for this target.
    """


@event_rule(
    DRAFT_HEAD_SHARE_CHECK_FAILS,
    "the engine's lm_head sharing check reads a `weight` the draft's quantized head lacks",
)
def draft_lm_head_share_check_fails() -> None:
    """## What it checks
    A draft that stores its own lm_head, quantized by its `quantization_config` with a
    scheme that keeps no `weight` tensor (compressed-tensors pack-quantized int4/int8:
    `lm_head.weight_packed`), on the vLLM releases whose V2 model runner compares the
    draft's head with the target's by reading `weight`, when that runner serves the pair
    (on some releases always, on others per target architecture). FP8, INT8 and NVFP4
    heads have a `weight` at that point, so this failure does not apply to them.

    ## Why it matters
    While it loads the draft, vLLM decides whether the draft can share the target's lm_head
    and reads the draft head's `weight`; a packed head has none, so start-up fails with
    `AttributeError: 'ParallelLMHead' object has no attribute 'weight'`
    (vllm-project/vllm#53104). The V1 model runner guards the same comparison.

    ## Example
    An EAGLE-3 draft quantized W4A16 by llm-compressor with lm_head among its targets,
    served with a release whose V2 runner reads the head's `weight`.

    ## Fix
    Use a vLLM release that keeps a head without `weight` (the finding names it), or serve
    with the V1 model runner where the release offers it (`VLLM_USE_V2_MODEL_RUNNER=0`), or
    store lm_head unquantized and list it in `quantization_config.ignore`.
    """


@event_rule(
    DRAFT_KV_PAGE_SIZE_REFUSED,
    "the engine needs one KV page size and the draft's KV geometry differs from the target's",
    needs_target=True,
)
def draft_kv_page_size_refused() -> None:
    """## What it checks
    The draft's per-token KV size (`num_key_value_heads`·`head_dim`, with `head_dim`
    derived as `hidden_size // num_attention_heads` where the config has none) equals the
    target's, on engine versions that keep the draft's attention layers in the target's
    paged KV cache and need one page size for every layer. MLA drafts and MLA targets
    (`kv_lora_rank`) cache a latent vector instead and are not compared.

    ## Why it matters
    vLLM registers the draft's layers with the target's and builds one KV-cache
    configuration for all of them; where the layers' page sizes differ and the release has
    no way to group them, start-up fails with a bare `NotImplementedError` from the KV-cache
    utilities. Later releases put full-attention layers of different page sizes in one
    group. SGLang gives the draft a KV pool of its own, built from the draft's config, so
    it is not affected.

    ## Example
    `AngelSlim/Qwen3-32B_eagle3` (`head_dim: 80`) next to Qwen3-32B (`head_dim: 128`, 8 KV
    heads).

    ## Fix
    Use an engine version that groups layers of different page sizes, or a draft trained
    with the target's `num_key_value_heads` and `head_dim`.
    """


@event_rule(
    DRAFT_HEAD_SIZE_UNSUPPORTED,
    "the default attention backend refuses the draft's head size",
    needs_target=True,
)
def draft_head_size_unsupported() -> None:
    """## What it checks
    The draft's head size (`head_dim`, else `hidden_size // num_attention_heads`, as the
    engine derives it) is one the engine version's default attention backend takes, where
    the target's is; a target whose own head size that backend refuses is served by another
    backend anyway, so it is not compared.

    ## Why it matters
    vLLM picks FlashAttention for every layer on GPUs of compute capability 8.0 or newer in
    the versions this rule fires for, and FlashAttention raises `Head size N is not
    supported by FlashAttention` while the draft is built. The choice depends on the GPU,
    so this is a warning: older GPUs get another backend.

    ## Example
    An EAGLE-1 head trained on Gemma-2 with no `head_dim` in its config: 4608 / 16 heads
    derives 288 (vllm-project/vllm#27808); or a `head_dim: 80` draft.

    ## Fix
    Use an engine version that serves such layers with another backend, or a draft whose
    `head_dim` is one the backend takes (declare `head_dim` where the derived value is not
    the trained one).
    """


@event_rule(
    DRAFT_HEAD_SIZE_FALLBACK,
    "the draft's head size sends its layers to another attention backend than the target's",
    needs_target=True,
)
def draft_head_size_fallback() -> None:
    """## What it checks
    As DF531, on engine versions that do not refuse the head size but give the draft's
    layers another backend (FlexAttention) while building their attention metadata with the
    target's.

    ## Why it matters
    vLLM falls back to FlexAttention for the draft's layers on GPUs where FlashAttention is
    the default, but its EAGLE proposer builds the draft's attention metadata with the
    first attention group's builder, the target's FlashAttention one: the draft's layers
    get metadata made for another backend. draftfit has not seen this run; the finding
    quotes the data's note.

    ## Example
    A `head_dim: 80` draft next to a `head_dim: 128` target.

    ## Fix
    Use an engine version that builds the draft's metadata with the draft's own backend, or
    a draft whose `head_dim` FlashAttention takes.
    """


@event_rule(
    DRAFT_KV_TRANSFER_SIZE_DIFFERS,
    "prefill/decode disaggregation refuses the draft's KV tensors of another size",
    needs_target=True,
)
def draft_kv_transfer_size_differs() -> None:
    """## What it checks
    As DF530, on engine versions that do run a draft whose per-token KV size differs from
    the target's: each layer then gets a KV tensor of its own size, and the KV transfer of
    prefill/decode disaggregation may require one size.

    ## Why it matters
    vLLM's NIXL connector (`--kv-transfer-config` with `NixlConnector`) asserts `All kv
    cache tensors must have the same size` while it registers the KV caches of a non-MLA
    model, so a disaggregated deployment fails at start-up (vllm-project/vllm#48529).
    Without disaggregation nothing happens: this is a warning, not an error.

    ## Example
    A draft with 4 KV heads next to a target with 8 (MiniMax-M3 with its EAGLE-3 draft).

    ## Fix
    Without prefill/decode disaggregation, nothing. With it, use an engine version without
    the assertion, or a draft trained with the target's KV geometry.
    """


# The command-line flag and settings key that say the draft is meant for the target.
DECLARE_FLAG = "--draft-is-for-target"
DECLARE_KEY = "draft-is-for-target"


@rule(
    VERIFIER_DIFFERS_FROM_TARGET,
    "the draft records another model as its verifier than the target it is checked with",
    scope=Scope.CHECKPOINT,
    needs_target=True,
)
def verifier_differs_from_target(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    What the draft records about the model it was trained for, next to what is known of
    the target. The draft side: speculators' `speculators_config.verifier.name_or_path` and
    `verifier.architectures` (the architectures only where speculators wrote the verifier's
    own: `speculators convert`, and training since 0.7.0), NeMo Automodel's `_name_or_path`
    and `model_type` (its draft config is the target's, with the draft's keys written over
    it), AngelSlim's `target_model_type`; SpecForge, the official EAGLE repository and
    ModelOpt record nothing. The target side, strongest first: its Hub id (`hf://OWNER/NAME`
    or a Hugging Face cache folder `models--OWNER--NAME/snapshots/REV`), `_name_or_path` in
    its config.json, its folder's name (a `--local-dir` download's or a plain one), then its
    `architectures` and `model_type`.

    Names are compared without the owner, case or `_`/`-` differences, Meta's `Meta-Llama`
    prefix, or the suffix of a quantized or reformatted copy (`-FP8`, `-AWQ`, `-GPTQ-Int4`,
    `-GGUF`, `-bnb-4bit`, `-quantized.w4a16`, `-hf`): a quantized copy holds the same
    model's weights, rounded, so a draft for the model serves its copies. Another family,
    version or size, base vs instruct vs thinking, is another model (an error); a trailing
    date alone (`Kimi-K2-Instruct` vs `Kimi-K2-Instruct-0905`) is another revision of the
    same model (a warning: retrained weights, the same architecture). A name is compared
    only where it says which model it is: a path like `/model/from_s3` or a folder called
    `target` does not, nor does a folder name that may be short for the other (`kimi-k2`
    and `Kimi-K2-Instruct`) or the other written without its dots (`kimi_k25` and
    `Kimi-K2.5`); the report says what was compared either way (the `Target`
    lines of the text report, `target.verifier` in JSON).

    ## Why it matters
    An EAGLE draft predicts the next tokens from the target's hidden states; a draft
    trained on another model's states loads without an error (same shapes: Kimi-K2 and
    Kimi-K2.5, Llama-3.1-8B and its instruct model) and its drafts are almost never
    accepted. Nothing else in a header check can tell such a pair apart.

    With `--values` and the target's weights, the embedding comparison (DF701) is the
    stronger evidence where the producer froze the embedding: when it agrees the finding
    says so; when the draft's embedding equals this target's on every row compared, the
    finding becomes a warning (the record may be stale, or the two models share their
    embedding).

    ## Example
    The speculators draft trained for Kimi-K2 (`verifier.name_or_path` a local
    `Kimi-K2-Instruct` folder) checked next to `moonshotai/Kimi-K2.5`.

    ## Fix
    Serve the draft with the model it was trained for, or use (or train) a draft for this
    target. If it was trained for this target after all (the record is stale, or the
    target is a copy under another name), say so: `--draft-is-for-target`, or
    `draft-is-for-target = true` in draftfit.toml (`[tool.draftfit]` in pyproject.toml);
    the finding then stays in the report as info. `--values` with the target's weights
    settles it where the producer froze the embedding (DF701).
    """
    if ctx.target is None:
        return
    check = check_verifier(ctx.draft, ctx.target)
    if check.outcome not in (MISMATCH, REVISION):
        return
    message = _verifier_message(check)
    consequence: Consequence | None = None
    condition: str | None = None
    fix = (
        "serve the draft with the model it was trained for, or use a draft trained for this "
        f"target; if it was trained for this target after all, say so with {DECLARE_FLAG} "
        f"(`{DECLARE_KEY} = true` in draftfit.toml); with the target's weights, --values "
        f"compares the draft's embedding with the target's ({EMBEDDING_FROM_ANOTHER_TARGET.code})"
    )
    if check.outcome == REVISION:
        consequence = Consequence.DEGRADES
        condition = (
            "as far as the revisions differ: the draft was trained for another dated "
            "revision of the target's model (retrained weights, the same architecture)"
        )
    matched = _embedding_matches(ctx)
    if matched is not None:  # the values were compared: nothing more to read
        fix = fix.rsplit("; with the target's weights", 1)[0]
    if matched is True and check.outcome == MISMATCH:
        consequence = Consequence.DEGRADES
        condition = (
            "if the recorded verifier is right: the draft's frozen embedding equals this "
            "target's on every row compared (--values), which speaks for this target"
        )
        message += "; but the draft's frozen embedding equals this target's on every row compared"
    elif matched is False:
        message += (
            "; the draft's frozen embedding differs from this target's too "
            f"({EMBEDDING_FROM_ANOTHER_TARGET.code})"
        )
    if check.declared:
        consequence, condition = Consequence.COSMETIC, None
        message = f"{DECLARE_FLAG}: counted as meant for this target, although {message}"
        fix = f"nothing, if the draft was indeed trained for this target ({DECLARE_FLAG})"
    yield Violation(
        message,
        config_at(check.pointer or "/speculators_config/verifier"),
        fix,
        consequence=consequence,
        condition=condition,
    )


def _verifier_message(check: VerifierCheck) -> str:
    lead = (
        "the draft was trained for another model than this target"
        if check.outcome == MISMATCH
        else "the draft was trained for another dated revision of the target's model"
    )
    text = f"{lead}: {check.deciding}"
    if check.shapes_agree:
        text += " (the widths and the vocabulary agree, so no shape check tells them apart)"
    return text


def _embedding_matches(ctx: Context) -> bool | None:
    """With `--values`: whether the draft's frozen embedding equals the target's on every
    row compared (True), differs (False); None when that was not compared."""
    facts = ctx.values
    c = facts.embedding if facts is not None else None
    if facts is None or c is None or facts.embed_frozen is not True or not c.rows_compared:
        return None
    return c.all_match
