"""DF507: the verifier a draft records, next to what is known of the target.

The name rules are pinned on their own (one table, the cases users meet); every other test
reads real checkpoints: the demo's full-size sparse Kimi-K2 draft next to Kimi-K2 and to
Kimi-K2.5 (a `--local-dir` download), targets from the Hub cache and from the Hub-shaped
test server, drafts with real weight bytes for `--values`, the settings file, `convert` and
`--recipe`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import draftfit
from draftfit.checker import check_path
from draftfit.cli.main import main
from draftfit.commands.demo import DemoPaths, build_demo, demo_config
from draftfit.draft.verifier_identity import (
    MISMATCH,
    NOT_RECORDED,
    REVISION,
    SAME,
    UNKNOWN,
    model_name,
    reference,
)
from draftfit.report import Report
from draftfit.schemas import load_schema
from tests import factory as f
from tests.hub_layouts import cache_snapshot, local_dir_download

DF507 = "DF507"


def _df507(report: Report) -> list[str]:
    return [str(x.severity) for x in report.findings if x.code == DF507]


def _outcome(report: Report) -> str:
    assert report.target_facts is not None and report.target_facts.verifier is not None
    return report.target_facts.verifier.outcome


# ------------------------------------------------------------------ names


@pytest.mark.parametrize(
    ("recorded", "target", "same_key", "revision_differs"),
    [
        ("moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Instruct-0905", True, True),
        ("moonshotai/Kimi-K2.5", "moonshotai/Kimi-K2-Instruct", False, False),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", True, False),
        ("Qwen/Qwen3-8B", "qwen/QWEN3-8b", True, False),
        ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B-FP8", True, False),
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", True, False),
        ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct-AWQ", True, False),
        ("Qwen/Qwen3-8B", "unsloth/Qwen3-8B-GGUF", True, False),
        ("Qwen/Qwen3-8B", "unsloth/Qwen3-8B-unsloth-bnb-4bit", True, False),
        (
            "meta-llama/Llama-3.1-8B-Instruct",
            "RedHatAI/Llama-3.1-8B-Instruct-quantized.w4a16",
            True,
            False,
        ),
        (
            "neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8",
            "RedHatAI/Llama-3.1-8B-Instruct",
            True,
            False,
        ),
        ("meta-llama/Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-chat", True, False),
        ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", False, False),
        ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B-Base", False, False),
        ("moonshotai/Kimi-K2-Instruct", "moonshotai/Kimi-K2-Thinking", False, False),
        ("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3-0324", True, True),
        ("deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1", False, False),
        ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct", False, False),
    ],
)
def test_model_names(recorded: str, target: str, same_key: bool, revision_differs: bool) -> None:
    mine, theirs = reference(recorded, "r"), reference(target, "t")
    assert mine is not None and theirs is not None
    assert (mine.name.key == theirs.name.key) is same_key
    assert (mine.name.revision != theirs.name.revision) is revision_differs


def test_names_that_say_nothing() -> None:
    assert not model_name("from_s3").says_something
    assert not model_name("target").says_something
    assert not model_name("support-bot-v3").says_something
    assert not model_name("Llama-3.1-8B-Instruct-speculator.eagle3").says_something
    assert model_name("Kimi-K2.5").says_something
    cached = reference("/h/hub/models--Qwen--Qwen3-8B/snapshots/" + "a" * 40, "r")
    assert cached is not None and cached.hub_id == "Qwen/Qwen3-8B"
    assert reference("/", "r") is None and reference("", "r") is None


# ------------------------------------------------------------------ the demo's Kimi-K2 draft


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[DemoPaths, Path]:
    """The demo (full-size sparse Kimi-K2 draft, Kimi-K2 target) and Kimi-K2.5 as `hf
    download moonshotai/Kimi-K2.5 --local-dir` leaves it: K2's shapes under `text_config`."""
    root = tmp_path_factory.mktemp("demo")
    paths = build_demo(root)
    text_config = {**demo_config("kimi-k2-instruct.config.json"), "_name_or_path": ""}
    config = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": {**text_config, "max_position_embeddings": 262144},
    }
    plain = root / "k25-files"
    plain.mkdir()
    (plain / "config.json").write_text(json.dumps(config))
    return paths, local_dir_download(plain, root / "Kimi-K2.5")


def test_demo_draft_next_to_its_target_stays_compatible(demo) -> None:
    paths, _ = demo
    report = check_path(paths.draft, target=paths.target, engines=["vllm==0.34.0"])
    assert _df507(report) == [] and _outcome(report) == SAME
    assert report.engines[0].verdict == "compatible"


