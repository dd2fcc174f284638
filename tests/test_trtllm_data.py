"""TensorRT-LLM's data is pinned to commits where a release could be pinned, cites lines with
anchors there or pages of the release's own documentation with their quoted signature lines,
records each documented release's launch keys, and the two-model class lookup follows the
version's rename."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import draftfit
from draftfit.checker import check_path
from draftfit.engines.citation import parse_locations
from draftfit.engines.data_file import parse_engine_data
from draftfit.engines.profile import EngineData, Entry
from draftfit.engines.registry import load_engine
from draftfit.errors import EngineDataError
from draftfit.render.matrix_text import render_matrix
from draftfit.render.text import basis_line, render_check
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
    lined = paged = 0
    for fact in data.facts.values():
        for entry in fact.entries:
            for location, anchor in zip(
                parse_locations(entry.source), entry.anchors or ("",) * 99, strict=False
            ):
                if location.page:
                    paged += 1
                    assert location.tag and anchor, entry.source  # a release, a quoted line
                    assert location.path.startswith("https://nvidia.github.io/TensorRT-LLM/")
                elif location.ranges:
                    lined += 1
                    assert location.tag and data.commit_for(location.tag), entry.source
                    assert anchor, entry.source
                elif location.tag and not data.commit_for(location.tag):
                    assert entry.anchor_missing and f"v{location.tag}" in entry.anchor_missing
    assert lined >= 20
    assert paged >= 100


def _anchored(data: EngineData, entry: Entry) -> bool:
    """Whether `entry` cites a line at a pinned commit or a versioned page, with its anchor."""
    cited = zip(parse_locations(entry.source), entry.anchors or (), strict=False)
    return any(
        anchor and (loc.page or (loc.ranges and data.commit_for(loc.tag or "")))
        for loc, anchor in cited
    )


def test_most_entries_cite_a_code_line_or_a_versioned_page_with_its_anchor() -> None:
    data = load_engine("trtllm")
    entries = [e for fact in data.facts.values() for e in fact.entries]
    anchored = [e for e in entries if _anchored(data, e)]
    assert len(anchored) >= 0.6 * len(entries)
    # a documented entry that cites a page says so; a page is never cited as code read
    for entry in anchored:
        if any(loc.page for loc in parse_locations(entry.source)):
            assert entry.confidence != "read", entry.source


def test_every_page_belongs_to_a_release_the_data_knows() -> None:
    """A page's release is one the data reads or records as not read (whose pages narrow a
    boundary), so it can be ordered against the data's ranges."""
    data = load_engine("trtllm")
    known = set(data.versions) | {n.version for n in data.not_read}
    for fact in data.facts.values():
        for entry in fact.entries:
            for location in parse_locations(entry.source):
                if location.page:
                    assert location.tag in known, location.path


def _keys(version: str, fact: str = "eagle3_config_keys") -> dict[str, str | None]:
    found = load_engine("trtllm").resolve(version).value(fact)
    return {item["key"]: item.get("default") for item in found}


def test_each_documented_release_has_its_own_eagle3_keys() -> None:
    rc1, rc4 = _keys("1.4.0rc1"), _keys("1.4.0rc4")
    for keys in (rc1, rc4):
        assert keys["eagle3_layers_to_capture"] == "None"
        assert keys["eagle3_model_arch"] == "'llama3'"
        assert keys["decoding_type"] == "'Eagle3'"
        assert keys["spec_dec_variant"] == "3"
        assert "moe_backend" in keys
        assert not {"eagle3_one_model", "greedy_sampling", "posterior_threshold"} & set(keys)
        assert "eagle_choices" not in keys  # gone by 1.4.0rc1
    assert "num_eagle_layers" in rc1 and "num_eagle_layers" not in rc4
    assert "moe_tactic" in rc4 and "moe_tactic" not in rc1
    data = load_engine("trtllm")
    assert data.resolve("1.4.0rc4").value("decoding_config_pages") == [
        "Eagle3DecodingConfig",
        "MTPDecodingConfig",
    ]
    assert not data.resolve("1.4.0rc2").fact("decoding_config_pages").known  # no page


