"""GitHub Actions workflow commands: one annotation per finding, then the verdict lines.

`::error file=drafts/a/config.json,line=7,title=DF301 aux-layers-differ-from-trained::…`
puts the finding on that line of the pull request's diff. Errors become `error`, warnings
`warning`, info `notice`; a finding of a local checkpoint carries its file (relative to the
current directory, which in a workflow is the repository) and, for a `config.json` key, the
line of that key. Suppressed findings are left out. Text is escaped as the runner expects
(`%`, CR, LF in messages; also `:` and `,` in properties) and every other control character
is shown as a visible escape; values from the checkpoint, its path or a setting are escaped
on their own first (:func:`~draftfit.escape.escape_field`), so a newline in a name
stays visible in the annotation rather than breaking its message. The verdict lines are
plain log lines, escaped the same way: nothing in them can start a workflow command.
"""

from __future__ import annotations

from collections.abc import Sequence

from draftfit.escape import annotation_data, annotation_property, escape_field
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.places import place_of
from draftfit.render.verdicts import FindingReport, verdict_lines
from draftfit.report import Finding, Report
from draftfit.rules.base import Severity

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def annotation(finding: Finding, draft: str, target: str | None = None) -> str:
    """The workflow command for one finding of the checkpoint `draft` (next to `target`)."""
    place = place_of(draft, finding.location, target)
    properties = []
    if place.path is not None:
        properties.append(f"file={annotation_property(place.path)}")
        if place.line is not None:
            properties.append(f"line={place.line}")
    properties.append(f"title={annotation_property(f'{finding.code} {finding.name}')}")
    message = f"{escape_field(draft)}: {escape_field(finding.message)}"
    location = str(finding.location)
    if location and place.line is None:
        message += f" ({escape_field(location)})"
    for related in finding.related_lines:
        message += f"\n{escape_field(related)}"
    if finding.consequence_text:
        message += f"\nconsequence: {escape_field(finding.consequence_text)}"
    if finding.fix:
        message += f"\nfix: {escape_field(finding.fix)}"
    if finding.engines:
        message += f"\nengine versions: {', '.join(e.label for e in finding.engines)}"
    return f"::{COMMANDS[finding.severity]} {','.join(properties)}::{annotation_data(message)}"


def render_github(report: FindingReport, options: RenderOptions = PLAIN) -> str:
    """Annotations for one report's counting findings, then its verdict lines."""
    return render_github_many([report], options)


def render_github_many(reports: Sequence[FindingReport], options: RenderOptions = PLAIN) -> str:
    """Annotations and verdict lines of several reports, one after the other."""
    lines: list[str] = []
    for report in reports:
        target = report.target if isinstance(report, Report) else None
        lines.extend(annotation(f, report.draft, target) for f in report.findings if f.counts)
        lines.extend(verdict_lines(report, with_draft=True))
    return "".join(line + "\n" for line in lines)
