"""SARIF 2.1.0 for `check` and `diff`: what code-scanning services (GitHub's among them) read.

One SARIF log holds one run per report (several drafts checked at once give several runs).
Each finding is a result with its rule (`DFxxx`), level (error / warning / note), message,
fix, engine versions and — for a local checkpoint — the file and, for `config.json` keys, the
line of the key (a finding without a file of its own is placed on the checkpoint's
`config.json`, line 1, as code scanning needs a file for every result; Hub checkpoints have
no files to point at). A suppressed finding keeps its result with a `suppressions` entry
giving the reason. A file is named by a relative URI reference (RFC 3986: a space, `%` or
newline in a path percent-encoded, :func:`~draftfit.escape.uri_reference`); message
texts show control characters as visible escapes, as the text formats do.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from draftfit.docs_links import rule_doc_url
from draftfit.escape import escape_controls, uri_reference
from draftfit.location import CONFIG_FILE, Location
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.places import place_of
from draftfit.report import Finding, Report
from draftfit.rules import get_rule
from draftfit.rules.base import Severity
from draftfit.version import __version__

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/draftfit/draftfit"
# Paths are relative to the current directory (in CI: the repository's root).
BASE_ID = "%SRCROOT%"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


class FindingReport(Protocol):
    """What SARIF needs of a check or diff report."""

    draft: str
    findings: list[Finding]


def sarif_log(reports: Sequence[FindingReport]) -> dict[str, Any]:
    """The SARIF log (a dictionary) of `reports`, one run each."""
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [_run(report) for report in reports],
    }


def render_sarif(report: FindingReport, options: RenderOptions = PLAIN) -> str:
    """One report as a SARIF log."""
    return render_sarif_many([report], options)


def render_sarif_many(reports: Sequence[FindingReport], options: RenderOptions = PLAIN) -> str:
    """Several reports as one SARIF log."""
    return json.dumps(sarif_log(reports), indent=2, sort_keys=True) + "\n"


def _run(report: FindingReport) -> dict[str, Any]:
    codes = sorted({f.code for f in report.findings})
    index = {code: i for i, code in enumerate(codes)}
    run = {
        "tool": {
            "driver": {
                "name": "draftfit",
                "version": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(code, report) for code in codes],
            }
        },
        # One category per draft (everything before the last slash): code scanning keeps
        # the runs of several drafts in one log apart.
        "automationDetails": {"id": f"draftfit/{report.draft}/"},
        "originalUriBaseIds": {BASE_ID: {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
        "invocations": [{"executionSuccessful": True}],
        "results": [
            _result(
                f,
                index[f.code],
                report.draft,
                report.target if isinstance(report, Report) else None,
            )
            for f in report.findings
        ],
    }
    if isinstance(report, Report):
        _verdicts(run, report)
    return run


def _verdicts(run: dict[str, Any], report: Report) -> None:
    """A check's verdicts in the run's properties (each with the facts it rests on, by how
    they are known), and a note for each verdict that rests on facts not read in the
    engine's code at its release (code scanning lists a run's notifications)."""
    from draftfit.render.text import basis_line

    run["properties"] = {
        "verdicts": [
            {
                "engine": result.engine,
                "version": result.version,
                "verdict": str(result.verdict),
                "basis": result.basis,
            }
            for result in report.engines
        ]
    }
    notes = []
    for result in report.engines:
        line = basis_line(result.basis)
        if line:
            text = f"{result.title}: {result.verdict}; {line.strip()}"
            notes.append({"level": "note", "message": {"text": escape_controls(text)}})
    if notes:
        run["invocations"][0]["toolExecutionNotifications"] = notes


def _rule(code: str, report: FindingReport) -> dict[str, Any]:
    item = get_rule(code)
    name = item.name if item else next(f.name for f in report.findings if f.code == code)
    severity = item.severity if item else Severity.INFO
    out: dict[str, Any] = {
        "id": code,
        "name": name,
        "helpUri": rule_doc_url(code),
        "defaultConfiguration": {"level": LEVELS[severity]},
    }
    if item is not None:
        out["properties"] = {"consequence": str(item.consequence)}
    summary = item.summary if item is not None else name
    doc = item.doc.strip() if item is not None and item.doc else summary
    # GitHub code scanning wants a full description and help on every rule: the summary
    # and the rule's documentation (markdown), with a link to its page.
    link = f"Documentation: {rule_doc_url(code)}"
    out["shortDescription"] = {"text": summary}
    out["fullDescription"] = {"text": summary}
    out["help"] = {
        "text": f"{doc}\n\n{link}",
        "markdown": f"{doc}\n\n[{link}]({rule_doc_url(code)})",
    }
    return out


def _related(draft: str, target: str | None, where: Location, index: int) -> dict[str, Any]:
    """A place the finding explains (a tensor whose shape finding it stands for, or another
    config key), as a SARIF related location."""
    out: dict[str, Any] = {"id": index + 1}
    place = place_of(draft, where, target)
    if place.path is not None:
        out["physicalLocation"] = {
            "artifactLocation": {"uri": uri_reference(place.path), "uriBaseId": BASE_ID},
            "region": {"startLine": place.line or 1},
        }
    logical = where.pointer or where.tensor
    if logical:
        out["logicalLocations"] = [{"fullyQualifiedName": logical}]
    text = f"explains tensor `{where.tensor}`" if where.tensor else f"see also {where}"
    out["message"] = {"text": escape_controls(text)}
    return out


def _result(finding: Finding, rule_index: int, draft: str, target: str | None) -> dict[str, Any]:
    text = finding.message
    if finding.consequence_text:
        text += f"\nconsequence: {finding.consequence_text}"
    if finding.fix:
        text += f"\nfix: {finding.fix}"
    for line in finding.related_lines:
        text += f"\n{line}"
    if finding.engines:
        text += f"\nengine versions: {', '.join(e.label for e in finding.engines)}"
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": LEVELS[finding.severity],
        "message": {"text": escape_controls(text)},
        "properties": {
            "draft": draft,
            "engines": [e.label for e in finding.engines],
            "consequence": str(finding.consequence) if finding.consequence else None,
            "location": finding.location.to_dict(),
            "sources": list(finding.citations),
        },
    }
    place = place_of(draft, finding.location, target)
    if place.path is None:
        # Code scanning needs a file for every result: a finding with no file of its own is
        # shown on the checkpoint's config.json.
        place = place_of(draft, Location(CONFIG_FILE))
    if place.path is not None:
        physical: dict[str, Any] = {
            "artifactLocation": {"uri": uri_reference(place.path), "uriBaseId": BASE_ID},
            "region": {"startLine": place.line or 1},
        }
        location: dict[str, Any] = {"physicalLocation": physical}
        logical = finding.location.pointer or finding.location.tensor
        if logical:
            location["logicalLocations"] = [{"fullyQualifiedName": logical}]
        result["locations"] = [location]
    related = [_related(draft, target, r, i) for i, r in enumerate(finding.related)]
    if related:
        result["relatedLocations"] = related
    if finding.suppression is not None:
        result["suppressions"] = [{"kind": "external", "justification": finding.suppression.reason}]
    return result
