"""DF9xx — checkpoint hygiene that no engine rejects but that predicts trouble."""

from __future__ import annotations

import re
from collections.abc import Iterator

from draftfit.checkpoint.dtypes import FLOAT_DTYPES
from draftfit.checkpoint.values import all_ones
from draftfit.draft.dialects import SPECULATORS, UNKNOWN
from draftfit.engines.draft_quant import quant_suffix
from draftfit.rule_ids import (
    CONFIG_DTYPE_MISMATCH,
    FLOAT32_WEIGHTS,
    LOCAL_VERIFIER_PATH,
    UNKNOWN_CONVENTION,
    UNTRAINED_LAYER_WEIGHTS,
    RuleId,
)
from draftfit.rules.base import Context, Location, Scope, Violation, config_at, rule

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[RuleId, ...] = (
    UNTRAINED_LAYER_WEIGHTS,
    FLOAT32_WEIGHTS,
    CONFIG_DTYPE_MISMATCH,
    LOCAL_VERIFIER_PATH,
    UNKNOWN_CONVENTION,
)
EMITS_STAGE = "rule's own check"

_QUANTIZED_DTYPES = frozenset({"F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2"})
_NORM = re.compile(r"^layers\.\d+\.(input_layernorm|post_attention_layernorm|hidden_norm)\.weight$")


