"""`draftfit diff`'s result: each engine version's verdict (equivalent, unverified or
different) and the report its renderers read; the exit status and the JSON form's envelope
are :mod:`draftfit.report`'s, as for `check`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.records import field, record
from draftfit.report import Finding, VersionVerdict, envelope, exit_code
from draftfit.rule_ids import (
    CONFIG_KEY_DIFFERS,
    TENSOR_DTYPE_DIFFERS,
    TENSOR_NAME_DIFFERS,
    Severity,
)
from draftfit.verdicts import UNVERIFIED, FailOn, Verdict

if TYPE_CHECKING:
    from typing import Any

EQUIVALENT = Verdict.EQUIVALENT
DIFFERENT = Verdict.DIFFERENT

RAW_CODES = frozenset(
    r.code for r in (CONFIG_KEY_DIFFERS, TENSOR_DTYPE_DIFFERS, TENSOR_NAME_DIFFERS)
)


@record
class DiffResult(VersionVerdict):
    """The verdict for one engine version: are the two equivalent for it? `counts` holds
    `matters` and `spelling`; `unverified_reasons` says why no difference found is not proof
    of equivalence (e.g. "no target": checks of either side against the target were
    skipped)."""

    verdict: Verdict = EQUIVALENT
    # Why this version was compared when no --engine named one (`vLLM 0.10.2, installed here`).
    chosen_because: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**self.verdict_dict(), "chosen_because": self.chosen_because}


@record
class DiffReport:
    """What differs between a draft and a known-good reference, as the engine sees both."""

    draft: str
    reference: str
    dialects: tuple[str, str]
    findings: list[Finding]
    engines: list[DiffResult]
    notes: list[str] = field(default_factory=list)
    # The settings file the selection came from, as the text report names it.
    settings_file: str | None = field(default=None, compare=False)

    def exit_code(self, fail_on: FailOn | Severity | str = FailOn.ERROR) -> int:
        """1 when a counted finding (not suppressed) or an engine verdict fails at `fail_on`
        (see draftfit.verdicts)."""
        return exit_code(self.findings, self.engines, fail_on)

    def to_dict(self, fail_on: FailOn | Severity = Severity.ERROR) -> dict[str, Any]:
        counting = [f for f in self.findings if f.counts]
        return {
            **envelope(),
            "draft": {"source": self.draft, "dialect": self.dialects[0]},
            "reference": {"source": self.reference, "dialect": self.dialects[1]},
            "engines": [e.to_dict() for e in self.engines],
            "findings": [f.to_dict() for f in self.findings],
            "notes": list(self.notes),
            "summary": {
                "matters": sum(1 for f in counting if f.severity == Severity.ERROR),
                "spelling": sum(1 for f in counting if is_spelling(f)),
                "raw": sum(1 for f in counting if f.code in RAW_CODES),
                "exit_code": self.exit_code(fail_on),
            },
        }


def is_spelling(finding: Finding) -> bool:
    """A semantic difference below error: written differently, resolved the same way by the
    engine (DF810, and DF811's stored-or-borrowed embedding). The text report's "Spelling"
    section, the verdict line's "N spelling" and the JSON summary all count with this."""
    return finding.family == "diff" and finding.severity < Severity.ERROR


def set_verdicts(findings: list[Finding], results: list[DiffResult]) -> None:
    """Each engine version's counts and verdict from the findings that count for it."""
    for result in results:
        counts = {"matters": 0, "spelling": 0}
        for finding in findings:
            if result.key in finding.engines and finding.counts:
                if finding.severity == Severity.ERROR:
                    counts["matters"] += 1
                elif is_spelling(finding):
                    counts["spelling"] += 1
        result.counts = counts
        if counts["matters"]:
            result.verdict = DIFFERENT
        else:
            result.verdict = UNVERIFIED if result.unverified_reasons else EQUIVALENT
