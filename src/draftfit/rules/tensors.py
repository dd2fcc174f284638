"""DF2xx — tensor inventory: names the engine rejects, shapes, missing and ignored tensors.

These rules compare the stored tensors with the parameters the engine view says the draft
class builds (:class:`~draftfit.engines.view.Expectation`) and with what the engine's
loader does to each stored name (:class:`~draftfit.engines.view.TensorFate`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from draftfit.engines.view import (
    FAILS,
    ONES,
    TRUNCATE_COLS,
    TRUNCATE_ROWS,
    UNINITIALISED,
    DimensionEdit,
    DimensionFit,
    Expectation,
    FateCause,
    TensorFate,
)
from draftfit.rule_ids import (
    CONFIG_DIMENSION_CONTRADICTS_TENSORS,
    HEAD_DIM_NOT_DECLARED,
    IGNORED_TENSOR,
    MISSING_NORM_WEIGHT,
    MISSING_REQUIRED_TENSOR,
    MISSING_TENSOR_UNINITIALISED,
    QUANTIZATION_DATA_MISSING,
    TENSOR_NAME_PREFIX,
    TENSOR_NAMES_NOT_BOUND,
    TENSOR_SHAPE_MISMATCH,
    TENSOR_SHAPE_TRUNCATED,
    UNKNOWN_TENSOR_NAME,
    RuleId,
)
from draftfit.rules.base import (
    Consequence,
    Context,
    Location,
    Violation,
    config_at,
    event_rule,
    rule,
)

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[RuleId, ...] = (
    UNKNOWN_TENSOR_NAME,
    TENSOR_NAME_PREFIX,
    TENSOR_SHAPE_MISMATCH,
    TENSOR_SHAPE_TRUNCATED,
    MISSING_TENSOR_UNINITIALISED,
    MISSING_NORM_WEIGHT,
    IGNORED_TENSOR,
    HEAD_DIM_NOT_DECLARED,
    MISSING_REQUIRED_TENSOR,
    TENSOR_NAMES_NOT_BOUND,
    CONFIG_DIMENSION_CONTRADICTS_TENSORS,
)
EMITS_STAGE = "rule's own check"

_ATTN = re.compile(r"^layers\.\d+\.self_attn\.(q|k|v|o)_proj\.weight$")


def _tensor_location(ctx: Context, raw: str) -> Location:
    info = ctx.checkpoint.tensors.get(raw)
    return Location(info.file if info else None, tensor=raw)


def _stored(ctx: Context, canonical: str) -> tuple[str, tuple[int, ...]] | None:
    draft = ctx.draft
    info = draft.tensors.get(canonical)
    if info is None:
        return None
    return draft.raw(canonical), info.shape


def _named(ctx: Context, canonical: str) -> str:
    raw = ctx.draft.raw(canonical)
    return f"`{raw}`" if raw == canonical else f"`{raw}` (`{canonical}`)"


def _unfilled(ctx: Context) -> tuple[set[str], set[str]]:
    """Canonical names no stored tensor reaches: (absent, stored but unbound)."""
    view = ctx.view
    assert view is not None
    reached = {f.canonical for f in view.fates if f.status in ("loaded", "rejected")}
    unbound = {f.canonical for f in view.fates if f.status == "unbound"} - reached
    absent = {
        c for c in view.expectations if c not in ctx.draft.tensors and c not in reached
    } - unbound
    return absent, unbound


def _missing(ctx: Context, fate: str, what_happens: str, fix: str) -> Iterator[Violation]:
    """Parameters the engine builds with fate `fate` when no stored tensor fills them.

    Tensors that are stored under a name the engine does not bind are reported once, by
    tensor-names-not-bound, not here.
    """
    view = ctx.view
    if view is None or not ctx.checkpoint.weights_complete:
        return
    absent, _ = _unfilled(ctx)
    for exp in view.expectations.values():
        if exp.if_missing == fate and exp.canonical in absent:
            yield Violation(
                f"`{exp.canonical}` ({exp.formula}) is not stored; {view.title} {what_happens}",
                Location(None, tensor=exp.canonical),
                fix,
                exp.citations,
            )


def fc_width_is_aux_count_problem(ctx: Context) -> bool:
    """`fc` has the right rows and a width that is a whole number of aux states, but not N."""
    view = ctx.view
    fc = ctx.draft.tensors.get("fc.weight")
    exp = view.expectations.get("fc.weight") if view else None
    T = view.capture.target_hidden_size if view else None
    if fc is None or exp is None or exp.shape is None or not isinstance(T, int) or T <= 0:
        return False
    return (
        len(fc.shape) == 2
        and tuple(fc.shape) != tuple(exp.shape)
        and fc.shape[0] == exp.shape[0]
        and fc.shape[1] % T == 0
    )


def _is_prefix_fate(fate: TensorFate) -> bool:
    """Whether a rejection comes from the engine prepending `model.` to a prefixed name."""
    return fate.cause is FateCause.PREFIX_ADDED


def _head_dim_implied(ctx: Context) -> int | None:
    return ctx.draft.undeclared_head_dim


def _explained(ctx: Context) -> set[str]:
    """Tensors whose shape a config dimension explains: reported once, at that dimension
    (config-dimension-contradicts-tensors), not once per tensor."""
    view = ctx.view
    if view is None:
        return set()
    return {canonical for fit in view.dimension_fits for canonical in fit.explains}


@rule(
    UNKNOWN_TENSOR_NAME,
    "the engine's loader rejects a stored tensor name",
)
def unknown_tensor_name(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Every stored tensor maps, after the engine's own renaming (vLLM: `midlayer.` ->
    `layers.0.`, `model.` prepended), to a parameter of the draft class, or is one the loader
    skips on purpose.

    ## Why it matters
    vLLM raises `There is no module or parameter named '...'` (newer versions) or a bare
    `KeyError` (older) and refuses to start.

    ## Example
    `layers.1.*` tensors in a draft whose config says `num_hidden_layers: 1`; `input_norm.weight`
    without `norm_before_fc`; a training-only `verifier_lm_head.weight`.

    ## Fix
    Remove the tensor, or set the config flag that creates its parameter.
    """
    view = ctx.view
    if view is None:
        return
    for fate in view.fates:
        if fate.status == "rejected" and not _is_prefix_fate(fate):
            yield Violation(
                f"`{fate.raw}` is rejected by {view.title}: {fate.reason}",
                _tensor_location(ctx, fate.raw),
                fate.fix or "remove the tensor or fix the config so the draft builds its parameter",
                fate.citations,
            )