@rule(
    UNTRAINED_LAYER_WEIGHTS,
    "decoder norms are exactly 1.0: the layer looks freshly initialised",
    scope=Scope.CHECKPOINT,
)
def untrained_layer_weights(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Reads the decoder layers' RMSNorm weights (a few KB) and flags a layer whose norms are
    all exactly 1.0, their initial value. It runs on every check; the value rules (DF7xx,
    `--values`) extend the same evidence to every tensor.

    ## Why it matters
    `speculators convert` 0.2.0–0.4.x dropped `midlayer.*` tensors from SafeAILab, SpecForge
    and ModelOpt sources and saved a freshly initialised `layers.0` instead. Such a draft
    loads everywhere and has ~0 acceptance.

    ## Example
    An `Eagle3Speculator` checkpoint with `speculators_version: 0.3.0` whose
    `layers.0.input_layernorm.weight` is all ones.

    ## Fix
    Re-convert from the original checkpoint with speculators >= 0.5 or `draftfit convert`.
    """
    draft = ctx.draft
    by_layer: dict[str, list[str]] = {}
    for canonical in draft.tensors:
        if _NORM.match(canonical):
            by_layer.setdefault(canonical.split(".")[1], []).append(canonical)
    for layer, names in sorted(by_layer.items()):
        if all(all_ones(ctx.checkpoint, draft.tensors[name]) for name in names):
            hint = ""
            if draft.dialect.name == SPECULATORS and draft.dialect.variant == "converted":
                hint = " (speculators convert 0.2–0.4 lost `midlayer.*` weights this way)"
            first = names[0]
            yield Violation(
                f"every norm weight of decoder layer {layer} is exactly 1.0: the layer looks "
                f"untrained{hint}",
                Location(draft.tensors[first].file, tensor=draft.raw(first)),
                "re-convert from the original trained checkpoint",
            )


@rule(
    FLOAT32_WEIGHTS,
    "the draft stores float32 weights",
    scope=Scope.CHECKPOINT,
)
def float32_weights(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Whether the draft's floating-point weights are stored as F32.

    ## Why it matters
    Engines cast the draft to the serving dtype, so it works, but the checkpoint is twice
    as large as needed, and some early EAGLE checkpoints stored float32 embeddings next to
    half-precision layers.

    ## Example
    `fc.weight` stored as F32.

    ## Fix
    Save in bfloat16 (or the target's dtype).
    """
    f32 = [t for t in ctx.checkpoint.tensors.values() if t.dtype == "F32"]
    floats = [t for t in ctx.checkpoint.tensors.values() if t.dtype in FLOAT_DTYPES]
    if f32 and len(f32) * 2 >= len(floats):
        yield Violation(
            f"{len(f32)} of {len(floats)} floating-point tensors are F32 (first `{f32[0].name}`)",
            Location(f32[0].file, tensor=f32[0].name),
            "save the draft in bfloat16",
        )


@rule(
    CONFIG_DTYPE_MISMATCH,
    "config.json declares another dtype than the stored tensors",
    scope=Scope.CHECKPOINT,
)
def config_dtype_mismatch(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    `torch_dtype`/`dtype` in config.json matches the dtype of the stored float tensors.

    ## Why it matters
    Tools that trust the config (and `--dtype auto` in some engines) pick the wrong dtype;
    speculators before 0.7 wrote the in-memory dtype while saving bf16.

    ## Example
    `"torch_dtype": "float32"` with BF16 tensors.

    ## Fix
    Write the stored dtype into the config.
    """
    draft = ctx.draft
    field_name = "torch_dtype" if draft.field("torch_dtype").present else "dtype"
    declared = draft.get(field_name)
    if not isinstance(declared, str):
        return
    names = {"float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64"}
    expected = names.get(declared)
    if expected is None:
        return
    # A quantized draft declares its compute dtype; its quantized weights and their scales
    # are stored in the scheme's own dtypes.
    quantized = ctx.checkpoint.config is not None and isinstance(
        ctx.checkpoint.config.get("quantization_config"), dict
    )
    counts: dict[str, int] = {}
    for name, t in ctx.checkpoint.tensors.items():
        if quantized and (t.dtype in _QUANTIZED_DTYPES or quant_suffix(name) is not None):
            continue
        if t.dtype in FLOAT_DTYPES:
            counts[t.dtype] = counts.get(t.dtype, 0) + t.numel
    if not counts:
        return
    stored = max(counts, key=counts.__getitem__)
    if stored != expected:
        yield Violation(
            f"config.json says `{declared}` but most weights are stored as {stored}",
            config_at(draft.pointer(field_name)),
            f"set `{field_name}` to the stored dtype",
        )


@rule(
    LOCAL_VERIFIER_PATH,
    "the speculators verifier is a local path",
    scope=Scope.CHECKPOINT,
)
def local_verifier_path(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    `speculators_config.verifier.name_or_path` names a Hub repository rather than a path on
    the training machine.

    ## Why it matters
    `vllm serve <draft>` reads the verifier from this field; vLLM >= 0.33 refuses local
    paths ("Speculators verifier must name a remote model repository") and older versions
    fail to find the path on another machine. Serving with `--model TARGET
    --speculative-config` is unaffected.

    ## Example
    `"/proving-grounds/machine/.../Llama-3.1-8B-Instruct"`.

    ## Fix
    Set it to the Hub id of the target, e.g. `meta-llama/Llama-3.1-8B-Instruct`.
    """
    value = ctx.draft.get("verifier.name_or_path")
    if isinstance(value, str) and (
        value.startswith(("/", "./", "~", "../")) or value.count("/") > 1
    ):
        yield Violation(
            f"`verifier.name_or_path` is `{value}`, a local path",
            config_at("/speculators_config/verifier/name_or_path"),
            "set it to the target's Hub repository id",
        )


@rule(
    UNKNOWN_CONVENTION,
    "draftfit cannot tell which tool wrote the checkpoint",
    scope=Scope.CHECKPOINT,
)
def unknown_convention(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Whether the checkpoint matches a known producer convention (speculators, SpecForge,
    official EAGLE, ModelOpt, AngelSlim, legacy vLLM).

    ## Why it matters
    Conventions decide how aux ids are counted and which defaults apply; for an unknown one
    draftfit falls back to the most common reading and says so.

    ## Example
    A custom trainer writing `architectures: ["MyEagleHead"]`.

    ## Fix
    Write a known convention (`draftfit convert`).
    """
    dialect = ctx.draft.dialect
    if dialect.name == UNKNOWN and ctx.checkpoint.config is not None:
        yield Violation(
            "no known producer convention matches: " + "; ".join(dialect.evidence),
            config_at("/architectures"),
            None,
        )
