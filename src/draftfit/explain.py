"""`draftfit rules` and `draftfit rule CODE`: rule documentation from the rule docstrings.

`draftfit rule CODE` adds, under the prose, the engine data the rule rests on
(`rules.data_facts`): per engine, each fact's entries with their version range, source and
confidence, read from the data files, so version ranges live in the data only.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from draftfit.render.console import render_to_string
from draftfit.rules import all_rules
from draftfit.rules.base import Rule
from draftfit.rules.data_facts import facts_for

# Set facts (registries, allow-lists) longer than this are cut short in the text form.
TEXT_ITEMS_LIMIT = 12


def rule_dict(item: Rule, data: bool = False) -> dict[str, Any]:
    """The rule's documentation; with `data`, also the engine data it rests on."""
    out = {
        "code": item.code,
        "name": item.name,
        "severity": str(item.severity),
        "summary": item.summary,
        "family": item.family,
        "scope": item.scope,
        "needs_target": item.needs_target,
        "doc": item.doc,
    }
    if data:
        out["data"] = rule_data(item)
    return out


def rule_data(item: Rule) -> dict[str, list[dict[str, Any]]]:
    """Per engine, the facts `item` rests on with every entry's range, source and confidence."""
    from draftfit.engines.profile import load_engine

    out: dict[str, list[dict[str, Any]]] = {}
    for engine, keys in facts_for(item).items():
        data = load_engine(engine)
        out[engine] = [
            {
                "fact": key,
                "doc": data.facts[key].doc,
                "kind": data.facts[key].kind,
                "entries": [
                    {
                        "value": entry.value,
                        "since": str(entry.since) if entry.since else None,
                        "until": str(entry.until) if entry.until else None,
                        "source": entry.source,
                        "confidence": entry.confidence,
                        "note": entry.note,
                    }
                    for entry in data.facts[key].entries
                ],
            }
            for key in keys
        ]
    return out


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
    """Plain markdown-ish text: heading line, the docstring sections, then the engine data."""
    target = " (needs --target)" if item.needs_target else ""
    text = f"{item.code} {item.name} — {item.severity}{target}\n{item.summary}\n\n{item.doc}\n"
    data = rule_data(item)
    if data:
        text += "\n" + _render_data(data)
    return text


def _render_data(data: dict[str, list[dict[str, Any]]]) -> str:
    from draftfit.engines.profile import load_engine

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
    return text if len(text) <= limit else text[: limit - 1] + "…"
