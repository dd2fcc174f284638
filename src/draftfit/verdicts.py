"""What a command concludes for one engine version, and which conclusions fail a run.

`Verdict`: the verdicts of `check` and `matrix` (compatible, degraded, unverified,
drafts-garbage, incompatible) and of `diff` (equivalent, unverified, different), as their
JSON and text forms spell them.

`FailOn`: the `--fail-on` threshold, which findings and verdicts make the exit status 1.
The thresholds form one scale, from the least to the most strict::

    error < warning < unverified < info

* `error` (the default): a finding of severity error (an `incompatible` verdict, or a
  damaged checkpoint).
* `warning`: also a warning (a `degraded` verdict).
* `unverified`: also an engine verdict of `unverified` — checks that could change the
  answer were skipped (no `--target`, a target config without the facts they need) or
  draftfit's data cannot settle it (a finding whose consequence is `unknown`, such as
  DF505). A CI job that must not pass on an unchecked draft uses this: every engine
  verdict has to be `compatible` (or `equivalent` for `diff`).
* `info`: also any info finding.

Both are kept apart from :class:`~draftfit.rule_ids.Severity`, which grades findings only:
an unverified verdict is not a finding.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from draftfit.rule_ids import Severity


class Verdict(str, enum.Enum):
    """What a command concludes for one engine version: `check` and `matrix` say
    compatible, degraded, unverified, drafts-garbage or incompatible; `diff` says
    equivalent, unverified or different. A `str`, so its JSON and text forms are its value.
    """

    COMPATIBLE = "compatible"
    DEGRADED = "degraded"
    # Nothing fails, but checks that could change the answer were skipped (no target) or
    # draftfit's data cannot settle it (an `unknown` finding, such as DF505): not called
    # compatible.
    UNVERIFIED = "unverified"
    # The engine loads and serves the draft, but every draft is wrong (acceptance ≈ 0).
    DRAFTS_GARBAGE = "drafts-garbage"
    # The engine will not run the draft: it refuses to start, fails at the first request,
    # or the launch does not serve it.
    INCOMPATIBLE = "incompatible"
    EQUIVALENT = "equivalent"  # `diff`: the engine sees both drafts alike
    DIFFERENT = "different"  # `diff`: it does not

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        # shown as the string it is equal to (`'compatible'`), as scripts compare it
        return repr(self.value)


# The verdict `unverified`, as check, matrix and diff report it.
UNVERIFIED = Verdict.UNVERIFIED


class FailOn(enum.IntEnum):
    """A `--fail-on` threshold; a lower value is stricter."""

    INFO = 1
    UNVERIFIED = 2
    WARNING = 3
    ERROR = 4

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> FailOn:
        """`"warning"` -> FailOn.WARNING (the `--fail-on` choices)."""
        return cls[text.upper()]

    @classmethod
    def of(cls, value: FailOn | Severity | str) -> FailOn:
        """A threshold given as is, as a finding severity, or by name (`"warning"`, as the
        command line spells it); an unknown name raises ValueError listing the choices."""
        if isinstance(value, FailOn):
            return value
        if isinstance(value, Severity):
            return cls[value.name]
        try:
            return cls.parse(value)
        except KeyError:
            raise ValueError(
                f"unknown --fail-on threshold {value!r}; choose from {', '.join(CHOICES)}"
            ) from None

    @property
    def lowest_failing_severity(self) -> Severity:
        """The lowest finding severity that fails at this threshold."""
        if self is FailOn.UNVERIFIED:
            return Severity.WARNING
        return Severity[self.name]

    def fails(self, severities: Iterable[Severity], verdicts: Iterable[Verdict] = ()) -> bool:
        """Whether findings of `severities` and engine `verdicts` make the exit status 1."""
        lowest = self.lowest_failing_severity
        if any(s >= lowest for s in severities):
            return True
        return self <= FailOn.UNVERIFIED and any(v == UNVERIFIED for v in verdicts)


CHOICES = tuple(str(level) for level in sorted(FailOn, reverse=True))
