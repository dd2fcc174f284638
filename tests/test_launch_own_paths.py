"""The launch's own words judged as the engine judges them: the draft and target paths it
names (a folder, else a Hub id, else refused), `vllm serve --model` per release, the target
it serves next to `--target`, and `--trust-remote-code` for configs that name their own code.
Real factory checkpoints in real folders; relative paths resolved from the current folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import draftfit
from draftfit.engines.launch import parse_serve_args, parse_serve_config
from draftfit.engines.registry import load_engine
from draftfit.engines.remote_code import own_code, remote_code_at
from draftfit.engines.serve import hub_repo_id
from tests import factory as f

NEW, OLD = "vllm==0.34.0", "vllm==0.10.2"
SGLANG = "sglang==0.5.23"
OWN_CODE = {"AutoConfig": "configuration_custom.CustomConfig"}


def _spec(model: str) -> str:
    return "'" + json.dumps({"method": "eagle3", "model": model, "num_speculative_tokens": 3}) + "'"


def _codes(report: Any, code: str) -> list[str]:
    return [x.message for x in report.findings if x.code == code]


def _verdict(report: Any) -> str:
    return str(report.engines[0].verdict)


@pytest.fixture
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A speculators draft and a Llama target in `tmp_path`, which is the current folder."""
    monkeypatch.chdir(tmp_path)
    return f.speculators().write(tmp_path / "draft"), f.llama_target(tmp_path / "target")


# ------------------------------------------------------------------------------ reading


def test_the_launch_names_its_target_and_trust_setting() -> None:
    cases = {
        "vllm serve ./t -tp 2": ("./t", None),
        "vllm serve --enforce-eager ./t --trust-remote-code": ("./t", True),
        "vllm serve -tp 2 --model org/t --no-trust-remote-code": ("org/t", False),
        "vllm serve --model=./t": ("./t", None),
        "python -m vllm.entrypoints.openai.api_server --model ./t": ("./t", None),
        "python -m sglang.launch_server --model-path ./t --trust-remote-code": ("./t", True),
        "python -m sglang.launch_server --model org/t --tp 2": ("org/t", None),
        "vllm serve -tp 2": (None, None),
    }
    for line, (target, trust) in cases.items():
        settings = parse_serve_args(line)
        assert (settings.target_model, settings.trust_remote_code) == (target, trust), line
        assert "--trust-remote-code" not in settings.ignored_flags
    args = parse_serve_config(
        json.dumps({"model": "./t", "trust_remote_code": True, "tensor_parallel_size": 2})
    )
    assert (args.target_model, args.trust_remote_code) == ("./t", True)
    # `model` alone is a speculative config's: the draft, as before.
    alone = parse_serve_config(json.dumps({"model": "./d", "method": "eagle3"}))
    assert (alone.draft_model, alone.target_model) == ("./d", None)


def test_a_config_file_names_the_target_the_command_line_does_not(tmp_path: Path) -> None:
    file = tmp_path / "serve.yaml"
    file.write_text("model: ./from-file\ntrust-remote-code: true\n")
    settings = parse_serve_args(f"vllm serve --config {file}")
    assert (settings.target_model, settings.trust_remote_code) == ("./from-file", True)
    assert parse_serve_args(f"vllm serve ./cli --config {file}").target_model == "./cli"


@pytest.mark.parametrize(
    ("name", "hub"),
    [
        ("org/name", True),
        ("name", True),
        ("Org-1/na.me_2", True),
        ("./name", False),
        ("/models/name", False),
        ("~/name", False),
        ("a/b/name", False),
        ("name/", False),
        ("-name", False),
        ("name.", False),
        ("a--b", False),
        ("a..b", False),
        ("org/name.git", False),
        ("a b", False),
        ("x" * 97, False),
    ],
)
def test_hub_repository_ids_are_told_from_paths(name: str, hub: bool) -> None:
    assert hub_repo_id(name) is hub


# ------------------------------------------------------------------------------ paths


def test_a_draft_path_that_is_neither_a_folder_nor_a_hub_id_is_refused(
    pair: tuple[Path, Path],
) -> None:
    draft, target = pair
    for engine in (NEW, OLD):
        for named in ("./no-such-draft", str(draft.parent / "gone"), "~/draft", "a/b/draft"):
            launch = f"vllm serve {target} --speculative-config {_spec(named)}"
            report = draftfit.check(draft, target=target, engines=[engine], serve_args=launch)
            found = _codes(report, "DF559")
            assert len(found) == 1 and "does not exist here" in found[0], (engine, named, found)
            assert _verdict(report) == "incompatible"
        tilde = draftfit.check(
            draft,
            target=target,
            engines=[engine],
            serve_args=f"vllm serve {target} --speculative-config {_spec('~/draft')}",
        )
        assert "never by the engine" in _codes(tilde, "DF559")[0]


