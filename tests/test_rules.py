"""Every rule case from `tests/cases/`, plus the registry-wide promise that each rule has a case
that fires and a case that stays quiet."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.rules import all_rules
from draftfit.rules.base import Scope
from tests import factory as f
from tests.cases import CASES, Case


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, tmp_path: Path) -> None:
    report = case.check(tmp_path)
    codes = {f.code for f in report.findings}
    missing = case.fires - codes
    unexpected = case.quiet & codes
    detail = "\n".join(f"{f.code} {f.severity} {f.message}" for f in report.findings)
    assert not missing, f"expected {sorted(missing)} to fire; got:\n{detail}"
    assert not unexpected, f"expected {sorted(unexpected)} to stay quiet; got:\n{detail}"
    if case.verdict is not None:
        assert report.engines[0].verdict == case.verdict, detail


def test_every_rule_has_a_firing_and_a_quiet_case() -> None:
    fired = set().union(*(c.fires for c in CASES))
    quiet = set().union(*(c.quiet for c in CASES))
    # diff codes: test_diff.py; value codes (run only with --values): test_values.py
    codes = {r.code for r in all_rules() if r.scope is not Scope.DIFF and r.family != "values"}
    assert codes - fired == set(), "rules without a firing case"
    assert codes - quiet == set(), "rules without a quiet case"


def test_case_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def test_head_rows_unknown_without_a_vocabulary_size(tmp_path: Path) -> None:
    """No `vocab_size` or `draft_vocab_size`: the head's rows are unknown, so a stored
    lm_head cannot be judged truncated; it is a shape mismatch, not an internal error."""
    draft = f.specforge()
    draft.config.pop("vocab_size", None)
    draft.config.pop("draft_vocab_size", None)
    draft.reshape("lm_head.weight", (300, f.H))
    path = f.write_checkpoint(tmp_path / "draft", draft.config, draft.tensors)
    report = check_path(path, engines=["trtllm"])
    mismatched = [x for x in report.findings if x.code == "DF203"]
    assert [m.location.tensor for m in mismatched] == ["lm_head.weight"]
    assert "[draft_vocab_size, hidden_size] = [None, 64]" in mismatched[0].message


def test_target_width_fix_follows_the_stored_fc(tmp_path: Path) -> None:
    """DF502's fix reads `fc`: trained on the target's width, the config is what is wrong;
    trained on the width the config says, the draft is another target's."""
    target = f.llama_target(tmp_path / "t", hidden=2 * f.H)

    def df502_fix(draft: f.Draft, name: str) -> str:
        report = check_path(draft.write(tmp_path / name), target=target, engines=["vllm==0.34.0"])
        fixes = [x.fix for x in report.findings if x.code == "DF502"]
        assert len(fixes) == 1, [x.code for x in report.findings]
        return fixes[0] or ""

    other = df502_fix(f.specforge(), "other")  # fc [H, 3H]: trained on H-wide states
    assert other.startswith("use a draft trained for this target: `fc.weight` is [64, 192]")
    wide = f.specforge()
    wide.config["target_hidden_size"] = 80  # the config says 80; fc says 3 x 128
    wide.reshape("fc.weight", (f.H, 3 * 2 * f.H))
    assert df502_fix(wide, "wide").startswith(
        f"set `target_hidden_size` to {2 * f.H}: `fc.weight` is [64, 384], trained on"
    )
    # Widths that both divide the stored one leave it open, as before.
    both = f.specforge()
    both.reshape("fc.weight", (f.H, 3 * 2 * f.H))  # 3 x 128 or 6 x 64
    assert "only if `fc` was trained on 128-wide states" in df502_fix(both, "both")
