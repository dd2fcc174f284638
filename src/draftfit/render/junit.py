"""JUnit XML for `check`, `diff` and `matrix`: what CI systems show as test reports.

One `<testsuite>` per report (per draft) inside one `<testsuites>`; one `<testcase>` per
engine version. For `check` and `diff`, every counting finding at or above `--fail-on` that
applies to that version is a `<failure>` (type = the rule code); findings below it go to the
case's `<system-out>`; suppressed findings are left out. For `matrix`, a version whose
verdict is `incompatible` fails with the findings that decide it.

Each value from the checkpoint, its path or a setting is escaped on its own
(:func:`~draftfit.escape.escape_field`: no newline of its own, no line that reads as a
CI command), and every text and attribute goes through
:func:`~draftfit.escape.xml_text`, so the document is well-formed XML 1.0 whatever
the names hold.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from draftfit.commands.release_matrix import Matrix
from draftfit.escape import escape_field, xml_text
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.places import location_text
from draftfit.render.verdicts import FindingReport, verdict_line
from draftfit.report import FAILING_VERDICTS, Finding
from draftfit.verdicts import UNVERIFIED, FailOn


def _text(value: str) -> str:
    """XML 1.0 cannot hold most control characters: show them escaped instead."""
    return xml_text(value)


def _failure(case: ET.Element, finding: Finding, draft: str, target: str | None) -> None:
    failure = ET.SubElement(
        case,
        "failure",
        {
            "type": finding.code,
            "message": _text(
                f"{finding.code} {escape_field(finding.name)}: {escape_field(finding.message)}"
            ),
        },
    )
    failure.text = _text(_details(finding, draft, target))


def _details(finding: Finding, draft: str, target: str | None) -> str:
    """The finding as the text report shows it (`draft`, `target`: the paths the report was
    made with, for the line of a config key)."""
    lines = [
        f"{finding.severity} {finding.code} {escape_field(finding.name)}",
        escape_field(finding.message),
    ]
    if finding.consequence_text:
        lines.append(f"consequence: {finding.consequence_text}")
    location = location_text(draft, finding.location, target)
    if location:
        lines.append(f"--> {escape_field(location)}")
    lines.extend(escape_field(related) for related in finding.related_lines)
    lines.extend(f"source: {escape_field(s)}" for s in finding.citations)
    if finding.fix:
        lines.append(f"fix: {escape_field(finding.fix)}")
    return "\n".join(lines)


def _suite(report: FindingReport, command: str, options: RenderOptions) -> ET.Element:
    draft = escape_field(report.draft)
    suite = ET.Element("testsuite", {"name": _text(f"draftfit {command} {draft}")})
    # A check report's target (a diff report's is not a path here).
    named = getattr(report, "target", None)
    target = named if isinstance(named, str) else None
    failures = 0
    threshold = FailOn.of(options.fail_on)
    lowest = threshold.lowest_failing_severity
    for result in report.engines:
        case = ET.SubElement(
            suite,
            "testcase",
            {"classname": _text(f"draftfit.{command}.{draft}"), "name": _text(result.title)},
        )
        applying = [f for f in report.findings if f.counts and result.key in f.engines]
        failing = [f for f in applying if f.severity >= lowest]
        for finding in failing:
            _failure(case, finding, report.draft, target)
        unverified = threshold.fails((), (result.verdict,))
        if unverified and not failing:
            ET.SubElement(
                case, "failure", {"type": UNVERIFIED, "message": _text(verdict_line(result))}
            )
        below = [_details(f, report.draft, target) for f in applying if f.severity < lowest]
        out = ET.SubElement(case, "system-out")
        out.text = _text("\n\n".join([verdict_line(result), *below]))
        failures += 1 if failing or unverified else 0
    suite.set("tests", str(len(report.engines)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    return suite


def _document(suites: list[ET.Element]) -> str:
    root = ET.Element("testsuites", {"name": "draftfit"})
    root.extend(suites)
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in suites)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in suites)))
    root.set("errors", "0")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def render_junit_check(report: FindingReport, options: RenderOptions = PLAIN) -> str:
    """One `check` report as JUnit XML."""
    return render_junit_many([report], options, "check")


def render_junit_diff(report: FindingReport, options: RenderOptions = PLAIN) -> str:
    """One `diff` report as JUnit XML."""
    return render_junit_many([report], options, "diff")


def render_junit_many(
    reports: Sequence[FindingReport], options: RenderOptions = PLAIN, command: str = "check"
) -> str:
    """Several reports of `command` (check or diff) as one JUnit document."""
    return _document([_suite(r, command, options) for r in reports])


def render_junit_checks(reports: Sequence[FindingReport], options: RenderOptions = PLAIN) -> str:
    """Several `check` reports (one per draft) as one JUnit document."""
    return render_junit_many(reports, options, "check")


def render_junit_diffs(reports: Sequence[FindingReport], options: RenderOptions = PLAIN) -> str:
    """Several `diff` reports as one JUnit document."""
    return render_junit_many(reports, options, "diff")


def render_junit_matrix(matrix: Matrix, options: RenderOptions = PLAIN) -> str:
    """A matrix as JUnit XML: a case per engine version, failing where the verdict fails
    the default gate (incompatible, drafts-garbage)."""
    draft = escape_field(matrix.draft)
    suite = ET.Element("testsuite", {"name": _text(f"draftfit matrix {draft}")})
    tests = failures = 0
    for row in matrix.rows:
        for version in row.versions:
            tests += 1
            case = ET.SubElement(
                suite,
                "testcase",
                {
                    "classname": _text(f"draftfit.commands.release_matrix.{draft}"),
                    "name": _text(f"{row.title} {version}"),
                },
            )
            if row.verdict in FAILING_VERDICTS:
                failures += 1
                for finding in row.deciding:
                    _failure(case, finding, matrix.draft, matrix.target)
            out = ET.SubElement(case, "system-out")
            out.text = _text(f"{row.title} {version}: {row.verdict}")
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    return _document([suite])
