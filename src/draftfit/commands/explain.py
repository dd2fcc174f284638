"""`draftfit rules` and `draftfit rule CODE`: rule documentation from the rule docstrings.

`draftfit rule CODE` adds where the rule is detected (the modules that emit it, by their own
declarations: :mod:`draftfit.commands.detection`) and, under the prose, the engine data the
rule rests on (the facts whose `rules` name it in `engines/<engine>/data.toml`): per engine,
each fact's entries with their version range, source and confidence, read from the data
files, so version ranges live in the data only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.commands.detection import detected_in
from draftfit.docs_links import rule_doc_url
from draftfit.records import frozen
from draftfit.rules import all_rules
from draftfit.rules.base import Rule

if TYPE_CHECKING:
    from typing import Any

# Set facts (registries, allow-lists) longer than this are cut short in the text form.
TEXT_ITEMS_LIMIT = 12


def rule_dict(item: Rule, data: bool = False) -> dict[str, Any]:
    """The rule's documentation; with `data`, also where it is detected and the engine data
    it rests on."""
    out: dict[str, Any] = {
        "code": item.code,
        "name": item.name,
        "severity": str(item.severity),
        "consequence": str(item.consequence),
        "consequence_text": item.id.consequence_text,
        "summary": item.summary,
        "family": item.family,
        "scope": item.scope.value,
        "needs_target": item.needs_target,
        "doc": item.doc,
        "docs_url": rule_doc_url(item.code),
    }
    if data:
        out["detected_in"] = [d.to_dict() for d in detected_in(item.code)]
        out["data"] = rule_data(item)
    return out


def rule_data(item: Rule) -> dict[str, list[dict[str, Any]]]:
    """Per engine, the facts `item` rests on with every entry's range, source and confidence."""
    from draftfit.engines.registry import ENGINES

    out: dict[str, list[dict[str, Any]]] = {}
    for engine in ENGINES:
        data = engine.data
        keys = data.facts_for_rule(item.code)
        if not keys:
            continue
        out[engine.name] = [
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


@frozen
class RuleList:
    """Every rule draftfit runs, in code order; what `draftfit rules` shows."""

    rules: tuple[Rule, ...]

    @classmethod
    def all(cls) -> RuleList:
        return cls(tuple(all_rules()))

    def to_dict(self) -> dict[str, Any]:
        return {"rules": [rule_dict(item) for item in self.rules]}
