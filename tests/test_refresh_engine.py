"""`dev/refresh_engine.py`: anchors are found again (or not) in a release's wheel, or at a
release's pinned commit in a git snapshot.

The wheels here are tiny zips written into the script's cache folder, where the script
looks first, and the snapshots tiny git repositories, so nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from draftfit.engines.citation import parse_locations
from tests.timeouts import scaled

SCRIPT = Path(__file__).resolve().parents[1] / "dev" / "refresh_engine.py"


@pytest.fixture(scope="module")
def refresh() -> ModuleType:
    spec = importlib.util.spec_from_file_location("refresh_engine", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["refresh_engine"] = module
    spec.loader.exec_module(module)
    return module


def _wheel(cache: Path, engine: str, version: str, files: dict[str, str]) -> Path:
    folder = cache / f"{engine}-{version}"
    folder.mkdir(parents=True)
    path = folder / f"{engine}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_anchor_is_the_first_telling_cited_line(refresh: ModuleType) -> None:
    lines = ["", "    )", "    x = compute(a, b)", "    return x"]
    assert refresh.choose_anchor(lines, 1, 4) == "x = compute(a, b)"
    assert refresh.choose_anchor(lines, 2, 2) is None  # punctuation only: no anchor
    assert refresh.choose_anchor(["", "  "], 1, 2) is None
    assert len(refresh.choose_anchor(["y = " + "z" * 200], 1, 1)) == refresh.ANCHOR_CHARS


def test_locate_tells_unchanged_moved_changed_and_vanished(
    refresh: ModuleType, tmp_path: Path
) -> None:
    text = "import os\n\n\ndef f():\n    return os.sep\n"
    wheel = _wheel(tmp_path, "vllm", "9.9.9", {"vllm/a.py": text})
    release = refresh.Release("vllm", "9.9.9", wheel)
    (here,) = parse_locations("vllm/a.py:4-5@v9.9.8")
    (above,) = parse_locations("vllm/a.py:1@v9.9.8")
    (gone,) = parse_locations("vllm/b.py:1@v9.9.8")
    assert refresh.locate(release, here, "def f():").kind == "unchanged"
    moved = refresh.locate(release, above, "def f():")
    assert (moved.kind, moved.detail) == ("moved", "now at line 4, cited 1")
    assert refresh.locate(release, here, "def g():").kind == "changed"
    assert refresh.locate(release, gone, "x").kind == "vanished"
    release.close()


def test_check_compares_with_the_base_release_and_deletes_the_wheels(
    refresh: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry_class = "EntryClass = [LlamaForCausalLMEagle3]\n"
    base = _wheel(
        tmp_path,
        "sglang",
        "0.5.23",
        {
            "sglang/srt/models/llama_eagle3.py": "\n" * 386 + entry_class,
            "sglang/srt/speculative/eagle_worker_v2.py": "    def init_token_map(self):\n",
        },
    )
    new = _wheel(
        tmp_path, "sglang", "9.9.9", {"sglang/srt/models/llama_eagle3.py": "\n" * 10 + entry_class}
    )
    code = refresh.main(["sglang", "9.9.9", "--cache-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "compared with 0.5.23" in out
    assert "eagle3_draft_architectures:" in out
    moved = "moved      sglang/srt/models/llama_eagle3.py:387@v0.5.23: "
    assert moved + "line 387 in 0.5.23 -> 11 in 9.9.9" in out
    assert "vanished   sglang/srt/speculative/eagle_worker_v2.py:323-334@v0.5.23" in out
    assert "stale" in out and "summary:" in out
    assert not base.exists() and not new.exists()


def test_check_against_the_cited_lines(
    refresh: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry_class = "EntryClass = [LlamaForCausalLMEagle3]\n"
    files = {"sglang/srt/models/llama_eagle3.py": "\n" * 10 + entry_class}
    wheel = _wheel(tmp_path, "sglang", "9.9.9", files)
    code = refresh.main(["sglang", "9.9.9", "--cited", "--keep", "--cache-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and "compared with the cited lines" in out
    assert "moved      sglang/srt/models/llama_eagle3.py:387@v0.5.23: now at line 11" in out
    assert wheel.exists()


def test_an_unreadable_release_exits_2(
    refresh: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert refresh.main(["vllm", "0.34.0", "--against", "0.15.0"]) == 2
    assert "not a release in the vllm data" in capsys.readouterr().err


def test_anchor_fields_are_placed_after_the_source(refresh: ModuleType) -> None:
    line = (
        '  { since = "1.0", value = 1, source = "p/a.py:4@v1.0; p/b.py@v1.0", '
        'confidence = "read" },\n'
    )
    located = parse_locations("p/a.py:4@v1.0; p/b.py@v1.0")
    out = refresh._with_anchors(line, {located[0]: 'x = "y"'}, {})
    assert out == (
        '  { since = "1.0", value = 1, source = "p/a.py:4@v1.0; p/b.py@v1.0", '
        'anchors = ["x = \\"y\\"", ""], anchor_missing = "p/b.py@v1.0: cites a file, not a line", '
        'confidence = "read" },\n'
    )
    assert refresh._with_anchors(out, {located[0]: 'x = "y"'}, {}) == out


def _git_snapshot(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    """A one-commit git repository holding `files`: its git directory and the commit."""
    work = tmp_path / "repo"
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "HOME": str(tmp_path),
        "PATH": os.environ.get("PATH", ""),
    }
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "release"]):
        subprocess.run(["git", "-C", str(work), *cmd], check=True, env=env, timeout=scaled())
    head = subprocess.run(
        ["git", "-C", str(work), "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
        timeout=scaled(),
    )
    return work / ".git", head.stdout.strip()


def test_a_snapshot_release_is_read_at_its_commit(refresh: ModuleType, tmp_path: Path) -> None:
    code = "class A:\n\n    def f(self):\n        residual = hidden_states\n"
    git_dir, commit = _git_snapshot(tmp_path, {"pkg/mod.py": code})
    snapshot = refresh.Snapshot(git_dir)
    release = refresh.SnapshotRelease("trtllm", "1.2.0rc2", snapshot, commit)
    assert release.lines("pkg/mod.py") == code.splitlines()
    assert release.lines("pkg/absent.py") is None
    (here,) = parse_locations("pkg/mod.py:4@v1.2.0rc2")
    assert refresh.locate(release, here, "residual = hidden_states").kind == "unchanged"
    (moved,) = parse_locations("pkg/mod.py:1@v1.2.0rc2")
    assert refresh.locate(release, moved, "residual = hidden_states").kind == "moved"


def test_a_snapshot_needs_the_pinned_commit(
    refresh: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git_dir, _ = _git_snapshot(tmp_path, {"pkg/mod.py": "x = 1\n"})
    args = ["trtllm", "--cited", "--repo-snapshot", str(git_dir)]
    assert refresh.main([args[0], "1.2.0rc2", *args[1:]]) == 2
    assert "b35ac1b64368 (v1.2.0rc2) is not in" in capsys.readouterr().err
    assert refresh.main([args[0], "1.4.0rc0", *args[1:]]) == 2
    assert "not pinned to a commit" in capsys.readouterr().err


def _pages(root: Path, drop: str | None = None) -> dict[str, list[str]]:
    """Each TensorRT-LLM page the data cites, saved under `root` as Sphinx renders a signature
    (one tag per token, quotes as entities, line breaks between parameters), holding every
    anchor cited on it except `drop`; returns the anchors by address."""
    from draftfit.engines.registry import load_engine

    cited: dict[str, list[str]] = {}
    for fact in load_engine("trtllm").facts.values():
        for entry in fact.entries:
            for location, anchor in zip(
                parse_locations(entry.source), entry.anchors or (), strict=False
            ):
                if location.page:
                    cited.setdefault(location.path, []).append(anchor)
    for address, anchors in cited.items():
        spans = [
            "<dt>" + "".join(f"<span class='pre'>{t}</span>" for t in a.split(" ")) + "</dt>\n"
            for a in anchors
            if a != drop
        ]
        html = "<html><body><dl>\n" + "".join(spans) + "</dl></body></html>"
        page = root / address.split("://", 1)[1]
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(html.replace("'", "&#39;"), encoding="utf-8")
    return cited


def test_page_anchors_are_found_in_the_pages_text(
    refresh: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cited = _pages(tmp_path / "pages")
    assert len(cited) >= 9
    assert refresh.main(["trtllm", "--documented", "--pages", str(tmp_path / "pages")]) == 0
    out = capsys.readouterr().out
    assert "documentation anchors: found" in out and "missing" not in out
    # a field the page no longer lists is reported, with its fact
    gone = "num_eagle_layers: int | None = None"
    _pages(tmp_path / "changed", drop=gone)
    assert refresh.main(["trtllm", "--documented", "--pages", str(tmp_path / "changed")]) == 1
    out = capsys.readouterr().out
    assert f"missing     eagle3_config_keys: `{gone}`" in out
    # no page can be read: nothing was checked
    assert refresh.main(["trtllm", "--documented", "--pages", str(tmp_path / "none")]) == 2
    assert "unreachable https://nvidia.github.io/TensorRT-LLM/" in capsys.readouterr().out


def test_code_modes_list_a_page_without_reading_it(refresh: ModuleType, tmp_path: Path) -> None:
    from draftfit.engines.profile import Entry

    address = "https://nvidia.github.io/TensorRT-LLM/1.4.0rc4/llm-api/reference/X.html"
    source = f"{address}; pkg/mod.py:1@v1.2.0rc2"
    entry = Entry(1, None, None, source, "documented", None, ("a", "b"))
    git_dir, commit = _git_snapshot(tmp_path, {"pkg/mod.py": "b\n"})
    release = refresh.SnapshotRelease("trtllm", "1.2.0rc2", refresh.Snapshot(git_dir), commit)
    kinds = [status.kind for _, status in refresh._statuses(release, entry, None, "1.2.0rc2")]
    assert kinds == ["page", "unchanged"]
    line = (
        f'  {{ value = 1, source = "{address}; p/a.py@v1.0", anchors = ["x: int = 1", ""], '
        'confidence = "documented" },\n'
    )
    out = refresh._with_anchors(line, {}, {})
    assert 'anchors = ["x: int = 1", ""]' in out  # the page's quoted line is kept
    assert 'anchor_missing = "p/a.py@v1.0: cites a file, not a line"' in out
