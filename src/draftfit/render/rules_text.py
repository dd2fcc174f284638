"""The human-readable `draftfit rules` (a table) and `draftfit rule CODE` (its docstring)."""

from __future__ import annotations

from rich.table import Table

from draftfit.explain import RuleList
from draftfit.render.console import render_to_string
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.rules.base import Rule


def render_rule_list(rules: RuleList, options: RenderOptions = PLAIN) -> str:
    def draw(console) -> None:
        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("code")
        table.add_column("name")
        table.add_column("severity")
        table.add_column("summary")
        for item in rules.rules:
            table.add_row(item.code, item.name, str(item.severity), item.summary)
        console.print(table)

    return render_to_string(draw, options.color)


def render_rule(item: Rule, options: RenderOptions = PLAIN) -> str:
    """Plain markdown-ish text: heading line, then the docstring sections."""
    target = " (needs --target)" if item.needs_target else ""
    return f"{item.code} {item.name} — {item.severity}{target}\n{item.summary}\n\n{item.doc}\n"
