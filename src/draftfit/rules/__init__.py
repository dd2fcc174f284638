"""The rule registry: every rule module is imported here, so `RULES` is complete.

Codes are stable and never reused: DF0xx file structure, DF1xx config route and
architecture, DF2xx tensors, DF3xx aux layers, DF4xx vocabulary, DF5xx target, DF6xx norm
flags, DF7xx weight values (`--values`), DF8xx differences from a reference, DF9xx hygiene.
"""

from __future__ import annotations

from draftfit.rule_ids import RuleId
from draftfit.rules import (  # noqa: F401 (each module registers its rules)
    aux,
    config,
    difference,
    field_types,
    hygiene,
    mtp,
    norms,
    serving,
    structure,
    target,
    tensors,
    values,
    vocab,
)
from draftfit.rules.base import RULES, Rule, Severity


def get_rule(code_or_name: str) -> Rule | None:
    """Look a rule up by code (`DF301`) or name (`aux-layers-differ-from-trained`)."""
    key = code_or_name.strip()
    if key.upper() in RULES:
        return RULES[key.upper()]
    for item in RULES.values():
        if item.name == key.lower():
            return item
    return None


def registered(rule_id: RuleId) -> Rule:
    """The rule registered for `rule_id` (its summary, documentation and check)."""
    found = RULES[rule_id.code]
    if found.id != rule_id:
        raise KeyError(f"{rule_id} is registered as {found.id}")
    return found


def all_rules() -> list[Rule]:
    return [RULES[code] for code in sorted(RULES)]


__all__ = ["RULES", "Rule", "Severity", "all_rules", "get_rule", "registered"]
