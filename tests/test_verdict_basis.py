"""Every engine's verdict says which facts it rests on that were not read in the engine's
code at the checked release, and how each is known (inferred, assumed, documented, ...): in
the text report, the JSON (`engines[].basis`) and SARIF (the run's verdicts and a note per
verdict), on real checkpoints next to real target configs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import draftfit
from draftfit.render.sarif import render_sarif
from draftfit.render.text import render_check
from tests import factory as f
from tests.test_json_schema import validate


def _below(result: Any) -> dict[str, dict[str, Any]]:
    return {item["fact"]: item for item in result.basis["below_read"]}


def test_a_kimi_k25_target_on_vllm_rests_on_an_inferred_capture_class(tmp_path: Path) -> None:
    """vLLM 0.20.0 serves the Kimi-K2.5 target's EAGLE-3 capture through a class whose first
    release the data took from a scan of class bases (`inferred`): the compatible verdict
    says so, in every format."""
    draft, _, k25 = f.kimi_sibling_pair(tmp_path)  # a Kimi-K2 draft, said to be for K2.5
    report = draftfit.check(str(draft), str(k25), ["vllm==0.20.0"], draft_is_for_target=True)
    (result,) = report.engines
    assert result.verdict == "compatible"
    below = _below(result)
    capture = below["verifier_eagle3_classes"]
    assert capture["confidence"] == "inferred"
    assert "class bases" in capture["note"]  # how the data says it is known
    assert capture["how"].startswith("derived from code that was read")
    assert "eagle3_draft_architectures" in result.basis["read"]
    assert not set(below) & set(result.basis["read"])

    text = render_check(report)
    line = next(x for x in text.splitlines() if "rests on facts not read" in x)
    assert "inferred: " in line and "verifier_eagle3_classes" in line
    assert f"({len(result.basis['read'])} read there)" in line

    data = json.loads(json.dumps(report.to_dict()))
    validate("check", data)
    assert data["engines"][0]["basis"]["below_read"] == result.basis["below_read"]

    (run,) = json.loads(render_sarif(report))["runs"]
    (verdict,) = run["properties"]["verdicts"]
    assert verdict["verdict"] == "compatible" and verdict["basis"] == result.basis
    (note,) = run["invocations"][0]["toolExecutionNotifications"]
    assert note["level"] == "note"
    assert note["message"]["text"].startswith("vLLM 0.20.0: compatible; rests on facts not read")
    assert "verifier_eagle3_classes" in note["message"]["text"]


def test_sglang_says_when_it_rests_on_an_inferred_fact_and_not_otherwise(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    report = draftfit.check(str(draft), str(target), ["sglang==0.5.23", "sglang==0.5.2"])
    newest, older = report.engines
    assert newest.verdict == older.verdict == "compatible"
    kv = _below(newest)["draft_kv_layers_source"]
    assert kv["confidence"] == "inferred" and kv["note"]
    # 0.5.2: every fact the verdict consulted was read in that release's code
    assert older.basis["below_read"] == [] and older.basis["read"]
    lines = [x for x in render_check(report).splitlines() if "rests on facts not read" in x]
    assert len(lines) == 1 and "draft_kv_layers_source" in lines[0]
    (run,) = json.loads(render_sarif(report))["runs"]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert [n["message"]["text"].split(":")[0] for n in notes] == ["SGLang 0.5.23"]
    assert [v["version"] for v in run["properties"]["verdicts"]] == ["0.5.23", "0.5.2"]


def test_documented_facts_are_named_documented_only(tmp_path: Path) -> None:
    """A TensorRT-LLM release known only through its documentation: the basis line names
    the deciding facts that its documentation alone gives."""
    draft = f.specforge().write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    report = draftfit.check(str(draft), str(target), ["trtllm==1.4.0rc4"])
    (result,) = report.engines
    assert _below(result)["aux_ids_user_key"]["confidence"] == "documented"
    assert result.basis["read"] == []  # no line of 1.4.0rc4's code was read
    text = render_check(report)
    assert "documented only: aux_ids_user_key" in text
