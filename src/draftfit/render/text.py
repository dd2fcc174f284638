"""The human-readable report of `draftfit check`: findings grouped by family, then verdicts."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from draftfit.engines.interface import Recipe
from draftfit.render.console import render_to_string
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.suppressed import suppressed_summary
from draftfit.report import COMPATIBLE, DEGRADED, UNVERIFIED, Report, TargetFacts
from draftfit.rules.base import Severity
from draftfit.serve_settings import SERVE_SKIP_REASON, SETTINGS_FLAGS

FAMILY_TITLES = {
    "structure": "File structure",
    "config": "Config, method and architecture",
    "field_types": "Config value types",
    "tensors": "Tensors",
    "aux": "Aux hidden-state layers",
    "vocab": "Vocabulary",
    "target": "Draft next to the target",
    "serving": "Serving settings",
    "norms": "Norm flags",
    "values": "Weight values",
    "hygiene": "Checkpoint hygiene",
}
FAMILY_ORDER = list(FAMILY_TITLES)
SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
VERDICT_STYLE = {COMPATIBLE: "bold green", DEGRADED: "bold yellow", UNVERIFIED: "bold cyan"}


def unverified_line(reasons: list[str], unchecked: list[str]) -> str:
    """`no target: DF303, DF501 not checked` — why a verdict is unverified, in one phrase."""
    text = "; ".join(reasons)
    return f"{text}: {', '.join(unchecked)} not checked" if unchecked else text


def print_recipe(console: Console, recipe: Recipe) -> None:
    """A recipe's steps, command and notes, each line printed whole: rich never wraps them at
    the terminal's width, so a copy from the terminal pastes as it runs (a command's lines
    already end in ` \\`)."""
    for step in recipe.steps:
        console.print(Text("  " + step), soft_wrap=True)
    for command_line in recipe.command.splitlines():
        console.print(Text("  " + command_line), soft_wrap=True)
    for note in recipe.notes:
        console.print(Text("  # " + note, style="dim"), soft_wrap=True)


def render_check(report: Report, options: RenderOptions = PLAIN) -> str:
    """The text report: header, grouped findings, skipped checks, one verdict line per engine."""

    def draw(console: Console) -> None:
        header = Text()
        header.append("Draft   ", style="bold")
        header.append(report.draft)
        if report.origin is not None:
            header.append(f"\n        {report.origin.describe()}")
        header.append(f"\n        {report.dialect.title}")
        if report.method:
            header.append(f" · method {report.method}")
        if report.dialect.evidence:
            header.append("\n        evidence: " + "; ".join(report.dialect.evidence), style="dim")
        console.print(header)
        if report.target:
            facts = report.target_facts or TargetFacts(None, None, None, None, None, None)
            line = Text()
            line.append("Target  ", style="bold")
            line.append(report.target)
            line.append(
                f"\n        {facts.architecture} ({facts.model_type}), "
                f"{facts.num_layers} layers, hidden {facts.hidden_size}, "
                f"vocab {facts.vocab_size}"
            )
            console.print(line)
        else:
            console.print(
                Text("Target  none given (checks that need one are skipped)", style="dim")
            )
        if report.serve is not None:
            console.print(Text("Serve   " + report.serve.summary()))
        for result in report.engines:
            if result.chosen_because is not None:
                console.print(Text("Engine  " + result.chosen_because, style="dim"))
        console.print()

        counting = [f for f in report.findings if f.counts]
        families = sorted(
            {f.family for f in counting},
            key=lambda fam: FAMILY_ORDER.index(fam) if fam in FAMILY_ORDER else 99,
        )
        many_engines = len(report.engines) > 1
        for family in families:
            console.print(Text(FAMILY_TITLES.get(family, family), style="bold underline"))
            for finding in (f for f in counting if f.family == family):
                line = Text("  ")
                line.append(f"{finding.severity!s:<7}", style=SEVERITY_STYLE[finding.severity])
                line.append(f" {finding.code} ", style="bold")
                line.append(finding.name, style="dim")
                if many_engines and finding.engines and len(finding.engines) < len(report.engines):
                    line.append("  [" + ", ".join(finding.engines) + "]", style="dim")
                console.print(line)
                console.print(Text("    " + finding.message))
                location = str(finding.location)
                if location:
                    console.print(Text("    --> " + location, style="blue"))
                for source in finding.sources[:2]:
                    console.print(Text("    source: " + source, style="dim"))
                if finding.fix:
                    console.print(Text("    fix: " + finding.fix, style="green"))
            console.print()

        without_target = [s for s in report.skipped_rules if s.reason != SERVE_SKIP_REASON]
        without_serve = [s for s in report.skipped_rules if s.reason == SERVE_SKIP_REASON]
        if without_target:
            names = ", ".join(f"{s.code} {s.name}" for s in without_target)
            console.print(Text(f"Skipped without --target: {names}", style="dim"))
            console.print()
        if without_serve:
            names = ", ".join(f"{s.code} {s.name}" for s in without_serve)
            console.print(
                Text(
                    f"Skipped without serving settings ({SETTINGS_FLAGS}; verdicts are for a "
                    f"default launch): {names}",
                    style="dim",
                )
            )
            console.print()
        suppressed_line = suppressed_summary(report.findings)
        if suppressed_line:
            console.print(Text(suppressed_line, style="dim"))
            console.print()

        for result in report.engines:
            counts = result.counts
            line = Text()
            line.append(f"{result.title}: ", style="bold")
            line.append(result.verdict, style=VERDICT_STYLE.get(result.verdict, "bold red"))
            if result.extrapolated_to is not None:
                line.append(f", extrapolated to {result.extrapolated_to}", style="bold")
            line.append(
                f" ({counts.get('error', 0)} error, {counts.get('warning', 0)} warning, "
                f"{counts.get('info', 0)} info)"
            )
            aux = result.aux_layers
            if aux is not None and aux.used is not None:
                source = aux.read_from or aux.launch_setting or "default"
                line.append(f" · aux layers {list(aux.used)} from {source}", style="dim")
            if result.verdict == UNVERIFIED and result.unverified_reasons:
                line.append(
                    " · " + unverified_line(result.unverified_reasons, result.unchecked_rules)
                )
            console.print(line)
        titles = {(r.engine, r.version): r.title for r in report.engines}
        for recipe in report.recipes or []:
            title = titles.get(
                (recipe.engine, recipe.version), recipe.engine + " " + recipe.version
            )
            console.print(Text(f"\nHow to serve with {title}", style="bold"))
            print_recipe(console, recipe)

    return render_to_string(draw, options.color)
