"""`draftfit rules` and `draftfit rule CODE`: rule documentation from the rule docstrings."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from draftfit.render.console import render_to_string
from draftfit.rules import all_rules
from draftfit.rules.base import Rule


def rule_dict(item: Rule) -> dict[str, Any]:
    return {
        "code": item.code,
        "name": item.name,
        "severity": str(item.severity),
        "summary": item.summary,
        "family": item.family,
        "scope": item.scope,
        "needs_target": item.needs_target,
        "doc": item.doc,
    }


def rule_list() -> list[dict[str, Any]]:
    return [rule_dict(item) for item in all_rules()]


def render_rule_list(color: bool = False) -> str:
    def draw(console) -> None:
        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("code")
        table.add_column("name")
        table.add_column("severity")
        table.add_column("summary")
        for item in all_rules():
            table.add_row(item.code, item.name, str(item.severity), item.summary)
        console.print(table)

    return render_to_string(draw, color)


def render_rule(item: Rule) -> str:
    """Plain markdown-ish text: heading line, then the docstring sections."""
    target = " (needs --target)" if item.needs_target else ""
    return f"{item.code} {item.name} — {item.severity}{target}\n{item.summary}\n\n{item.doc}\n"
