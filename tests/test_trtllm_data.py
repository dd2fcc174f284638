"""TensorRT-LLM's data is pinned to commits where a release could be pinned, cites lines with
anchors there, and the two-model class lookup follows the version's rename."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import draftfit
from draftfit.checker import check_path
from draftfit.engines.citation import parse_locations
from draftfit.engines.profile import parse_engine_data
from draftfit.engines.registry import load_engine
from draftfit.errors import SpecDataError
from draftfit.render.matrix_text import render_matrix
from draftfit.render.text import render_check
from draftfit.schemas import load_schema
from tests import factory as f


def test_every_release_is_pinned_to_a_commit_or_says_why_not() -> None:
    data = load_engine("trtllm")
    assert sorted(p.version for p in data.commits) == sorted(data.versions)
    for pin in data.commits:
        if pin.commit is not None:
            assert len(pin.commit) == 40 and pin.evidence and "version.py" in pin.evidence
        else:
            assert pin.not_read
    assert data.commit_for("1.2.0rc2") == "b35ac1b64368513d215c57d2ed01d62d910df8da"


def test_lines_are_cited_only_at_pinned_releases_and_always_with_an_anchor() -> None:
    data = load_engine("trtllm")
    lined = 0
    for fact in data.facts.values():
        for entry in fact.entries:
            for location, anchor in zip(
                parse_locations(entry.source), entry.anchors or ("",) * 99, strict=False
            ):
                if location.ranges:
                    lined += 1
                    assert location.tag and data.commit_for(location.tag), entry.source
                    assert anchor, entry.source
                elif location.tag and not data.commit_for(location.tag):
                    assert entry.anchor_missing and f"v{location.tag}" in entry.anchor_missing
    assert lined >= 20


def test_no_entry_rests_on_research_notes() -> None:
    data = load_engine("trtllm")
    for fact in data.facts.values():
        for entry in fact.entries:
            assert "research notes" not in (entry.note or "") + entry.source, fact.key


def test_a_pinned_row_needs_a_full_commit() -> None:
    raw = {
        "versions": ["1.0.0"],
        "latest": "1.0.0",
        "fact": {},
        "commits": [{"version": "1.0.0", "commit": "b35ac1b6", "evidence": "version.py:15"}],
    }
    with pytest.raises(SpecDataError, match="40 hex"):
        parse_engine_data("x", raw)
    raw["commits"] = [{"version": "1.0.0", "not_read": "no commit found"}]
    assert parse_engine_data("x", raw).commit_for("1.0.0") is None


def _class_finding(tmp_path: Path, arch: str, version: str) -> list[dict[str, object]]:
    draft = f.specforge()
    draft.config["architectures"] = [arch]
    report = check_path(
        draft.write(tmp_path / "d"),
        target=f.llama_target(tmp_path / "t"),
        engines=(f"trtllm=={version}",),
    )
    data = json.loads(json.dumps(report.to_dict()))
    return [x for x in data["findings"] if x["code"] == "DF101"]


def test_eagle3_suffix_is_unknown_before_the_strip_and_the_fix_names_llamaforcausallm(
    tmp_path: Path,
) -> None:
    (finding,) = _class_finding(tmp_path, "LlamaForCausalLMEagle3", "0.20.0")
    assert "EAGLE3LlamaForCausalLMEagle3" in str(finding["message"])
    assert '["LlamaForCausalLM"]' in str(finding["fix"])
    assert not _class_finding(tmp_path / "b", "LlamaForCausalLM", "0.20.0")


def test_two_model_rename_strips_the_suffix_only_from_1_1() -> None:
    data = load_engine("trtllm")
    assert data.resolve("0.20.0").value("two_model_arch_rename") == "prefix"
    assert data.resolve("1.1.0").value("two_model_arch_rename") == "strip-then-prefix"


def test_a_verdict_says_which_facts_were_not_read_at_a_pinned_commit(tmp_path: Path) -> None:
    draft = f.specforge()
    draft.config["architectures"] = ["LlamaForCausalLMEagle3"]
    report = check_path(
        draft.write(tmp_path / "d"),
        target=f.llama_target(tmp_path / "t"),
        engines=("trtllm==0.20.0", "trtllm==1.2.0rc2", "vllm==0.34.0"),
    )
    old, pinned, vllm = (r.to_dict() for r in report.engines)
    assert old["basis"]["not_read_at_pinned_commit"]["two_model_arch_rename"] == "reported"
    assert not old["basis"]["read_at_pinned_commit"]
    assert "embedding_sharing" in pinned["basis"]["read_at_pinned_commit"]
    assert "basis" not in vllm
    text = render_check(report)
    assert "rests on facts not read at a pinned commit: draft_class_selection (reported)" in text


def test_a_matrix_range_says_which_facts_were_not_read_at_a_pinned_commit(
    tmp_path: Path,
) -> None:
    # What `check` says under each version's verdict, `matrix` says for each range: the
    # facts of every version of the range, in text and JSON.
    draft = f.specforge()
    draft.config["architectures"] = ["LlamaForCausalLMEagle3"]
    path = draft.write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    grid = draftfit.matrix(path, target)
    rows = [r for r in grid.rows if r.engine == "trtllm"]
    assert rows and all(r.basis is not None for r in rows)
    assert all(r.basis is None for r in grid.rows if r.engine != "trtllm")
    for row in rows:
        report = check_path(path, target=target, engines=[f"trtllm=={v}" for v in row.versions])
        loose: dict[str, str] = {}
        pinned: set[str] = set()
        for result in report.engines:
            assert result.basis is not None
            loose.update(result.basis["not_read_at_pinned_commit"])
            pinned |= set(result.basis["read_at_pinned_commit"])
        assert row.basis == {
            "read_at_pinned_commit": sorted(pinned - set(loose)),
            "not_read_at_pinned_commit": dict(sorted(loose.items())),
        }
        assert row.to_dict()["basis"] == row.basis
    text = render_matrix(grid)
    first = rows[0].basis
    assert first is not None and first["not_read_at_pinned_commit"]
    fact, confidence = next(iter(first["not_read_at_pinned_commit"].items()))
    assert f"rests on facts not read at a pinned commit: {fact} ({confidence})" in text
    assert not list(
        Draft202012Validator(load_schema("matrix")).iter_errors(
            {"schema_version": 1, "tool": {"name": "draftfit", "version": "0"}, **grid.to_dict()}
        )
    )