@rule(
    TENSOR_NAME_PREFIX,
    "tensor names carry a prefix the engine adds itself",
)
def tensor_name_prefix(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Draft tensors use bare names (`layers.0.*`/`midlayer.*`, `fc.weight`, `norm.weight`),
    not `model.layers.0.*`.

    ## Why it matters
    vLLM and TensorRT-LLM prepend `model.` to every name without `lm_head`, so
    `model.fc.weight` becomes `model.model.fc.weight` and the load fails (SGLang versions
    that strip the prefix accept both spellings).

    ## Example
    A draft exported with a wrapper module's state_dict.

    ## Fix
    Strip the `model.` prefix (`draftfit convert --to vllm` renames tensors without touching
    their bytes).
    """
    view = ctx.view
    if view is None:
        return
    prefixed = [f for f in view.fates if f.status == "rejected" and _is_prefix_fate(f)]
    if prefixed:
        first = prefixed[0]
        yield Violation(
            f"{len(prefixed)} tensor(s) start with `model.` (first `{first.raw}`); {view.title} "
            f"prepends `model.` itself, so they load as `model.{first.raw}` and are rejected",
            _tensor_location(ctx, first.raw),
            "rename the tensors without the `model.` prefix",
            first.citations,
        )


def _shape_problem(ctx: Context, exp: Expectation) -> tuple[str, str] | None:
    stored = _stored(ctx, exp.canonical)
    if stored is None or exp.shape is None:
        return None
    raw, shape = stored
    if tuple(shape) == tuple(exp.shape):
        return None
    if len(shape) == 2 and len(exp.shape) == 2:
        # A dimension the config does not give (None) is never narrowed to: a mismatch.
        rows, cols = exp.shape
        rows_cut = rows is not None and shape[1] == cols and shape[0] > rows
        cols_cut = cols is not None and shape[0] == rows and shape[1] > cols
        if (exp.oversize == TRUNCATE_ROWS and rows_cut) or (
            exp.oversize == TRUNCATE_COLS and cols_cut
        ):
            return "truncated", raw
    return "mismatch", raw


@rule(
    TENSOR_SHAPE_MISMATCH,
    "a stored tensor's shape differs from the parameter the engine builds",
)
def tensor_shape_mismatch(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Each stored tensor has exactly the shape the engine's draft class builds for it, with the
    shapes computed from the config the way the engine computes them: `fc` `[H, N·T]`,
    layer-0 q/k/v `[heads·head_dim, 2H]`, `lm_head` `[draft_vocab_size, H]`, `d2t`
    `[draft_vocab_size]`, and so on.

    ## Why it matters
    The loader asserts (`Tried to load weights of size ... to a parameter of size ...`) and
    the engine refuses to start. A wrong `fc` width usually means the number of aux layers
    the engine assumes differs from the number the draft was trained with.

    ## Example
    A speculators draft trained on 4 aux layers (`fc` `[4096, 16384]`) on a vLLM version
    that assumes 3 unless `num_aux_hidden_states` says otherwise.

    ## Fix
    Make the config describe the stored tensors (e.g. add `num_aux_hidden_states`), or
    retrain. When one config dimension explains the shapes of several tensors (a `head_dim`
    written wrong), DF212 reports it once, at that key, with the exact edit, and this
    finding is folded into it.
    """
    view = ctx.view
    if view is None:
        return
    implied = _head_dim_implied(ctx)
    explained = _explained(ctx)
    for exp in view.expectations.values():
        problem = _shape_problem(ctx, exp)
        if problem is None or problem[0] != "mismatch":
            continue
        if implied is not None and _ATTN.match(exp.canonical):
            continue  # reported once, with the cause, by head-dim-not-declared
        if exp.canonical in explained:
            continue  # reported once, at the config key, by config-dimension-contradicts-tensors
        if exp.canonical == "fc.weight" and fc_width_is_aux_count_problem(ctx):
            continue  # reported with the aux-state count by aux-count-mismatch
        raw = problem[1]
        shape = ctx.draft.tensors[exp.canonical].shape
        yield Violation(
            f"{_named(ctx, exp.canonical)} has shape {list(shape)}; {view.title} builds "
            f"{list(exp.shape or ())} from {exp.formula}",
            _tensor_location(ctx, raw),
            "make the config describe the stored tensor, or re-export the tensor",
            exp.citations,
        )


@rule(
    TENSOR_SHAPE_TRUNCATED,
    "a stored tensor is larger than its parameter and is silently cut",
)
def tensor_shape_truncated(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Stored projections that are *larger* than the parameter the engine builds, in the
    dimension its loader narrows (q/k/v/gate/up rows, o/down columns).

    ## Why it matters
    vLLM's parallel-linear loaders narrow the stored tensor to the parameter's size without
    complaint: the draft loads, but runs on a slice of the trained weights and acceptance
    collapses.

    ## Example
    `q_proj` `[96, 128]` where the config implies `[64, 128]`, while `k_proj`, `v_proj` and
    `o_proj` match it.

    ## Fix
    When one config value explains the stored shapes (a `head_dim` written 112 beside
    projections trained with 128), DF212 reports it once, at that key, with the exact edit,
    and this finding is folded into it. Otherwise re-export the tensor at the shape the
    config describes, or write the dimensions it was trained with.
    """
    view = ctx.view
    if view is None:
        return
    implied = _head_dim_implied(ctx)
    explained = _explained(ctx)
    for exp in view.expectations.values():
        problem = _shape_problem(ctx, exp)
        if problem is None or problem[0] != "truncated":
            continue
        if (implied is not None and _ATTN.match(exp.canonical)) or exp.canonical in explained:
            continue
        shape = ctx.draft.tensors[exp.canonical].shape
        yield Violation(
            f"{_named(ctx, exp.canonical)} has shape {list(shape)}, larger than the "
            f"{list(exp.shape or ())} {view.title} builds ({exp.formula}); the loader keeps only "
            "the leading slice, silently",
            _tensor_location(ctx, problem[1]),
            f"re-export the tensor as {list(exp.shape or ())}, or write the config dimensions "
            "it was trained with (no single config value explains this shape)",
            exp.citations,
        )


@rule(
    MISSING_TENSOR_UNINITIALISED,
    "a parameter no stored tensor fills is left uninitialised",
)
def missing_tensor_uninitialised(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Every weight the engine's draft class builds is stored in the checkpoint.

    ## Why it matters
    vLLM runs no "all weights loaded" check for EAGLE-3 drafts: a missing projection keeps
    whatever `torch.empty` returned. The server starts and drafts garbage; acceptance is ~0.

    ## Example
    `layers.0.self_attn.k_proj.weight` was dropped by a converter.

    ## Fix
    Re-export the checkpoint with every trained tensor.
    """
    yield from _missing(
        ctx,
        UNINITIALISED,
        "leaves it uninitialised and loads without an error",
        "re-export the checkpoint with this tensor",
    )


@rule(MISSING_NORM_WEIGHT, "a norm weight is missing and stays at 1.0")
def missing_norm_weight(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Every RMSNorm weight the draft class builds (input/post-attention/hidden norms, final
    `norm`, `input_norm`, `fc_norm.k`, Qwen3 `q_norm`/`k_norm`) is stored.

    ## Why it matters
    A missing norm weight silently stays at 1.0, so the draft runs with different numerics
    than it was trained with.

    ## Example
    `norm_before_fc: true` but no `input_norm.weight` stored.

    ## Fix
    Store the trained norm weight, or turn the flag off if it was not trained.
    """
    yield from _missing(ctx, ONES, "keeps the norm weight at 1.0", "store the trained norm weight")


@rule(IGNORED_TENSOR, "the engine silently drops a stored tensor")
def ignored_tensor(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Stored tensors the engine's loader drops without an error (other than `t2d`, which every
    engine ignores by design, and P-EAGLE's `mask_hidden`).

    ## Why it matters
    The draft was trained with them, so it runs differently than trained: e.g. a trained
    `fc.bias` or q/k/v biases with `attention_bias: false` are discarded by vLLM.

    ## Example
    `fc.bias` in an EAGLE-1 checkpoint (the official EAGLE repo trains one by default).

    ## Fix
    Declare the bias in the config where the engine supports it (`attention_bias: true`),
    or accept the accuracy loss knowingly.
    """
    view = ctx.view
    if view is None:
        return
    for fate in view.fates:
        if fate.status == "skipped" and fate.cause is not FateCause.SKIPPED_BY_LOADER:
            yield Violation(
                f"`{fate.raw}` is dropped by {view.title}: {fate.reason}",
                _tensor_location(ctx, fate.raw),
                "declare the parameter in the config if the engine supports it, or remove it",
                fate.citations,
            )


@rule(
    HEAD_DIM_NOT_DECLARED,
    "the attention shapes imply a head_dim the config does not declare",
)
def head_dim_not_declared(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    When the config has no `head_dim`, engines derive `hidden_size / num_attention_heads`.
    The stored q/k/v/o projections must agree with that derived value.

    ## Why it matters
    Drafts for targets whose heads are wider than `hidden/heads` (Kimi-K2: 7168/64 = 112 but
    128-wide heads; Qwen3) store 128-wide projections. Without `head_dim: 128` vLLM builds
    112-wide heads and its loaders silently cut q/k/v rows and o_proj columns to fit: the
    draft loads, and every drafted token is wrong (confirmed by running vLLM 0.34.0). An
    engine whose loader copies weights whole (TensorRT-LLM) refuses the shapes at start-up
    instead; the finding says which.

    ## Example
    `hidden_size` 7168, 64 heads, no `head_dim`, `q_proj` `[8192, 14336]`.

    ## Fix
    Add `"head_dim": 128` (the value the stored shapes imply) to the decoder config. The
    projections' own shape findings (DF203, DF204) are folded into this one and listed
    under it (`explains`). A `head_dim` that is written, but wrong, is DF212.
    """
    view = ctx.view
    if view is None or not view.expectations:
        return
    implied = _head_dim_implied(ctx)
    if implied is None:
        return
    draft = ctx.draft
    q_proj = view.expectations.get("layers.0.self_attn.q_proj.weight")
    # Loaders that narrow cut a larger stored projection silently; a smaller one they refuse.
    narrows = q_proj is not None and q_proj.oversize != FAILS and implied > (draft.head_dim or 0)
    outcome = (
        "its loader silently keeps only the leading slice of each projection, so every "
        "drafted token is wrong"
        if narrows
        else "its loader refuses the larger stored projections at start-up"
    )
    yield Violation(
        f"the config has no `head_dim`, so {view.title} uses hidden_size/num_attention_heads = "
        f"{draft.hidden_size}/{draft.num_heads} = {draft.head_dim}, but the stored q_proj "
        f"{list(draft.tensors['layers.0.self_attn.q_proj.weight'].shape)} implies head_dim "
        f"{implied}; {outcome}",
        Location("config.json", draft.pointer("head_dim")),
        f'add "head_dim": {implied} to the decoder config',
        q_proj.citations if q_proj is not None else (),
        Consequence.DRAFTS_GARBAGE if narrows else Consequence.REFUSES_TO_START,
        related=tuple(
            _tensor_location(ctx, draft.raw(exp.canonical))
            for exp in view.expectations.values()
            if _ATTN.match(exp.canonical) and _shape_problem(ctx, exp) is not None
        ),
    )


@rule(
    CONFIG_DIMENSION_CONTRADICTS_TENSORS,
    "a config dimension contradicts the shapes of the stored tensors",
)
def config_dimension_contradicts_tensors(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    The dimensions the draft class builds its layers from agree with the stored tensors:
    `head_dim`, `num_attention_heads`, `num_key_value_heads`, `intermediate_size`,
    `hidden_size`, and for MLA drafts `q_lora_rank`, `kv_lora_rank`, `qk_nope_head_dim`,
    `qk_rope_head_dim` and `v_head_dim`. When stored tensors disagree with what the engine
    builds and one changed value makes them fit (checked by building the draft again with
    it, the way that engine version does), that value is the cause. It is reported once, at
    its config key, with the value the tensors imply and the tensor that shows it; the
    shape findings of those tensors (DF203, DF204) are folded into it (`explains` in the
    text, `related` in JSON, `relatedLocations` in SARIF).

    ## Why it matters
    Engines build every projection from the config, not from the stored shapes. With
    `head_dim` written 112 beside projections trained with 128, vLLM and SGLang build
    112-wide heads and their loaders silently keep the leading slice of the q/k/v rows and
    o_proj columns: the draft loads and every drafted token is wrong (confirmed by running
    vLLM 0.34.0). A value larger than the trained one leaves the parameters wider than the
    stored tensors, and the loader refuses them at start-up; TensorRT-LLM, whose loader
    copies weights whole, refuses either way. The finding says which.

    ## Example
    A speculators draft for Kimi-K2.5 whose `transformer_layer_config.head_dim` is 112
    (7168/64) while its `q_proj` is `[8192, 14336]`: 64 heads of 128.

    ## Fix
    Set the key to the value the tensors imply (`/transformer_layer_config/head_dim` to
    128): the tensors are right, the config is not, and `draftfit convert` makes the edit.
    When two dimensions explain the shapes equally well (`num_attention_heads` and
    `head_dim` when `num_key_value_heads` is not written and follows the heads), the finding
    names both and makes no edit: take the value from the draft's training configuration.
    """
    view = ctx.view
    if view is None:
        return
    for fit in view.dimension_fits:
        exps = [view.expectations[c] for c in fit.explains]
        refused = any((_shape_problem(ctx, e) or ("",))[0] == "mismatch" for e in exps)
        outcome = (
            "its loader refuses the stored shapes at start-up"
            if refused
            else "its loader silently keeps only the leading slice of each, so every drafted "
            "token is wrong"
        )
        related = tuple(_tensor_location(ctx, ctx.draft.raw(c)) for c in fit.explains)
        consequence = Consequence.REFUSES_TO_START if refused else Consequence.DRAFTS_GARBAGE
        citations = exps[0].citations if exps else ()
        if fit.ambiguous:
            yield _ambiguous_fit(ctx, fit, outcome, related, consequence, citations)
            continue
        edit = fit.edits[0]
        yield Violation(
            f"{_written(edit, view.title)}, but the stored tensors were trained with "
            f"{edit.key} {edit.value}: {edit.evidence}; {view.title} builds "
            f"{_tensor_list(fit.explains)} from {edit.key} {edit.used} and {outcome}",
            config_at(edit.pointer),
            f"set `{edit.pointer}` to {edit.value} (the tensors are right; "
            "`draftfit convert` makes this edit)",
            citations,
            consequence,
            related=related,
        )


def _tensor_list(canonicals: tuple[str, ...]) -> str:
    """`q_proj, k_proj, v_proj and o_proj` (one layer's modules), else `8 tensors`."""
    short = [c.removesuffix(".weight").rsplit(".", 1)[-1] for c in canonicals]
    if len(short) == 1:
        return f"`{short[0]}`"
    if len(set(short)) != len(short) or len(short) > 6:
        return f"{len(short)} tensors"
    return ", ".join(f"`{n}`" for n in short[:-1]) + f" and `{short[-1]}`"


def _written(edit: DimensionEdit, title: str) -> str:
    """`` `head_dim` is 112 `` or `` `num_key_value_heads` is not written at
    `/num_key_value_heads` (vLLM uses 64) ``."""
    if edit.declared is not None:
        return f"`{edit.key}` is {edit.declared}"
    return f"`{edit.key}` is not written at `{edit.pointer}` ({title} uses {edit.used})"


def _ambiguous_fit(
    ctx: Context,
    fit: DimensionFit,
    outcome: str,
    related: tuple[Location, ...],
    consequence: Consequence,
    citations: tuple[str, ...],
) -> Violation:
    """One finding for shapes that more than one config value explains: each is named,
    none is chosen."""
    view = ctx.view
    assert view is not None
    options = "; or ".join(
        f"{_written(e, view.title)} where the tensors imply {e.value} ({e.evidence})"
        for e in fit.edits
    )
    edits = ", or ".join(f"`{e.pointer}` to {e.value}" for e in fit.edits)
    first = fit.edits[0]
    others = tuple(config_at(e.pointer) for e in fit.edits[1:])
    return Violation(
        f"the stored {_tensor_list(fit.explains)} contradict the config, and "
        f"{len(fit.edits)} different edits explain them: {options}; the shapes cannot tell "
        f"which value is wrong, and {view.title}'s loader {outcome.removeprefix('its loader ')}",
        config_at(first.pointer),
        f"take the value from the draft's training configuration: set {edits} (one of them)",
        citations,
        consequence,
        related=others + related,
    )


@rule(
    MISSING_REQUIRED_TENSOR,
    "a tensor the engine requires is not stored",
)
def missing_required_tensor(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Tensors the engine's loader insists on: `d2t` for older SGLang (its EAGLE-3 worker reads
    `hot_token_id`, which only a stored `d2t` creates) and for TensorRT-LLM whenever it
    builds the `d2t` parameter (asserted after loading).

    ## Why it matters
    The engine fails at start-up (`AttributeError: ... hot_token_id`, bare
    `AssertionError`), after the target has been loaded.

    ## Example
    A draft with `draft_vocab_size == vocab_size` exported without `d2t`, on an older SGLang.

    ## Fix
    Store the tensor (`draftfit convert` derives `d2t` from `t2d`, or writes the identity
    map when the draft vocabulary is the full vocabulary).
    """
    yield from _missing(
        ctx,
        FAILS,
        "requires it and fails at start-up",
        "store the tensor (`draftfit convert` derives `d2t` from `t2d`)",
    )


@rule(
    TENSOR_NAMES_NOT_BOUND,
    "stored tensors use names the engine version does not bind to its parameters",
)
def tensor_names_not_bound(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Stored tensors that are meant for a parameter the draft class builds, but whose names the
    engine version's loader does not map to it: `layers.0.*` on SGLang versions whose module
    is `midlayer`, `model.`-prefixed names on TensorRT-LLM (it prepends `model.`
    itself) or on SGLang's EAGLE-1 and MLA classes.

    ## Why it matters
    Silent: the loader skips names it does not know, the parameters keep their random
    initial values, the server starts and acceptance is near zero.

    ## Example
    A speculators-format export (`layers.0.self_attn.q_proj.weight`) converted to a plain
    config and served by an SGLang version whose draft module is `midlayer`.

    ## Fix
    Rename the tensors to the engine's convention without touching their bytes
    (`draftfit convert --to sglang` writes `midlayer.*`), or use an engine version that maps
    the names.
    """
    view = ctx.view
    if view is None:
        return
    _, unbound = _unfilled(ctx)
    fates = [f for f in view.fates if f.status == "unbound" and f.canonical in unbound]
    by_reason: dict[str, list[TensorFate]] = {}
    for fate in fates:
        by_reason.setdefault(fate.reason, []).append(fate)
    for reason, group in by_reason.items():
        first = group[0]
        yield Violation(
            f"{len(group)} stored tensor(s) (first `{first.raw}`) are not bound by "
            f"{view.title}: {reason}; their parameters keep random initial values",
            _tensor_location(ctx, first.raw),
            "rename the tensors to the engine's convention (`draftfit convert`)",
            first.citations,
        )


@event_rule(
    QUANTIZATION_DATA_MISSING,
    "a quantized draft's layers lack the scales or zero points its scheme needs",
)
def quantization_data_missing() -> None:
    """## What it checks
    A draft whose `quantization_config` declares a compressed-tensors scheme (FP8, INT8,
    packed INT4/INT8, NVFP4) stores, beside each linear layer the scheme quantizes, the data
    the scheme needs: `weight_scale`, `weight_zero_point` for asymmetric weights, NVFP4's
    `weight_global_scale`.

    ## Why it matters
    No engine release refuses such a draft; what it does depends on how it builds the
    draft's layers. A release that builds them with the draft's scheme (vLLM 0.11.1 and
    later, SGLang) leaves the missing scales at their initial values. A release that builds
    them unquantized (vLLM 0.10.2 and earlier) copies the stored FP8 or INT8 values into its
    bf16 weights as they are, without scales. Either way the draft loads without an error and
    drafts garbage: acceptance near zero.

    ## Example
    An FP8 draft exported by llm-compressor whose `*.weight_scale` tensors were dropped by a
    script that kept only `*.weight`, served with vLLM 0.10.2.

    ## Fix
    Store the tensors the quantization wrote beside each weight (re-export the quantized
    draft whole), or store the draft dequantized (bf16) without a `quantization_config`.
    """
