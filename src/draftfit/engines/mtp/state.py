"""The typed state an MTP procedure builds over, and the `Step` / `Procedure` types.

A step is a named function `(state) -> bool | None`: it reads the target's MTP facts, the
launch and its engine's data, writes the typed MTP part of the view (:class:`MtpView`) and
the view's refusals and events (each tagged with its rule), and returns False to stop the
procedure (the engine stops there: nothing after it runs).
"""

from __future__ import annotations

from collections.abc import Callable

from draftfit.draft.mtp import MtpTarget
from draftfit.engines.mtp.view import MtpView
from draftfit.engines.profile import Profile
from draftfit.engines.view import EngineView, Event
from draftfit.location import Location
from draftfit.records import frozen, record
from draftfit.rule_ids import Consequence, RuleId


@frozen
class MtpLaunch:
    """The launch as the MTP build reads it (None: not given, the release's default).

    Attributes:
        given: whether a launch was given for this engine (else `--method mtp` alone).
        method: the method or algorithm as written (`mtp`, `deepseek_mtp`, `NEXTN`).
        tokens: the number of draft tokens per step (vLLM `num_speculative_tokens`, SGLang
            `--speculative-num-steps`).
        draft_model: the draft the launch names (vLLM `model`, SGLang
            `--speculative-draft-model-path`).
        target_model: the target the launch serves.
        pointer: where the method is written, for locations.
    """

    given: bool = False
    method: str | None = None
    tokens: int | None = None
    draft_model: str | None = None
    target_model: str | None = None
    pointer: str = "--speculative-config"

    @property
    def other_draft(self) -> str | None:
        """The draft the launch names when it is not the target itself, else None."""
        if self.draft_model is None or self.draft_model == self.target_model:
            return None
        return self.draft_model


@record
class MtpBuild:
    """One MTP build: the target's MTP facts, the release, the launch, and what is built."""

    target: MtpTarget
    profile: Profile
    launch: MtpLaunch
    view: EngineView
    mtp: MtpView
    # the checkpoint is an EAGLE draft, not a target with MTP layers (its description)
    eagle_draft: str | None = None

    def mtp_finding(
        self,
        rule: RuleId,
        message: str,
        *,
        location: Location | None = None,
        keys: tuple[str, ...] = (),
        fix: str | None = None,
        consequence: Consequence | None = None,
    ) -> None:
        """Add a finding of `rule` resting on the facts `keys`; one that refuses the start
        is a refusal of the view."""
        event = Event(
            rule,
            message,
            location or Location("config.json"),
            self.profile.citations(*keys),
            fix,
            consequence,
        )
        if (consequence or rule.consequence) is Consequence.REFUSES_TO_START:
            self.view.refusals.append(event)
        else:
            self.view.events.append(event)

    def not_read(self, what: str) -> None:
        if what not in self.mtp.not_read:
            self.mtp.not_read.append(what)


Step = Callable[[MtpBuild], "bool | None"]
Procedure = tuple[Step, ...]


def run_procedure(procedure: Procedure, state: MtpBuild) -> MtpBuild:
    """Run the steps in order; a step that returns False stops the procedure."""
    for step in procedure:
        if step(state) is False:
            break
    return state


__all__ = ["MtpBuild", "MtpLaunch", "MtpView", "Procedure", "Step", "run_procedure"]
