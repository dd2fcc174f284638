"""DF4xx — vocabulary: draft vocab, the d2t/t2d maps, lm_head, and the target's vocab."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from operator import add, itemgetter

from draftfit.checkpoint.model import TensorInfo
from draftfit.checkpoint.values import cached_ints, cached_mask, cached_mask_count
from draftfit.rule_ids import (
    D2T_IGNORED_BY_ENGINE,
    D2T_OUT_OF_RANGE,
    LM_HEAD_MISSING_REDUCED_VOCAB,
    MISSING_D2T,
    T2D_INCONSISTENT,
    VOCAB_MAP_INCONSISTENT,
    VOCAB_SIZE_MISMATCH,
    RuleId,
)
from draftfit.rules.base import (
    Context,
    Location,
    Scope,
    Violation,
    config_at,
    event_rule,
    from_view_events,
    rule,
)

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[RuleId, ...] = (
    MISSING_D2T,
    LM_HEAD_MISSING_REDUCED_VOCAB,
    D2T_OUT_OF_RANGE,
    VOCAB_MAP_INCONSISTENT,
    T2D_INCONSISTENT,
)
EMITS_STAGE = "rule's own check"


def _tensor_loc(ctx: Context, canonical: str) -> Location:
    info = ctx.draft.tensors.get(canonical)
    return Location(info.file if info else None, tensor=ctx.draft.raw(canonical))


def _targets(values: array[int]) -> list[int]:
    """The target id each draft id maps to (i + d2t[i]), computed without a Python loop:
    a draft vocabulary has tens of thousands of entries, and every check reads them."""
    return list(map(add, range(len(values)), values))


# The target ids `d2t` maps the draft ids to, with their smallest and largest.
MappedTargets = tuple[list[int], int, int]


def _mapped_targets(ctx: Context, info: TensorInfo, values: array[int]) -> MappedTargets:
    """The target ids of a stored `d2t` (see :func:`_targets`) and their bounds, computed
    once per checkpoint for the range and the agreement checks alike."""

    def compute() -> MappedTargets:
        targets = _targets(values)
        return targets, min(targets, default=0), max(targets, default=-1)

    return ctx.checkpoint.memo.remember(
        ("d2t target ids", info.file, info.byte_range, info.dtype), (info.file,), compute
    )


def _out_of_range(mapped: MappedTargets, vocab: int) -> tuple[int, int]:
    """(how many draft ids `d2t` maps outside [0, vocab), the first such id)."""
    targets, low, high = mapped
    if not targets or (low >= 0 and high < vocab):
        return 0, -1
    bad = [i for i, target in enumerate(targets) if not 0 <= target < vocab]
    return len(bad), bad[0]


def _map_agreement(mapped: MappedTargets, t2d: bytes | None) -> tuple[bool, bool]:
    """(the target ids `d2t` maps to are distinct, `t2d` marks every one of them; with as
    many marks as ids, which DF407 checks first, they are then exactly the marked ids)."""
    targets, low, high = mapped
    if len(set(targets)) != len(targets):
        return False, False
    if not t2d or not targets:
        return True, True
    if low < 0 or high >= len(t2d):
        return True, False
    if len(targets) == 1:
        return True, bool(t2d[targets[0]])
    # one lookup per id, in C: a draft vocabulary has tens of thousands of them
    return True, 0 not in itemgetter(*targets)(t2d)


@rule(MISSING_D2T, "a reduced-vocabulary draft has no d2t map")
def missing_d2t(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    A draft whose `draft_vocab_size` is smaller than its `vocab_size` stores `d2t`
    (int64 `[draft_vocab_size]`, offsets: target id = i + d2t[i]).

    ## Why it matters
    vLLM has no check: the mapping stays all zeros, so draft token i is proposed as target
    token i. The server runs and acceptance is near zero. `speculators convert` drops `d2t`
    from ModelOpt exports (no `t2d` there) exactly this way.

    ## Example
    `draft_vocab_size: 32000`, `vocab_size: 128256`, no `d2t` tensor.

    ## Fix
    Store the `d2t` produced with the draft vocabulary (or rebuild it from `t2d`:
    `draftfit convert` derives it).
    """
    view = ctx.view
    if view is None or not view.built or view.vocabulary is None or not view.vocabulary.reduced:
        return
    if not ctx.checkpoint.weights_complete:
        return
    if "d2t" in ctx.draft.tensors:
        return
    required = view.expectations.get("d2t")
    if required is not None and required.if_missing == "fails":
        return  # the engine refuses to start: reported by missing-required-tensor
    draft = ctx.draft
    fix = "store the trained `d2t` map"
    if "t2d" in draft.tensors:
        fix = "derive `d2t` from the stored `t2d` (`draftfit convert --to vllm`)"
    yield Violation(
        f"`draft_vocab_size` is {view.vocabulary.draft_vocab_size} < `vocab_size` "
        f"{draft.vocab_size}, but no `d2t` is stored: {view.title} keeps the map at zeros and "
        "proposes draft token i as target token i",
        config_at(draft.pointer("draft_vocab_size")),
        fix,
        view.expectations["d2t"].citations if "d2t" in view.expectations else (),
    )


