"""An output that is an input under another name is refused, whatever way its path reaches
it: a hard link of an input file (the draft's or the target's config.json, a launch's
settings file, a Hugging Face cache blob), or a path inside the Hugging Face cache folder of
a snapshot the run reads (`blobs/`, `refs/`). One line on stderr, exit 2, nothing written,
every file as it was (hashes compared). For `check`, `diff`, `matrix` (`--output-file`) and
`convert` (`-o`, and the files a `--force` would replace)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from draftfit.cli.main import main
from tests import factory as f
from tests.hub_layouts import cache_snapshot

REPO = "org/name"


def hashes(*folders: Path) -> dict[str, str]:
    """Every file under `folders` (links as where they point): what a refusal leaves as is."""
    seen = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_symlink():
                seen[str(path)] = "link:" + os.readlink(path)
            elif path.is_file():
                seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return seen


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (argv, err)
    assert err.count("\n") == 1 and err.startswith("draftfit: error: "), err
    assert said in err, err
    return out


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _hard_link_of_draft_config(work: Path, draft: Path) -> tuple[list[str], Path]:
    os.link(draft / "config.json", work / "report.json")
    return [], work / "report.json"


def _hard_link_of_target_config(work: Path, draft: Path) -> tuple[list[str], Path]:
    target = f.llama_target(work / "target")
    os.link(target / "config.json", work / "report.json")
    return ["--target", str(target)], work / "report.json"


def _hard_link_of_serve_config(work: Path, draft: Path) -> tuple[list[str], Path]:
    (work / "launch.yaml").write_text("num_speculative_tokens: 3\n")
    os.link(work / "launch.yaml", work / "report.json")
    return ["--serve-config", "launch.yaml"], work / "report.json"


def _hard_link_of_a_launch_file(work: Path, draft: Path) -> tuple[list[str], Path]:
    (work / "engine.yaml").write_text("tensor_parallel_size: 2\n")
    os.link(work / "engine.yaml", work / "report.json")
    return ["--serve-args", "vllm serve T --config engine.yaml"], work / "report.json"


def _hard_link_of_a_weight_file(work: Path, draft: Path) -> tuple[list[str], Path]:
    os.link(draft / "model.safetensors", work / "sub-report.json")
    return [], work / "sub-report.json"


ALIASES = [
    _hard_link_of_draft_config,
    _hard_link_of_target_config,
    _hard_link_of_serve_config,
    _hard_link_of_a_launch_file,
    _hard_link_of_a_weight_file,
]


@pytest.mark.parametrize("alias", ALIASES, ids=lambda a: a.__name__.strip("_"))
@pytest.mark.parametrize("command", ["check", "diff", "matrix"])
def test_output_file_that_is_an_input_by_identity_is_refused(
    capsys: pytest.CaptureFixture[str],
    work: Path,
    alias: Callable[[Path, Path], tuple[list[str], Path]],
    command: str,
) -> None:
    draft = f.specforge().write(work / "draft")
    options, output = alias(work, draft)
    before = hashes(work)
    argv = [command, str(draft), *([str(draft)] if command == "diff" else [])]
    out = refused(
        capsys,
        [*argv, *options, "--format", "json", "--output-file", str(output)],
        "is the same file as",
    )
    assert out == ""
    assert hashes(work) == before


def test_a_hard_link_of_the_reference_is_refused_by_diff(
    capsys: pytest.CaptureFixture[str], work: Path
) -> None:
    draft = f.specforge().write(work / "draft")
    reference = f.specforge().write(work / "reference")
    os.link(reference / "config.json", work / "report.json")
    before = hashes(work)
    refused(
        capsys,
        ["diff", str(draft), str(reference), "--output-file", "report.json"],
        "reference/config.json, in the checkpoint",
    )
    assert hashes(work) == before


@pytest.fixture
def snapshot(work: Path) -> Path:
    """A draft as the Hugging Face cache holds it: snapshot files linked into `blobs/`."""
    plain = f.specforge().write(work / "plain")
    return cache_snapshot(plain, work / "hub", REPO)


def _blob(snapshot: Path) -> Path:
    return (snapshot / "config.json").resolve()


@pytest.mark.parametrize("role", ["draft", "target"])
@pytest.mark.parametrize("where", ["blob", "refs", "new file in blobs", "hard link of a blob"])
def test_output_file_in_the_cache_of_a_snapshot_is_refused(
    capsys: pytest.CaptureFixture[str], work: Path, snapshot: Path, role: str, where: str
) -> None:
    repo = snapshot.parents[1]
    output = {
        "blob": _blob(snapshot),
        "refs": repo / "refs" / "main",
        "new file in blobs": repo / "blobs" / "report.json",
        "hard link of a blob": work / "report.json",
    }[where]
    if where == "hard link of a blob":
        os.link(_blob(snapshot), output)
    draft = f.specforge().write(work / "draft")
    if role == "target":
        f.llama_target(work / "target-plain")
        snapshot = cache_snapshot(work / "target-plain", work / "hub2", "org/target")
        repo = snapshot.parents[1]
        output = {
            "blob": _blob(snapshot),
            "refs": repo / "refs" / "main",
            "new file in blobs": repo / "blobs" / "report.json",
            "hard link of a blob": work / "report2.json",
        }[where]
        if where == "hard link of a blob":
            os.link(_blob(snapshot), output)
        argv = ["check", str(draft), "--target", str(snapshot)]
    else:
        argv = ["check", str(snapshot)]
    before = hashes(work)
    said = "is the same file as" if where == "hard link of a blob" else "Hugging Face cache folder"
    refused(capsys, [*argv, "--output-file", str(output)], said)
    assert hashes(work) == before


def test_the_cache_is_found_through_a_linked_snapshot(
    capsys: pytest.CaptureFixture[str], work: Path, snapshot: Path
) -> None:
    (work / "my-draft").symlink_to(snapshot)
    before = hashes(work)
    refused(
        capsys,
        ["check", "my-draft", "--output-file", str(_blob(snapshot))],
        "Hugging Face cache folder",
    )
    assert hashes(work) == before


def test_an_unrelated_existing_file_is_still_replaced(
    capsys: pytest.CaptureFixture[str], work: Path, snapshot: Path
) -> None:
    (work / "report.json").write_text("old")
    os.link(work / "report.json", work / "second-name.json")
    assert main(["check", str(snapshot), "--format", "json", "--output-file", "report.json"]) == 0
    assert (work / "report.json").read_text().startswith("{")
    assert (work / "second-name.json").read_text() == "old"  # replaced by rename, not written


def test_convert_refuses_an_output_in_the_cache_of_its_input(
    capsys: pytest.CaptureFixture[str], work: Path, snapshot: Path
) -> None:
    repo = snapshot.parents[1]
    before = hashes(work)
    for out in (repo / "refs" / "converted", repo / "blobs" / "converted"):
        refused(
            capsys,
            ["convert", str(snapshot), "--to", "vllm", "-o", str(out), "--anyway"],
            "Hugging Face cache folder",
        )
    assert hashes(work) == before


@pytest.mark.parametrize("linked", ["draft config", "serve-config", "launch file"])
def test_convert_force_refuses_to_replace_an_input_file(
    capsys: pytest.CaptureFixture[str], work: Path, linked: str
) -> None:
    """A previous output whose listed file is now a hard link of an input: `--force`
    would replace that name; refused, naming the file."""
    draft = f.specforge().write(work / "draft")
    assert main(["convert", str(draft), "--to", "vllm", "-o", "out", "--anyway"]) == 0
    capsys.readouterr()
    (work / "launch.yaml").write_text("num_speculative_tokens: 3\n")
    (work / "engine.yaml").write_text("tensor_parallel_size: 1\n")
    source = {
        "draft config": draft / "config.json",
        "serve-config": work / "launch.yaml",
        "launch file": work / "engine.yaml",
    }[linked]
    (work / "out" / "config.json").unlink()
    os.link(source, work / "out" / "config.json")
    before = hashes(work)
    refused(
        capsys,
        [
            "convert",
            str(draft),
            "--to",
            "vllm",
            "-o",
            "out",
            "--force",
            "--anyway",
            "--serve-config",
            "launch.yaml",
            "--serve-args",
            "vllm serve T --config engine.yaml",
        ],
        "output file out/config.json is the same file as",
    )
    assert hashes(work) == before
