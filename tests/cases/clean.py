"""Rule cases — Clean drafts from every producer: nothing may fire but what is listed."""

from __future__ import annotations

from draftfit.rules import RULES
from tests import factory as f
from tests.cases.base import CASES, Case, with_target

ALL_CODES = frozenset(RULES)

# Clean drafts from every producer: nothing may fire but what is listed.
for _name, _draft, _expected in [
    ("clean-specforge-default-aux", lambda: f.specforge(), set()),
    ("clean-speculators-trained", lambda: f.speculators(aux=[2, 4, 5]), set()),
    (
        "clean-speculators-converted",
        lambda: f.speculators(aux=[2, 4, 5], variant="converted"),
        set(),
    ),
    ("clean-modelopt-layers", lambda: f.modelopt(aux=[1, 3, 4]), {"DF302"}),
    ("clean-eagle-official", lambda: f.eagle_official(), {"DF903"}),
]:
    CASES.append(
        Case(
            _name,
            with_target(_draft(), name="my-eagle3-draft"),
            frozenset(_expected),
            ALL_CODES - _expected,
            verdict="compatible",
        )
    )