def test_a_home_path_the_shell_expands_to_a_folder_is_not_judged_missing(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`~/draft` unquoted on a command line is the shell's to expand; quoting it is not
    something a split command line still shows, so a `~` path that names a folder once
    expanded is given the benefit of the doubt."""
    draft, target = pair
    monkeypatch.setenv("HOME", str(draft.parent))
    launch = (
        "python -m sglang.launch_server --model-path ~/target --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path ~/sglang-draft"
    )
    sglang_draft = f.specforge().write(draft.parent / "sglang-draft")
    report = draftfit.check(sglang_draft, target=target, engines=[SGLANG], serve_args=launch)
    assert not [m for m in _codes(report, "DF559") if "does not exist" in m], report.findings


def test_relative_paths_resolve_from_the_current_folder(
    pair: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    draft, target = pair
    launch = f"vllm serve ./target --speculative-config {_spec('./draft/')}"
    here = draftfit.check(draft, target=target, engines=[NEW], serve_args=launch)
    assert _verdict(here) == "compatible", here.findings
    # From another folder the same words name nothing: the engine started there refuses.
    elsewhere = draft.parent / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    there = draftfit.check(draft, target=target, engines=[NEW], serve_args=launch)
    assert len(_codes(there, "DF559")) == 2  # the draft and the target
    # A path inside a settings file is resolved from the current folder too.
    config = draft.parent / "serve.json"
    config.write_text(
        json.dumps({"method": "eagle3", "model": "draft/.", "num_speculative_tokens": 3})
    )
    from_file = draftfit.check(draft, target=target, engines=[NEW], serve_config=str(config))
    assert _codes(from_file, "DF559"), from_file.findings
    monkeypatch.chdir(draft.parent)
    assert not _codes(
        draftfit.check(draft, target=target, engines=[NEW], serve_config=str(config)), "DF559"
    )


def test_hub_shaped_names_are_left_to_the_hub(pair: tuple[Path, Path]) -> None:
    draft, target = pair
    for engine in (NEW, OLD, SGLANG):
        if engine == SGLANG:
            sglang_draft = f.specforge().write(draft.parent / "sglang-draft")
            launch = (
                "python -m sglang.launch_server --model-path org/target "
                "--speculative-algorithm EAGLE3 --speculative-draft-model-path org/draft"
            )
            report = draftfit.check(
                sglang_draft, target=target, engines=[engine], serve_args=launch
            )
        else:
            launch = f"vllm serve org/target --speculative-config {_spec('draft-on-the-hub')}"
            report = draftfit.check(draft, target=target, engines=[engine], serve_args=launch)
        assert not _codes(report, "DF559"), (engine, report.findings)


def test_a_missing_target_path_is_refused_by_sglang(pair: tuple[Path, Path]) -> None:
    draft, target = pair
    sglang_draft = f.specforge().write(draft.parent / "sglang-draft")
    launch = (
        "python -m sglang.launch_server --model-path ./no-such-target "
        f"--speculative-algorithm EAGLE3 --speculative-draft-model-path {sglang_draft}"
    )
    report = draftfit.check(sglang_draft, target=target, engines=[SGLANG], serve_args=launch)
    found = _codes(report, "DF559")
    assert len(found) == 1 and "target path `./no-such-target` (`--model-path`)" in found[0]


def test_releases_whose_path_lookup_was_not_read_judge_no_missing_path(
    pair: tuple[Path, Path],
) -> None:
    draft, target = pair
    launch = f"vllm serve {target} --speculative-config {_spec('./no-such-draft')}"
    report = draftfit.check(draft, target=target, engines=["vllm==0.20.0"], serve_args=launch)
    assert not [m for m in _codes(report, "DF559") if "does not exist" in m]


# ------------------------------------------------------------------------------ --model


def test_vllm_serve_model_option_per_release(pair: tuple[Path, Path]) -> None:
    draft, target = pair
    spec = _spec(str(draft))
    expected = {
        (OLD, f"vllm serve --model {target} --speculative-config {spec}"): "refuses the option",
        (OLD, f"vllm serve --model={target} --speculative-config {spec}"): None,
        (NEW, f"vllm serve --model {target} --speculative-config {spec}"): None,
        (NEW, f"vllm serve -tp 1 --model={target} --speculative-config {spec}"): None,
        (NEW, f"vllm serve {target} --model {target} --speculative-config {spec}"): "twice",
        (NEW, f"vllm serve --model {target} {target} --speculative-config {spec}"): "twice",
        (
            OLD,
            "python -m vllm.entrypoints.openai.api_server "
            f"--model {target} --speculative-config {spec}",
        ): None,
    }
    for (engine, launch), said in expected.items():
        report = draftfit.check(draft, target=target, engines=[engine], serve_args=launch)
        found = _codes(report, "DF559")
        if said is None:
            assert not found, (engine, launch, found)
        else:
            assert len(found) == 1 and said in found[0], (engine, launch, found)


# ------------------------------------------------------------------------------ the target


def test_a_launch_serving_another_target_leaves_the_verdict_unverified(
    pair: tuple[Path, Path],
) -> None:
    draft, target = pair
    other = f.llama_target(draft.parent / "other-target")
    spec = _spec(str(draft))
    served = draftfit.check(
        draft, target=target, engines=[NEW], serve_args=f"vllm serve ./other-target -sc {spec}"
    )
    assert _verdict(served) == "unverified"
    assert any("other-target" in r for r in served.engines[0].unverified_reasons)
    same = draftfit.check(
        draft, target=target, engines=[NEW], serve_args=f"vllm serve ./target/ -sc {spec}"
    )
    assert _verdict(same) == "compatible"
    assert other.is_dir()


# ------------------------------------------------------------------------------ remote code


def test_own_code_is_the_config_class_an_auto_map_names() -> None:
    assert own_code({"auto_map": {"": "config.Eagle3SpeculatorConfig"}}, "draft") is None
    assert own_code({"auto_map": {"AutoModel": "m.M"}, "model_type": "x"}, "target") is None
    found = own_code({"auto_map": OWN_CODE, "model_type": "llama_custom"}, "target")
    assert found is not None and (found.model_type, found.code) == (
        "llama_custom",
        "configuration_custom.CustomConfig",
    )


def test_kimi_k25_needs_the_flag_only_where_the_release_has_no_class_for_it(
    tmp_path: Path,
) -> None:
    kimi = json.loads((f.kimi_k25_target(tmp_path / "k25") / "config.json").read_text())
    vllm, sglang = load_engine("vllm"), load_engine("sglang")
    old = remote_code_at(vllm.resolve("0.10.2"), None, kimi)
    assert [c.model_type for c in old.needed] == ["kimi_k25"] and old.flag_wanted
    for profile in (vllm.resolve("0.34.0"), sglang.resolve("0.5.23")):
        found = remote_code_at(profile, None, kimi)
        assert not found.flag_wanted and [c.model_type for c in found.native] == ["kimi_k25"]
    unread = remote_code_at(vllm.resolve("0.20.0"), None, kimi)
    assert unread.flag_wanted and not unread.needed and unread.unread


def test_a_launch_without_the_flag_is_refused_where_the_code_is_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    draft = f.speculators().write(tmp_path / "draft")
    kimi = f.kimi_k25_target(tmp_path / "kimi")
    custom = f.llama_target(tmp_path / "custom", model_type="llama_custom", auto_map=OWN_CODE)
    spec = _spec(str(draft))
    outcomes = [
        (OLD, kimi, "", True),
        (OLD, kimi, " --trust-remote-code", False),
        (NEW, kimi, "", False),
        (NEW, custom, "", True),
        (NEW, custom, " --no-trust-remote-code", True),
        (NEW, custom, " --trust-remote-code", False),
        (OLD, custom, " --trust-remote-code", False),
    ]
    for engine, target, flag, refused in outcomes:
        launch = f"vllm serve {target}{flag} --speculative-config {spec}"
        report = draftfit.check(draft, target=target, engines=[engine], serve_args=launch)
        found = _codes(report, "DF560")
        assert bool(found) is refused, (engine, target.name, flag, found)
    # Flags alone (not a whole launch) may leave --trust-remote-code among the others.
    partial = draftfit.check(
        draft, target=custom, engines=[NEW], serve_args=f"--speculative-config {spec}"
    )
    assert not _codes(partial, "DF560")


def test_the_drafts_own_code_needs_the_flag_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    draft = f.specforge()
    draft.config.update(model_type="llama_custom", auto_map=OWN_CODE)
    path = draft.write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "target")
    launch = (
        f"python -m sglang.launch_server --model-path {target} --speculative-algorithm EAGLE3 "
        f"--speculative-draft-model-path {path}"
    )
    refused = draftfit.check(path, target=target, engines=[SGLANG], serve_args=launch)
    assert "draft's config.json" in _codes(refused, "DF560")[0]
    trusted = draftfit.check(
        path, target=target, engines=[SGLANG], serve_args=launch + " --trust-remote-code"
    )
    assert not _codes(trusted, "DF560")