def test_demo_draft_next_to_k25_is_garbage(demo, capsys) -> None:
    paths, k25 = demo
    report = check_path(paths.draft, target=k25, engines=["vllm==0.34.0"])
    assert _df507(report) == ["error"] and _outcome(report) == MISMATCH
    assert report.engines[0].verdict == "drafts-garbage"
    finding = next(x for x in report.findings if x.code == DF507)
    assert "`Kimi-K2-Instruct`" in finding.message and "`Kimi-K2.5`" in finding.message
    assert "--local-dir" in finding.message and "no shape check" in finding.message
    assert finding.location.pointer == "/speculators_config/verifier/name_or_path"
    assert "DF701" in (finding.fix or "") and "--draft-is-for-target" in (finding.fix or "")
    code = main(["check", str(paths.draft), "--target", str(k25), "--engine", "vllm"])
    out = capsys.readouterr().out
    assert code == 1 and "verifier: name `Kimi-K2-Instruct`" in out and "DF507" in out


def test_declared_for_target_is_info_and_json_says_what_was_compared(demo, capsys) -> None:
    paths, k25 = demo
    argv = ["check", str(paths.draft), "--target", str(k25), "--engine", "vllm"]
    code = main([*argv, "--draft-is-for-target", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert not list(Draft202012Validator(load_schema("check")).iter_errors(data))
    found = [x for x in data["findings"] if x["code"] == DF507]
    assert [x["severity"] for x in found] == ["info"]
    assert found[0]["message"].startswith("--draft-is-for-target")
    verifier = data["target"]["verifier"]
    assert verifier["outcome"] == MISMATCH and verifier["declared_for_target"] is True
    assert verifier["draft_records"]["name_or_path"] == "/root/models/Kimi-K2-Instruct"
    assert verifier["draft_records"]["architectures_compared"] is False  # 0.5.0 training
    assert verifier["compared_with"]["name"] == "Kimi-K2.5"
    assert [c["showed"] for c in verifier["comparisons"]] == ["differs", "undecided"]
    assert data["engines"][0]["verdict"] == "compatible"


def test_a_target_folder_that_says_nothing_is_no_mismatch(demo, tmp_path: Path) -> None:
    paths, k25 = demo
    target = tmp_path / "target"
    target.mkdir()
    (target / "config.json").write_bytes((k25 / "config.json").read_bytes())
    report = check_path(paths.draft, target=target, engines=["vllm==0.34.0"])
    assert _df507(report) == [] and _outcome(report) == UNKNOWN
    assert report.target_facts is not None and report.target_facts.verifier is not None
    assert "nothing known of the target says which model it is" in (
        report.target_facts.verifier.summary
    )


def test_a_target_folder_written_without_dots_is_no_mismatch(demo, tmp_path: Path) -> None:
    # `kimi_k25` (as in K2.5's own model_type) or `kimi-k25` may hold Kimi-K2.5: not decided,
    # no DF507; a name that differs in more than its separators is still another model.
    paths, k25 = demo
    recorded_k25 = tmp_path / "k25-draft"
    recorded_k25.mkdir()
    config = json.loads((paths.draft / "config.json").read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = "moonshotai/Kimi-K2.5"
    (recorded_k25 / "config.json").write_text(json.dumps(config))
    for item in paths.draft.iterdir():
        if item.name != "config.json":
            os.link(item, recorded_k25 / item.name)
    for name in ("kimi_k25", "kimi-k25", "Kimi_K2_5"):
        target = tmp_path / name
        target.mkdir()
        (target / "config.json").write_bytes((k25 / "config.json").read_bytes())
        report = check_path(recorded_k25, target=target, engines=["vllm==0.34.0"])
        assert _df507(report) == [] and _outcome(report) == UNKNOWN, name
        assert report.engines[0].verdict == "compatible"
        assert report.target_facts is not None and report.target_facts.verifier is not None
        assert "without its separators" in report.target_facts.verifier.summary
        # Kimi-K2-Instruct is another model than a `kimi_k25` folder.
        report = check_path(paths.draft, target=target, engines=["vllm==0.34.0"])
        assert _df507(report) == ["error"] and _outcome(report) == MISMATCH, name
    # Two Hub ids are exact: a cache of `someone/kimi-k25` is another repository.
    cached = cache_snapshot(tmp_path / "kimi_k25", tmp_path / "hub", "someone/kimi-k25")
    report = check_path(recorded_k25, target=cached, engines=["vllm==0.34.0"])
    assert _df507(report) == ["error"] and _outcome(report) == MISMATCH


def test_settings_file_says_the_draft_is_for_its_target(
    demo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths, k25 = demo
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    drafts = repo / "drafts"
    kimi = drafts / "kimi-k2"
    kimi.mkdir(parents=True)
    for item in paths.draft.iterdir():
        os.link(item, kimi / item.name)  # the sparse draft's files, not read into memory
    argv = ["check", str(kimi), "--target", str(k25), "--engine", "vllm", "--quiet"]
    (drafts / "draftfit.toml").write_text('draft-is-for-target = ["kimi-*"]\n')
    assert main(argv) == 0
    (drafts / "draftfit.toml").write_text('draft-is-for-target = ["llama-*"]\n')
    assert main(argv) == 1
    (drafts / "draftfit.toml").write_text("draft-is-for-target = true\n")
    assert main(argv) == 0
    assert main([*argv[:-1], "--show-settings"]) == 0
    assert "  draft-is-for-target  yes  (drafts/draftfit.toml)" in capsys.readouterr().out.replace(
        str(repo) + "/", ""
    )
    (drafts / "draftfit.toml").write_text('draft-is-for-target = "yes"\n')
    capsys.readouterr()
    assert main(argv) == 2
    assert "`draft-is-for-target` must be true, false or a list" in capsys.readouterr().err


# ------------------------------------------------------------------ targets from the Hub


def test_hub_target_and_cache_folder(tmp_path: Path, monkeypatch) -> None:
    from tests.fake_hub import FakeHub, configure_hf_env

    draft = f.records_verifier(f.speculators(), "Qwen/Qwen3-8B", ["Qwen3ForCausalLM"])
    draft_path = draft.write(tmp_path / "draft")
    llama = f.llama_target(tmp_path / "repo-llama")
    fake = FakeHub()
    fake.add_repo("meta-llama/Llama-3.1-8B-Instruct", llama)
    with fake:
        configure_hf_env(monkeypatch, fake.endpoint, tmp_path / "hf-home")
        report = check_path(draft_path, target="hf://meta-llama/Llama-3.1-8B-Instruct")
    assert _df507(report) == ["error"]
    finding = next(x for x in report.findings if x.code == DF507)
    assert "`meta-llama/Llama-3.1-8B-Instruct` (the target's Hub id (hf://))" in finding.message
    cached = cache_snapshot(llama, tmp_path / "hub", "Qwen/Qwen3-8B-AWQ")
    same = check_path(draft_path, target=cached)
    assert _df507(same) == [] and _outcome(same) == SAME


def test_a_draft_that_records_nothing(tmp_path: Path) -> None:
    report = check_path(f.specforge().write(tmp_path / "d"), target=f.llama_target(tmp_path / "t"))
    assert _df507(report) == [] and _outcome(report) == NOT_RECORDED
    assert report.target_facts is not None and report.target_facts.verifier is not None
    assert "SpecForge" in report.target_facts.verifier.summary


# ------------------------------------------------------------------ --values is stronger


def test_values_agree_or_turn_the_error_into_a_warning(tmp_path: Path) -> None:
    draft, k2, k25 = f.kimi_sibling_pair(tmp_path)
    sibling = check_path(draft, target=k25, values="sampled")
    finding = next(x for x in sibling.findings if x.code == DF507)
    assert str(finding.severity) == "error" and "differs from this target's too" in finding.message
    assert "--values" not in (finding.fix or "")  # the values were read already
    # The same draft recording the sibling: its frozen embedding is K2's, which says K2.
    config = json.loads((draft / "config.json").read_text())
    config["speculators_config"]["verifier"]["name_or_path"] = "moonshotai/Kimi-K2.5"
    (draft / "config.json").write_text(json.dumps(config))
    assert _df507(check_path(draft, target=k2)) == ["error"]
    report = check_path(draft, target=k2, values="sampled")
    assert _df507(report) == ["warning"] and report.engines[0].verdict == "degraded"


def test_dated_revision_is_a_warning(tmp_path: Path) -> None:
    draft = f.records_verifier(
        f.speculators(), "moonshotai/Kimi-K2-Instruct", ["DeepseekV3ForCausalLM"]
    ).write(tmp_path / "draft")
    plain = f.kimi_mla_target(tmp_path / "plain")
    target = cache_snapshot(plain, tmp_path / "hub", "moonshotai/Kimi-K2-Instruct-0905")
    report = check_path(draft, target=target)
    assert _df507(report) == ["warning"] and _outcome(report) == REVISION


# ------------------------------------------------------------------ convert and --recipe


def test_convert_keeps_the_recorded_verifier_and_says_so(demo, tmp_path: Path) -> None:
    paths, k25 = demo
    out = tmp_path / "speculators"
    result = draftfit.convert(paths.draft, "speculators", out, target=k25)
    verifier = json.loads((out / "config.json").read_text())["speculators_config"]["verifier"]
    assert verifier["name_or_path"] == "/root/models/Kimi-K2-Instruct"
    assert result.report is not None and _df507(result.report) == ["error"]
    sglang = draftfit.convert(paths.draft, "sglang", tmp_path / "sglang", target=k25)
    assert sglang.report is not None and _df507(sglang.report) == ["error"]
    carried = next(x for x in sglang.report.findings if x.code == DF507)
    assert carried.message.startswith(f"the draft it was converted from, {paths.draft}")
    declared = tmp_path / "declared"
    draftfit.convert(paths.draft, "speculators", declared, target=k25, draft_is_for_target=True)
    written = json.loads((declared / "config.json").read_text())["speculators_config"]
    assert written["verifier"]["name_or_path"] == str(k25)


def test_no_recipe_serves_a_draft_trained_for_another_model(demo) -> None:
    """A conversion copies the weights, so it cannot settle DF507: no version gets a recipe,
    and each says DF507 remains."""
    paths, k25 = demo
    report = draftfit.check(
        paths.draft, target=k25, engines=["vllm==0.34.0", "sglang==0.5.23"], recipes=True
    )
    assert report.recipes == []
    assert len(report.no_recipes) == 2
    for missing in report.no_recipes:
        assert DF507 in missing.remaining
        assert DF507 in missing.reason


# ------------------------------------------------------------------ records of published drafts

# `speculators_config.verifier` as published drafts record it (speculators PR #53's converted
# config; PR #142's conversion for a quantized Maverick; RedHatAI's Llama-3.1-8B-Instruct
# speculator; the trained draft of speculators issue #1065), and the target each serves.
PUBLISHED = [
    (
        "0.1.0.dev21",
        "converted",
        {
            "name_or_path": "meta-llama/Meta-Llama-3.1-8B-Instruct",
            "architectures": ["LlamaForCausalLM"],
        },
        "meta-llama/Llama-3.1-8B-Instruct",
        ["LlamaForCausalLM"],
        SAME,
    ),
    (
        "0.2.0",
        "converted",
        {
            "name_or_path": "RedHatAI/Llama-4-Maverick-17B-128E-Instruct-quantized.w4a16",
            "architectures": ["Llama4ForConditionalGeneration"],
        },
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        ["Llama4ForConditionalGeneration"],
        SAME,
    ),
    (
        "0.1.0.dev42",
        "converted",
        {
            "name_or_path": "/proving-grounds/machine/eldarkurtic/hf_downloads/meta-llama/"
            "Llama-3.1-8B-Instruct",
            "architectures": ["LlamaForCausalLM"],
        },
        "meta-llama/Llama-3.1-8B-Instruct",
        ["LlamaForCausalLM"],
        SAME,
    ),
    (
        "0.8.0.dev0",
        "trained",
        {"name_or_path": "/model/from_s3", "architectures": ["Qwen3MoeForCausalLM"]},
        "Qwen/Qwen3-30B-A3B",
        ["Qwen3MoeForCausalLM"],
        UNKNOWN,
    ),
    (
        "0.8.0.dev0",
        "trained",
        {"name_or_path": "/model/from_s3", "architectures": ["Qwen3MoeForCausalLM"]},
        "Qwen/Qwen3-8B",
        ["Qwen3ForCausalLM"],
        MISMATCH,
    ),
]


@pytest.mark.parametrize(("version", "variant", "verifier", "repo", "archs", "outcome"), PUBLISHED)
def test_published_verifier_records(
    tmp_path: Path,
    version: str,
    variant: str,
    verifier: dict[str, object],
    repo: str,
    archs: list[str],
    outcome: str,
) -> None:
    draft = f.speculators(variant=variant)
    draft.config["speculators_version"] = version
    draft.config["speculators_config"]["verifier"] = verifier
    plain = f.llama_target(tmp_path / "plain", architectures=archs)
    target = cache_snapshot(plain, tmp_path / "hub", repo)
    report = check_path(draft.write(tmp_path / "draft"), target=target)
    assert _outcome(report) == outcome
    assert (_df507(report) == ["error"]) is (outcome == MISMATCH)