@rule(
    LM_HEAD_MISSING_REDUCED_VOCAB,
    "no lm_head is stored and the target's cannot stand in for a reduced vocabulary",
)
def lm_head_missing_reduced_vocab(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    An EAGLE-3 draft without `lm_head.weight` only drafts correctly when the engine borrows
    the target's lm_head *and* the draft vocabulary equals the target's.

    ## Why it matters
    With a reduced draft vocabulary, vLLM (recent versions) installs the target's lm_head, its
    logits processor keeps the first `draft_vocab_size` columns (target tokens
    0..Vd-1), and `d2t` then moves those scores to other tokens: the server runs and the
    drafts are garbage (confirmed by running vLLM 0.34.0). Older versions leave the head
    uninitialised (reported as missing-tensor-uninitialised). SGLang does the same with any
    draft whose config says `tie_word_embeddings: true`: its head becomes the target's
    embedding, whatever `lm_head.weight` holds.

    ## Example
    `draft_vocab_size: 32000` and no `lm_head.weight` (filtered out with the embeddings).

    ## Fix
    Store the trained `lm_head.weight` `[draft_vocab_size, hidden_size]`.
    """
    yield from from_view_events(ctx, LM_HEAD_MISSING_REDUCED_VOCAB)
    view = ctx.view
    if view is None or not view.built or "lm_head.weight" in ctx.draft.tensors:
        return
    if not ctx.checkpoint.weights_complete:
        return
    exp = view.expectations.get("lm_head.weight")
    if exp is None or exp.if_missing != "shared":
        return
    Vd = view.vocabulary.draft_vocab_size if view.vocabulary is not None else None
    Vt = ctx.target.vocab_size if ctx.target else ctx.draft.vocab_size
    if isinstance(Vd, int) and isinstance(Vt, int) and Vd != Vt:
        yield Violation(
            f"no `lm_head.weight` is stored, so {view.title} borrows the target's ({Vt} rows) "
            f"for a draft vocabulary of {Vd}: its logits no longer line up with `d2t`, and "
            "the drafts are garbage",
            Location(None, tensor="lm_head.weight"),
            f"store the trained `lm_head.weight` [{Vd}, {ctx.draft.hidden_size}]",
            exp.citations,
        )


@rule(
    D2T_OUT_OF_RANGE,
    "d2t maps draft tokens outside the target vocabulary",
    scope=Scope.CHECKPOINT,
)
def d2t_out_of_range(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    For every draft id i, `i + d2t[i]` lies in `[0, target vocab)` (the target's vocab with
    `--target`, else the draft's `vocab_size`). Reads the d2t values (a few hundred KB).

    ## Why it matters
    Out-of-range target ids crash sampling on the GPU (device-side assert) or propose
    tokens that do not exist.

    ## Example
    `d2t` stored as absolute target ids instead of offsets.

    ## Fix
    Store offsets (`target_id - draft_id`), as every trainer does.
    """
    info = ctx.draft.tensors.get("d2t")
    if info is None:
        return
    values = cached_ints(ctx.checkpoint, info)
    vocab = ctx.target.vocab_size if ctx.target and ctx.target.vocab_size else ctx.draft.vocab_size
    if not values or not vocab:
        return
    # Kept by the checkpoint: `matrix` and recipes check the same map many times.
    count, first = ctx.checkpoint.memo.remember(
        ("d2t offsets in range", info.file, info.byte_range, info.dtype, vocab),
        (info.file,),
        lambda: _out_of_range(_mapped_targets(ctx, info, values), vocab),
    )
    if count:
        yield Violation(
            f"{count} of {len(values)} draft ids map outside [0, {vocab}) (first: draft id "
            f"{first} -> {first + values[first]}); d2t must hold offsets",
            _tensor_loc(ctx, "d2t"),
            "store d2t as offsets (target_id - draft_id)",
        )


# Where each engine skips a stored `t2d` without reading it (the DF407 message cites them).
T2D_SKIPPED_SOURCES = (
    "vllm/model_executor/models/llama_eagle3.py:416-437@v0.34.0",
    "sglang/srt/models/llama_eagle3.py:355-356@v0.5.23",
    "tensorrt_llm/_torch/models/modeling_speculative.py@v1.4.0rc0 (no t2d parameter)",
)


@rule(
    VOCAB_MAP_INCONSISTENT,
    "d2t has the wrong shape or maps two draft ids to one target id",
    scope=Scope.CHECKPOINT,
)
def vocab_map_inconsistent(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    `d2t` is `[draft_vocab_size]` and the target ids `i + d2t[i]` are distinct.

    ## Why it matters
    Engines map every drafted id through `d2t`; two draft ids mapped to one target id
    mean the map was built for another vocabulary selection or damaged, and the draft
    proposes wrong tokens.

    ## Example
    A `d2t` whose offsets send draft ids 7 and 8 both to target id 12.

    ## Fix
    Regenerate `d2t` from the draft vocabulary the draft was trained with.
    """
    draft = ctx.draft
    d2t_info = draft.tensors.get("d2t")
    Vd = draft.draft_vocab_size
    if d2t_info is not None and Vd and tuple(d2t_info.shape) != (Vd,):
        yield Violation(
            f"`d2t` has shape {list(d2t_info.shape)}, expected [{Vd}] (draft_vocab_size)",
            _tensor_loc(ctx, "d2t"),
            "regenerate d2t for this draft vocabulary",
        )
        return
    agreement = _agreement(ctx)
    if agreement is not None and not agreement[0]:
        yield Violation(
            "`d2t` maps several draft ids to the same target id",
            _tensor_loc(ctx, "d2t"),
            "regenerate d2t from the draft vocabulary",
        )


@rule(
    T2D_INCONSISTENT,
    "t2d has the wrong shape or count, or marks other ids than d2t maps to",
    scope=Scope.CHECKPOINT,
)
def t2d_inconsistent(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    `t2d` is `[vocab_size]` with exactly `draft_vocab_size` true entries and (when `d2t`
    is stored too) marks exactly the target ids `i + d2t[i]`.

    ## Why it matters
    No engine reads `t2d`: vLLM, SGLang and TensorRT-LLM skip it when loading and map
    drafted ids through `d2t` alone, so a wrong `t2d` changes nothing at serving time.
    It is still a sign that one of the two maps was rebuilt from another vocabulary
    selection; if that was `d2t`, the draft proposes wrong tokens (the value checks and
    an acceptance measurement tell which).

    ## Example
    A `t2d` with 10 true entries for `draft_vocab_size` 32,000.

    ## Fix
    Regenerate both maps from the vocabulary selection the draft was trained with.
    """
    draft = ctx.draft
    t2d_info = draft.tensors.get("t2d")
    if t2d_info is None:
        return
    unused = "no engine reads `t2d` (serving maps drafted ids through `d2t` alone)"
    if draft.vocab_size and tuple(t2d_info.shape) != (draft.vocab_size,):
        yield Violation(
            f"`t2d` has shape {list(t2d_info.shape)}, expected [{draft.vocab_size}] "
            f"(vocab_size); {unused}",
            _tensor_loc(ctx, "t2d"),
            "regenerate t2d for this vocabulary, or drop it",
            T2D_SKIPPED_SOURCES,
        )
        return
    marked = cached_mask_count(ctx.checkpoint, t2d_info)
    if marked is None:  # unreadable bytes: the reader reports the damage
        return
    Vd = draft.draft_vocab_size
    if Vd and marked != Vd:
        yield Violation(
            f"`t2d` marks {marked} target ids, but draft_vocab_size is {Vd}; {unused}",
            _tensor_loc(ctx, "t2d"),
            "regenerate t2d from the draft vocabulary, or drop it",
            T2D_SKIPPED_SOURCES,
        )
        return
    agreement = _agreement(ctx)
    if agreement is not None and agreement[0] and not agreement[1]:
        yield Violation(
            f"the target ids `d2t` maps to are not the ids `t2d` marks; {unused}, so check "
            "that `d2t` is the map the draft was trained with",
            _tensor_loc(ctx, "t2d"),
            "regenerate both maps from the same vocabulary selection",
            T2D_SKIPPED_SOURCES,
        )


def _agreement(ctx: Context) -> tuple[bool, bool] | None:
    """(d2t's target ids are distinct, they are exactly t2d's marks), computed once per
    checkpoint; None without a well-shaped d2t."""
    draft = ctx.draft
    d2t_info, t2d_info = draft.tensors.get("d2t"), draft.tensors.get("t2d")
    Vd = draft.draft_vocab_size
    if d2t_info is None or (Vd and tuple(d2t_info.shape) != (Vd,)):
        return None
    d2t = cached_ints(ctx.checkpoint, d2t_info)
    if not d2t:
        return None
    t2d_ok = t2d_info is not None and not (
        draft.vocab_size and tuple(t2d_info.shape) != (draft.vocab_size,)
    )
    t2d = cached_mask(ctx.checkpoint, t2d_info) if t2d_ok and t2d_info is not None else None
    files = (d2t_info.file,) + ((t2d_info.file,) if t2d_info is not None else ())
    where = (d2t_info.file, d2t_info.byte_range, d2t_info.dtype)
    t2d_where = (t2d_info.file, t2d_info.byte_range, t2d_info.dtype) if t2d_info else None
    return ctx.checkpoint.memo.remember(
        ("d2t-t2d-agreement", where, t2d_where, t2d_ok),
        files,
        lambda: _map_agreement(_mapped_targets(ctx, d2t_info, d2t), t2d),
    )


@event_rule(
    VOCAB_SIZE_MISMATCH,
    "the draft and target vocabularies differ",
    needs_target=True,
)
def vocab_size_mismatch() -> None:
    """## What it checks
    The draft's `vocab_size` equals the target's (text config) `vocab_size`.

    ## Why it matters
    Token ids from the target index the draft's embedding and the d2t map produces target
    ids: different vocabularies fail at the first forward or propose wrong tokens.

    ## Example
    A draft trained for Llama-3.1 (128,256) next to Llama-4 (202,048).

    ## Fix
    Use a draft trained with this target's tokenizer.
    """


@event_rule(D2T_IGNORED_BY_ENGINE, "the engine version drops the stored d2t")
def d2t_ignored_by_engine() -> None:
    """## What it checks
    Engine versions with a bug that discards a correctly stored `d2t` (a vLLM loader that
    checks for the original name after renaming it).

    ## Why it matters
    Reduced-vocabulary drafts then propose draft ids as target ids: silent garbage.

    ## Example
    Any EAGLE-3 draft with `draft_vocab_size` < `vocab_size` on such a vLLM version.

    ## Fix
    Use a vLLM version without the bug (`draftfit matrix` lists them).
    """
