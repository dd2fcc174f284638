"""`draftfit matrix --format markdown`: the matrix as a table to paste into a model card."""

from __future__ import annotations

from draftfit.matrix import Matrix
from draftfit.render.options import PLAIN, RenderOptions


def render_markdown(matrix: Matrix, options: RenderOptions = PLAIN) -> str:
    """A model-card-ready table."""
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
        why = "; ".join(f"{f.code} {f.message}" for f in row.deciding[:2]).replace("|", "\\|")
        lines.append(f"| {row.title} | {row.range} | {row.verdict} | {why or '—'} |")
    recipes = [r for r in matrix.rows if r.recipe is not None]
    if recipes:
        lines += ["", "How to serve it:", ""]
        for row in recipes:
            assert row.recipe is not None
            lines.append(f"* {row.title} {row.range}:")
            lines.append("")
            lines.append("  ```bash")
            lines += [f"  {line}" for line in row.recipe.command.splitlines()]
            lines.append("  ```")
            lines += [f"  {note}" for note in row.recipe.notes]
    for note in matrix.notes:
        lines += ["", f"_{note}_"]
    return "\n".join(lines) + "\n"
