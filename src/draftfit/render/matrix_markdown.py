"""`draftfit matrix --format markdown`: the matrix as a table to paste into a model card.

Names and messages are written with :func:`~draftfit.escape.markdown_code` and
:func:`~draftfit.escape.markdown_text`: nothing in a checkpoint can end a table cell,
add a link or HTML, or start a line of its own; a recipe's block is fenced with more
backticks than it holds.
"""

from __future__ import annotations

import re

from draftfit.commands.release_matrix import Matrix
from draftfit.escape import escape_field, markdown_code, markdown_text
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.text import unverified_line
from draftfit.report import UNVERIFIED


def render_markdown(matrix: Matrix, options: RenderOptions = PLAIN) -> str:
    """A model-card-ready table, then each range's recipe: every step it relies on (a
    download, a `draftfit convert`) and the command, in one block to paste; or, for a range
    without one, one line saying why."""
    lines = [
        f"Compatibility of {markdown_code(matrix.draft)}"
        + (f" with {markdown_code(matrix.target)}" if matrix.target else "")
        + " (checked with draftfit, "
        + {
            None: "without loading weights",
            "sampled": "reading a sample of the weights",
            "full": "reading every weight",
        }.get(matrix.values, "reading the weights")
        + ")",
        "",
        "| engine | versions | verdict | why |",
        "| --- | --- | --- | --- |",
    ]
    for row in matrix.rows:
        parts = [f"{f.code} {markdown_text(f.message)}" for f in row.deciding[:2]]
        if row.verdict == UNVERIFIED and row.unverified_reasons:
            reasons = unverified_line(row.unverified_reasons, row.unchecked_rules)
            parts.insert(0, markdown_text(reasons))
        why = "; ".join(parts)
        lines.append(f"| {row.title} | {row.range} | {row.verdict} | {why or '—'} |")
    served = [r for r in matrix.rows if r.recipe is not None or r.no_recipe is not None]
    if served:
        lines += ["", "How to serve it:", ""]
    for row in served:
        if row.recipe is None:
            assert row.no_recipe is not None
            reason = markdown_text(row.no_recipe.reason)
            lines.append(f"* {row.title} {row.range}: no recipe: {reason}")
            continue
        lines.append(f"* {row.title} {row.range}:")
        lines.append("")
        block = [escape_field(step) for step in row.recipe.steps]
        block += [escape_field(line) for line in row.recipe.command.splitlines()]
        fence = _fence(block)
        lines.append(f"  {fence}bash")
        lines += [f"  {line}" for line in block]
        lines.append(f"  {fence}")
        lines += [f"  {markdown_text(note)}" for note in row.recipe.notes]
    for note in matrix.notes:
        lines += ["", f"_{markdown_text(note)}_"]
    return "\n".join(lines) + "\n"


def _fence(block: list[str]) -> str:
    """A code fence longer than any run of backticks in `block` (at least three)."""
    longest = max((len(run) for line in block for run in re.findall("`+", line)), default=0)
    return "`" * max(3, longest + 1)
