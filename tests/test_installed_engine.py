"""Without --engine, the engines installed where draftfit runs are checked, found by their
distribution metadata (a `*.dist-info` folder with METADATA on the search path) and never
imported; with none installed, the newest vLLM; --engine always wins. The suite's own
environment counts as having none installed (tests/conftest.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from draftfit.checker import check_path, resolve_engines
from draftfit.cli.main import main
from draftfit.commands.comparison import diff_paths
from draftfit.engines.installed import SEARCH_PATH_ENV, default_profiles, find_installed
from draftfit.engines.registry import engine_named
from tests import factory as f
from tests.timeouts import scaled

SRC = Path(__file__).resolve().parents[1] / "src"


def fake_install(site: Path, name: str, version: str) -> Path:
    """A distribution's metadata as pip leaves it: `NAME-VERSION.dist-info/METADATA`."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return site


@pytest.fixture
def checked(tmp_path: Path) -> tuple[Path, Path]:
    return f.specforge().write(tmp_path / "draft"), f.llama_target(tmp_path / "target")


def test_an_installed_vllm_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked: tuple[Path, Path]
) -> None:
    monkeypatch.setenv(SEARCH_PATH_ENV, str(fake_install(tmp_path / "site", "vllm", "0.10.2")))
    report = check_path(*checked)
    assert [(e.engine, e.version) for e in report.engines] == [("vllm", "0.10.2")]
    assert report.engines[0].chosen_because == "vLLM 0.10.2, installed here"
    assert report.engines[0].extrapolated_to is None


def test_text_and_json_say_why(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    checked: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(SEARCH_PATH_ENV, str(fake_install(tmp_path / "site", "vllm", "0.10.2")))
    draft, target = checked
    main(["check", str(draft), "--target", str(target)])
    out = capsys.readouterr().out
    assert "Engine  vLLM 0.10.2, installed here\n" in out
    assert "vLLM 0.10.2: compatible" in out
    main(["check", str(draft), "--target", str(target), "--format", "json"])
    engines = json.loads(capsys.readouterr().out)["engines"]
    assert [e["chosen_because"] for e in engines] == ["vLLM 0.10.2, installed here"]


def test_found_on_sys_path_without_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SEARCH_PATH_ENV)
    monkeypatch.syspath_prepend(str(fake_install(tmp_path / "site", "vllm", "0.10.2")))
    found = find_installed()
    assert any(i.engine.name == "vllm" and i.version == "0.10.2" for i in found)
    assert "vllm==0.10.2" in [p.label for p in default_profiles()]


