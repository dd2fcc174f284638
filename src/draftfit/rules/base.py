"""How a rule is declared: its identity from :mod:`draftfit.rule_ids`, a summary and a check.

The identity (code, kebab-case name, consequence and the severity it implies, family) is
an imported constant, never spelled again here. A rule's docstring is the single source of
its documentation (`draftfit rule CODE`, the README table): sections `What it checks`,
`Why it matters`, `Example`, `Fix`. Rules yield :class:`Violation` objects; the checker
stamps code, name, consequence and severity to make findings, so rules stay unaware of how
they are reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from enum import Enum
from typing import TYPE_CHECKING

from draftfit.draft.tensor_names import bounded_message
from draftfit.location import Location, config_at
from draftfit.records import field, frozen, record
from draftfit.rule_ids import Consequence, RuleId, Severity

if TYPE_CHECKING:
    from draftfit.checkpoint.model import Checkpoint
    from draftfit.draft.description import DraftDescription
    from draftfit.draft.target import Target
    from draftfit.engines.view import EngineView
    from draftfit.serve.settings import ServeSettings
    from draftfit.values.facts import ValueFacts


@frozen
class Violation:
    """What a rule reports: observed vs expected, where, why (engine source) and the fix.

    `consequence` is set where this case's consequence differs from the rule's (the engine
    version or the case decides it); None means the rule's own. `condition` names when a
    `degrades` case degrades, where the rule's own condition does not say it. `related`:
    other places the finding explains (the tensors whose own findings it stands for)."""

    message: str
    location: Location = field(default_factory=Location)
    fix: str | None = None
    citations: tuple[str, ...] = ()
    consequence: Consequence | None = None
    condition: str | None = None
    related: tuple[Location, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", bounded_message(self.message))


@record
class Context:
    """Everything a rule may read. `view` is None for engine-independent passes; `values`
    holds what the value checks read, only when asked for (`--values`); `serve` holds the
    launch's settings when they were given for this engine (`--serve-config`,
    `--serve-args`), else None."""

    checkpoint: Checkpoint
    draft: DraftDescription
    target: Target | None = None
    view: EngineView | None = None
    method: str | None = None
    values: ValueFacts | None = None
    serve: ServeSettings | None = None


Check = Callable[[Context], Iterable[Violation]]


class Scope(Enum):
    """When a rule's check runs (its value is what `draftfit rule` says)."""

    CHECKPOINT = "checkpoint"  # once per checkpoint, engine-independent
    ENGINE = "engine"  # once per engine version, on its view
    DIFF = "diff"  # by `diff` alone (the rule here is its documentation)


@frozen
class Rule:
    """A rule identity (:class:`~draftfit.rule_ids.RuleId`) with its documentation and check.

    Code, name, severity and family come from the identity alone, so they are written once
    (in :mod:`draftfit.rule_ids`); the rule adds the one-line summary, the docstring of its
    check (the full text) and when the check runs.
    """

    id: RuleId
    summary: str
    check: Check
    scope: Scope
    needs_target: bool = False
    needs_serve: bool = False  # runs only with the launch's settings for the engine

    @property
    def code(self) -> str:
        return self.id.code

    @property
    def name(self) -> str:
        return self.id.name

    @property
    def severity(self) -> Severity:
        return self.id.severity

    @property
    def consequence(self) -> Consequence:
        return self.id.consequence

    @property
    def condition(self) -> str | None:
        return self.id.condition

    @property
    def family(self) -> str:
        return self.id.family

    @property
    def doc(self) -> str:
        return clean_docstring(self.check.__doc__ or "")

    def run(self, ctx: Context) -> Iterator[Violation]:
        yield from self.check(ctx)


RULES: dict[str, Rule] = {}


def clean_docstring(doc: str) -> str:
    """A docstring without its indentation and surrounding blank lines, as
    `inspect.cleandoc` gives it (`inspect` costs a start-up several milliseconds)."""
    lines = doc.expandtabs().split("\n")
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()]
    margin = min(indents, default=0)
    cleaned = [lines[0].lstrip(), *(line[margin:] for line in lines[1:])]
    while cleaned and not cleaned[0].strip():
        cleaned.pop(0)
    while cleaned and not cleaned[-1].strip():
        cleaned.pop()
    return "\n".join(cleaned)


