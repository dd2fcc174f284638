"""Every finding states what it does to serving, and severity, verdict and exit status follow.

Rules declare a consequence (`draftfit.rule_ids.Consequence`); a finding may state its own
where the engine version or the case decides it. The checks below run real checkpoints
(`tests.cases` builders and `tests.factory`) through the checker and the command line.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import draftfit
from draftfit.checker import check_path
from draftfit.cli.main import main
from draftfit.engines.data_file import parse_engine_data
from draftfit.errors import EngineDataError
from draftfit.render.github import render_github
from draftfit.render.junit import render_junit_check
from draftfit.render.sarif import render_sarif
from draftfit.report import (
    COMPATIBLE,
    DEGRADED,
    DRAFTS_GARBAGE,
    INCOMPATIBLE,
    Report,
    verdict_for,
)
from draftfit.rule_ids import ALL_RULE_IDS, Consequence, Severity
from draftfit.rules import RULES
from draftfit.verdicts import UNVERIFIED
from tests import factory as f
from tests.cases import CASES, Case

ERRORS = {
    Consequence.REFUSES_TO_START,
    Consequence.FAILS_AT_FIRST_REQUEST,
    Consequence.DRAFTS_GARBAGE,
    Consequence.DRAFT_NOT_SERVED,
}


def _case(case_id: str) -> Case:
    return next(c for c in CASES if c.id == case_id)


def _built(case_id: str, tmp: Path) -> tuple[Case, Path, Path | None]:
    case = _case(case_id)
    draft, target = case.build(tmp)
    return case, draft, target


def _check(case_id: str, tmp: Path, engine: str | None = None) -> Report:
    case, draft, target = _built(case_id, tmp)
    return check_path(draft, target=target, engines=[engine] if engine else case.engines)


def _cli(capsys: pytest.CaptureFixture, case_id: str, tmp: Path, *extra: str) -> tuple[int, dict]:
    case, draft, target = _built(case_id, tmp)
    argv = ["check", str(draft), "--engine", case.engines[0], "--format", "json", *extra]
    if target is not None:
        argv += ["--target", str(target)]
    code = main(argv)
    return code, json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------- declarations


@pytest.mark.parametrize("rule_id", ALL_RULE_IDS, ids=[r.code for r in ALL_RULE_IDS])
def test_every_rule_declares_a_consequence_and_its_severity_follows(rule_id) -> None:
    assert isinstance(rule_id.consequence, Consequence)
    expected = (
        Severity.ERROR
        if rule_id.consequence in ERRORS
        else Severity.WARNING
        if rule_id.consequence is Consequence.DEGRADES
        else Severity.INFO
    )
    assert rule_id.severity is expected
    if rule_id.consequence is Consequence.DEGRADES:
        assert rule_id.condition, f"{rule_id.code} degrades without naming when"
    elif rule_id.consequence is Consequence.LAUNCH_DEPENDENT:
        assert rule_id.condition, f"{rule_id.code} depends on the launch without naming which"
    else:
        assert rule_id.condition is None
    if rule_id.effect is not None:
        assert rule_id.consequence is Consequence.DEGRADES
        assert rule_id.consequence_text.startswith(rule_id.effect)
    assert RULES[rule_id.code].consequence is rule_id.consequence


def test_consequence_words_are_a_small_fixed_vocabulary() -> None:
    assert [c.value for c in Consequence] == [
        "refuses-to-start",
        "fails-at-first-request",
        "drafts-garbage",
        "draft-not-served",
        "degrades",
        "slower",
        "cosmetic",
        "launch-dependent",
        "unknown",
    ]
    assert Consequence.DRAFTS_GARBAGE.describe() == "loads, but drafts garbage: acceptance ≈ 0"
    assert Consequence.DEGRADES.describe("past 4096 tokens") == "drafts worse past 4096 tokens"
    assert (
        Consequence.DEGRADES.describe("under NIXL", "start-up fails") == "start-up fails under NIXL"
    )
    assert (
        Consequence.LAUNCH_DEPENDENT.describe("`vllm serve DRAFT` refuses it")
        == "depends on the launch: `vllm serve DRAFT` refuses it"
    )
    for info in (Consequence.LAUNCH_DEPENDENT, Consequence.UNKNOWN):
        assert info.severity is Severity.INFO and info.runs


def test_silent_failures_of_the_vllm_loader_are_errors() -> None:
    """The drafts vLLM 0.34.0's own loader accepted and then drafted wrongly with."""
    for code in ("DF204", "DF205", "DF206", "DF207", "DF208", "DF301", "DF310", "DF401", "DF402"):
        assert RULES[code].consequence is Consequence.DRAFTS_GARBAGE, code
    assert RULES["DF504"].consequence is Consequence.DEGRADES


