"""DF118–DF119 — config values of the wrong JSON type (or, for names such as `torch_dtype`,
naming nothing known), in the draft or the target config.

The expected type of every field draftfit reads lives in :mod:`draftfit.draft.config_schema`;
:func:`draftfit.draft.config_schema.scrub` sets wrong values aside while the draft and target are
read (so nothing downstream crashes on them or uses them) and these rules report them, so
a draft with such a value is never called compatible.
"""

from __future__ import annotations

from collections.abc import Iterator

from draftfit.draft.config_schema import DTYPE_NAME, MODEL_TYPE_NAME, TypeProblem, json_type
from draftfit.location import Location, config_at, target_config_at
from draftfit.rule_ids import CONFIG_FIELD_MISREAD, CONFIG_FIELD_WRONG_TYPE, RuleId
from draftfit.rules.base import Context, Scope, Violation, rule

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[RuleId, ...] = (
    CONFIG_FIELD_WRONG_TYPE,
    CONFIG_FIELD_MISREAD,
)
EMITS_STAGE = "rule's own check"


def _violations(ctx: Context, crash: bool) -> Iterator[Violation]:
    for problem in ctx.draft.config_problems:
        if problem.expect.crash == crash:
            yield _violation(problem, config_at(problem.pointer), crash)
    if ctx.target is not None:
        for problem in ctx.target.problems:
            if problem.expect.crash == crash:
                where = target_config_at(problem.pointer, origin=ctx.target.origin)
                yield _violation(problem, where, crash)


def _violation(problem: TypeProblem, where: Location, crash: bool) -> Violation:
    consequence = (
        "the engine refuses the config or crashes on it"
        if crash
        else "the engine loads it but reads it as something else (a non-empty string or "
        "list counts as true)"
    )
    return Violation(
        f"`{problem.pointer}` is {problem.shown()} (a {json_type(problem.value)}); expected a "
        f"{problem.expected}. Read by {problem.expect.read_by}: {consequence}. draftfit "
        "treats it as absent",
        where,
        fix=f"write `{problem.name}` as a {_written_as(problem.expect.kind)}"
        + (" (or null for the engine's default)" if problem.expect.nullable else ""),
    )


def _written_as(kind: str) -> str:
    """`JSON integer` for a JSON type; a value domain (a dtype name) as it is."""
    return kind if kind in (DTYPE_NAME, MODEL_TYPE_NAME) else f"JSON {kind}"


@rule(
    CONFIG_FIELD_WRONG_TYPE,
    "a config field has a JSON type or a value engines refuse or crash on",
    scope=Scope.CHECKPOINT,
)
def config_field_wrong_type(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Every config field draftfit reads whose wrong type breaks the engine (dims, counts,
    aux-layer ids, class names, the speculators structure, RoPE and norm parameters) has
    the JSON type engines expect, in the draft's `config.json` and in the target's. Dims
    and counts are positive integers below 2**31: a bool is not an integer, and neither is
    a float such as `4096.0` (HF's loader keeps it a float). Null is accepted only where
    engines take it as "use the default" (`target_hidden_size`, `head_dim`, the aux-id
    lists, `rope_scaling`, ...). Names are checked too, not only their type: `torch_dtype`
    and `dtype` name a torch dtype (`bfloat16`, `float16`, `auto`, ...), and `model_type`
    is a model type name (letters, digits, `_`, `-`), so `"64"` is reported in both. The
    full table is `draftfit.draft.config_schema`.

    ## Why it matters
    HF's config loader keeps JSON types as written, so a `"4096"` hidden size or a
    `"[2, 18, 33]"` aux list reaches the engine as a string: the model builder fails in
    shape arithmetic, the typed config class refuses it, or the aux capture indexes with
    it. draftfit reports the value and treats it as absent in every other check.

    ## Example
    `"hidden_size": "4096"` under `transformer_layer_config`, or
    `"eagle_aux_hidden_state_layer_ids": 3`, or `"torch_dtype": "64"`.

    ## Fix
    Write the value as the JSON type named in the finding (`4096`, `[2, 18, 33]`), or a
    name the engines know (`"torch_dtype": "bfloat16"`).
    """
    yield from _violations(ctx, crash=True)


@rule(
    CONFIG_FIELD_MISREAD,
    "a config field has a JSON type engines silently read as something else",
    scope=Scope.CHECKPOINT,
)
def config_field_misread(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    Config fields engines read loosely (the norm and bias flags, `tie_word_embeddings`,
    the `eagle_config` switches, `auto_map`, the speculators verifier, token ids) have the
    JSON type their writer meant: flags are `true`/`false`, not strings or numbers.

    ## Why it matters
    Engines test these with Python truthiness: `"norm_before_residual": "false"` is a
    non-empty string, so the engine applies the norm the author meant to switch off, and
    the draft loads but drafts with a different graph than it was trained with.

    ## Example
    `"norm_before_residual": "false"`, `"tie_word_embeddings": 0`,
    `"speculators_config": {"verifier": "meta-llama/Llama-3.1-8B"}`.

    ## Fix
    Write the value as the JSON type named in the finding (`false`, an object).
    """
    yield from _violations(ctx, crash=False)
