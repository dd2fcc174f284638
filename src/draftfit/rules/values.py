"""DF7xx — weight values (`--values`): trained or not, finite, and trained for *this* target.

These rules read what :mod:`draftfit.values` observed (a sample of rows per tensor, or every
byte with `--values=full`); without `--values` they stay silent and read nothing. Every
message says whether it rests on a sample. DF901 (decoder norms at exactly 1.0) belongs to
the same family of evidence but runs on every check, since it reads only a few KB.

A briefly trained draft still looks much like its initialisation, so a warning or an error
about an untrained tensor rests only on exact signatures (exact zeros, exact ones, constant
rows, identical copies); a statistical resemblance to the initialiser is at most info.

DF710–DF714 read what :mod:`draftfit.values.mtp_scan` observed of a target's own MTP layers
(`check T --method mtp --values`): the signatures an exporter leaves when it ships an MTP
block that was never trained or never written. They stay silent for an EAGLE draft.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from draftfit.rule_ids import (
    EMBEDDING_FROM_ANOTHER_TARGET,
    EMBEDDING_SIMILARITY,
    FC_AUX_CHUNK_UNTRAINED,
    INIT_LIKE_STATISTICS,
    LM_HEAD_COPIED_FROM_TARGET,
    MTP_COPIES_DECODER_LAYER,
    MTP_NON_FINITE,
    MTP_NORMS_AT_INIT,
    MTP_TENSOR_CONSTANT,
    MTP_TENSOR_ZERO,
    NON_FINITE_VALUES,
    UNTRAINED_TENSOR,
    VALUES_EXCEED_SERVING_DTYPE,
    VALUES_NOT_CHECKED,
    RuleId,
)
from draftfit.rules.base import Context, Location, Scope, Violation, rule

if TYPE_CHECKING:
    from draftfit.values.facts import MtpTensorFacts, MtpValues, TensorFacts, ValueFacts

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[RuleId, ...] = (
    EMBEDDING_FROM_ANOTHER_TARGET,
    EMBEDDING_SIMILARITY,
    UNTRAINED_TENSOR,
    INIT_LIKE_STATISTICS,
    NON_FINITE_VALUES,
    VALUES_EXCEED_SERVING_DTYPE,
    FC_AUX_CHUNK_UNTRAINED,
    LM_HEAD_COPIED_FROM_TARGET,
    VALUES_NOT_CHECKED,
    MTP_TENSOR_ZERO,
    MTP_NON_FINITE,
    MTP_COPIES_DECODER_LAYER,
    MTP_TENSOR_CONSTANT,
    MTP_NORMS_AT_INIT,
)
EMITS_STAGE = "rule's own check"

# A frozen embedding is a copy of the target's, so every compared row matches; a single
# differing row already shows another model (siblings share few rows exactly, if any).
FROZEN_MATCH_FRACTION = 1.0
# Half or more of a matrix's rows constant (every value equal) is no accident of a few
# padding tokens: a trained projection has no constant rows at all, an initialised-to-a-
# constant one has all of them. Fewer constant rows are left alone.
CONSTANT_ROWS_FRACTION = 0.5
# A statistic within these bounds of an initialiser's is reported (info only): 5% on the
# standard deviation and 0.25 on the kurtosis are ~10 standard errors for the ≥ 100k
# values a sample holds, and trained projections have kurtosis well above 3.
INIT_STD_RTOL = 0.05
INIT_KURTOSIS_TOL = 0.25
INIT_MEAN_TOL = 0.05  # |mean| below 5% of the std: zero-mean, as initialisers are
NORMAL_KURTOSIS = 3.0  # N(0, initializer_range), what HF `_init_weights` draws
UNIFORM_KURTOSIS = 1.8  # U(-b, b), b = 1/sqrt(fan_in): torch.nn.Linear's default
DEFAULT_INITIALIZER_RANGE = 0.02  # transformers' default `initializer_range`
# The largest finite float16 value: anything above becomes inf when served in float16.
FLOAT16_MAX = 65504.0
FLOAT16_NAMES = ("float16", "half", "fp16")

_LAYER_NORM = re.compile(
    r"^layers\.(\d+)\.(input_layernorm|post_attention_layernorm|hidden_norm)\."
)
_EMBED = "embed_tokens.weight"


def _layer_of(name: str) -> str | None:
    match = _LAYER_NORM.match(name)
    return match.group(1) if match else None


def _layers_all_ones(facts: ValueFacts) -> set[str]:
    """Decoder layers whose norms are all exactly 1.0: DF901 reports those (on every check)."""
    by_layer: dict[str, list[bool]] = {}
    for name, t in facts.tensors.items():
        layer = _layer_of(name)
        if layer is not None:
            by_layer.setdefault(layer, []).append(t.all_one and t.values > 0)
    return {layer for layer, ones in by_layer.items() if all(ones)}


def _facts(ctx: Context) -> ValueFacts | None:
    return ctx.values


def _where(t: TensorFacts) -> Location:
    return Location(t.file, tensor=t.raw)


@rule(
    EMBEDDING_FROM_ANOTHER_TARGET,
    "the draft's frozen embedding is not this target's: it was trained for another target",
    scope=Scope.CHECKPOINT,
)
def embedding_from_another_target(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values` and a target with weights: the rows of the draft's `embed_tokens`
    against the same rows of the target's embedding (`model.embed_tokens.weight`,
    `language_model.model.embed_tokens.weight`, ...), when the producer froze the embedding
    in training (`embed_requires_grad: false`, SpecForge, the official EAGLE trainer).

    ## Why it matters
    A frozen embedding is an exact copy of the target's. If rows differ, the draft was
    trained next to another model with the same shapes — Kimi-K2 vs Kimi-K2.5, Llama-3.1
    vs 3.3, an earlier fine-tune. It loads everywhere and its drafts are almost never
    accepted; no header check can see it.

    ## Example
    A speculators draft trained for Kimi-K2 served with Kimi-K2.5: 0 of 256 sampled rows
    match, largest difference 0.03.

    ## Fix
    Serve the draft with the target it was trained for, or use (or train) a draft for this
    target.
    """
    facts = _facts(ctx)
    c = facts.embedding if facts else None
    if facts is None or c is None or facts.embed_frozen is not True or not c.rows_compared:
        return
    if c.rows_matched >= FROZEN_MATCH_FRACTION * c.rows_compared:
        return
    differ = c.rows_compared - c.rows_matched
    yield Violation(
        f"the draft's embedding differs from the target's `{c.target_tensor}` on {differ} of "
        f"{c.rows_compared} rows compared ({c.coverage.describe()}; {c.rows_matched} match "
        f"exactly, largest difference {c.max_diff:.3g}, first differing row "
        f"{c.first_mismatch}); {facts.frozen_evidence}, so a draft trained for this target "
        "holds an exact copy: it was trained for another target (or another revision)",
        Location(ctx.draft.tensors[_EMBED].file, tensor=c.draft_tensor),
        "serve the draft with the target it was trained for, or use a draft trained for this one",
    )


