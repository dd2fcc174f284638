"""DF6xx — norm placement flags (norm_before_residual, norm_before_fc, fc_norm, norm_output)."""

from __future__ import annotations

from collections.abc import Iterator

from draftfit.draft.dialects import SPECFORGE
from draftfit.rule_ids import (
    NORM_BEFORE_RESIDUAL_DEFAULT,
    NORM_FLAG_IGNORED,
    NORM_OUTPUT_SEMANTICS_DIFFER,
    RuleId,
)
from draftfit.rules.base import Context, Violation, config_at, event_rule, rule

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[RuleId, ...] = (NORM_OUTPUT_SEMANTICS_DIFFER,)
EMITS_STAGE = "rule's own check"


@event_rule(
    NORM_FLAG_IGNORED,
    "a norm flag the draft was trained with is ignored by the engine version",
)
def norm_flag_ignored() -> None:
    """## What it checks
    Every norm flag set to true (`norm_before_residual`, `norm_before_fc`, `fc_norm`,
    `norm_output`) is implemented by the engine version, and — for speculators configs —
    copied from the config by its adaptor.

    ## Why it matters
    The engine silently runs the draft without the norm it was trained with; acceptance
    drops. Engines added these flags one by one, and for speculators configs later than for
    plain ones.

    ## Example
    A speculators Eagle 3.1 draft (`norm_before_fc`, `norm_output` true) on a vLLM version
    that does not read those flags yet.

    ## Fix
    Use an engine version that implements the flag.
    """


@event_rule(
    NORM_BEFORE_RESIDUAL_DEFAULT,
    "norm_before_residual is not written and the engine's default differs",
)
def norm_before_residual_default() -> None:
    """## What it checks
    A speculators-format config writes `norm_before_residual` explicitly.

    ## Why it matters
    vLLM's speculators adaptor defaults a missing key to `true`, the speculators library's
    own config class defaults it to `false`; whichever was used in training, one side runs the
    draft with the residual taken at the wrong place.

    ## Example
    A hand-written speculators config without the key.

    ## Fix
    Write the value used in training.
    """


@rule(
    NORM_OUTPUT_SEMANTICS_DIFFER,
    "SpecForge's norm_output means something else in every engine",
)
def norm_output_semantics_differ(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    A SpecForge checkpoint with `norm_output: true`.

    ## Why it matters
    In SpecForge, `norm_output` only decides whether logits see the final norm; the hidden
    state carried to the next drafting step stays pre-norm. vLLM, SGLang, TensorRT-LLM and
    speculators read `norm_output: true` as "carry the post-norm state", so the draft runs
    with a feedback it was not trained on (inferred from source; not measured).

    ## Example
    `qwen3-30B-A3B-eagle3.1.json` style configs (`fc_norm: true, norm_output: true`).

    ## Fix
    Check acceptance with and without the flag; set `norm_output: false` if the draft was
    trained with SpecForge's meaning.
    """
    draft = ctx.draft
    if draft.dialect.name == SPECFORGE and draft.get("norm_output") is True:
        yield Violation(
            "`norm_output` is true in a SpecForge checkpoint: SpecForge trains with pre-norm "
            "feedback, engines apply post-norm feedback for this flag",
            config_at(draft.pointer("norm_output")),
            "measure acceptance with `norm_output: false`",
        )
