"""What every MTP step shares: the procedure's MTP inputs and view part, and how an MTP
finding is recorded.

An MTP procedure is a procedure of the engine like any other (`by_method["mtp"]` of the
engine's :class:`~draftfit.engines.procedure.run.EngineProcedure`): its steps take the
:class:`~draftfit.engines.procedure.state.BuildState`, read the target's own MTP facts and
the launch from `BuildInputs.mtp` (:class:`~draftfit.engines.mtp_view.MtpInputs`) and write
the typed MTP part of the view (`EngineView.mtp`, :class:`~draftfit.engines.mtp_view.MtpView`).
The steps every engine shares are in :mod:`.mtp_steps`, each engine's own in
`engines/<engine>/mtp.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.engines.mtp_view import MtpInputs, MtpView
from draftfit.engines.procedure.run import Step
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.view import Event
from draftfit.location import Location
from draftfit.records import replace
from draftfit.rule_ids import Consequence, RuleId

if TYPE_CHECKING:
    from draftfit.engines.profile import Profile

# How many names a finding lists before it says "and N more".
SHOWN = 6
# A release's outcome words in the engine data, as the consequence a finding states.
OUTCOMES = {
    "refused": Consequence.REFUSES_TO_START,
    "garbage": Consequence.DRAFTS_GARBAGE,
}


def mtp_inputs(state: BuildState) -> MtpInputs:
    """The MTP inputs of an MTP build (an MTP procedure runs only with them). For a NextN
    export, once the release's reading of it is known (`MtpView.export_reading`), `target`
    is the export as that release reads it."""
    inputs = state.inputs.mtp
    if inputs is None:
        raise ValueError("an MTP procedure runs on inputs with the target's MTP facts")
    part = state.view.mtp
    reading = part.export_reading if part is not None else None
    if inputs.export is not None and reading is not None:
        target = inputs.export.readings[reading]
        if target is not inputs.target:
            return replace(inputs, target=target)
    return inputs


def mtp_view(state: BuildState) -> MtpView:
    """The typed MTP part of the view being built (made by :func:`mtp_build`)."""
    part = state.view.mtp
    if part is None:
        part = state.view.mtp = MtpView()
    return part


def mtp_finding(
    state: BuildState,
    rule: RuleId,
    message: str,
    *,
    location: Location | None = None,
    keys: tuple[str, ...] = (),
    fix: str | None = None,
    consequence: Consequence | None = None,
) -> None:
    """Add a finding of `rule` resting on the facts `keys` (its consequence `consequence`,
    else the rule's own); one that refuses the start is a refusal of the view."""
    event = Event(
        rule,
        message,
        location or Location("config.json"),
        state.citations(*keys),
        fix,
        consequence,
    )
    if (consequence or rule.consequence) is Consequence.REFUSES_TO_START:
        state.view.refusals.append(event)
    else:
        state.view.events.append(event)


def not_read(state: BuildState, what: str) -> None:
    """Say that a part of the MTP check was not made at this release (its verdict is then
    unverified, never `compatible`)."""
    part = mtp_view(state)
    if what not in part.not_read:
        part.not_read.append(what)


def known_value(state: BuildState, key: str) -> object | None:
    """The release's value of the fact `key`; None where the engine's data has no such fact
    (an engine whose code was not read for it) or the fact was not read at this release."""
    if key not in state.profile.data.facts:
        return None
    fact = state.profile.fact(key)
    return fact.value if fact.known else None


def tokens_chosen(profile: Profile, family: str | None) -> tuple[int, int, int] | None:
    """The [steps, top-k, draft tokens] the release chooses for an MTP launch that names
    none (`mtp_tokens_default`: one triple for every family, or a triple per family where
    the release chooses by architecture); None where it was not read for `family`."""
    fact = profile.fact("mtp_tokens_default")
    if not fact.known:
        return None
    chosen = fact.value.get(family) if isinstance(fact.value, dict) else fact.value
    if not isinstance(chosen, list) or len(chosen) != 3:
        return None
    steps, topk, tokens = (int(n) for n in chosen)
    return steps, topk, tokens


def mtp_build(*steps: Step) -> Step:
    """An engine's MTP steps as one step: the view gets its MTP part, the steps run in order
    until one stops, and the MTP draft counts as built when nothing refused it."""

    def build_mtp_draft(state: BuildState) -> bool:
        if state.inputs.mtp is None:
            return True  # no MTP facts (see :func:`mtp_not_read`)
        mtp_view(state)
        ran = all(step(state) is not False for step in steps)
        state.view.built = not state.view.refusals
        return ran

    return build_mtp_draft


def mtp_not_read(state: BuildState) -> bool:
    """Step: an engine whose MTP serving draftfit has not read (the check is unverified).

    Like every MTP step it judges only the target's own MTP facts: a build without them (an
    EAGLE check whose launch names an MTP method) builds nothing here, and the launch's own
    checks say why."""
    if state.inputs.mtp is None:
        return False
    not_read(state, f"draftfit has not read how {state.title} serves MTP layers")
    return False


__all__ = [
    "OUTCOMES",
    "SHOWN",
    "known_value",
    "mtp_build",
    "mtp_finding",
    "mtp_inputs",
    "mtp_not_read",
    "mtp_view",
    "not_read",
    "tokens_chosen",
]