@rule(
    EMBEDDING_SIMILARITY,
    "the draft trained its embedding: how close it stays to the target's",
    scope=Scope.CHECKPOINT,
)
def embedding_similarity(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values` and a target with weights, for a draft whose producer trained the
    embedding (`embed_requires_grad: true`) or whose producer draftfit cannot tell: the mean
    cosine similarity of the draft's embedding rows with the target's same rows.

    ## Why it matters
    A trained embedding drifts from the target's, so an exact comparison means nothing; the
    similarity is still a hint — a draft trained next to this target stays close, one
    trained for an unrelated model does not. It cannot prove either, hence info.

    ## Example
    `embed_requires_grad: true`, mean cosine similarity 0.93 over 256 sampled rows.

    ## Fix
    Nothing to fix; compare with a draft known to work for this target if acceptance is low.
    """
    facts = _facts(ctx)
    c = facts.embedding if facts else None
    if facts is None or c is None or c.all_match or facts.embed_frozen is True:
        return
    yield Violation(
        f"mean cosine similarity of the draft's embedding rows with the target's "
        f"`{c.target_tensor}`: {c.mean_cosine:.3f} ({c.coverage.describe()}; "
        f"{c.rows_matched} rows identical, largest difference {c.max_diff:.3g}); "
        f"{facts.frozen_evidence}: a trained embedding drifts, so only similarity is "
        "meaningful, and it does not tell the acceptance rate",
        Location(ctx.draft.tensors[_EMBED].file, tensor=c.draft_tensor),
        None,
    )


@rule(
    UNTRAINED_TENSOR,
    "a tensor holds an exact signature of no training (zeros, ones, constant rows, a copy)",
    scope=Scope.CHECKPOINT,
)
def untrained_tensor(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values`: each floating-point tensor read for exact signatures of a tensor no
    training touched — every value exactly 0, every value exactly 1.0 (except a decoder
    layer whose norms are all 1.0, which DF901 reports), at least half of a matrix's rows
    constant, or the same bytes as another tensor of the same shape.

    ## Why it matters
    An early save, a failed run that still wrote files, or a converter that wrote freshly
    created tensors: the draft loads and drafts garbage. Exact signatures cannot come from
    training, however brief, so this is a warning; a mere resemblance to the initialiser's
    statistics is DF704 (info).

    ## Example
    `layers.0.mlp.down_proj.weight` all zeros; `k_proj` byte-identical to `v_proj`.

    ## Fix
    Re-export from the trained weights (the last training checkpoint, not the initial one).
    """
    facts = _facts(ctx)
    if facts is None:
        return
    seen: dict[tuple[str, str, tuple[int, ...]], TensorFacts] = {}
    covered = _layers_all_ones(facts)
    for name, t in facts.tensors.items():
        if not t.values:
            continue
        where = f"({t.coverage.describe()})"
        if t.all_zero and not name.endswith(".bias"):
            yield Violation(
                f"every value of `{t.raw}` {where} is exactly 0: no training touched it",
                _where(t),
                "re-export the trained weights",
            )
            continue
        if name == _EMBED:
            continue
        if t.all_one and _layer_of(name) not in covered:
            yield Violation(
                f"every value of `{t.raw}` {where} is exactly 1.0, its initial value",
                _where(t),
                "re-export the trained weights",
            )
            continue
        if t.is_matrix and t.rows and t.constant_rows >= CONSTANT_ROWS_FRACTION * t.rows:
            yield Violation(
                f"{t.constant_rows} of {t.rows} rows of `{t.raw}` {where} are constant "
                "(every value in the row equal): a trained projection has none",
                _where(t),
                "re-export the trained weights",
            )
            continue
        key = (t.digest, t.dtype, t.shape)
        other = seen.get(key)
        if other is not None and t.is_matrix and t.coverage == other.coverage:
            yield Violation(
                f"`{t.raw}` holds the same values as `{other.raw}` {where}: two independently "
                "trained tensors never do",
                _where(t),
                "re-export the trained weights",
            )
            continue
        seen.setdefault(key, t)


@rule(
    INIT_LIKE_STATISTICS,
    "weights whose statistics resemble the initialiser's (not proof of no training)",
    scope=Scope.CHECKPOINT,
)
def init_like_statistics(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values`: each projection matrix (not the embedding), and each aux block of
    `fc` unlike the other blocks, whose mean, standard deviation and kurtosis match an
    initialiser — N(0, `initializer_range`) as transformers
    draws, or torch.nn.Linear's U(-1/sqrt(fan_in), 1/sqrt(fan_in)) — within the tolerances
    `INIT_STD_RTOL`, `INIT_KURTOSIS_TOL` and `INIT_MEAN_TOL`.

    ## Why it matters
    A checkpoint saved before training looks exactly like this. So does a draft trained
    briefly (a thousand samples barely moves the weights), which is why this is info: it
    says what it saw, not that the draft is untrained.

    ## Example
    `layers.0.mlp.up_proj.weight`: std 0.0200 (initializer_range 0.02), kurtosis 3.01.

    ## Fix
    If the draft was meant to be trained at length, check that the exported weights are
    the last training step's.
    """
    facts = _facts(ctx)
    if facts is None:
        return
    normal_std = facts.initializer_range or DEFAULT_INITIALIZER_RANGE
    hits: list[tuple[TensorFacts, str, str]] = []  # tensor, what, statistics
    for name, t in facts.tensors.items():
        if not t.is_matrix or name == _EMBED or t.all_zero:
            continue
        width = t.values // t.rows if t.rows else 0
        label = _init_like(t.mean, t.std, t.kurtosis, width, normal_std)
        if label is not None:
            hits.append(
                (t, f"`{t.raw}`", f"std {t.std:.4g}, kurtosis {t.kurtosis:.2f} like {label}")
            )
            continue
        chunks = [(c, _init_like(c.mean, c.std, c.kurtosis, width, normal_std)) for c in t.chunks]
        if any(found is None for _, found in chunks):  # only a block unlike the others tells
            for c, found in chunks:
                if found is not None:
                    stats = f"std {c.std:.4g}, kurtosis {c.kurtosis:.2f} like {found}"
                    what = f"block {c.index} of `{t.raw}` (aux hidden state {c.index})"
                    hits.append((t, what, stats + " while other blocks are not"))
    if not hits:
        return
    first = hits[0][0]
    listed = "; ".join(f"{what} {stats}" for _, what, stats in hits[:4])
    more = f" and {len(hits) - 4} more" if len(hits) > 4 else ""
    sampled = any(not t.coverage.complete for t, _, _ in hits)
    yield Violation(
        f"{len(hits)} tensor(s) have the statistics of their initialiser ({listed}{more}; "
        f"{'on samples of rows' if sampled else 'read in full'}): a checkpoint saved before "
        "training looks like this, and so does a briefly trained one — this alone does not "
        "show the draft is untrained",
        _where(first),
        None,
    )


def _init_like(
    mean: float, std: float, kurtosis: float | None, fan_in: int, normal_std: float
) -> str | None:
    """The initialiser whose statistics these are, within the tolerances, else None."""
    if kurtosis is None or not std or abs(mean) > INIT_MEAN_TOL * std:
        return None
    uniform_std = (1.0 / (3.0 * fan_in)) ** 0.5 if fan_in else 0.0
    for label, expected_std, expected_kurtosis in (
        (f"N(0, {normal_std:g})", normal_std, NORMAL_KURTOSIS),
        (f"U(±1/sqrt({fan_in}))", uniform_std, UNIFORM_KURTOSIS),
    ):
        if (
            expected_std
            and abs(std / expected_std - 1.0) <= INIT_STD_RTOL
            and abs(kurtosis - expected_kurtosis) <= INIT_KURTOSIS_TOL
        ):
            return label
    return None


@rule(
    NON_FINITE_VALUES,
    "a tensor holds NaN or infinite values",
    scope=Scope.CHECKPOINT,
)
def non_finite_values(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values`: every floating-point value read is finite.

    ## Why it matters
    One NaN in a weight spreads to every hidden state and logit of the draft: every draft
    token is rejected, and sampling from NaN probabilities can fail on the first step.
    Diverged training and broken conversions produce them.

    ## Example
    `fc.weight` with 12 NaN among the sampled rows.

    ## Fix
    Export from the last checkpoint before training diverged; check the conversion.
    """
    facts = _facts(ctx)
    if facts is None:
        return
    for t in facts.tensors.values():
        if t.nan or t.inf:
            yield Violation(
                f"`{t.raw}` holds {t.nan} NaN and {t.inf} infinite value(s) among "
                f"{t.values} ({t.coverage.describe()})",
                _where(t),
                "export the weights from a step before training diverged",
            )


@rule(
    VALUES_EXCEED_SERVING_DTYPE,
    "values overflow the dtype the engine serves in (float16)",
    scope=Scope.CHECKPOINT,
)
def values_exceed_serving_dtype(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values`, when the serving dtype (the target's `torch_dtype`, else the draft's)
    is float16: no value's magnitude exceeds float16's largest finite value, 65504.

    ## Why it matters
    Engines cast the draft to the serving dtype at load; a float32 or bfloat16 value above
    65504 becomes infinite in float16, and the draft's outputs become NaN.

    ## Example
    An F32 `fc.weight` with a value of 1.2e5, served with a float16 target.

    ## Fix
    Serve in bfloat16, or rescale/clip the offending weights.
    """
    facts = _facts(ctx)
    if facts is None or (facts.serving_dtype or "").lower() not in FLOAT16_NAMES:
        return
    for t in facts.tensors.values():
        if t.max_abs > FLOAT16_MAX:
            yield Violation(
                f"`{t.raw}` ({t.dtype}) holds a value of magnitude {t.max_abs:.4g} "
                f"({t.coverage.describe()}), above float16's largest {FLOAT16_MAX:g}; served in "
                f"{facts.serving_dtype} ({facts.serving_dtype_source}) it becomes infinite",
                _where(t),
                "serve in bfloat16, or rescale the weights into float16's range",
            )


@rule(
    FC_AUX_CHUNK_UNTRAINED,
    "the fc columns fed by one aux layer show an exact signature of no training",
    scope=Scope.CHECKPOINT,
)
def fc_aux_chunk_untrained(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values`: `fc.weight` is split into one block of columns per aux hidden state;
    each block is checked for exact zeros, a majority of constant rows, or the same values
    as another block.

    ## Why it matters
    Such a block means training never used that target layer's hidden state (a trainer
    that fed zeros for one aux layer, or a converter that padded `fc`): the draft drafts
    with one input it never learned to read.

    ## Example
    A 3-aux draft whose third block of `fc` columns is all zeros.

    ## Fix
    Retrain with every aux layer fed, or check the trainer's aux-layer capture.
    """
    facts = _facts(ctx)
    t = facts.tensors.get("fc.weight") if facts else None
    if t is None or len(t.chunks) < 2 or t.all_zero:
        return  # an all-zero fc is DF703's
    count = len(t.chunks)
    for chunk in t.chunks:
        if not chunk.rows:
            continue
        what = None
        if chunk.all_zero:
            what = "every value is exactly 0"
        elif chunk.constant_rows >= CONSTANT_ROWS_FRACTION * chunk.rows:
            what = f"{chunk.constant_rows} of {chunk.rows} rows are constant"
        elif chunk.same_as is not None:
            what = f"it holds the same values as block {chunk.same_as}"
        if what is not None:
            yield Violation(
                f"block {chunk.index} of {count} of `{t.raw}` (the columns fed by aux hidden "
                f"state {chunk.index}): {what} ({t.coverage.describe()}), so training never "
                "used that aux layer",
                _where(t),
                "retrain with every aux hidden state fed",
            )


@rule(
    LM_HEAD_COPIED_FROM_TARGET,
    "the draft's lm_head is an exact copy of the target's",
    scope=Scope.CHECKPOINT,
)
def lm_head_copied_from_target(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values` and a target with weights, when the draft's vocabulary equals the
    target's: whether the draft's `lm_head` rows are the target's (its `lm_head`, or its
    embedding when tied).

    ## Why it matters
    An EAGLE-3 head is normally trained; an exact copy means it was frozen (or never
    trained), so drafting relies entirely on the layer before it. Fine if intended.

    ## Example
    A full-vocabulary draft whose `lm_head.weight` matches the target's on all 256 sampled
    rows.

    ## Fix
    Nothing if the head was frozen on purpose; otherwise check the training setup.
    """
    facts = _facts(ctx)
    c = facts.head if facts else None
    if c is None or not c.all_match:
        return
    yield Violation(
        f"the draft's `{c.draft_tensor}` equals the target's `{c.target_tensor}` on every row "
        f"compared ({c.coverage.describe()}): the head was frozen, not trained",
        Location(ctx.draft.tensors["lm_head.weight"].file, tensor=c.draft_tensor),
        None,
    )


@rule(
    VALUES_NOT_CHECKED,
    "part of the value checks could not run (format, dtype, or no target weights)",
    scope=Scope.CHECKPOINT,
)
def values_not_checked(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values`: which tensors or comparisons the value checks could not read — a dtype
    draftfit does not decode (F4, F6, complex), PyTorch `.bin` weights, a block-quantized
    target embedding, a target given by its config.json only.

    ## Why it matters
    A value check that did not run is not a clean result; this says which ones.

    ## Example
    `--target ./Kimi-K2-Instruct` holding only config.json: the embedding comparison is
    skipped.

    ## Fix
    Give a target directory with its weights (or a Hub repository), or convert the draft
    to safetensors.
    """
    facts = _facts(ctx)
    if facts is None:
        return
    for skipped in facts.skipped:
        what = f"`{skipped.tensor}`" if skipped.what == "tensor" else skipped.what
        yield Violation(
            f"{what} not checked: {skipped.reason}",
            Location(skipped.file, tensor=skipped.tensor),
            None,
        )


# ------------------------------------------------------------------ MTP layers

# Names whose values may legitimately be all zero or all equal: biases (a bias starts at
# zero and may stay there) and a weight's quantization scales (a per-tensor scale is one
# value; a scale of zero is the weight's own signature, reported on the weight).
_BIAS_ENDINGS = (".bias", "_bias")
_SCALE_ENDINGS = (".weight_scale_inv", ".weight_scale", ".input_scale")
_REEXPORT = (
    "the exporter must write the MTP layer's trained weights (every tensor of the MTP layer, "
    "from the training checkpoint that trained it); if the MTP layers were never trained, "
    "serve the target without MTP"
)


def _mtp(ctx: Context) -> MtpValues | None:
    return ctx.values.mtp if ctx.values is not None else None


def _at(t: MtpTensorFacts) -> Location:
    return Location(t.file, tensor=t.name)


def _listed(tensors: list[MtpTensorFacts], limit: int = 4) -> str:
    names = ", ".join(f"`{t.name}`" for t in tensors[:limit])
    return names + (f" and {len(tensors) - limit} more" if len(tensors) > limit else "")


def _coverage(tensors: list[MtpTensorFacts]) -> str:
    if all(t.coverage.complete for t in tensors):
        return "read in full"
    return f"on samples of rows ({tensors[0].coverage.describe()} for the first)"


def _by_layer(tensors: list[MtpTensorFacts]) -> dict[int, list[MtpTensorFacts]]:
    grouped: dict[int, list[MtpTensorFacts]] = {}
    for t in tensors:
        grouped.setdefault(t.layer, []).append(t)
    return grouped


def _at_norm_init(t: MtpTensorFacts, mtp: MtpValues) -> bool:
    return t.norm and t.constant and t.values > 0 and t.first == mtp.norm_init


@rule(MTP_TENSOR_ZERO, "a tensor of the target's MTP layer is all zeros", scope=Scope.CHECKPOINT)
def mtp_tensor_zero(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--method mtp --values` (or an MTP launch and `--values`): every floating-point
    tensor of the target's MTP layers — `eh_proj`, `enorm`, `hnorm`, `shared_head.*`, the
    MTP decoder layer's attention and MLP (experts included) — is read (a few rows, or every
    byte with `--values=full`) for values that are all exactly 0. Biases are left out (they
    may start and stay at 0), and so are the norms of families whose norm scales by
    `1 + weight` (Qwen3-Next), where 0 is the initial value (DF714). A float8 weight is
    judged on its stored values (a block scale keeps a zero a zero); its scale tensor is
    read too.

    ## Why it matters
    No training leaves a weight at exactly 0: a tensor of zeros is one the exporter
    allocated and never filled (an MTP block built from the config and saved without its
    weights, a conversion that dropped the layer's values). The engine loads it without a
    word, and the MTP layer's output is garbage: every drafted token is rejected.

    ## Example
    `model.layers.61.eh_proj.weight` all zeros (on a sample of 16 of 7168 rows).

    ## Fix
    The exporter must write the MTP layer's trained weights from the checkpoint that
    trained them; if the MTP layers were never trained, serve the target without MTP.
    """
    mtp = _mtp(ctx)
    if mtp is None:
        return
    zero = [
        t
        for t in mtp.tensors.values()
        if t.values
        and t.all_zero
        and not t.name.endswith(_BIAS_ENDINGS)
        and not (t.norm and mtp.norm_init == 0.0)
    ]
    for layer, tensors in sorted(_by_layer(zero).items()):
        of = sum(1 for t in mtp.tensors.values() if t.layer == layer)
        yield Violation(
            f"{len(tensors)} of the {of} tensors read of MTP layer {layer} are all exactly 0 "
            f"({_listed(tensors)}; {_coverage(tensors)}): no training leaves a weight at 0, so "
            "the exporter never wrote them",
            _at(tensors[0]),
            _REEXPORT,
        )


@rule(MTP_NON_FINITE, "a tensor of the target's MTP layer holds NaN or Inf", scope=Scope.CHECKPOINT)
def mtp_non_finite(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values` on an MTP check: every value read of the target's MTP tensors (and of
    their float8 block scales) is finite.

    ## Why it matters
    One NaN in the MTP layer reaches every hidden state and logit it computes: every drafted
    token is rejected, and sampling from NaN probabilities can fail. Tensors allocated
    without being filled (`torch.empty`) and broken conversions produce them.

    ## Example
    `model.layers.61.self_attn.o_proj.weight` with 512 NaN among the sampled rows.

    ## Fix
    The exporter must write the MTP layer's trained, finite weights (from a training step
    before any divergence); check the conversion of the MTP layer.
    """
    mtp = _mtp(ctx)
    if mtp is None:
        return
    for t in mtp.tensors.values():
        if t.nan or t.inf:
            yield Violation(
                f"`{t.name}` holds {t.nan} NaN and {t.inf} infinite value(s) among {t.values} "
                f"({t.coverage.describe()})",
                _at(t),
                "the exporter must write the MTP layer's trained, finite weights",
            )


@rule(
    MTP_COPIES_DECODER_LAYER,
    "the MTP layer's decoder layer is a byte copy of a backbone decoder layer",
    scope=Scope.CHECKPOINT,
)
def mtp_copies_decoder_layer(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values` on an MTP check: each tensor of an MTP layer's decoder layer
    (`model.layers.{L}.self_attn.*`, `mlp.*`, its norms) against the same tensor of the last
    backbone decoder layer (`model.layers.{L-1}.*`): the digests of the same sampled rows,
    then, where they agree, the whole tensor (up to 4 MB) or a second sample of other rows;
    with `--values=full`, every byte. Only the header of the shard holding that decoder
    layer, and the rows compared, are read.

    ## Why it matters
    Two trained layers never hold the same bytes. An MTP decoder layer equal to the last
    backbone layer was initialised from it and never trained, or written by an exporter that
    filled the MTP slot with the backbone's layer: the MTP block predicts nothing useful and
    every drafted token is rejected.

    ## Example
    `model.layers.61.self_attn.q_a_proj.weight` holds the bytes of
    `model.layers.60.self_attn.q_a_proj.weight` (confirmed on every byte).

    ## Fix
    The exporter must write the MTP layer's own trained decoder layer (from the checkpoint
    that trained the MTP block), not a copy of the backbone's; if the MTP layers were never
    trained, serve the target without MTP.
    """
    mtp = _mtp(ctx)
    if mtp is None or not mtp.copies:
        return
    by_layer: dict[int, list[int]] = {}
    for k, copy in enumerate(mtp.copies):
        by_layer.setdefault(mtp.tensors[copy.tensor].layer, []).append(k)
    for layer, indexes in sorted(by_layer.items()):
        copies = [mtp.copies[k] for k in indexes]
        compared = sum(
            1 for t in mtp.tensors.values() if t.layer == layer and t.decoder is not None
        )
        first = copies[0]
        listed = "; ".join(f"`{c.tensor}` = `{c.source}`" for c in copies[:3])
        more = f" and {len(copies) - 3} more" if len(copies) > 3 else ""
        yield Violation(
            f"{len(copies)} of the {compared} decoder-layer tensors of MTP layer {layer} hold "
            f"the same bytes as the backbone's `{mtp.backbone}*` ({listed}{more}; "
            f"{first.coverage.describe()}, {first.confirmed}): two trained layers never do, "
            "so the MTP layer is a copy that was never trained",
            Location(first.file, tensor=first.tensor),
            "the exporter must write the MTP layer's own trained decoder layer, not a copy of "
            "the backbone's last layer; if the MTP layers were never trained, serve the target "
            "without MTP",
        )


@rule(
    MTP_TENSOR_CONSTANT,
    "a tensor of the target's MTP layer holds one value everywhere",
    scope=Scope.CHECKPOINT,
)
def mtp_tensor_constant(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values` on an MTP check: MTP tensors of more than one value whose values read
    are all the same (not 0, which is DF710; a norm at its initial value is DF714). A
    float8 weight counts only when its block scales are all equal too (else its dequantized
    values differ). Biases and quantization scales are left out.

    ## Why it matters
    A trained projection never holds one value everywhere; an exporter that filled a tensor
    it did not have (`torch.ones`, `fill_`) does. The engine loads it, and that part of the
    MTP layer computes nothing useful. Unlike zeros, a constant could in principle be
    deliberate, so this is a warning.

    ## Example
    `model.layers.61.eh_proj.weight`: every sampled value is 0.5.

    ## Fix
    The exporter must write the MTP layer's trained weights from the checkpoint that
    trained them.
    """
    mtp = _mtp(ctx)
    if mtp is None:
        return
    for t in mtp.tensors.values():
        if (
            t.values < 2
            or not t.constant
            or t.all_zero
            or _at_norm_init(t, mtp)
            or t.name.endswith((*_BIAS_ENDINGS, *_SCALE_ENDINGS))
        ):
            continue
        scale = mtp.tensors.get(t.scale) if t.scale is not None else None
        if t.scale is not None and (scale is None or not scale.constant):
            continue  # a quantized weight with block scales that differ is not constant
        yield Violation(
            f"every value read of `{t.name}` is {t.first:g} ({t.coverage.describe()}): a "
            "trained tensor never holds one value everywhere",
            _at(t),
            "the exporter must write the MTP layer's trained weights",
        )


@rule(
    MTP_NORMS_AT_INIT,
    "the MTP layer's own norms hold exactly their initial value",
    scope=Scope.CHECKPOINT,
)
def mtp_norms_at_init(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    With `--values` on an MTP check: whether every norm of an MTP layer's own modules
    (`enorm`, `hnorm`, `shared_head.norm`; Qwen3-Next's `pre_fc_norm_*` and `norm`; MiMo's
    `token_layernorm`, `hidden_layernorm`, `final_layernorm`) holds exactly its initial
    value on every value read: 1.0, or 0.0 where the norm scales by `1 + weight`
    (Qwen3-Next). The message also counts the decoder layer's norms at that value.

    ## Why it matters
    An MTP layer made from the config and saved untrained has exactly these norms, and its
    projections hold random initial values that no value check can tell from trained ones;
    the norms are what shows it. Training moves every norm weight, but a very short training
    exported in bfloat16 can round a norm back to 1.0 (its step near 1.0 is 2^-7), so this
    is a warning, not a proof: a fully trained MTP layer (DeepSeek-V3's, GLM's) never
    shows it.

    ## Example
    `model.layers.61.enorm.weight`, `hnorm.weight` and `shared_head.norm.weight` all exactly
    1.0 (read in full, 1 row).

    ## Fix
    If the MTP layers were meant to be trained, the exporter must write the weights of the
    checkpoint that trained them; an untrained MTP layer drafts nothing useful — serve the
    target without MTP.
    """
    mtp = _mtp(ctx)
    if mtp is None:
        return
    for layer, tensors in sorted(_by_layer(list(mtp.tensors.values())).items()):
        own = [t for t in tensors if t.norm and t.decoder is None and t.values]
        if not own or not all(_at_norm_init(t, mtp) for t in own):
            continue
        decoder = [t for t in tensors if t.norm and t.decoder is not None and t.values]
        at_init = sum(1 for t in decoder if _at_norm_init(t, mtp))
        yield Violation(
            f"every norm of MTP layer {layer}'s own modules ({_listed(own)}) is exactly "
            f"{mtp.norm_init:g}, its initial value ({_coverage(own)}), and {at_init} of the "
            f"{len(decoder)} norms of its decoder layer too: an MTP layer saved without "
            "training looks like this (a very short training exported in bfloat16 can too)",
            _at(own[0]),
            "if the MTP layers were meant to be trained, the exporter must write the weights "
            "of the checkpoint that trained them; else serve the target without MTP",
        )
