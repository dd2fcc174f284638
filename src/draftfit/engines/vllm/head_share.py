"""vLLM's V2 model runner next to a draft that stores its own quantized lm_head.

While it loads an EAGLE draft, vLLM decides whether the draft shares the target's lm_head.
A draft that stores an lm_head tensor keeps its own head unless it equals the target's, and
on some releases the V2 model runner compares the two by reading the draft head's `weight`;
a head quantized with a packed scheme has none, and start-up fails (data:
`mrv2_head_share_no_weight`). This module says whether that happens for a draft, a release
and the runner that serves the pair, and the fix right for the release.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from draftfit import rule_ids
from draftfit.engines.draft_quant import DraftQuant
from draftfit.engines.profile import Profile
from draftfit.engines.serve import first_release_where
from draftfit.engines.view import Event
from draftfit.location import Location

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.DRAFT_HEAD_SHARE_CHECK_FAILS,)
EMITS_STAGE = "engine procedure: vLLM's lm_head sharing"

SHARE_FACT = "mrv2_head_share_no_weight"
ENV_FACT = "mrv1_runner_env"
HEAD = "lm_head"


def head_share_event(
    profile: Profile,
    q: DraftQuant,
    stored: Collection[str],
    raw: Callable[[str], str],
    runner: tuple[str | None, str],
) -> Event | None:
    """The failure of the V2 runner's lm_head sharing check for this draft, or None.

    `q` is the draft's quantization, `stored` its tensor names (draftfit's canonical
    names; `raw` gives the stored spelling), `runner` the runner serving the pair and why
    (None when it depends on a target not given). It fails only where all hold: the V2
    runner serves the pair, this release builds the draft's lm_head quantized with the
    draft's own compressed-tensors config, the config quantizes lm_head with a scheme that
    leaves it without `weight` at the check, and the draft stores an lm_head tensor (vLLM
    then marks the head as the draft's own and compares it)."""
    which, why = runner
    if which != "mrv2":
        return None
    if q.scheme is None or q.scheme not in (profile.value(SHARE_FACT) or []):
        return None
    if profile.value("draft_quant_config_source") != "draft":
        return None
    if q.method not in (profile.value("draft_quant_methods") or []):
        return None
    if not profile.value("draft_quant_lm_head") or not q.covers(HEAD):
        return None
    heads = sorted(name for name in stored if name.startswith(HEAD + "."))
    if not heads:
        return None
    shown = next((n for n in heads if n == f"{HEAD}.weight_packed"), heads[0])
    message = (
        f"the draft stores its own lm_head quantized with the {q.scheme} scheme "
        f"(`{raw(shown)}`, no `weight`): {why}, which on this release decides whether the "
        "draft shares the target's lm_head by reading the draft head's `weight`, so "
        "start-up fails with AttributeError: 'ParallelLMHead' object has no attribute "
        "'weight'"
    )
    return Event(
        rule_ids.DRAFT_HEAD_SHARE_CHECK_FAILS,
        message,
        Location(None, tensor=raw(shown)),
        profile.citations(SHARE_FACT, "runner_default", "draft_quant_lm_head"),
        _fix(profile, q.scheme),
    )


def _fix(profile: Profile, scheme: str) -> str:
    """The fixes this release allows: a release that keeps a head without `weight`, the V1
    model runner where the release still has it, or an unquantized lm_head."""
    options: list[str] = []
    later = first_release_where(profile, lambda p: scheme not in (p.value(SHARE_FACT) or []))
    if later:
        options.append(
            f"use vLLM {later} or later (it keeps a draft head without `weight` uncompared)"
        )
    env = profile.value(ENV_FACT)
    if isinstance(env, str) and env:
        options.append(
            f"serve with the V1 model runner ({env}; it compares the heads only when both "
            "have a `weight`)"
        )
    options.append(
        "store lm_head unquantized (`lm_head.weight` in bf16) and list `lm_head` in "
        "`quantization_config.ignore`"
    )
    return "; or ".join(options)
