"""Folders the Hugging Face client writes are read like plain folders: a cache snapshot
(files are symlinks into the repository's `blobs/`) and a `--local-dir` download (with its
`.cache/huggingface/` metadata beside the files) give the findings of a plain copy, and the
report names the repository and revision. Links that leave the repository are refused."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from draftfit.checker import check_path
from draftfit.checkpoint import load_checkpoint
from draftfit.cli.main import main
from tests import factory as f
from tests.hub_layouts import REVISION, cache_snapshot, local_dir_download

REPO = "acme/llama-draft"


def _draft_with_findings() -> f.Draft:
    """A draft with an error and a warning-worthy tensor, so that there is something to match."""
    draft = f.specforge()
    draft.drop("midlayer.self_attn.o_proj.weight")
    draft.add("midlayer.extra.weight", "BF16", (4, 4))
    return draft


def _comparable(report_json: dict[str, Any], path: Path | None = None) -> tuple[Any, Any]:
    """Findings and verdicts; the draft's own path (which a message may quote) as `DRAFT`."""
    text = json.dumps(report_json["findings"])
    if path is not None:
        text = text.replace(str(path), "DRAFT")
    findings = json.loads(text)
    engines = report_json["engines"]
    verdicts = [(e["engine"], e["version"], e["verdict"], e["counts"]) for e in engines]
    return findings, verdicts


@pytest.fixture
def layouts(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """(plain copy, cache snapshot, local-dir download, target)."""
    plain = _draft_with_findings().write(tmp_path / "plain", shards=2)
    snapshot = cache_snapshot(plain, tmp_path / "hub", REPO)
    local = local_dir_download(plain, tmp_path / "local")
    return plain, snapshot, local, f.llama_target(tmp_path / "target")


def test_cache_snapshot_files_are_symlinks_into_blobs(layouts: tuple[Path, ...]) -> None:
    _, snapshot, _, _ = layouts
    link = snapshot / "config.json"
    assert link.is_symlink() and os.readlink(link).startswith(os.path.join("..", "..", "blobs"))


@pytest.mark.parametrize("which", [1, 2])
def test_hub_layouts_give_the_findings_of_a_plain_copy(
    layouts: tuple[Path, ...], which: int
) -> None:
    plain, target = layouts[0], layouts[3]
    engines = ["vllm==0.34.0", "vllm==0.10.2", "sglang"]
    expected = check_path(plain, target, engines).to_dict()
    got = check_path(layouts[which], target, engines).to_dict()
    assert not any(x["code"] == "DF001" for x in got["findings"])
    assert expected["findings"], "the draft is meant to have findings"
    assert _comparable(got, layouts[which]) == _comparable(expected, plain)


def test_the_report_names_the_repository_and_revision(
    layouts: tuple[Path, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    _, snapshot, local, target = layouts
    main(["check", str(snapshot), "--target", str(target), "--format", "json"])
    hub = json.loads(capsys.readouterr().out)["draft"]["hub"]
    assert hub == {"layout": "cache", "repo_id": REPO, "revision": REVISION, "ref": "main"}
    main(["check", str(snapshot), "--target", str(target)])
    assert f"Hub cache of {REPO} at {REVISION} (main)" in capsys.readouterr().out
    main(["check", str(local), "--target", str(target), "--format", "json"])
    hub = json.loads(capsys.readouterr().out)["draft"]["hub"]
    assert hub == {"layout": "local-dir", "repo_id": None, "revision": REVISION, "ref": None}


def test_a_plain_folder_names_no_repository(
    layouts: tuple[Path, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    main(["check", str(layouts[0]), "--format", "json"])
    assert "hub" not in json.loads(capsys.readouterr().out)["draft"]


def test_local_dir_metadata_folder_is_not_part_of_the_checkpoint(layouts: tuple[Path, ...]) -> None:
    _, _, local, _ = layouts
    checkpoint = load_checkpoint(local)
    assert checkpoint.damage == []
    assert not any(name.startswith(".cache") for name in checkpoint.files)


def test_a_link_leaving_the_repository_folder_is_refused(tmp_path: Path) -> None:
    plain = f.specforge().write(tmp_path / "plain")
    snapshot = cache_snapshot(plain, tmp_path / "hub", REPO)
    elsewhere = tmp_path / "elsewhere.safetensors"
    elsewhere.write_bytes((plain / "model.safetensors").read_bytes())
    (snapshot / "model.safetensors").unlink()
    os.symlink(elsewhere, snapshot / "model.safetensors")
    checkpoint = load_checkpoint(snapshot)
    assert [(d.rule.code, d.file) for d in checkpoint.damage] == [("DF001", "model.safetensors")]
    assert "outside its repository's cache folder (models--acme--llama-draft)" in (
        checkpoint.damage[0].message
    )


def test_a_link_into_another_repository_of_the_same_cache_is_refused(tmp_path: Path) -> None:
    plain = f.specforge().write(tmp_path / "plain")
    snapshot = cache_snapshot(plain, tmp_path / "hub", REPO)
    other = cache_snapshot(plain, tmp_path / "hub", "acme/other")
    (snapshot / "config.json").unlink()
    os.symlink(os.path.realpath(other / "config.json"), snapshot / "config.json")
    checkpoint = load_checkpoint(snapshot)
    assert [d.rule.code for d in checkpoint.damage] == ["DF001"]


def test_diff_convert_matrix_and_values_read_a_cache_snapshot(
    layouts: tuple[Path, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, snapshot, _, target = layouts
    good = f.specforge().write(tmp_path / "good")
    good_snapshot = cache_snapshot(good, tmp_path / "hub2", REPO)
    assert main(["diff", str(good_snapshot), str(good), "--target", str(target)]) == 0
    assert "equivalent" in capsys.readouterr().out
    assert main(["matrix", str(snapshot), "--target", str(target), "--format", "json"]) in (0, 1)
    assert "DF001" not in capsys.readouterr().out
    code = main(["check", str(good_snapshot), "--target", str(target), "--values", "sampled"])
    out = capsys.readouterr().out
    assert code == 0 and "DF001" not in out
    specforge_snapshot = cache_snapshot(
        f.speculators().write(tmp_path / "spec"), tmp_path / "hub3", REPO
    )
    out_dir = tmp_path / "converted"
    code = main(["convert", str(specforge_snapshot), "--to", "sglang", "-o", str(out_dir)])
    assert code in (0, 1)
    capsys.readouterr()
    assert (out_dir / "config.json").is_file() and not (out_dir / "config.json").is_symlink()
    assert load_checkpoint(out_dir).damage == []


def test_a_cache_snapshot_serves_as_target(tmp_path: Path) -> None:
    target = f.llama_target(tmp_path / "target")
    snapshot = cache_snapshot(target, tmp_path / "hub", "acme/llama")
    draft = f.specforge().write(tmp_path / "d")
    plain = check_path(draft, target, ["vllm==0.34.0"]).to_dict()
    cached = check_path(draft, snapshot, ["vllm==0.34.0"]).to_dict()
    assert _comparable(cached) == _comparable(plain)
