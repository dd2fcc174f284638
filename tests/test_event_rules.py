"""Event rules (the rules whose detection lives in an engine's procedure) find nothing in a
view without an event tagged with their identity: the checker skips them there
(`EVENT_RULE_CODES`, `view_event_names`), so this must hold for every one of them."""

from __future__ import annotations

from pathlib import Path

from draftfit.checkpoint import load_checkpoint
from draftfit.draft.description import describe
from draftfit.engines.view import EngineView, Event
from draftfit.location import Location
from draftfit.rules import RULES
from draftfit.rules.base import EVENT_RULE_CODES, Context, view_event_names
from tests import factory as f


def _context(tmp_path: Path, view: EngineView) -> Context:
    checkpoint = load_checkpoint(f.specforge().write(tmp_path / "d"))
    return Context(checkpoint, describe(checkpoint), None, view, method="eagle3")


def _event(code: str) -> Event:
    return Event(RULES[code].id, f"event of {code}", Location("config.json"))


def test_event_rules_are_registered() -> None:
    assert len(EVENT_RULE_CODES) > 40
    assert set(RULES) >= EVENT_RULE_CODES


def test_an_event_rule_finds_only_its_own_events(tmp_path: Path) -> None:
    view = EngineView("vllm", "0.34.0", "vLLM 0.34.0", "eagle3")
    ctx = _context(tmp_path, view)
    others = sorted(set(RULES) - EVENT_RULE_CODES)
    for code in sorted(EVENT_RULE_CODES):
        rest = [c for c in sorted(EVENT_RULE_CODES) if c != code]
        view.events = [_event(c) for c in rest + others]
        view.refusals = [_event(c) for c in rest]
        assert RULES[code].name not in view_event_names(view)
        assert list(RULES[code].check(ctx)) == [], code
        view.refusals.append(_event(code))
        assert RULES[code].name in view_event_names(view)
        found = list(RULES[code].check(ctx))
        assert [v.message for v in found] == [f"event of {code}"], code