# ---------------------------------------------------------------------- one case per class


@pytest.mark.parametrize(
    ("case_id", "code", "consequence", "verdict", "exit_code"),
    [
        ("plain-config-eagle3draftmodel", "DF101", "refuses-to-start", INCOMPATIBLE, 1),
        ("aux-id-out-of-range", "DF303", "fails-at-first-request", INCOMPATIBLE, 1),
        ("head-dim-not-declared", "DF208", "drafts-garbage", DRAFTS_GARBAGE, 1),
        ("draft-context-short-0.29", "DF504", "degrades", DEGRADED, 0),
        ("float32-weights", "DF902", "slower", None, 0),
        ("dir-name-without-method", "DF108", "launch-dependent", COMPATIBLE, 0),
        ("target-capability-unknown-0.30", "DF505", "unknown", UNVERIFIED, 0),
    ],
)
def test_each_consequence_sets_severity_verdict_and_exit(
    tmp_path: Path, capsys: pytest.CaptureFixture, case_id, code, consequence, verdict, exit_code
) -> None:
    status, data = _cli(capsys, case_id, tmp_path)
    found = [f for f in data["findings"] if f["code"] == code]
    assert found, data["findings"]
    assert {f["consequence"] for f in found} == {consequence}
    assert {f["severity"] for f in found} == {str(Consequence(consequence).severity)}
    if verdict is not None:
        assert data["engines"][0]["verdict"] == verdict
    assert status == exit_code == data["summary"]["exit_code"]


def test_a_warning_fails_only_at_fail_on_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    status, data = _cli(capsys, "draft-context-short-0.29", tmp_path, "--fail-on", "warning")
    assert data["engines"][0]["verdict"] == DEGRADED and status == 1


