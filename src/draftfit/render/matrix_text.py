"""The human-readable `draftfit matrix`: version ranges, verdicts and the deciding finding.

The table is laid out by rich where the output colours (a terminal), and as plain lines
otherwise (a pipe, a file, CI), in the same layout: columns as wide as their widest line,
two spaces apart, a cell's lines below each other. Plain output loads no rich (its import
is a tenth of a `matrix`'s time).
"""

from __future__ import annotations

import unicodedata
from typing import TYPE_CHECKING

from draftfit.escape import escape_controls, escape_field
from draftfit.render.lines import RichPrinter, Styled, render_lines
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.text import (
    VERDICT_STYLE,
    basis_line,
    print_no_recipe,
    print_recipe,
    unverified_line,
)
from draftfit.report import UNVERIFIED

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from draftfit.commands.release_matrix import Matrix, MatrixRow
    from draftfit.render.lines import LinePrinter
    from draftfit.verdicts import Verdict

    # Prints the table: its rows' four cells, and each row's verdict (for its colour).
    DrawTable = Callable[[list[tuple[str, str, str, str]], list[Verdict]], None]

COLUMNS = ("engine", "versions", "verdict", "why")
# Between two columns (rich's table padding: one blank each side, none at the edges).
GAP = "  "


def render_matrix(matrix: Matrix, options: RenderOptions = PLAIN, recipes: bool = True) -> str:
    if options.color:
        from draftfit.render.console import render_to_string

        return render_to_string(
            lambda console: _draw(matrix, recipes, RichPrinter(console), _rich_table(console)),
            color=True,
        )
    return render_lines(lambda printer: _draw(matrix, recipes, printer, _plain_table(printer)))


def _draw(
    matrix: Matrix,
    recipes: bool,
    printer: LinePrinter,
    table: DrawTable,
) -> None:
    head = Styled()
    head.append("Draft   ", style="bold")
    head.append(escape_field(matrix.draft))
    printer.print(head)
    if matrix.target:
        line = Styled()
        line.append("Target  ", style="bold")
        line.append(escape_field(matrix.target))
        printer.print(line)
    table([_cells(row) for row in matrix.rows], [row.verdict for row in matrix.rows])
    if recipes:
        for row in matrix.rows:
            if row.recipe is not None:
                printer.print(Styled(f"\n{row.title} {row.range}: how to serve", "bold"))
                print_recipe(printer, row.recipe)
            elif row.no_recipe is not None:
                print_no_recipe(printer, f"{row.title} {row.range}", row.no_recipe)
    for note in matrix.notes:
        printer.print(Styled(escape_field(note), "dim"))


def _cells(row: MatrixRow) -> tuple[str, str, str, str]:
    """A row's four cells: engine, versions, verdict and why (several lines)."""
    lines = [f"{f.code} {escape_field(f.message)}" for f in row.deciding[:2]]
    if row.verdict == UNVERIFIED and row.unverified_reasons:
        lines.insert(0, unverified_line(row.unverified_reasons, row.unchecked_rules))
    why = "\n".join(lines)
    if len(row.deciding) > 2:
        why += f"\n(+{len(row.deciding) - 2} more)"
    basis = basis_line(row.basis)
    if basis:
        why += "\n" + basis.strip()
    return row.title, row.range, str(row.verdict), why or "—"


def _rich_table(console: Console) -> DrawTable:
    """Print the table through rich (a colour terminal: it folds cells to its width)."""

    def table(rows: list[tuple[str, str, str, str]], verdicts: list[Verdict]) -> None:
        from rich.table import Table
        from rich.text import Text

        grid = Table(box=None, header_style="bold", pad_edge=False, show_lines=False)
        for column in COLUMNS:
            grid.add_column(column, overflow="fold")
        for (title, versions, verdict, why), shown in zip(rows, verdicts, strict=True):
            grid.add_row(
                title, versions, Text(verdict, style=VERDICT_STYLE.get(shown, "bold red")), why
            )
        console.print(grid)

    return table


def _plain_table(printer: LinePrinter) -> DrawTable:
    """Print the table as plain lines, laid out as rich lays out a table it does not fold."""

    def table(rows: list[tuple[str, str, str, str]], verdicts: list[Verdict]) -> None:
        cells = [[escape_controls(cell).split("\n") for cell in row] for row in [COLUMNS, *rows]]
        widths = [
            max(_width(line) for row in cells for line in row[column])
            for column in range(len(COLUMNS))
        ]
        for row in cells:
            for k in range(max(len(cell) for cell in row)):
                parts = [
                    _pad(cell[k] if k < len(cell) else "", width)
                    for cell, width in zip(row, widths, strict=True)
                ]
                printer.print(GAP.join(parts))

    return table


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


def _width(text: str) -> int:
    """The columns `text` takes on a terminal: two for a wide character (East Asian wide or
    full-width), none for a combining mark, one for any other."""
    if text.isascii():
        return len(text)
    total = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        total += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return total
