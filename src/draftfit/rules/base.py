"""How a rule is declared: a code, a kebab-case name, a default severity and a check.

A rule's docstring is the single source of its documentation (`draftfit rule CODE`, the
README table): sections `What it checks`, `Why it matters`, `Example`, `Fix`. Rules yield
:class:`Violation` objects; the checker stamps code, name and severity to make findings,
so rules stay unaware of how they are reported.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from draftfit.location import Location, config_at
from draftfit.rule_ids import RuleId, Severity

if TYPE_CHECKING:
    from draftfit.checkpoint.model import Checkpoint
    from draftfit.engines.view import EngineView
    from draftfit.spec import DraftSpec
    from draftfit.target import Target
    from draftfit.values.facts import ValueFacts


@dataclass(frozen=True)
class Violation:
    """What a rule reports: observed vs expected, where, why (engine source) and the fix."""

    message: str
    location: Location = field(default_factory=Location)
    fix: str | None = None
    sources: tuple[str, ...] = ()


@dataclass
class Context:
    """Everything a rule may read. `view` is None for engine-independent passes; `values`
    holds what the value checks read, only when asked for (`--values`)."""

    checkpoint: Checkpoint
    spec: DraftSpec
    target: Target | None = None
    view: EngineView | None = None
    method: str | None = None
    values: ValueFacts | None = None


Check = Callable[[Context], Iterable[Violation]]


@dataclass(frozen=True)
class Rule:
    """A documented check with a stable code."""

    code: str
    name: str
    severity: Severity
    summary: str
    check: Check
    scope: str  # "checkpoint" (engine-independent) or "engine"
    needs_target: bool = False
    family: str = ""

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.check.__doc__ or "")

    def run(self, ctx: Context) -> Iterator[Violation]:
        yield from self.check(ctx)


RULES: dict[str, Rule] = {}


def rule(
    code: str,
    name: str,
    severity: Severity,
    summary: str,
    *,
    scope: str = "engine",
    needs_target: bool = False,
) -> Callable[[Check], Check]:
    """Register the decorated check under `code` and `name` (both must be new)."""

    def register(check: Check) -> Check:
        if code in RULES or any(r.name == name for r in RULES.values()):
            raise ValueError(f"duplicate rule {code} {name}")
        family = check.__module__.rsplit(".", 1)[-1]
        RULES[code] = Rule(code, name, severity, summary, check, scope, needs_target, family)
        return check

    return register


def from_view_events(ctx: Context, name: str) -> Iterator[Violation]:
    """Violations for the engine view's refusals and events tagged with rule `name`."""
    if ctx.view is None:
        return
    for event in [*ctx.view.refusals, *ctx.view.events]:
        if (event.rule.name if isinstance(event.rule, RuleId) else event.rule) == name:
            yield Violation(event.message, event.location, event.fix, event.sources)


def documented_rule(
    code: str,
    name: str,
    severity: Severity,
    summary: str,
    check: Check,
    *,
    scope: str = "engine",
    needs_target: bool = False,
) -> Callable[[Callable[[], None]], Check]:
    """Register `check` under a rule whose documentation is the decorated function's docstring.

    For rules whose detection lives elsewhere (the reader's damage, the engine view's
    events, the diff): the decorated function only carries the text.
    """

    def decorate(doc_holder: Callable[[], None]) -> Check:
        def run(ctx: Context) -> Iterator[Violation]:
            yield from check(ctx)

        run.__doc__ = doc_holder.__doc__
        run.__name__ = doc_holder.__name__
        run.__module__ = doc_holder.__module__
        return rule(code, name, severity, summary, scope=scope, needs_target=needs_target)(run)

    return decorate


def event_rule(
    code: str, name: str, severity: Severity, summary: str, *, needs_target: bool = False
) -> Callable[[Callable[[], None]], Check]:
    """A rule whose detection lives in the engine module (it emits events tagged `name`)."""
    return documented_rule(
        code,
        name,
        severity,
        summary,
        lambda ctx: from_view_events(ctx, name),
        needs_target=needs_target,
    )


__all__ = [
    "RULES",
    "Context",
    "Location",
    "Rule",
    "Severity",
    "Violation",
    "config_at",
    "documented_rule",
    "event_rule",
    "from_view_events",
    "rule",
]
