"""The human-readable report of `draftfit check`: findings grouped by family, then verdicts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.engines.interface import NoRecipe, Recipe
from draftfit.engines.profile import CONFIDENCE_RANK
from draftfit.escape import escape_field
from draftfit.render.lines import Styled, render_lines
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.places import location_text
from draftfit.render.suppressed import settings_summary, suppressed_summary
from draftfit.report import (
    COMPATIBLE,
    DEGRADED,
    DRAFTS_GARBAGE,
    UNVERIFIED,
    MtpFacts,
    Report,
    SkipReason,
    TargetFacts,
)
from draftfit.rules.base import Severity
from draftfit.serve.settings import SETTINGS_FLAGS

if TYPE_CHECKING:
    from typing import Any

    from draftfit.render.lines import LinePrinter

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
    "mtp": "MTP layers",
}
FAMILY_ORDER = list(FAMILY_TITLES)
SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
VERDICT_STYLE = {COMPATIBLE: "bold green", DEGRADED: "bold yellow", UNVERIFIED: "bold cyan"}


def unverified_line(reasons: list[str], unchecked: list[str]) -> str:
    """`no target: DF303, DF501 not checked` — why a verdict is unverified, in one phrase."""
    text = "; ".join(escape_field(reason) for reason in reasons)
    return f"{text}: {', '.join(unchecked)} not checked" if unchecked else text


def print_recipe(console: LinePrinter, recipe: Recipe) -> None:
    """A recipe's steps, command and notes, each line printed whole: rich never wraps them at
    the terminal's width, so a copy from the terminal pastes as it runs (a command's lines
    already end in ` \\`). Each line is escaped on its own (a value cannot add lines)."""
    for step in recipe.steps:
        console.print(Styled("  " + escape_field(step)), soft_wrap=True)
    for command_line, indent in _indented(recipe.command.splitlines()):
        console.print(Styled(indent + escape_field(command_line)), soft_wrap=True)
    for note in recipe.notes:
        console.print(Styled("  # " + escape_field(note), style="dim"), soft_wrap=True)


def _indented(lines: list[str]) -> list[tuple[str, str]]:
    """Each command line with the indent it is printed with: two spaces, except the body and
    the closing word of a here-document (`cat > spec.yaml <<'EOF'` … `EOF`), which the shell
    reads as written: an indented `EOF` does not end it, and the body would be indented."""
    out: list[tuple[str, str]] = []
    closing: str | None = None
    for line in lines:
        out.append((line, "" if closing is not None else "  "))
        if closing is not None:
            if line == closing:
                closing = None
            continue
        marker = line.rpartition("<<")[2].strip() if "<<" in line else ""
        if marker:
            closing = marker.strip("'\"")
    return out


def print_no_recipe(console: LinePrinter, title: str, missing: NoRecipe) -> None:
    """The one line saying why `title` (an engine version or range) has no recipe."""
    line = Styled("\n")
    line.append(f"No recipe for {escape_field(title)}: ", style="bold")
    line.append(escape_field(missing.reason))
    console.print(line, soft_wrap=True)


def render_check(report: Report, options: RenderOptions = PLAIN) -> str:
    """The text report: header, grouped findings, skipped checks, one verdict line per engine.

    Every value from the checkpoint, the target, a path or a setting is escaped on its own
    (:func:`escape_field`): a newline in a name cannot start a line of its own."""

    def draw(console: LinePrinter) -> None:
        if report.mtp is not None:
            _mtp_header(console, report.mtp)
        else:
            _draft_header(console, report)
        _launch_lines(console, report)

        counting = [f for f in report.findings if f.counts]
        families = sorted(
            {f.family for f in counting},
            key=lambda fam: FAMILY_ORDER.index(fam) if fam in FAMILY_ORDER else 99,
        )
        many_engines = len(report.engines) > 1
        for family in families:
            console.print(Styled(FAMILY_TITLES.get(family, family), style="bold underline"))
            for finding in (f for f in counting if f.family == family):
                line = Styled("  ")
                line.append(f"{finding.severity!s:<7}", style=SEVERITY_STYLE[finding.severity])
                line.append(f" {finding.code} ", style="bold")
                line.append(escape_field(finding.name), style="dim")
                if many_engines and finding.engines and len(finding.engines) < len(report.engines):
                    line.append(
                        "  [" + ", ".join(e.label for e in finding.engines) + "]", style="dim"
                    )
                console.print(line)
                console.print(Styled("    " + escape_field(finding.message)))
                if finding.consequence_text and finding.severity >= Severity.WARNING:
                    console.print(Styled("    consequence: " + finding.consequence_text))
                location = location_text(report.draft, finding.location, report.target)
                if location:
                    console.print(Styled("    --> " + escape_field(location), style="blue"))
                for related in finding.related_lines:
                    console.print(Styled("    " + escape_field(related), style="blue"))
                for source in finding.citations[:2]:
                    console.print(Styled("    source: " + escape_field(source), style="dim"))
                if finding.fix:
                    console.print(Styled("    fix: " + escape_field(finding.fix), style="green"))
            console.print()

        without_target = sorted(
            (s for s in report.skipped_rules if s.reason is not SkipReason.NO_LAUNCH),
            key=lambda s: s.code,
        )
        without_serve = [s for s in report.skipped_rules if s.reason is SkipReason.NO_LAUNCH]
        if without_target:
            names = ", ".join(f"{s.code} {s.name}" for s in without_target)
            console.print(Styled(f"Skipped without --target: {names}", style="dim"))
            console.print()
        if without_serve:
            names = ", ".join(f"{s.code} {s.name}" for s in without_serve)
            console.print(
                Styled(
                    f"Skipped without serving settings ({SETTINGS_FLAGS}; verdicts are for a "
                    f"default launch): {names}",
                    style="dim",
                )
            )
            console.print()
        settings_line = settings_summary(report.settings_file, report.findings)
        if settings_line:
            console.print(Styled(settings_line, style="dim"))
        suppressed_line = suppressed_summary(report.findings)
        if suppressed_line:
            console.print(Styled(suppressed_line, style="dim"))
            console.print()

        for result in report.engines:
            counts = result.counts
            line = Styled()
            line.append(f"{result.title}: ", style="bold")
            line.append(str(result.verdict), style=VERDICT_STYLE.get(result.verdict, "bold red"))
            if result.verdict == DRAFTS_GARBAGE:
                line.append(" (loads, but drafts garbage: acceptance ≈ 0)", style="bold red")
            if result.extrapolated_to is not None:
                line.append(f", extrapolated to {result.extrapolated_to}", style="bold")
            line.append(
                f" ({counts.get('error', 0)} error, {counts.get('warning', 0)} warning, "
                f"{counts.get('info', 0)} info)"
            )
            aux = result.aux_layers
            if aux is not None and aux.used is not None:
                source = aux.read_from or aux.launch_setting or "default"
                line.append(
                    f" · aux layers {list(aux.used)} from {escape_field(source)}", style="dim"
                )
            if result.verdict == UNVERIFIED and result.unverified_reasons:
                line.append(
                    " · " + unverified_line(result.unverified_reasons, result.unchecked_rules)
                )
            console.print(line)
            basis = basis_line(result.basis)
            if basis:
                console.print(Styled(basis, style="dim"))
        titles = {(r.engine, r.version): r.title for r in report.engines}
        shown: list[Recipe | NoRecipe] = [*(report.recipes or []), *(report.no_recipes or [])]
        order = {(r.engine, r.version): i for i, r in enumerate(report.engines)}
        shown.sort(key=lambda item: order.get((item.engine, item.version), len(order)))
        for item in shown:
            title = titles.get((item.engine, item.version), item.engine + " " + item.version)
            if isinstance(item, NoRecipe):
                print_no_recipe(console, title, item)
                continue
            console.print(Styled(f"\nHow to serve with {title}", style="bold"))
            print_recipe(console, item)

    return render_lines(draw, options.color)


def _draft_header(console: LinePrinter, report: Report) -> None:
    """The draft (its convention and method) and the target, or that none was given."""
    header = Styled()
    header.append("Draft   ", style="bold")
    header.append(escape_field(report.draft))
    if report.hub_origin is not None:
        header.append(f"\n        {escape_field(report.hub_origin.describe())}")
    header.append(f"\n        {escape_field(report.dialect.title)}")
    if report.method:
        header.append(f" · method {escape_field(report.method)}")
    if report.dialect.evidence:
        evidence = "; ".join(escape_field(item) for item in report.dialect.evidence)
        header.append("\n        evidence: " + evidence, style="dim")
    console.print(header)
    if report.target:
        facts = report.target_facts or TargetFacts(None, None, None, None, None, None)
        line = Styled()
        line.append("Target  ", style="bold")
        line.append(escape_field(report.target))
        line.append(
            "\n        "
            + escape_field(
                f"{facts.architecture} ({facts.model_type}), "
                f"{facts.num_layers} layers, hidden {facts.hidden_size}, "
                f"vocab {facts.vocab_size}"
            )
        )
        if facts.verifier is not None:
            summary = escape_field(facts.verifier.summary)
            line.append("\n        verifier: " + summary, style="dim")
        console.print(line)
    else:
        console.print(Styled("Target  none given (checks that need one are skipped)", style="dim"))


def _mtp_header(console: LinePrinter, mtp: MtpFacts) -> None:
    """An MTP check's checkpoint: the target, carrying the MTP layers it drafts with."""
    line = Styled()
    if mtp.served_beside is not None:
        line.append("Draft   ", style="bold")
        line.append(escape_field(mtp.source))
        line.append(
            "\n        stand-alone NextN export (a target's NextN layer as layer 0) · method mtp"
        )
        line.append("\n        " + escape_field(mtp.summary()))
        line.append("\nTarget  ", style="bold")
        line.append(escape_field(mtp.served_beside))
        console.print(line)
        return
    line.append("Target  ", style="bold")
    line.append(escape_field(mtp.source))
    line.append("\n        carries its own MTP layers · method mtp (no separate draft)")
    line.append("\n        " + escape_field(mtp.summary()))
    console.print(line)


