"""Rotation-quantized (ModelSlim QuaRot) targets: what draftfit reads from the target folder
(`quant_model_description.json`, `optional/quarot.safetensors`), locally and from the Hub,
with the reader's confinement and limits."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.draft.target_rotation import (
    DESCRIPTION_FILE,
    ONLINE_POINTER,
    ROTATION_FILE,
    ROTATION_POINTER,
)
from draftfit.origins.reference import open_target
from draftfit.report import Report
from tests import factory as f
from tests.fake_hub import FakeHub, configure_hf_env

BEFORE_PLUGIN = "vllm==0.14.0"


def _codes(report: Report) -> set[str]:
    return {finding.code for finding in report.findings}


def test_exported_rotation_is_read_from_the_description(tmp_path: Path) -> None:
    target = open_target(f.modelslim_target(tmp_path / "t"))
    rotation = target.rotation.rotation
    assert rotation is not None and target.rotation.unchecked is None
    assert (rotation.file, rotation.pointer) == (DESCRIPTION_FILE, ROTATION_POINTER)
    assert rotation.rotation_map == "optional/quarot.safetensors"


def test_online_rotation_names_no_rotation_file(tmp_path: Path) -> None:
    rotation = open_target(f.modelslim_target(tmp_path / "t", "online")).rotation.rotation
    assert rotation is not None
    assert (rotation.pointer, rotation.rotation_map) == (ONLINE_POINTER, None)


def test_the_rotation_file_alone_shows_a_rotation(tmp_path: Path) -> None:
    rotation = open_target(f.modelslim_target(tmp_path / "t", "file-only")).rotation.rotation
    assert rotation is not None
    assert (rotation.file, rotation.pointer) == ("optional/quarot.safetensors", None)


def test_plain_targets_and_plain_modelslim_exports_show_none(tmp_path: Path) -> None:
    for path in (f.llama_target(tmp_path / "a"), f.modelslim_target(tmp_path / "b", None)):
        check = open_target(path).rotation
        assert (check.rotation, check.unchecked) == (None, None)


def test_a_description_linked_from_outside_the_folder_is_not_read(tmp_path: Path) -> None:
    outside = f.modelslim_target(tmp_path / "elsewhere")
    target = f.llama_target(tmp_path / "t")
    os.symlink(outside / DESCRIPTION_FILE, target / DESCRIPTION_FILE)
    check = open_target(target).rotation
    assert check.rotation is None
    assert check.unchecked is not None and "outside the checkpoint folder" in check.unchecked
    report = check_path(f.specforge().write(tmp_path / "d"), target, engines=[BEFORE_PLUGIN])
    assert {"DF519"} <= _codes(report) and "DF516" not in _codes(report)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_description_is_refused_without_blocking(tmp_path: Path) -> None:
    target = f.llama_target(tmp_path / "t")
    os.mkfifo(target / DESCRIPTION_FILE)
    check = open_target(target).rotation
    assert check.rotation is None and check.unchecked is not None


def _rotation_file_as(kind: str, target: Path, elsewhere: Path) -> None:
    """Put something other than a regular file inside the folder at the rotation file."""
    rotation = target / ROTATION_FILE
    rotation.parent.mkdir(exist_ok=True)
    if kind == "symlink-out":  # as a download that links into a blob store leaves it
        f.modelslim_target(elsewhere)
        os.symlink(elsewhere / ROTATION_FILE, rotation)
    elif kind == "fifo":
        os.mkfifo(rotation)
    elif kind == "directory":
        rotation.mkdir()


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("symlink-out", "outside the checkpoint folder"),
        pytest.param(
            "fifo",
            "FIFO",
            marks=pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs"),
        ),
        ("directory", "directory"),
    ],
)
def test_an_unreadable_rotation_file_is_unchecked_and_not_compatible(
    tmp_path: Path, kind: str, why: str
) -> None:
    """The rotation file is there but cannot be read safely: DF519 says so with the reason
    and the verdict is `unverified` (DF516 did not run), never a silent `compatible`."""
    target = f.llama_target(tmp_path / "t")
    _rotation_file_as(kind, target, tmp_path / "elsewhere")
    check = open_target(target).rotation
    assert check.rotation is None
    assert check.unchecked is not None and why in check.unchecked
    assert check.unchecked_file == ROTATION_FILE
    report = check_path(f.specforge().write(tmp_path / "d"), target, engines=[BEFORE_PLUGIN])
    unchecked = [x for x in report.findings if x.code == "DF519"]
    where = unchecked[0].location if unchecked else None
    assert where is not None and where.in_target and where.file == ROTATION_FILE
    assert str(where) == f"target {ROTATION_FILE}"
    assert why in unchecked[0].message
    result = report.engines[0]
    assert result.verdict == "unverified"
    assert result.unchecked_rules == ["DF516"]
    assert result.unverified_reasons == [f"the target's {check.unchecked}"]


def test_an_unreadable_description_is_not_compatible(tmp_path: Path) -> None:
    target = f.modelslim_target(tmp_path / "t", rotation=None)
    (target / DESCRIPTION_FILE).write_text('{"optional": {"quarot": ')
    report = check_path(f.specforge().write(tmp_path / "d"), target, engines=[BEFORE_PLUGIN])
    assert report.engines[0].verdict == "unverified"
    assert report.engines[0].unchecked_rules == ["DF516"]


def test_a_rotation_file_linked_inside_the_folder_is_read(tmp_path: Path) -> None:
    target = f.modelslim_target(tmp_path / "t", "file-only")
    (target / ROTATION_FILE).rename(target / "kept.safetensors")
    os.symlink("../kept.safetensors", target / ROTATION_FILE)
    check = open_target(target).rotation
    assert check.unchecked is None and check.rotation is not None


def test_a_description_past_the_reader_limits_is_unchecked(tmp_path: Path) -> None:
    target = f.llama_target(tmp_path / "t")
    (target / DESCRIPTION_FILE).write_text("[" * 5000 + "]" * 5000)
    check = open_target(target).rotation
    assert check.unchecked is not None and "reader limit" in check.unchecked


# ---------------------------------------------------------------------- Hub


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    fake = FakeHub()
    fake.add_repo("org/Qwen3-32B-w8a8-QuaRot", f.modelslim_target(tmp_path / "repo-quarot"))
    fake.add_repo("org/plain", f.llama_target(tmp_path / "repo-plain"))
    fake.add_repo("org/draft", f.specforge().write(tmp_path / "repo-draft"))
    with fake:
        configure_hf_env(monkeypatch, fake.endpoint, tmp_path / "hf-home")
        yield fake


def test_a_hub_target_description_is_fetched(hub: FakeHub) -> None:
    report = check_path(
        "hf://org/draft", target="hf://org/Qwen3-32B-w8a8-QuaRot", engines=[BEFORE_PLUGIN]
    )
    assert "DF516" in _codes(report)
    assert report.engines[0].verdict == "drafts-garbage"  # it loads; the draft reads rotated states


def test_a_hub_target_without_a_description_is_quiet(hub: FakeHub) -> None:
    report = check_path("hf://org/draft", target="hf://org/plain", engines=[BEFORE_PLUGIN])
    assert not {"DF516", "DF519"} & _codes(report)
    assert report.engines[0].verdict == "compatible"


def test_a_description_over_the_cap_is_not_fetched(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import draftfit.origins.hub

    monkeypatch.setattr(draftfit.origins.hub, "MAX_JSON_FILE_BYTES", 100)
    target = open_target("hf://org/Qwen3-32B-w8a8-QuaRot")
    assert target.rotation.rotation is None
    assert target.rotation.unchecked == f"`{DESCRIPTION_FILE}` is larger than 100 bytes"
    served = [r.path for r in hub.requests if r.method == "GET" and DESCRIPTION_FILE in r.path]
    assert served == []


def test_offline_reads_the_cached_description_or_says_it_could_not(
    hub: FakeHub, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from huggingface_hub import hf_hub_download

    home = tmp_path / "hf-home"
    repo = "org/Qwen3-32B-w8a8-QuaRot"
    hf_hub_download(repo, "config.json")
    configure_hf_env(monkeypatch, hub.endpoint, home, offline=True)
    unchecked = open_target(f"hf://{repo}").rotation
    assert unchecked.rotation is None
    assert unchecked.unchecked == f"`{DESCRIPTION_FILE}` is not in the local Hugging Face cache"
    configure_hf_env(monkeypatch, hub.endpoint, home)
    hf_hub_download(repo, DESCRIPTION_FILE)
    configure_hf_env(monkeypatch, hub.endpoint, home, offline=True)
    cached = open_target(f"hf://{repo}").rotation
    assert cached.rotation is not None and cached.rotation.rotation_map is not None


def test_the_modelslim_factory_writes_what_msmodelslim_documents(tmp_path: Path) -> None:
    """The description keys the reader relies on, as msmodelslim's docs show them."""
    target = f.modelslim_target(tmp_path / "t")
    description = json.loads((target / DESCRIPTION_FILE).read_text())
    assert description["model_quant_type"] == "W8A8"
    assert description["optional"]["quarot"]["rotation_map"]["global_rotation"] == (
        "optional/quarot.safetensors"
    )
    assert "quantization_config" not in json.loads((target / "config.json").read_text())


def test_a_target_named_by_its_config_json_reads_the_folder_beside_it(tmp_path: Path) -> None:
    target = f.modelslim_target(tmp_path / "t")
    assert open_target(target / "config.json").rotation.rotation is not None


def test_a_verifier_naming_the_rotated_hub_target_is_quiet(hub: FakeHub, tmp_path: Path) -> None:
    """The draft was trained on this very QuaRot checkpoint (its verifier names it); one
    trained on the base model is not."""
    target = "hf://org/Qwen3-32B-w8a8-QuaRot"
    for verifier, fires in (("org/Qwen3-32B-w8a8-QuaRot", False), ("Qwen/Qwen3-32B", True)):
        draft = f.speculators()
        draft.config["speculators_config"]["verifier"]["name_or_path"] = verifier
        path = draft.write(tmp_path / verifier.replace("/", "--"))
        report = check_path(path, target=target, engines=[BEFORE_PLUGIN])
        assert ("DF516" in _codes(report)) is fires, verifier
