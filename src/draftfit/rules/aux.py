"""DF3xx — aux hidden-state layers (EAGLE-3): which target layers the engine captures.

Always reasoned about in *capture-before* counting (id k = output of target layer k-1):
the ids the draft was trained with, converted from the convention they were written in,
against the ids the engine version will actually capture.
"""

from __future__ import annotations

from collections.abc import Iterator

from draftfit.draft.aux_counting import (
    CAPTURE_BEFORE,
    OUTPUT_OF,
    TOP_AUX,
    AuxIds,
    default_capture_ids,
    default_output_of_ids,
    resolve_with_target,
)
from draftfit.draft.dialects import NEMO_AUTOMODEL
from draftfit.draft.tensor_names import fc_blocks_problem
from draftfit.engines.view import EngineView
from draftfit.rule_ids import (
    AUX_COUNT_MISMATCH,
    AUX_ID_OUT_OF_RANGE,
    AUX_IDS_COPIED_WITHOUT_SHIFT,
    AUX_IDS_DISAGREE,
    AUX_IDS_DUPLICATE,
    AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS,
    AUX_IDS_NOT_ASCENDING,
    AUX_IDS_NOT_READ_DEFAULT_MATCHES,
    AUX_IDS_NOT_RECORDED,
    AUX_LAYERS_DIFFER_FROM_TRAINED,
    AUX_RUNTIME_COUNT_MISMATCH,
    RuleId,
)
from draftfit.rules.base import (
    Consequence,
    Context,
    Location,
    Scope,
    Violation,
    config_at,
    event_rule,
    rule,
)
from draftfit.rules.tensors import fc_width_is_aux_count_problem

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[RuleId, ...] = (
    AUX_LAYERS_DIFFER_FROM_TRAINED,
    AUX_IDS_NOT_READ_DEFAULT_MATCHES,
    AUX_ID_OUT_OF_RANGE,
    AUX_COUNT_MISMATCH,
    AUX_RUNTIME_COUNT_MISMATCH,
    AUX_IDS_DUPLICATE,
    AUX_IDS_DISAGREE,
    AUX_IDS_COPIED_WITHOUT_SHIFT,
    AUX_IDS_NOT_ASCENDING,
    AUX_IDS_NOT_RECORDED,
)
EMITS_STAGE = "rule's own check"


def _target_layers(ctx: Context) -> int | None:
    return ctx.target.num_layers if ctx.target else None


def trained_capture_ids(ctx: Context) -> tuple[tuple[int, ...] | None, AuxIds | None]:
    """The capture-before ids the draft was trained on, and the place they were read from.

    With no ids written anywhere, every trainer captured the default layers, so the
    default for the target is returned (None without a target).
    """
    layers = _target_layers(ctx)
    aux = ctx.draft.trained_aux
    where = resolve_with_target(aux, layers) if aux is not None else None
    return ctx.draft.trained_capture_before(layers), where


def _fmt(ids: tuple[int, ...] | None) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]" if ids is not None else "?"


def _offset(used: tuple[int, ...], trained: tuple[int, ...]) -> str:
    """`one too early` / `one too late` when every id is shifted by the same amount."""
    a, b = sorted(set(used)), sorted(set(trained))
    shifts = {u - t for u, t in zip(a, b, strict=False)} if len(a) == len(b) else set()
    if shifts == {-1}:
        return "one too early"
    if shifts == {1}:
        return "one too late"
    return "different"


def _physical(ids: tuple[int, ...]) -> str:
    return "outputs of target layers " + _fmt(tuple(i - 1 for i in ids))


def capture_fix(view: EngineView, trained: tuple[int, ...]) -> str:
    """How to make this engine version capture the capture-before layers `trained`."""
    aux = view.aux
    assert aux is not None
    ids = aux.encode(trained) if aux.encode is not None else None
    if aux.user_setting:
        if ids is None:
            return f"{view.title} cannot express these layers in `{aux.user_setting}`"
        if aux.launch_setting:
            return (
                f"set `{aux.user_setting}: {_fmt(ids)}` ({aux.read_convention} counting) in "
                f"the launch instead of {aux.launch_setting}"
            )
        return (
            f"pass `{aux.user_setting}: {_fmt(ids)}` ({aux.read_convention} counting) when "
            "serving (`draftfit check --recipe` prints the full config)"
        )
    if aux.write_pointer is None:
        return (
            f"serve it with a release that reads the aux ids from the config "
            f"({view.title} reads none)"
        )
    if ids is None:
        return (
            f"{view.title} cannot be made to capture {_fmt(trained)} for this target "
            f"through `{aux.write_pointer}`"
        )
    return f"write `{aux.write_pointer}`: {_fmt(ids)} ({aux.read_convention} counting)"