def _launch_lines(console: LinePrinter, report: Report) -> None:
    """The launch, when given, and why each engine release was chosen; then a blank line."""
    if report.serve is not None:
        console.print(Styled("Serve   " + escape_field(report.serve.summary())))
    for result in report.engines:
        if result.chosen_because is not None:
            console.print(Styled("Engine  " + escape_field(result.chosen_because), style="dim"))
    console.print()


def basis_line(basis: dict[str, Any] | None) -> str | None:
    """One line naming the facts a verdict rests on that were not read in the engine's code
    at this release, grouped by how they are known (`documented only`, `inferred`, ...,
    strongest first), or None when every fact it consulted was read there."""
    if not basis or not basis.get("below_read"):
        return None
    groups: dict[str, list[str]] = {}
    for item in basis["below_read"]:
        groups.setdefault(str(item["confidence"]), []).append(str(item["fact"]))
    order = sorted(groups, key=lambda c: CONFIDENCE_RANK.get(c, len(CONFIDENCE_RANK)))
    known = "; ".join(f"{_known(c)}: {', '.join(groups[c])}" for c in order)
    return (
        f"  rests on facts not read in the engine's code at this release — {known} "
        f"({len(basis['read'])} read there)"
    )


def _known(confidence: str) -> str:
    """How a group of basis facts is known, as the line says it."""
    return "documented only" if confidence == "documented" else confidence
