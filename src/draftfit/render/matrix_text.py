"""The human-readable `draftfit matrix`: version ranges, verdicts and the deciding finding."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from draftfit.commands.release_matrix import Matrix
from draftfit.escape import escape_field
from draftfit.render.console import render_to_string
from draftfit.render.lines import RichPrinter
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.text import (
    VERDICT_STYLE,
    basis_line,
    print_no_recipe,
    print_recipe,
    unverified_line,
)
from draftfit.report import UNVERIFIED


def render_matrix(matrix: Matrix, options: RenderOptions = PLAIN, recipes: bool = True) -> str:
    def draw(console: Console) -> None:
        head = Text()
        head.append("Draft   ", style="bold")
        head.append(escape_field(matrix.draft))
        if matrix.target:
            head.append("\nTarget  ", style="bold")
            head.append(escape_field(matrix.target))
        console.print(head)
        table = Table(box=None, header_style="bold", pad_edge=False, show_lines=False)
        for column in ("engine", "versions", "verdict", "why"):
            table.add_column(column, overflow="fold")
        for row in matrix.rows:
            lines = [f"{f.code} {escape_field(f.message)}" for f in row.deciding[:2]]
            if row.verdict == UNVERIFIED and row.unverified_reasons:
                lines.insert(0, unverified_line(row.unverified_reasons, row.unchecked_rules))
            why = "\n".join(lines)
            if len(row.deciding) > 2:
                why += f"\n(+{len(row.deciding) - 2} more)"
            basis = basis_line(row.basis)
            if basis:
                why += "\n" + basis.strip()
            table.add_row(
                row.title,
                row.range,
                Text(str(row.verdict), style=VERDICT_STYLE.get(row.verdict, "bold red")),
                why or "—",
            )
        console.print(table)
        if recipes:
            for row in matrix.rows:
                if row.recipe is not None:
                    console.print(Text(f"\n{row.title} {row.range}: how to serve", style="bold"))
                    print_recipe(RichPrinter(console), row.recipe)
                elif row.no_recipe is not None:
                    print_no_recipe(RichPrinter(console), f"{row.title} {row.range}", row.no_recipe)
        for note in matrix.notes:
            console.print(Text(escape_field(note), style="dim"))

    return render_to_string(draw, options.color)
