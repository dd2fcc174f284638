"""The human-readable `draftfit rules` (a table) and `draftfit rule CODE` (its docstring)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.commands.detection import detected_in
from draftfit.commands.explain import TEXT_ITEMS_LIMIT, RuleList, rule_data
from draftfit.docs_links import rule_doc_url
from draftfit.escape import clip
from draftfit.render.options import PLAIN, RenderOptions
from draftfit.rules.base import Rule

if TYPE_CHECKING:
    from typing import Any

    from rich.console import Console


def render_rule_list(rules: RuleList, options: RenderOptions = PLAIN) -> str:
    """The rules as a table (rich lays it out; `draftfit rule CODE` needs no rich)."""
    from rich.table import Table

    from draftfit.render.console import render_to_string

    def draw(console: Console) -> None:
        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        table.add_column("code")
        table.add_column("name")
        table.add_column("severity")
        table.add_column("consequence")
        table.add_column("summary")
        for item in rules.rules:
            table.add_row(
                item.code, item.name, str(item.severity), str(item.consequence), item.summary
            )
        console.print(table)

    return render_to_string(draw, options.color)


def render_rule(item: Rule, options: RenderOptions = PLAIN) -> str:
    """Plain markdown-ish text: heading line, where it is detected, the docstring sections,
    then the engine data."""
    target = " (needs --target)" if item.needs_target else ""
    text = f"{item.code} {item.name} — {item.severity}{target}\n{item.summary}\n"
    text += f"consequence: {item.consequence} — {item.id.consequence_text}\n"
    text += "detected in:\n" + "".join(
        f"  {d.stage} ({d.module})\n" for d in detected_in(item.code)
    )
    text += f"docs: {rule_doc_url(item.code)}\n\n{item.doc}\n"
    data = rule_data(item)
    if data:
        text += "\n" + _render_data(data)
    return text


def _render_data(data: dict[str, list[dict[str, Any]]]) -> str:
    from draftfit.engines.registry import load_engine

    lines = ["## Engine data (version ranges: `since` inclusive, `until` exclusive)"]
    for engine, facts in data.items():
        lines.append(f"{load_engine(engine).title}:")
        for fact in facts:
            lines.append(f"  {fact['fact']} — {fact['doc']}")
            entries = fact["entries"]
            shown = entries[:TEXT_ITEMS_LIMIT] if fact["kind"] == "set" else entries
            for entry in shown:
                lines.append(
                    f"    {_range(entry)}: {_short(entry['value'])}  [{entry['confidence']}]"
                    f" {entry['source']}"
                )
                if entry["note"] and entry["confidence"] != "read":
                    lines.append(f"      note: {entry['note']}")
            if len(shown) < len(entries):
                lines.append(
                    f"    … {len(entries) - len(shown)} more items (`--format json` lists all)"
                )
    return "\n".join(lines) + "\n"


def _range(entry: dict[str, Any]) -> str:
    since, until = entry["since"], entry["until"]
    if since and until:
        return f"{since} … <{until}"
    if since:
        return f">= {since}"
    if until:
        return f"< {until}"
    return "every version"


def _short(value: Any, limit: int = 70) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return clip(text, limit)