def test_a_python_with_the_metadata_on_its_path_checks_that_release(
    tmp_path: Path, checked: tuple[Path, Path]
) -> None:
    """As a user's environment is: PYTHONPATH holds the engine's metadata; nothing is set."""
    site = fake_install(tmp_path / "site", "vllm", "0.10.2")
    env = {k: v for k, v in os.environ.items() if k != SEARCH_PATH_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(site)])
    draft, target = checked
    done = subprocess.run(
        [sys.executable, "-m", "draftfit", "check", str(draft), "--target", str(target)],
        capture_output=True,
        text=True,
        env=env,
        timeout=scaled(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "vLLM 0.10.2, installed here" in done.stdout
    assert "vLLM 0.10.2: compatible" in done.stdout


def test_a_release_draftfit_has_not_read_is_extrapolated_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked: tuple[Path, Path]
) -> None:
    latest = engine_named("vllm").data.latest
    monkeypatch.setenv(SEARCH_PATH_ENV, str(fake_install(tmp_path / "site", "vllm", "99.1.0")))
    report = check_path(*checked)
    result = report.engines[0]
    assert (result.version, result.extrapolated_to) == (latest, "99.1.0")
    assert result.chosen_because is not None
    assert result.chosen_because.startswith("vLLM 99.1.0, installed here; draftfit has not read")
    assert f"checks vLLM {latest}, the nearest release it has read" in result.chosen_because
    assert all("extrapolated to vLLM 99.1.0" in x.message for x in report.findings if x.engines)


def test_an_older_release_than_any_read_is_checked_against_the_oldest(tmp_path: Path) -> None:
    data = engine_named("vllm").data
    oldest = min(data.versions, key=lambda v: tuple(int(p) for p in v.split(".")))
    profiles = default_profiles([str(fake_install(tmp_path / "site", "vllm", "0.0.1"))])
    assert [(p.version, p.requested) for p in profiles] == [(oldest, "0.0.1")]


def test_a_local_build_of_a_read_release_is_that_release(tmp_path: Path) -> None:
    profiles = default_profiles([str(fake_install(tmp_path / "site", "vllm", "0.10.2+cu128"))])
    assert [(p.label, p.requested) for p in profiles] == [("vllm==0.10.2", None)]


def test_every_installed_engine_is_checked(tmp_path: Path) -> None:
    site = fake_install(tmp_path / "site", "vllm", "0.10.2")
    fake_install(site, "sglang", "0.5.23")
    labels = [p.label for p in default_profiles([str(site)])]
    assert labels == ["vllm==0.10.2", "sglang==0.5.23"]


def test_nothing_installed_is_the_newest_vllm_and_says_so(
    checked: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    latest = engine_named("vllm").data.latest
    [profile] = resolve_engines(None)
    assert profile.label == f"vllm=={latest}"
    draft, target = checked
    main(["check", str(draft), "--target", str(target)])
    out = capsys.readouterr().out
    assert (
        f"Engine  vLLM {latest}, the newest release draftfit has read: none of vLLM, SGLang or "
        "TensorRT-LLM is installed here; --engine chooses another" in out
    )


def test_engine_option_always_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked: tuple[Path, Path]
) -> None:
    monkeypatch.setenv(SEARCH_PATH_ENV, str(fake_install(tmp_path / "site", "vllm", "0.10.2")))
    report = check_path(*checked, engines=["sglang"])
    assert [e.engine for e in report.engines] == ["sglang"]
    assert report.engines[0].chosen_because is None


def test_diff_defaults_to_the_installed_engine_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, checked: tuple[Path, Path]
) -> None:
    monkeypatch.setenv(SEARCH_PATH_ENV, str(fake_install(tmp_path / "site", "vllm", "0.10.2")))
    draft, target = checked
    report = diff_paths(draft, draft, target=target)
    assert [(r.version, r.chosen_because) for r in report.engines] == [
        ("0.10.2", "vLLM 0.10.2, installed here")
    ]


def test_the_engine_names_in_the_default_reason_are_the_data_titles() -> None:
    """The reason names every engine without loading its data; the names stay the titles'."""
    from draftfit.engines.registry import ENGINES

    assert [e.data.title.split(" (")[0] for e in ENGINES] == [e.product for e in ENGINES]


def test_every_spelling_the_metadata_lookup_accepts_is_found(tmp_path: Path) -> None:
    """Names are compared as pip normalizes them (case, runs of `-`, `_`, `.`); other
    distributions are passed over; a `.egg-info` file is the metadata itself."""
    (tmp_path / "numpy-2.0.dist-info").mkdir()
    assert find_installed([str(tmp_path), str(tmp_path / "absent")]) == []
    for spelling in ("TensorRT_LLM-1.0.0.dist-info", "tensorrt.llm-1.0.0.egg-info"):
        info = tmp_path / spelling
        info.mkdir()
        (info / ("METADATA" if "dist" in spelling else "PKG-INFO")).write_text(
            "Metadata-Version: 2.1\nName: tensorrt_llm\nVersion: 1.0.0\n"
        )
        found = find_installed([str(tmp_path)])
        assert [(i.engine.name, i.version) for i in found] == [("trtllm", "1.0.0")], spelling
        shutil.rmtree(info)
    (tmp_path / "sglang-0.5.23.egg-info").write_text("Name: sglang\nVersion: 0.5.23\n")
    assert [(i.engine.name, i.version) for i in find_installed([str(tmp_path)])] == [
        ("sglang", "0.5.23")
    ]