def _eagle3_view(ctx: Context) -> EngineView | None:
    view = ctx.view
    if view is None or view.aux is None or not view.built:
        return None
    return view


@rule(
    AUX_LAYERS_DIFFER_FROM_TRAINED,
    "the engine captures other target layers than the draft was trained on",
)
def aux_layers_differ_from_trained(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    The target layers whose hidden states the engine feeds the draft are the layers it was
    trained on. The trained ids are taken from where the producer wrote them (top-level
    `eagle_aux_hidden_state_layer_ids` for speculators, nested `eagle_config` for
    SpecForge/ModelOpt) and converted to one counting convention; the engine's ids come from
    the keys that version reads, else its default `(2, L//2, L-3)`. TensorRT-LLM reads no ids
    from the draft: given the launch's settings (`--serve-args`, `--serve-config`), its ids
    are the launch's `speculative_config.eagle3_layers_to_capture`, else its default.

    ## Why it matters
    Silent: the engine starts and speculates, but acceptance collapses. Recent vLLM reads
    only the top-level key and `eagle_config.layer_ids`, so SpecForge/ModelOpt drafts that
    nest their ids get the default layers; the oldest versions ignore every key.

    ## Example
    A ModelOpt draft with `eagle_config.eagle_aux_hidden_state_layer_ids: [1, 15, 28]`
    (output-of counting, i.e. capture-before [2, 16, 29]) next to a 32-layer target: vLLM
    captures [2, 16, 29] by default — equal, so fine; with trained ids [3, 10, 25] it would
    not be.

    ## Fix
    Write the trained ids, in capture-before counting, where the engine reads them
    (`draftfit convert --to vllm` adds the top-level key with the +1 shift applied).
    """
    view = _eagle3_view(ctx)
    if view is None:
        return
    aux = view.aux
    assert aux is not None
    trained, where = trained_capture_ids(ctx)
    if where is None:
        return  # nothing written: trained on the default, which is what engines use
    if aux.used is None:
        if aux.read_from is None and not aux.launch_setting:
            keys = ", ".join(f"`{k}`" for k in aux.keys_read) or "no key at all"
            yield Violation(
                f"the trained aux ids at `{where.pointer}` {_fmt(where.ids)} are not read by "
                f"{view.title} (it reads {keys}); it will capture the target's default layers "
                "(2, L//2, L-3); pass --target to compare them with the trained layers",
                config_at(where.pointer),
                capture_fix(view, where.capture_before()),
                aux.citations,
                # Without the target's layer count, whether the default differs is unknown.
                Consequence.DEGRADES,
                "if the target's default layers differ from the trained ones (then every "
                "draft is wrong; --target tells)",
            )
        return
    used = tuple(sorted(set(aux.used)))
    if trained is None or used == tuple(sorted(set(trained))):
        return
    if aux.launch_setting:
        reason = (
            f"the launch passes {aux.launch_setting}, so {view.title} captures capture-before "
            f"{_fmt(aux.used)} ({_physical(aux.used)}; the draft's own ids are not read)"
        )
    elif aux.read_from is None:
        keys = ", ".join(f"`{k}`" for k in aux.keys_read) or "no config key"
        reason = (
            f"{view.title} does not read `{where.pointer}` (it reads {keys}) and falls back to "
            f"the default {_fmt(aux.used)}"
        ) + (f"; {aux.launch_unused}" if aux.launch_unused else "")
    elif aux.read_from == where.pointer and where.convention.value != aux.read_convention:
        reason = (
            f"{view.title} reads `{aux.read_from}` in {aux.read_convention} counting and "
            f"captures {_fmt(aux.used)}, so every layer is {_offset(used, trained)}"
        )
    else:
        reason = f"{view.title} reads {_fmt(aux.used)} from `{aux.read_from}`"
    yield Violation(
        f"the draft was trained on capture-before ids {_fmt(trained)} ({_physical(trained)}; "
        f"written at `{where.pointer}` in {where.convention} counting), but {reason}",
        aux.launch_location or config_at(where.pointer),
        capture_fix(view, trained),
        aux.citations,
    )


@rule(
    AUX_IDS_NOT_READ_DEFAULT_MATCHES,
    "the engine ignores the written aux ids, but its default equals them",
    needs_target=True,
)
def aux_ids_not_read_default_matches(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Aux ids written where the engine version does not read them, in the case where the
    engine's default layers happen to equal the trained ones.

    ## Why it matters
    Works today by coincidence: retraining on other layers, or the same draft next to a
    target with a different layer count, silently breaks.

    ## Example
    AQ-MedAI's Kimi-K2 draft nests `[2, 30, 58]`; recent vLLM ignores it but its default for
    a 61-layer target is `(2, 30, 58)`.

    ## Fix
    Also write the ids to the top-level `eagle_aux_hidden_state_layer_ids`.
    """
    view = _eagle3_view(ctx)
    if view is None or view.aux is None or view.aux.read_from is not None or view.aux.used is None:
        return
    if view.aux.launch_setting:
        return  # the launch names the layers: nothing works by coincidence
    trained, where = trained_capture_ids(ctx)
    if where is None or trained is None:
        return
    if tuple(sorted(set(view.aux.used))) == tuple(sorted(set(trained))):
        yield Violation(
            f"{view.title} does not read `{where.pointer}`; its default {_fmt(view.aux.used)} "
            f"equals the trained layers, so it works by coincidence",
            config_at(where.pointer),
            _explicit_fix(view, trained),
            view.aux.citations,
        )


def _explicit_fix(view: EngineView, trained: tuple[int, ...]) -> str:
    """The fix for ids that work only because the engine's default equals them: one
    sentence, whether or not this engine version can be told the ids at all."""
    aux = view.aux
    assert aux is not None
    if aux.write_pointer is None and not aux.user_setting:
        return (
            f"nothing to change for this target; {view.title} reads no aux ids from the "
            "config, so next to a target with another layer count serve it with a version "
            "that reads them"
        )
    fix = capture_fix(view, trained)
    return fix if " cannot " in fix else f"to stop relying on the default, {fix}"


@rule(
    AUX_ID_OUT_OF_RANGE,
    "an aux layer id the engine will use does not exist in the target",
    needs_target=True,
)
def aux_id_out_of_range(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Every aux id the engine will use lies in the range the target can capture at that
    version (vLLM: 1..L-1 in older versions, 0..L later, where L is the target's layer count),
    and that the target's backbone captures: vLLM's deepseek_v2 backbone (DeepSeek V2/V3,
    GLM-MoE-DSA, Kimi-K2) never captures id 0, and id L only once it gained the final-layer
    capture (the engine data gives the release).

    ## Why it matters
    Ids are not range-checked at load: the engine captures fewer states than `fc` expects
    and fails at the first forward (`mat1 and mat2 shapes cannot be multiplied`), or with
    id 0 on old versions adds a None residual.

    ## Example
    `[2, 30, 61]` next to a 61-layer target.

    ## Fix
    Use the ids of the layers the draft was trained on, for this target.
    """
    view = _eagle3_view(ctx)
    if view is None or view.aux is None or view.aux.used is None or view.aux.valid_range is None:
        return
    low, high = view.aux.valid_range
    bad = [i for i in view.aux.used if i < low or i > high]
    if bad and view.aux.launch_setting:
        n = ctx.target.num_layers if ctx.target else "?"
        yield Violation(
            f"the launch passes {view.aux.launch_setting}, and output-of id(s) "
            f"{_fmt(tuple(i - 1 for i in bad))} name no layer of a {n}-layer target (it has "
            f"layers {low - 1}..{high - 1}; -1 is the final state): {view.title} never "
            "captures a state for them, so their blocks of the draft's `fc` input are filled "
            "by no target layer",
            view.aux.launch_location or config_at(TOP_AUX),
            "pass only ids of layers this target has, the ones the draft was trained on",
            view.aux.citations,
        )
        return
    if bad:
        where = view.aux.read_from or "the default"
        why = f" ({view.aux.range_note})" if view.aux.range_note else ""
        yield Violation(
            f"aux id(s) {_fmt(tuple(bad))} (from {where}) are outside {low}..{high}, the ids a "
            f"{ctx.target.num_layers if ctx.target else '?'}-layer target can capture in "
            f"{view.title}{why}: the first forward fails",
            config_at(view.aux.read_from or "/eagle_aux_hidden_state_layer_ids"),
            "use ids of layers that exist in this target"
            + (" and that this version captures" if view.aux.range_note else ""),
            view.aux.citations,
        )


@rule(
    AUX_COUNT_MISMATCH,
    "fc was trained on a different number of aux states than the engine builds",
)
def aux_count_mismatch(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    The stored `fc.weight` width equals N × target hidden size for the N the engine computes
    (vLLM: always 3 in older versions; later `num_aux_hidden_states`, else the length of
    `eagle_config.eagle_aux_hidden_state_layer_ids`, else 3 — the top-level id list is not
    used for the count).

    ## Why it matters
    The engine refuses to load `fc` (`Tried to load weights of size ...`).

    ## Example
    speculators draft with 4 top-level aux ids and `fc` `[4096, 16384]` on a recent vLLM.

    ## Fix
    Add `num_aux_hidden_states: N` to the decoder config (for speculators, inside
    `transformer_layer_config`).
    """
    view = _eagle3_view(ctx)
    if view is None or view.aux is None or view.aux.expected_count is None:
        return
    if not fc_width_is_aux_count_problem(ctx):
        return
    fc = ctx.draft.tensors["fc.weight"]
    T = view.capture.target_hidden_size
    if T is None:  # fc_width_is_aux_count_problem checked it is
        return
    stored_n = fc.shape[1] // T
    base = ctx.draft.layer_config_pointer
    aux = view.aux
    if aux.user_setting:
        fix = f"pass {stored_n} trained layer ids in `{aux.user_setting}`"
    elif aux.count_from.startswith("a fixed count"):
        fix = (
            f"{view.title} always builds `fc` for {aux.expected_count} aux states: use a "
            "version that reads `num_aux_hidden_states`"
        )
    else:
        fix = f"add `num_aux_hidden_states: {stored_n}` at `{base or '/'}`"
    yield Violation(
        f"`fc.weight` is {list(fc.shape)}: {stored_n} aux states of width {T}, but "
        f"{view.title} builds it for N = {aux.expected_count} (from "
        f"{aux.count_from}): the load fails",
        Location(fc.file, tensor=ctx.draft.raw("fc.weight")),
        fix,
        aux.citations,
    )


@rule(
    AUX_RUNTIME_COUNT_MISMATCH,
    "the engine captures a different number of aux states than fc consumes",
)
def aux_runtime_count_mismatch(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    The number of distinct aux layers the engine captures equals N, the number of states
    its `fc` consumes.

    ## Why it matters
    The checkpoint loads, then the first speculative step (or the start-up dummy run) fails
    with a matmul shape error.

    ## Example
    `num_aux_hidden_states: 4` but only 3 ids the engine reads.

    ## Fix
    Make the id list and the count agree.
    """
    view = _eagle3_view(ctx)
    if view is None or view.aux is None or view.aux.used is None or view.aux.expected_count is None:
        return
    if view.aux.launch_setting:
        return  # one launch setting gives both the layers and the count
    fc = ctx.draft.tensors.get("fc.weight")
    exp = view.expectations.get("fc.weight")
    if fc is not None and exp is not None and tuple(fc.shape) != tuple(exp.shape or ()):
        return  # the load already fails on fc's shape
    captured = len(set(view.aux.used))
    if captured != view.aux.expected_count:
        yield Violation(
            f"{view.title} captures {captured} aux state(s) {_fmt(view.aux.used)} but builds `fc` "
            f"for {view.aux.expected_count} (from {view.aux.count_from}): the first forward fails",
            config_at(view.aux.read_from or TOP_AUX),
            "make the aux id list and `num_aux_hidden_states` agree",
            view.aux.citations,
        )


@rule(
    AUX_IDS_DUPLICATE,
    "the aux id list repeats a layer",
)
def aux_ids_duplicate(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Written aux ids are distinct.

    ## Why it matters
    Engines capture a set of layers: a repeated id yields fewer states than the list length
    suggests (count mismatch), and recent vLLM de-duplicates silently.

    ## Example
    `[2, 2, 58]`.

    ## Fix
    List each trained layer once.
    """
    for aux in ctx.draft.aux:
        if len(set(aux.ids)) != len(aux.ids):
            yield Violation(
                f"`{aux.pointer}` {_fmt(aux.ids)} repeats a layer",
                config_at(aux.pointer),
                "list each layer once",
            )


@rule(
    AUX_IDS_DISAGREE,
    "two places in the config name different aux layers",
)
def aux_ids_disagree(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    When aux ids are written in more than one place (top-level and `eagle_config`), they
    denote the same physical layers once each is read in its own counting convention.

    ## Why it matters
    Different engines read different places, so the same checkpoint drafts correctly in one
    engine and silently badly in another.

    ## Example
    Top-level `[2, 16, 29]` (capture-before) and nested `[2, 16, 29]` (output-of, i.e.
    capture-before `[3, 17, 30]`).

    ## Fix
    Keep one physical list: write top-level ids = nested ids + 1.
    """
    aux_list = ctx.draft.aux
    if len(aux_list) < 2:
        return
    layers = _target_layers(ctx)
    resolved = [resolve_with_target(a, layers) for a in aux_list]
    first = resolved[0]
    for other in resolved[1:]:
        if sorted(set(other.capture_before())) != sorted(set(first.capture_before())):
            yield Violation(
                f"`{first.pointer}` {_fmt(first.ids)} ({first.convention}) and `{other.pointer}` "
                f"{_fmt(other.ids)} ({other.convention}) denote different layers: capture-before "
                f"{_fmt(first.capture_before())} vs {_fmt(other.capture_before())}",
                config_at(other.pointer),
                "keep both lists in step (top-level = nested + 1)",
            )


@rule(
    AUX_IDS_COPIED_WITHOUT_SHIFT,
    "top-level aux ids look copied from output-of ids without the +1 shift",
)
def aux_ids_copied_without_shift(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    A top-level `eagle_aux_hidden_state_layer_ids` that is numerically identical to an
    output-of list nested in `eagle_config`, or that equals the output-of default
    `[1, L//2-1, L-4]` of the target.

    ## Why it matters
    Top-level ids are read in capture-before counting. Hand conversions that move nested
    SpecForge/ModelOpt ids to the top level unchanged make engines capture every layer one
    too early: it loads, and acceptance drops.

    ## Example
    nested `[1, 46, 90]` copied to the top level as `[1, 46, 90]` for a 94-layer target.

    ## Fix
    Write the top-level ids as nested ids + 1.
    """
    top = next((a for a in ctx.draft.aux if a.pointer == TOP_AUX), None)
    if top is None:
        return
    layers = _target_layers(ctx)
    for other in ctx.draft.aux:
        resolved = resolve_with_target(other, layers)
        if (
            other is not top
            and resolved.convention == OUTPUT_OF
            and tuple(other.ids) == tuple(top.ids)
        ):
            yield Violation(
                f"top-level ids {_fmt(top.ids)} equal the output-of ids at `{other.pointer}`: "
                f"read as capture-before they are one layer early (should be "
                f"{_fmt(other.capture_before())})",
                config_at(TOP_AUX),
                f"set `{TOP_AUX}` to {_fmt(other.capture_before())}",
            )
            return
    if (
        layers
        and top.convention == CAPTURE_BEFORE
        and tuple(top.ids) == default_output_of_ids(layers)
    ):
        yield Violation(
            f"top-level ids {_fmt(top.ids)} equal the output-of default for a {layers}-layer "
            f"target; read as capture-before they are one layer early",
            config_at(TOP_AUX),
            f"if the draft was trained on the default layers, set `{TOP_AUX}` to "
            f"{_fmt(default_capture_ids(layers))}",
        )


@event_rule(
    AUX_IDS_IGNORED_UNDER_CUDA_GRAPHS,
    "CUDA-graph capture resets the aux layers to the engine's defaults",
)
def aux_ids_ignored_under_cuda_graphs() -> None:
    """## What it checks
    The draft's aux ids differ from the engine's default layers on an engine version whose
    CUDA-graph runner re-sets the captured layers to the defaults (some SGLang releases).

    ## Why it matters
    Silent: eager prefill captures the trained layers, but every CUDA-graphed decode and
    verify step captures the default ones, so acceptance drops whenever CUDA graphs are on
    (the default).

    ## Example
    A SpecForge draft trained on output-of `[3, 20, 40]` served by such an SGLang release.

    ## Fix
    Use an SGLang release without the reset (`draftfit matrix` lists them), or serve with
    `--disable-cuda-graph`.
    """


@rule(
    AUX_IDS_NOT_ASCENDING,
    "the aux ids are not ascending, but the engine feeds fc the states in ascending layer order",
)
def aux_ids_not_ascending(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    The written aux ids are in ascending order, when the engine version captures exactly the
    layers they name (other layers are DF301, repeated ids DF306).

    ## Why it matters
    The engines capture the states inside the target's layer loop and concatenate them in
    ascending layer order, whatever order the ids are written in. A draft trained with the
    states in the written order then gets its `fc` input blocks permuted: it loads, and
    drafts badly.

    ## Example
    `eagle_aux_hidden_state_layer_ids: [29, 2, 16]`: the engine feeds `fc` layers 2, 16, 29.

    ## Fix
    If the draft was trained in the written order, `draftfit convert` lists the ids ascending
    and moves `fc.weight`'s input blocks (and `input_norm` / `fc_norm` weights) into the same
    order, for a BF16, F16 or F32 `fc`; a quantized `fc` must be rearranged before
    quantizing. If it was trained in ascending order, listing the ids ascending is enough.
    """
    view = ctx.view
    if view is None or view.aux is None or view.aux.used is None:
        return
    trained, where = trained_capture_ids(ctx)
    if trained is None or where is None:
        return
    ascending = tuple(sorted(trained))
    if len(set(trained)) != len(trained) or trained == ascending:
        return
    if set(view.aux.used) != set(trained):
        return
    order = view.aux.concat_order
    if order is None or not order.known or order.value != "ascending":
        return
    width = ctx.draft.target_hidden_size
    blocks = f" ({len(trained)} blocks of {width} columns)" if width else ""
    counted = f" (capture-before {_fmt(trained)})" if tuple(where.ids) != trained else ""
    if view.aux.user_setting:  # the layers come from the launch, and are sorted there
        ascending_fix = f"{view.title} needs nothing more (it sorts the layers it captures)"
    else:
        ascending_fix = capture_fix(view, ascending)
    if fc_blocks_problem(ctx.draft.tensors, len(trained), None) is None:
        written_fix = (
            f"convert it (`draftfit convert` lists the ids ascending and moves `fc.weight`'s "
            f"input columns{blocks} to match)"
        )
    else:
        written_fix = (
            f"move `fc`'s input columns{blocks} into ascending layer order before quantizing "
            "it (`draftfit convert` moves only BF16, F16 and F32 columns), or retrain"
        )
    yield Violation(
        f"`{where.pointer}` lists the aux layers as {_fmt(where.ids)}{counted}, but "
        f"{view.title} concatenates the captured states in ascending layer order "
        f"{_fmt(ascending)}: a draft trained in the written order gets its `fc` input blocks "
        "permuted",
        config_at(where.pointer),
        f"if the draft was trained in the written order, {written_fix}; if it was trained in "
        f"ascending order, {ascending_fix}",
        order.citations,
    )


@rule(
    AUX_IDS_NOT_RECORDED,
    "the producer does not write the aux layers it trained on",
    scope=Scope.CHECKPOINT,
)
def aux_ids_not_recorded(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    A NeMo Automodel EAGLE-3 export (`LlamaEagle3DraftModel`) whose config.json names no aux
    layer ids anywhere.

    ## Why it matters
    NeMo Automodel keeps the aux layers it trains on (`aux_layer_ids`) in the training recipe
    and does not write them into the exported config. With its default they are the layers
    every engine captures by default (output-of `[1, L//2-1, L-4]`), but a run with custom
    ids exports a draft that every engine serves on the wrong layers, silently. The trained
    layers cannot be told from the checkpoint, so draftfit assumes the default.

    ## Example
    A NeMo export with `model.fc.weight`, `d2t`, `t2d` and no `eagle_aux_hidden_state_layer_ids`.

    ## Fix
    Look up `aux_layer_ids` in the training recipe and write them into config.json:
    top-level `eagle_aux_hidden_state_layer_ids` in capture-before counting (output-of + 1)
    for vLLM, `eagle_config.eagle_aux_hidden_state_layer_ids` in output-of counting for
    SGLang; TensorRT-LLM takes them as `eagle3_layers_to_capture` when serving.
    """
    if ctx.draft.dialect.name != NEMO_AUTOMODEL or ctx.draft.trained_aux is not None:
        return
    layers = _target_layers(ctx)
    default = (
        f" ({_physical(default_capture_ids(layers))} for this target)" if layers is not None else ""
    )
    yield Violation(
        "the checkpoint does not say which target layers it was trained on: NeMo Automodel "
        "does not write its `aux_layer_ids` into config.json, so the trained layers are "
        f"unknown; draftfit and the engines assume the default layers{default}, which is "
        "right only if training used NeMo's default",
        config_at("/eagle_aux_hidden_state_layer_ids"),
        "write the ids from the training recipe into config.json (capture-before ids at "
        "`/eagle_aux_hidden_state_layer_ids` for vLLM; output-of ids at "
        "`/eagle_config/eagle_aux_hidden_state_layer_ids` for SGLang)",
    )
