"""The human-readable conversion: each edit with its safety, what was written, its check."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.conversion.plan import DISPLAY_ONLY, SAFE, UNSAFE, Plan
from draftfit.escape import escape_field
from draftfit.render.lines import Styled, render_lines
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.text import render_check

if TYPE_CHECKING:
    from draftfit.conversion import ConvertResult
    from draftfit.render.lines import LinePrinter

STYLE = {SAFE: "green", UNSAFE: "yellow", DISPLAY_ONLY: "bold red"}
MARK = {SAFE: "safe", UNSAFE: "unsafe", DISPLAY_ONLY: "display-only"}


def render_plan(plan: Plan, out: str | None, written: bool, color: bool = False) -> str:
    def draw(console: LinePrinter) -> None:
        head = Styled()
        head.append("Convert  ", style="bold")
        shown_out = escape_field(out) if out else "(dry run)"
        head.append(
            f"{escape_field(plan.origin)} -> {shown_out}  ({escape_field(plan.convention)} "
            "convention)"
        )
        console.print(head)
        console.print()
        console.print(Styled(f"Plan ({len(plan.edits)} edits)", style="bold underline"))
        for edit in plan.edits:
            applied = plan.applied(edit)
            line = Styled("  ")
            line.append(f"{MARK[edit.safety]:<12}", style=STYLE[edit.safety])
            line.append(" " if applied else "(not applied) ", style="dim")
            line.append(escape_field(edit.description))
            console.print(line)
        pending = plan.pending
        unsafe = [e for e in pending if e.safety == UNSAFE]
        display = [e for e in pending if e.safety == DISPLAY_ONLY]
        console.print()
        if unsafe:
            console.print(
                Styled(
                    f"{len(unsafe)} unsafe edit(s) not applied: rerun with "
                    "--unsafe-fixes to apply them",
                    style="yellow",
                )
            )
        if display:
            console.print(
                Styled(f"{len(display)} issue(s) need a human (display-only)", style="bold red")
            )
        derived = [escape_field(t.name) for t in plan.tensors if t.copied_from is None]
        moved = [escape_field(t.name) for t in plan.tensors if t.column_blocks is not None]
        parts = [f"{len(derived)} derived: {', '.join(derived)}"] if derived else []
        if moved:
            parts.append(f"{len(moved)} with column blocks moved: {', '.join(moved)}")
        tensors = (
            f"{len(plan.tensors)} tensors ({'; '.join(parts)})"
            if parts
            else f"{len(plan.tensors)} tensors, bytes copied verbatim"
        )
        console.print(Styled(tensors))
        if plan.copy_files:
            copied = ", ".join(escape_field(name) for name in plan.copy_files)
            console.print(Styled("copied as is: " + copied, style="dim"))
        if written:
            console.print(Styled(f"written to {escape_field(out or '')}", style="bold green"))
        else:
            console.print(Styled("dry run: nothing written", style="dim"))

    return render_lines(draw, color)


def render_convert(result: ConvertResult, options: RenderOptions = PLAIN) -> str:
    """The plan, then (when the output was written) the check of the output. (Leftovers
    removed on the way are told on stderr as they go, and listed in JSON.)"""
    if result.not_needed is not None and not result.written:
        return escape_field(result.not_needed) + "\n"
    text = render_plan(result.plan, result.out_as_given, result.written, options.color)
    if result.report is not None:
        text += "\nCheck of the output\n\n" + render_check(result.report, options)
    return text
