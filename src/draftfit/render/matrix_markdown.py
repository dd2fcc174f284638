"""`draftfit matrix --format markdown`: the matrix as a table to paste into a model card."""

from __future__ import annotations

from draftfit.release_matrix import Matrix
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.render.text import unverified_line
from draftfit.report import UNVERIFIED


def render_markdown(matrix: Matrix, options: RenderOptions = PLAIN) -> str:
    """A model-card-ready table, then each range's recipe: every step it relies on (a
    download, a `draftfit convert`) and the command, in one block to paste."""
    lines = [
        f"Compatibility of `{matrix.draft}`"
        + (f" with `{matrix.target}`" if matrix.target else "")
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
        parts = [f"{f.code} {f.message}" for f in row.deciding[:2]]
        if row.verdict == UNVERIFIED and row.unverified_reasons:
            parts.insert(0, unverified_line(row.unverified_reasons, row.unchecked_rules))
        why = "; ".join(parts).replace("|", "\\|")
        lines.append(f"| {row.title} | {row.range} | {row.verdict} | {why or '—'} |")
    recipes = [r for r in matrix.rows if r.recipe is not None]
    if recipes:
        lines += ["", "How to serve it:", ""]
        for row in recipes:
            assert row.recipe is not None
            lines.append(f"* {row.title} {row.range}:")
            lines.append("")
            lines.append("  ```bash")
            lines += [f"  {step}" for step in row.recipe.steps]
            lines += [f"  {line}" for line in row.recipe.command.splitlines()]
            lines.append("  ```")
            lines += [f"  {note}" for note in row.recipe.notes]
    for note in matrix.notes:
        lines += ["", f"_{note}_"]
    return "\n".join(lines) + "\n"
