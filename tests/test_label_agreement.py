"""A finding's consequence label agrees with its own words.

The label (`consequence`, and the `consequence:` line built from it) and the text (a rule's
documentation, an emitted finding's message and fix, the engine data's notes on a fact
that rests on one rule) are written in different places; these tests keep them from
contradicting each other. The text names outcomes in a few fixed phrasings ("start-up
fails", "at the first forward", "drafts garbage", "not what runs"); each outcome it names
must be one the label allows:

* `cosmetic` and `slower` name no failure at all: a text that says start-up fails, the
  first request fails, the draft is garbage or another draft runs needs another label
  (`launch-dependent` where only some launches are affected, `unknown` where draftfit
  cannot tell, `degrades` where a condition decides);
* an error label (refuses to start, fails at the first request, drafts garbage, another
  draft runs) is one of the outcomes the text names, when it names any (a text may name
  two, where the engine version or the launch decides: "at start-up, else at the first
  request");
* a `degrades` label says what happens under its condition: "drafts worse" is not a text
  that says start-up fails, and "start-up fails" is not a text that names no failure.

The emitted findings are those of every rule case (`tests/cases`), on real checkpoints.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from draftfit.engines.registry import ENGINES
from draftfit.rule_ids import ALL_RULE_IDS, BY_NAME, Consequence
from draftfit.rules import get_rule
from tests.cases import CASES

# What a text says happens, as draftfit's messages and documentation phrase it.
OUTCOMES: dict[Consequence, tuple[str, ...]] = {
    Consequence.REFUSES_TO_START: (
        r"refuses? to start",
        r"start-up fails",
        r"fails? (?:at|during) start-up",
        r"at start-up",
        r"while start-up",
        r"start-up warm-up",
        r"does not start",
        r"while building the draft",
        r"while (?:it )?builds? the draft",
        r"while the draft is built",
        r"(?:refused|rejected) while",
        r"refuses (?:the checkpoint|the config|it outright)",
        r"the load fails",
    ),
    Consequence.FAILS_AT_FIRST_REQUEST: (
        r"first request",
        r"first forward",
        r"first speculative step",
        r"first (?:eagle-3 )?step",
    ),
    Consequence.DRAFTS_GARBAGE: (
        r"drafts? garbage",
        r"acceptance (?:is )?(?:near zero|≈ 0|collapses|drops to about zero)",
        r"proposals are garbage",
        r"every drafted token is wrong",
        r"every draft token is rejected",
        r"every draft is (?:garbage|wrong)",
        r"keep their random initial values",
        r"almost no proposal is accepted",
        r"leaves? (?:it|them) uninitialised",
    ),
    Consequence.DRAFT_NOT_SERVED: (
        r"not what runs",
        r"is not served",
        r"not served as",
    ),
}
FAILURES = frozenset(OUTCOMES)
NO_FAILURE = frozenset({Consequence.COSMETIC, Consequence.SLOWER})


def named_outcomes(text: str) -> set[Consequence]:
    """The outcomes `text` names (whitespace and case do not matter)."""
    flat = " ".join(text.split()).lower()
    return {
        outcome
        for outcome, phrases in OUTCOMES.items()
        if any(re.search(phrase, flat) for phrase in phrases)
    }


def disagreement(consequence: Consequence, label: str, text: str, shown: bool = True) -> str | None:
    """Why the label (`consequence`, read as `label`) contradicts `text`, or None.
    `shown`: the label is the one a finding shows; a rule's own "drafts worse" is not held
    against its documentation, which may also describe the versions where a finding states
    another consequence (a release that fails instead)."""
    named = named_outcomes(text)
    if consequence in NO_FAILURE and named:
        return f"`{consequence}` but the text says {sorted(map(str, named))}"
    if consequence in FAILURES and named and consequence not in named:
        return f"`{consequence}` but the text says only {sorted(map(str, named))}"
    if consequence is Consequence.DEGRADES:
        says_start_up = Consequence.REFUSES_TO_START in named
        if shown and label.startswith("drafts worse") and says_start_up:
            return f"`{label}` but the text says start-up fails"
        if label.startswith("start-up fails") and not says_start_up:
            return f"`{label}` but the text names no start-up failure"
    return None


# ---------------------------------------------------------------------- the checker itself


@pytest.mark.parametrize(
    ("consequence", "label", "text", "agrees"),
    [
        (Consequence.COSMETIC, "no effect", "if the launch passes it, start-up fails", False),
        (Consequence.COSMETIC, "no effect", "stored twice; engines load the first", True),
        (Consequence.SLOWER, "slower", "it loads, but drafts garbage", False),
        (Consequence.REFUSES_TO_START, "refuses", "the matmul fails at the first forward", False),
        (
            Consequence.REFUSES_TO_START,
            "refuses",
            "it fails in the start-up warm-up, else at the first speculative step",
            True,
        ),
        (Consequence.DRAFTS_GARBAGE, "garbage", "loads, but drafts garbage", True),
        (Consequence.DRAFT_NOT_SERVED, "not served", "SGLang refuses to start", False),
        (Consequence.DEGRADES, "drafts worse on long prompts", "IndexError at start-up", False),
        (Consequence.DEGRADES, "start-up fails under NIXL", "under NIXL start-up fails", True),
        (Consequence.DEGRADES, "start-up fails under NIXL", "acceptance drops", False),
        (Consequence.LAUNCH_DEPENDENT, "depends on the launch", "start-up fails if ...", True),
    ],
)
def test_the_checker_tells_agreement_from_contradiction(
    consequence: Consequence, label: str, text: str, agrees: bool
) -> None:
    assert (disagreement(consequence, label, text) is None) is agrees


# ---------------------------------------------------------------------- rules, findings, data


def test_every_rule_documentation_agrees_with_its_label() -> None:
    wrong = {}
    for rule_id in ALL_RULE_IDS:
        rule = get_rule(rule_id.code)
        assert rule is not None, rule_id
        why = disagreement(rule_id.consequence, rule_id.consequence_text, rule.doc, shown=False)
        if why is not None:
            wrong[rule_id.code] = why
    assert wrong == {}


def test_every_emitted_finding_agrees_with_its_label(tmp_path: Path) -> None:
    """Over the findings of every rule case: the label each finding shows (its own
    consequence where the engine version or the case decides it) against its message
    and fix."""
    wrong = {}
    seen = set()
    for item in CASES:
        folder = tmp_path / item.id
        folder.mkdir()
        for finding in item.check(folder).findings:
            seen.add(finding.code)
            text = f"{finding.message}. {finding.fix or ''}"
            why = disagreement(finding.consequence, finding.consequence_text, text)
            if why is not None:
                wrong.setdefault(f"{finding.code} ({item.id})", f"{why}: {finding.message}")
    assert wrong == {}
    # the cases reach every rule a check can emit (the diff's and the values' aside)
    assert len(seen) > 100


def test_engine_data_notes_on_a_one_rule_fact_agree_with_its_label() -> None:
    """A fact that only one rule rests on describes that rule's outcome in its `doc` and
    notes: an informational rule's fact names no failure, an error rule's names its
    outcome where it names one. (A fact several rules rest on describes several outcomes,
    and a `degrades` rule's facts the versions where a finding states its own consequence:
    neither is compared.)"""
    wrong = {}
    compared = 0
    for engine in ENGINES:
        for key, fact in engine.data.facts.items():
            codes = list(fact.rules)
            if len(codes) != 1:
                continue
            rule_id = next(r for r in ALL_RULE_IDS if r.code == codes[0])
            if rule_id.consequence not in NO_FAILURE | FAILURES:
                continue
            compared += 1
            texts = [fact.doc, *(entry.note or "" for entry in fact.entries)]
            for text in texts:
                why = disagreement(rule_id.consequence, rule_id.consequence_text, text)
                if why is not None:
                    wrong[f"{engine.name}:{key}"] = f"{why}: {text}"
    assert wrong == {}
    assert compared > 50


def test_the_names_and_codes_used_here_are_the_registered_ones() -> None:
    assert all(BY_NAME[r.name] is r for r in ALL_RULE_IDS)