def test_mtp_keys_are_recorded_per_documented_release() -> None:
    rc1, rc4 = _keys("1.4.0rc1", "mtp_config_keys"), _keys("1.4.0rc4", "mtp_config_keys")
    assert rc4["num_nextn_predict_layers"] == "None"  # optional: taken from the checkpoint
    assert rc4["use_mtp_vanilla"] == "False"
    assert rc4["draft_lm_head_dtype"] == "'auto'" and rc4["draft_moe_dtype"] == "'auto'"
    assert "draft_lm_head_dtype" not in rc1 and rc1["spec_dec_variant"] == "1"


def test_the_draft_path_key_follows_the_documented_releases() -> None:
    data = load_engine("trtllm")
    assert data.resolve("1.0.0").value("draft_path_key") == "speculative_model_dir"
    assert (
        data.resolve("1.0.0")
        .fact("draft_path_key")
        .citations[0]
        .startswith("https://nvidia.github.io/TensorRT-LLM/1.0.0/examples/")
    )
    assert data.resolve("1.2.0rc2").value("draft_path_key") == "speculative_model_dir"
    for version in ("1.4.0rc0", "1.4.0rc1", "1.4.0rc4"):
        profile = data.resolve(version)
        assert profile.value("draft_path_key") == "speculative_model"
        assert profile.value("draft_path_aliases") == ["speculative_model_dir"]
        assert profile.value("one_model_default") == "one-model-only"
    assert data.resolve("0.21.0").value("spec_config_unknown_keys") == "ignored"
    assert data.resolve("1.4.0rc4").value("spec_config_unknown_keys") == "refused"


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
    with pytest.raises(EngineDataError, match="40 hex"):
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
        engines=("trtllm==0.20.0", "trtllm==1.2.0rc2", "trtllm==1.4.0rc4"),
    )
    old, pinned, newest = (r.to_dict() for r in report.engines)
    below = {item["fact"]: item for item in old["basis"]["below_read"]}
    assert below["two_model_arch_rename"]["confidence"] == "reported"
    assert below["two_model_arch_rename"]["note"].startswith("read on the 0.20.0 side")
    assert not old["basis"]["read"]
    # the form these verdicts had first stays (JSON keys are only ever added)
    assert old["basis"]["not_read_at_pinned_commit"]["two_model_arch_rename"] == "reported"
    assert not old["basis"]["read_at_pinned_commit"]
    # read at 1.2.0rc2's pinned commit, and only there
    assert pinned["basis"]["read"] == ["d2t_parameter"]
    newer = {item["fact"]: item["confidence"] for item in newest["basis"]["below_read"]}
    assert newer["d2t_parameter"] == "read at another release"
    assert newest["basis"]["not_read_at_pinned_commit"]["d2t_parameter"] == (
        "read at a release not pinned"
    )
    assert newer["aux_ids_read_from"] == "unpinned"  # an undated main-branch version only
    assert newer["aux_ids_user_key"] == "documented"
    text = render_check(report)
    assert "rests on facts not read in the engine's code at this release" in text
    assert "documented only: aux_ids_user_key" in text
    assert "reported: " in text and "two_model_arch_rename" in text


def test_a_matrix_range_says_which_facts_it_rests_on(tmp_path: Path) -> None:
    # What `check` says under each version's verdict, `matrix` says for each range: the
    # facts of every version of the range not read in the engine's code, in text and JSON.
    draft = f.specforge()
    draft.config["architectures"] = ["LlamaForCausalLMEagle3"]
    path = draft.write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    grid = draftfit.matrix(path, target)
    rows = [r for r in grid.rows if r.engine == "trtllm"]
    assert rows and all(r.basis is not None for r in rows)
    for row in rows:
        report = check_path(path, target=target, engines=[f"trtllm=={v}" for v in row.versions])
        below: dict[str, object] = {}
        read: set[str] = set()
        for result in report.engines:
            assert result.basis is not None
            below.update({item["fact"]: item for item in result.basis["below_read"]})
            read |= set(result.basis["read"])
        assert row.basis == {
            "read": sorted(read - set(below)),
            "below_read": [below[fact] for fact in sorted(below)],
        }
        assert row.to_dict()["basis"] == row.basis
    text = render_matrix(grid)
    first = rows[0].basis
    assert first is not None and first["below_read"]
    line = basis_line(first)
    assert line is not None and line.strip() in text
    assert not list(
        Draft202012Validator(load_schema("matrix")).iter_errors(
            {"schema_version": 1, "tool": {"name": "draftfit", "version": "0"}, **grid.to_dict()}
        )
    )