def rule(
    rule_id: RuleId,
    summary: str,
    *,
    scope: Scope = Scope.ENGINE,
    needs_target: bool = False,
    needs_serve: bool = False,
) -> Callable[[Check], Check]:
    """Register the decorated check as the rule `rule_id` (registered at most once).

    `needs_serve`: the rule judges the launch's settings, so without them (for that engine)
    it is listed as skipped; the verdict is then that of a default launch."""

    def register(check: Check) -> Check:
        if rule_id.code in RULES:
            raise ValueError(f"duplicate rule {rule_id}")
        RULES[rule_id.code] = Rule(rule_id, summary, check, scope, needs_target, needs_serve)
        return check

    return register


def names_rule(tag: RuleId | str, rule_id: RuleId) -> bool:
    """Whether an event or damage record's rule tag is `rule_id`.

    Tags are rule identities; a plain string tag (a rule name) is still accepted from
    emitters that have not moved to :mod:`draftfit.rule_ids` yet.
    """
    return tag == rule_id if isinstance(tag, RuleId) else tag == rule_id.name


# The codes of the rules registered by :func:`event_rule`: they find nothing but the view's
# events tagged with their identity, so a view without such an event needs no run of them
# (a `matrix` runs each some 700 times, mostly on views without one).
EVENT_RULE_CODES: set[str] = set()


def view_event_names(view: EngineView) -> frozenset[str]:
    """The rule names the view's refusals and events are tagged with: an event rule whose
    name is not among them finds nothing in the view (see :func:`names_rule`)."""
    return frozenset(
        event.rule.name if isinstance(event.rule, RuleId) else event.rule
        for event in [*view.refusals, *view.events]
    )


def from_view_events(ctx: Context, rule_id: RuleId) -> Iterator[Violation]:
    """Violations for the engine view's refusals and events tagged with `rule_id`."""
    if ctx.view is None:
        return
    for event in [*ctx.view.refusals, *ctx.view.events]:
        if names_rule(event.rule, rule_id):
            yield Violation(
                event.message, event.location, event.fix, event.citations, event.consequence
            )


DocHolder = Callable[[], None]


def documented_rule(
    rule_id: RuleId,
    summary: str,
    check: Check,
    *,
    scope: Scope = Scope.ENGINE,
    needs_target: bool = False,
    needs_serve: bool = False,
) -> Callable[[DocHolder], Check]:
    """Register `check` as the rule `rule_id`, documented by the decorated function's docstring.

    For rules whose detection lives elsewhere (the reader's damage, the engine view's
    events, the diff): the decorated function only carries the text.
    """

    def decorate(doc_holder: DocHolder) -> Check:
        def run(ctx: Context) -> Iterator[Violation]:
            yield from check(ctx)

        run.__doc__ = doc_holder.__doc__
        run.__name__ = doc_holder.__name__
        run.__module__ = doc_holder.__module__
        return rule(
            rule_id, summary, scope=scope, needs_target=needs_target, needs_serve=needs_serve
        )(run)

    return decorate


def event_rule(
    rule_id: RuleId, summary: str, *, needs_target: bool = False, needs_serve: bool = False
) -> Callable[[DocHolder], Check]:
    """A rule whose detection lives in the engine module (it emits events tagged `rule_id`)."""
    EVENT_RULE_CODES.add(rule_id.code)
    return documented_rule(
        rule_id,
        summary,
        lambda ctx: from_view_events(ctx, rule_id),
        needs_target=needs_target,
        needs_serve=needs_serve,
    )


__all__ = [
    "RULES",
    "Consequence",
    "Context",
    "Location",
    "Rule",
    "Scope",
    "Severity",
    "Violation",
    "config_at",
    "documented_rule",
    "event_rule",
    "from_view_events",
    "names_rule",
    "rule",
]