def test_drafts_garbage_says_so_in_text(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _, draft, target = _built("head-dim-not-declared", tmp_path)
    assert target is not None
    code = main(["check", str(draft), "--target", str(target), "--engine", "vllm==0.34.0"])
    out = capsys.readouterr().out
    assert code == 1
    assert "drafts-garbage (loads, but drafts garbage: acceptance ≈ 0)" in out
    assert "consequence: loads, but drafts garbage: acceptance ≈ 0" in out


# ---------------------------------------------------------------------- per engine


def test_undeclared_head_dim_drafts_garbage_where_the_loader_narrows(tmp_path: Path) -> None:
    """vLLM narrows the 128-wide projections to the derived head_dim silently; TensorRT-LLM
    copies weights whole and refuses them: the same bytes, two consequences."""
    vllm = _check("head-dim-not-declared", tmp_path / "v", "vllm==0.34.0")
    trt = _check("head-dim-not-declared", tmp_path / "t", "trtllm==1.2.0")
    (on_vllm,) = [f for f in vllm.findings if f.code == "DF208"]
    (on_trt,) = [f for f in trt.findings if f.code == "DF208"]
    assert on_vllm.consequence is Consequence.DRAFTS_GARBAGE
    assert "every drafted token is wrong" in on_vllm.message
    assert vllm.engines[0].verdict == DRAFTS_GARBAGE
    assert on_trt.consequence is Consequence.REFUSES_TO_START
    assert trt.engines[0].verdict == INCOMPATIBLE


def test_refusal_wins_over_garbage_in_the_verdict(tmp_path: Path) -> None:
    """An engine that will not start is `incompatible`, whatever else drafts garbage: the
    findings of a draft that drafts garbage, plus a refusal of the same engine version."""
    garbage = _check("head-dim-not-declared", tmp_path / "g", "vllm==0.34.0")
    refused = _check("plain-config-eagle3draftmodel", tmp_path / "r", "vllm==0.34.0")
    key = garbage.engines[0].key
    both = [f for f in garbage.findings + refused.findings if key in f.engines]
    assert verdict_for(garbage.findings, key)[0] == DRAFTS_GARBAGE
    verdict, counts = verdict_for(both, key)
    assert verdict == INCOMPATIBLE and counts["error"] >= 2


def _data(entry: dict) -> dict:
    return {
        "versions": ["1.0.0", "2.0.0"],
        "latest": "2.0.0",
        "fact": {
            "load": {
                "doc": "what the loader does",
                "values": [
                    {"until": "2.0.0", "value": "a", "source": "x.py:1@v1.0.0", **entry},
                    {
                        "since": "2.0.0",
                        "value": "b",
                        "source": "x.py:2@v2.0.0",
                        "confidence": "read",
                    },
                ],
            }
        },
    }


def test_engine_data_states_a_consequence_per_range() -> None:
    entry = {"confidence": "read", "consequence": "fails-at-first-request"}
    data = parse_engine_data("demo", _data(entry))
    old, new = data.resolve("1.0.0"), data.resolve("2.0.0")
    assert old.consequence("load") is Consequence.FAILS_AT_FIRST_REQUEST
    assert new.consequence("load") is None  # the rule's own consequence applies


def test_engine_data_refuses_an_unknown_consequence_word() -> None:
    entry = {"confidence": "read", "consequence": "mostly-fine"}
    with pytest.raises(EngineDataError, match="consequence 'mostly-fine' is not one of"):
        parse_engine_data("demo", _data(entry))


# ---------------------------------------------------------------------- CI formats


def test_ci_formats_follow_the_consequence(tmp_path: Path) -> None:
    _, draft, target = _built("head-dim-not-declared", tmp_path)
    report = check_path(draft, target=target, engines=["vllm==0.34.0"])
    sarif = json.loads(render_sarif(report))
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "DF208"]
    assert result["level"] == "error"
    assert result["properties"]["consequence"] == "drafts-garbage"
    github = render_github(report)
    assert any(
        line.startswith("::error ") and "DF208" in line and "drafts garbage" in line
        for line in github.splitlines()
    )
    suite = ET.fromstring(render_junit_check(report))
    failures = [f for f in suite.iter("failure") if "DF208" in (f.text or "")]
    assert failures and "consequence: loads, but drafts garbage" in (failures[0].text or "")


def test_rule_command_shows_the_consequence(capsys: pytest.CaptureFixture) -> None:
    assert main(["rule", "DF504"]) == 0
    out = capsys.readouterr().out
    assert "consequence: degrades — drafts worse past the draft's context length" in out
    assert main(["rule", "DF208", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["consequence"] == "drafts-garbage" and data["severity"] == "error"


@pytest.mark.parametrize(
    ("engine", "launch"),
    [
        ("vllm==0.34.0", "vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2"),
        ("sglang==0.5.23", "python -m sglang.launch_server --model-path M --tp 2"),
    ],
)
def test_a_launch_that_serves_no_draft_says_so_and_fails_the_gate(
    tmp_path: Path, engine: str, launch: str
) -> None:
    """No speculative config (vLLM) or algorithm (SGLang): the engine starts and serves the
    target alone. That is not a refusal to start; it is a launch that does not serve the
    checked draft, and the verdict is not `compatible`."""
    draft = f.specforge().write(tmp_path / "draft")
    report = draftfit.check(draft, engines=[engine], serve_args=launch)
    (finding,) = [x for x in report.findings if x.code == "DF559"]
    assert finding.consequence is Consequence.DRAFT_NOT_SERVED
    assert "not what runs" in finding.message
    assert report.engines[0].verdict == "incompatible"
