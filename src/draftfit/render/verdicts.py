"""The verdict lines of a check or diff report, and per-code counts, in plain text.

`--quiet` prints only these lines (for a matrix, a line per row), `--statistics` the counts
(as text, or with `--format json` as rows); the GitHub format ends with
the verdict lines, so a workflow log says what was decided without the annotations.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from draftfit.escape import escape_field
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.text import unverified_line
from draftfit.report import Finding
from draftfit.verdicts import UNVERIFIED


class FindingReport(Protocol):
    """What these lines need of a check or diff report."""

    draft: str
    findings: list[Finding]

    @property
    def engines(self) -> Any: ...


def verdict_line(result: Any) -> str:
    """`vLLM 0.34.0: degraded (0 error, 1 warning, 0 info)` or, for a diff,
    `vLLM 0.34.0: different (2 that matter, 4 spelling)`; an unverified verdict says why
    (`· no target: DF303, ... not checked`) and an extrapolated one to which release."""
    counts = result.counts
    if "matters" in counts:
        detail = f"{counts.get('matters', 0)} that matter, {counts.get('spelling', 0)} spelling"
    else:
        detail = (
            f"{counts.get('error', 0)} error, {counts.get('warning', 0)} warning, "
            f"{counts.get('info', 0)} info"
        )
    line = f"{result.title}: {result.verdict}"
    extrapolated = getattr(result, "extrapolated_to", None)
    if extrapolated is not None:
        line += f", extrapolated to {extrapolated}"
    line += f" ({detail})"
    if result.verdict == UNVERIFIED and result.unverified_reasons:
        line += " · " + unverified_line(result.unverified_reasons, result.unchecked_rules)
    return line


def verdict_lines(report: FindingReport, *, with_draft: bool) -> list[str]:
    """One line per engine version; prefixed by the draft (escaped) when `with_draft`."""
    prefix = f"{escape_field(report.draft)}: " if with_draft else ""
    return [prefix + verdict_line(result) for result in report.engines]


def statistics_lines(report: FindingReport) -> list[str]:
    """`  3  DF108  architecture-not-registered (warning)` per code, most frequent first,
    counting findings that count; then one line for the suppressed ones, if any."""
    counting = [f for f in report.findings if f.counts]
    per_code = Counter(f.code for f in counting)
    first = {f.code: f for f in counting}
    width = max((len(str(n)) for n in per_code.values()), default=1)
    lines = [
        f"{count:>{width}}  {code}  {first[code].name} ({first[code].severity})"
        for code, count in sorted(per_code.items(), key=lambda item: (-item[1], item[0]))
    ]
    suppressed = sum(1 for f in report.findings if not f.counts)
    if suppressed:
        lines.append(f"{suppressed} suppressed")
    return lines


def statistics_rows(report: FindingReport) -> list[dict[str, Any]]:
    """Per code: `{"draft", "code", "name", "severity", "count", "suppressed"}` (findings
    that count, and suppressed ones), most frequent first — `--statistics --format json`."""
    rows: dict[str, dict[str, Any]] = {}
    for finding in report.findings:
        row = rows.setdefault(
            finding.code,
            {
                "draft": report.draft,
                "code": finding.code,
                "name": finding.name,
                "severity": str(finding.severity),
                "count": 0,
                "suppressed": 0,
            },
        )
        row["count" if finding.counts else "suppressed"] += 1
    return sorted(rows.values(), key=lambda r: (-r["count"], -r["suppressed"], r["code"]))


def render_verdicts(reports: Sequence[FindingReport], options: RenderOptions = PLAIN) -> str:
    """`--quiet`: each report's verdict lines, prefixed by its draft."""
    return "".join(
        line + "\n" for report in reports for line in verdict_lines(report, with_draft=True)
    )


def render_statistics(reports: Sequence[FindingReport], options: RenderOptions = PLAIN) -> str:
    """`--statistics`: per report, its draft, its findings counted per rule and its verdict
    lines; a blank line between reports."""
    blocks = []
    for report in reports:
        lines = [escape_field(report.draft), *("  " + s for s in statistics_lines(report))]
        lines.extend(verdict_lines(report, with_draft=False))
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def render_matrix_verdicts(matrices: Sequence[Any], options: RenderOptions = PLAIN) -> str:
    """`matrix --quiet`: a line per row, `vLLM 0.10.2–0.34.0: compatible`."""
    return "".join(
        f"{row.title} {row.range}: {row.verdict}\n" for matrix in matrices for row in matrix.rows
    )