def test_the_first_folder_on_the_path_wins(tmp_path: Path) -> None:
    first = fake_install(tmp_path / "first", "vllm", "0.10.2")
    second = fake_install(tmp_path / "second", "vllm", "0.34.0")
    found = find_installed([str(first), str(second)])
    assert [(i.engine.name, i.version) for i in found] == [("vllm", "0.10.2")]


def test_only_the_version_header_is_read(tmp_path: Path) -> None:
    """The headers end at the first blank line; a `Version:` in the description is not one."""
    info = tmp_path / "site" / "vllm-0.10.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: vllm\nversion:  0.10.2 \n\nVersion: 9.9.9\n"
    )
    assert [i.version for i in find_installed([str(tmp_path / "site")])] == ["0.10.2"]
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\n\nVersion: 9.9.9\n")
    assert find_installed([str(tmp_path / "site")]) == []


def _hostile_metadata(site: Path, kind: str) -> Path:
    """A `vllm-1.dist-info` whose METADATA is hostile in the way `kind` says."""
    info = site / "vllm-1.dist-info"
    info.mkdir(parents=True)
    metadata = info / "METADATA"
    if kind.endswith("digits"):
        digits = 5_000 if kind.startswith("5k") else 100_000
        metadata.write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {'1' * digits}\n")
    elif kind == "dev-zero":
        metadata.symlink_to("/dev/zero")
    elif kind == "sparse":
        with metadata.open("wb") as handle:
            handle.truncate(200 * 1024 * 1024)  # sparse: no disk used
    elif kind == "fifo":
        os.mkfifo(metadata)
    elif kind == "directory":
        metadata.mkdir()
    elif kind == "escapes":
        metadata.write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.10.2\x1b[2J\n")
    elif kind == "no-version":
        metadata.write_bytes(b"\xff\xfe" * 40_000)
    return metadata


def _run(
    argv: list[str], engine_path: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), SEARCH_PATH_ENV: engine_path}
    env.pop("DRAFTFIT_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "draftfit", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=scaled(),
        check=False,
        cwd=cwd,
    )


HOSTILE = [
    "5k-digits",
    "100k-digits",
    "dev-zero",
    "sparse",
    "fifo",
    "directory",
    "escapes",
    "no-version",
]


@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_metadata_is_skipped_with_one_notice(
    tmp_path: Path, checked: tuple[Path, Path], kind: str
) -> None:
    """Huge versions, a device, a 200 MB sparse file, a FIFO (a hang if it were opened
    blocking), a folder, terminal escapes, no Version header: the metadata is skipped with
    one line naming it, and the check goes on with the default engine. Never an internal
    error, a hang or a large allocation."""
    metadata = _hostile_metadata(tmp_path / "site", kind)
    draft, target = checked
    done = _run(["check", str(draft), "--target", str(target)], str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"draftfit: engine metadata {metadata} skipped: "), done.stderr
    assert "\x1b" not in done.stderr + done.stdout
    assert "the newest release draftfit has read" in done.stdout


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "file", "missing"])
def test_a_search_path_that_is_not_a_folder_is_one_line(
    tmp_path: Path, checked: tuple[Path, Path], kind: str
) -> None:
    entry = {"dev-zero": Path("/dev/zero"), "fifo": tmp_path / "fifo"}.get(kind)
    if entry is None:
        entry = tmp_path / kind
        if kind == "file":
            entry.write_text("Version: 1\n")
    elif kind == "fifo":
        os.mkfifo(entry)
    draft, target = checked
    site = fake_install(tmp_path / "site", "vllm", "0.10.2")
    done = _run(["check", str(draft), "--target", str(target)], f"{site}{os.pathsep}{entry}")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"draftfit: error: {SEARCH_PATH_ENV}: {entry}"), done.stderr
    assert "internal error" not in done.stderr


def test_metadata_is_never_opened_unless_regular(tmp_path: Path) -> None:
    """Checked before opening: a FIFO with no writer would block an open without
    O_NONBLOCK, and a device may act when opened. In-process, with a FIFO nobody writes."""
    _hostile_metadata(tmp_path / "site", "fifo")
    assert find_installed([str(tmp_path / "site")]) == []
