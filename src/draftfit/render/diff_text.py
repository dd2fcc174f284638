"""The human-readable `draftfit diff` report: what matters, what is spelling, what is raw."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from draftfit.commands.diff_report import EQUIVALENT, DiffReport, is_spelling
from draftfit.escape import escape_field
from draftfit.render.console import render_to_string
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.suppressed import settings_summary, suppressed_summary
from draftfit.render.text import unverified_line
from draftfit.report import UNVERIFIED
from draftfit.rules.base import Severity

DIFF_VERDICT_STYLE = {EQUIVALENT: "bold green", UNVERIFIED: "bold cyan"}


def render_diff(
    report: DiffReport, options: RenderOptions = PLAIN, raw_limit: int | None = None
) -> str:
    """Render the diff; `raw_limit` caps how many raw differences are listed."""

    def draw(console: Console) -> None:
        head = Text()
        head.append("Draft      ", style="bold")
        head.append(f"{escape_field(report.draft)}  ({escape_field(report.dialects[0])})")
        head.append("\nReference  ", style="bold")
        head.append(f"{escape_field(report.reference)}  ({escape_field(report.dialects[1])})")
        for note in report.notes:
            head.append(f"\n           {escape_field(note)}", style="dim")
        for result in report.engines:
            if result.chosen_because is not None:
                head.append("\nEngine     ", style="bold")
                head.append(escape_field(result.chosen_because), style="dim")
        console.print(head)
        console.print()
        counting = [f for f in report.findings if f.counts]
        sections = (
            (
                "Differences that change what the engine builds or runs",
                [f for f in counting if f.severity == Severity.ERROR],
            ),
            (
                "Spelling the engine resolves the same way",
                [f for f in counting if is_spelling(f)],
            ),
            (
                "Raw differences (config keys, dtypes, skipped tensors)",
                [f for f in counting if f.family == "raw"],
            ),
        )
        many = len(report.engines) > 1
        for title, findings in sections:
            if not findings:
                continue
            console.print(Text(f"{title} ({len(findings)})", style="bold underline"))
            shown = findings
            if raw_limit is not None and findings and findings[0].family == "raw":
                shown = findings[:raw_limit]
            for finding in shown:
                line = Text("  ")
                style = "bold red" if finding.severity == Severity.ERROR else "cyan"
                line.append(f"{finding.code} ", style=style)
                line.append(escape_field(finding.message))
                if many and len(finding.engines) < len(report.engines):
                    line.append(
                        "  [" + ", ".join(e.label for e in finding.engines) + "]", style="dim"
                    )
                console.print(line)
            if len(shown) < len(findings):
                console.print(
                    Text(
                        f"  ... {len(findings) - len(shown)} more (`draftfit diff` lists them all)",
                        style="dim",
                    )
                )
            console.print()
        settings_line = settings_summary(report.settings_file, report.findings)
        if settings_line:
            console.print(Text(settings_line, style="dim"))
        suppressed_line = suppressed_summary(report.findings)
        if suppressed_line:
            console.print(Text(suppressed_line, style="dim"))
            console.print()
        for result in report.engines:
            line = Text()
            line.append(f"{result.title}: ", style="bold")
            style = DIFF_VERDICT_STYLE.get(result.verdict, "bold red")
            line.append(str(result.verdict), style=style)
            line.append(
                f" ({result.counts.get('matters', 0)} that matter, "
                f"{result.counts.get('spelling', 0)} spelling)"
            )
            if result.verdict == UNVERIFIED and result.unverified_reasons:
                line.append(
                    " · " + unverified_line(result.unverified_reasons, result.unchecked_rules)
                )
            console.print(line)

    return render_to_string(draw, options.color)
