"""`draftfit rules` and `draftfit rule CODE`: rule documentation from the rule docstrings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class RuleList:
    """Every rule draftfit runs, in code order; what `draftfit rules` shows."""

    rules: tuple[Rule, ...]

    @classmethod
    def all(cls) -> RuleList:
        return cls(tuple(all_rules()))

    def to_dict(self) -> dict[str, Any]:
        return {"rules": [rule_dict(item) for item in self.rules]}
