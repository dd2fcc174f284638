"""Rule selection: --select / --ignore / --extend-select, settings files and their discovery,
and what a suppressed finding does (stays in JSON with its reason, counts for nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.cli.main import main
from draftfit.settings.config_file import discover, discover_from
from tests import factory as f

SGLANG = "sglang==0.5.23"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a speculators draft (DF105 on SGLang: an error) and a target."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    f.speculators(aux=[2, 4, 5]).write(root / "drafts" / "kimi")
    f.llama_target(root / "target")
    return root


def check_json(capsys, repo: Path, *extra: str) -> tuple[int, dict]:
    draft = repo / "drafts" / "kimi"
    code, out, err = run(
        capsys, "check", str(draft), "--target", str(repo / "target"), "--engine", SGLANG,
        "--format", "json", *extra,
    )  # fmt: skip
    assert err == ""
    return code, json.loads(out)


def by_code(data: dict, code: str) -> dict:
    return next(item for item in data["findings"] if item["code"] == code)


def test_without_selection_the_error_counts(capsys, repo) -> None:
    code, data = check_json(capsys, repo)
    assert code == 1
    assert data["engines"][0]["verdict"] == "incompatible"
    assert "suppressed" not in by_code(data, "DF105")


@pytest.mark.parametrize("selector", ["DF105", "DF1", "speculators-format-unsupported"])
def test_ignore_flag_suppresses_by_code_prefix_or_name(capsys, repo, selector) -> None:
    code, data = check_json(capsys, repo, "--ignore", selector)
    finding = by_code(data, "DF105")
    assert finding["suppressed"] is True
    assert finding["suppression"] == {"reason": f"--ignore {selector}", "source": "--ignore"}
    assert code == 0
    assert data["engines"][0]["verdict"] == "compatible"
    assert data["engines"][0]["counts"]["error"] == 0
    assert data["summary"]["error"] == 0 and data["summary"]["exit_code"] == 0


def test_select_leaves_other_rules_suppressed_and_extend_select_adds(capsys, repo) -> None:
    code, data = check_json(capsys, repo, "--select", "DF9")
    assert code == 0
    finding = by_code(data, "DF105")
    assert finding["suppression"]["reason"] == "not selected (--select DF9)"
    code, data = check_json(capsys, repo, "--select", "DF9", "--extend-select", "DF105")
    assert code == 1 and "suppressed" not in by_code(data, "DF105")


def test_ignore_wins_over_select(capsys, repo) -> None:
    code, data = check_json(capsys, repo, "--select", "DF105", "--ignore", "DF1")
    assert code == 0 and by_code(data, "DF105")["suppressed"] is True


def test_text_report_leaves_suppressed_findings_out_and_says_how_many(capsys, repo) -> None:
    draft = repo / "drafts" / "kimi"
    argv = ["check", str(draft), "--target", str(repo / "target"), "--engine", SGLANG]
    code, out, _ = run(capsys, *argv, "--ignore", "DF105")
    assert code == 0
    assert "speculators-format-unsupported" not in out
    assert "Suppressed 1 finding (DF105)" in out
    assert "SGLang 0.5.23: compatible" in out


def test_draftfit_toml_next_to_the_checkpoint_with_reasons(capsys, repo) -> None:
    settings = repo / "drafts" / "kimi" / "draftfit.toml"
    settings.write_text('[ignore]\nDF105 = "served from a converted copy"\n')
    code, data = check_json(capsys, repo)
    assert code == 0
    assert by_code(data, "DF105")["suppression"] == {
        "reason": "served from a converted copy",
        "source": str(settings.resolve()),
    }
    # --isolated ignores it; --config names another file
    code, data = check_json(capsys, repo, "--isolated")
    assert code == 1
    other = repo / "other.toml"
    other.write_text('select = ["DF9"]\n')
    code, data = check_json(capsys, repo, "--config", str(other))
    assert code == 0 and by_code(data, "DF105")["suppression"]["source"] == str(other)


def test_pyproject_at_the_repository_root(capsys, repo) -> None:
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.draftfit]\nignore = ["DF105"]\n'
    )
    code, data = check_json(capsys, repo)
    assert code == 0
    assert by_code(data, "DF105")["suppression"]["reason"].startswith("ignored in ")
    # the command line's --select replaces the file's selection, its ignore still applies
    code, data = check_json(capsys, repo, "--select", "DF105")
    assert code == 0


def test_discovery_order_and_the_repository_boundary(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    outside = tmp_path / "draftfit.toml"
    outside.write_text("select = []\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    draft = repo / "a" / "b"
    draft.mkdir(parents=True)
    # above the repository root: never used
    assert discover(draft) is None
    # a pyproject.toml without [tool.draftfit] is passed over
    (repo / "a" / "pyproject.toml").write_text("[tool.ruff]\nline-length = 99\n")
    assert discover(draft) is None
    (repo / "pyproject.toml").write_text("[tool.draftfit]\nignore = []\n")
    assert discover(draft) == (repo / "pyproject.toml").resolve()
    (repo / "a" / "pyproject.toml").write_text("[tool.draftfit]\n")
    assert discover(draft) == (repo / "a" / "pyproject.toml").resolve()
    # draftfit.toml wins over pyproject.toml in the same folder; the nearest folder wins
    (repo / "a" / "draftfit.toml").write_text("")
    assert discover(draft) == (repo / "a" / "draftfit.toml").resolve()
    (draft / "draftfit.toml").write_text("")
    assert discover(draft) == (draft / "draftfit.toml").resolve()
    # outside any repository the walk goes to the filesystem root
    plain = tmp_path / "plain" / "x"
    plain.mkdir(parents=True)
    assert discover(plain) == outside.resolve()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("select = [", "is not valid TOML"),
        ('selct = ["DF1"]\n', "unknown key(s) selct"),
        ('select = "DF1"\n', "must be a list"),
        ('ignore = ["DF99"]\n', "'DF99' matches no rule"),
        ("[ignore]\nDF105 = 3\n", "table of selector"),
    ],
)
def test_bad_settings_file_is_one_line_exit_2(capsys, repo, text, message) -> None:
    (repo / "draftfit.toml").write_text(text)
    draft = repo / "drafts" / "kimi"
    code, out, err = run(capsys, "check", str(draft))
    assert code == 2 and out == ""
    assert message in err and err.count("\n") == 1


def test_unknown_selector_on_the_command_line_is_exit_2(capsys, repo) -> None:
    code, out, err = run(capsys, "check", str(repo / "drafts" / "kimi"), "--select", "DF7X")
    assert code == 2 and out == "" and "--select: 'DF7X' matches no rule" in err


def test_matrix_and_diff_follow_the_selection(capsys, repo) -> None:
    draft = repo / "drafts" / "kimi"
    target = repo / "target"
    argv = ["matrix", str(draft), "--target", str(target), "--format", "json"]
    _, out, _ = run(capsys, *argv)
    before = {row["verdict"] for row in json.loads(out)["rows"] if row["engine"] == "sglang"}
    assert "incompatible" in before
    _, out, _ = run(capsys, *argv, "--ignore", "DF105,DF101,DF5")
    rows = [row for row in json.loads(out)["rows"] if row["engine"] == "sglang"]
    assert all(d["code"] not in ("DF105", "DF101") for row in rows for d in row["deciding"])
    reference = f.specforge().write(repo / "reference")
    code, out, _ = run(capsys, "diff", str(draft), str(reference), "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["summary"]["matters"] > 0
    code, out, _ = run(
        capsys, "diff", str(draft), str(reference), "--format", "json", "--select", "DF810"
    )
    data = json.loads(out)
    assert code == 0 and data["summary"]["matters"] == 0
    # nothing that matters is left, but no --target was given: not called equivalent
    assert all(e["verdict"] == "unverified" for e in data["engines"])
    assert all(item.get("suppressed") for item in data["findings"] if item["code"] != "DF810")


def test_per_checkpoint_ignores_in_the_repository_settings(capsys, repo) -> None:
    f.speculators(aux=[2, 4, 5]).write(repo / "drafts" / "other")
    (repo / "pyproject.toml").write_text(
        "[tool.draftfit.per-checkpoint-ignores]\n"
        '"drafts/k*" = { DF105 = "SGLang serves a converted copy" }\n'
        '"elsewhere/*" = ["DF1"]\n'
    )
    code, data = check_json(capsys, repo)
    assert code == 0
    assert by_code(data, "DF105")["suppression"]["reason"] == "SGLang serves a converted copy"
    code, out, _ = run(
        capsys, "check", str(repo / "drafts" / "other"), "--engine", SGLANG, "--format", "json"
    )
    assert code == 1 and "suppressed" not in by_code(json.loads(out), "DF105")
    (repo / "pyproject.toml").write_text(
        '[tool.draftfit.per-checkpoint-ignores]\n"drafts/*" = ["DF99"]\n'
    )
    code, _, err = run(capsys, "check", str(repo / "drafts" / "other"))
    assert code == 2 and "per-checkpoint-ignores 'drafts/*': 'DF99' matches no rule" in err


def test_repeated_and_comma_separated_selectors_add_up(capsys, repo) -> None:
    code, data = check_json(capsys, repo, "--select", "DF9", "--select", "DF2,DF105")
    assert code == 1 and "suppressed" not in by_code(data, "DF105")
    code, data = check_json(capsys, repo, "--select", "DF9", "--select", "DF2")
    assert code == 0
    assert by_code(data, "DF105")["suppression"]["reason"] == "not selected (--select DF9 DF2)"


def test_a_selection_keeps_checks_that_did_not_run_from_compatible(capsys, repo) -> None:
    """Without --target the verdict is `unverified`; ignoring an unrelated rule (on the
    command line or in a settings file) leaves it so."""
    draft = str(repo / "drafts" / "kimi")
    for extra in ([], ["--ignore", "DF108"]):
        _, out, _ = run(capsys, "check", draft, "--format", "json", *extra)
        result = json.loads(out)["engines"][0]
        assert result["verdict"] == "unverified" and result["unverified_reasons"] == ["no target"]


@pytest.mark.parametrize("marker", [".git", ".hg"])
def test_discovery_stops_at_the_repository_root(tmp_path: Path, monkeypatch, marker) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    (tmp_path / "draftfit.toml").write_text('ignore = ["DF"]\n')
    draft = tmp_path / "repo" / "drafts" / "d"
    draft.mkdir(parents=True)
    (tmp_path / "repo" / marker).mkdir()
    walk = discover_from(draft)
    assert walk.found is None and walk.stop == f"repository root ({marker})"
    assert walk.searched[-1] == tmp_path / "repo"


def test_discovery_never_searches_a_shared_temporary_folder(tmp_path: Path, monkeypatch) -> None:
    """A shared temporary folder like `/tmp` (writable by every user, sticky) ends the walk
    unsearched: anyone could have put a settings file there. A folder that is only
    writable by every user (no sticky bit) is searched as before."""
    monkeypatch.setenv("HOME", str(tmp_path / "elsewhere"))
    shared = tmp_path / "shared"
    draft = f.speculators(aux=[2, 4, 5]).write(shared / "mine" / "d")
    (shared / "draftfit.toml").write_text('ignore = ["DF"]\n')
    (tmp_path / "draftfit.toml").write_text('ignore = ["DF"]\n')
    shared.chmod(0o1777)
    walk = discover_from(draft)
    assert walk.found is None and walk.stop == "shared folder (writable by every user)"
    assert walk.searched == (draft, shared / "mine")
    shared.chmod(0o777)
    assert discover(draft) == shared / "draftfit.toml"
    shared.chmod(0o755)


@pytest.mark.parametrize("command", ["check", "diff", "matrix"])
def test_show_settings_is_text_and_writes_no_input(capsys, tmp_path: Path, command: str) -> None:
    """`--show-settings` refuses a format it does not print, and an `--output-file` that
    would replace an input, like a report."""
    draft = f.speculators(aux=[2, 4, 5]).write(tmp_path / "d")
    argv = [command, str(draft), *([str(draft)] if command == "diff" else []), "--show-settings"]
    config = (draft / "config.json").read_bytes()
    code, out, err = run(capsys, *argv, "--format", "json")
    assert code == 2 and out == "" and "--show-settings prints text" in err
    code, out, err = run(capsys, *argv, "--output-file", str(draft / "config.json"))
    assert code == 2 and out == "" and "is inside the checkpoint" in err
    assert (draft / "config.json").read_bytes() == config


def test_discovery_stops_at_the_home_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    """A `draftfit.toml` above the user's home (three folders up) never applies: the
    verdict stays what the draft earns, not `compatible` by an unseen `ignore = ["DF"]`."""
    home = tmp_path / "home" / "me"
    draft = f.speculators(aux=[2, 4, 5]).write(home / "work" / "d")
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "draftfit.toml").write_text('ignore = ["DF"]\n')
    (tmp_path / "home" / "draftfit.toml").write_text('ignore = ["DF"]\n')
    walk = discover_from(draft)
    assert (walk.found, walk.stop, walk.searched[-1]) == (None, "home folder", home)
    code, out, _ = run(capsys, "check", str(draft), "--engine", SGLANG, "-q")
    assert code == 1 and "incompatible" in out
    (home / "draftfit.toml").write_text('ignore = ["DF105"]\n')  # the home folder is searched
    assert discover(draft) == home / "draftfit.toml"


def test_the_text_report_names_the_settings_file(capsys, repo, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    (repo / "drafts" / "draftfit.toml").write_text('ignore = ["DF105"]\n')
    argv = ["check", "drafts/kimi", "--target", "target", "--engine", SGLANG]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert "settings: drafts/draftfit.toml (1 suppressed)" in out.splitlines()
    # --ignore's findings are not the file's; a file that suppresses nothing is still named
    (repo / "drafts" / "draftfit.toml").write_text("ignore = []\n")
    code, out, _ = run(capsys, *argv, "--ignore", "DF105")
    assert "settings: drafts/draftfit.toml (0 suppressed)" in out.splitlines()
    code, out, _ = run(capsys, "diff", "drafts/kimi", "drafts/kimi")
    assert "settings: drafts/draftfit.toml (0 suppressed)" in out.splitlines()
    code, out, _ = run(capsys, *argv, "--isolated")
    assert "settings:" not in out


def test_a_symlinked_checkpoint_keeps_the_settings_of_the_path_named(
    capsys, repo, tmp_path: Path
) -> None:
    """`drafts/current` links to a folder outside the repository: it is judged under the
    repository's [tool.draftfit] (and its per-checkpoint globs), as named."""
    (repo / "pyproject.toml").write_text(
        '[tool.draftfit.per-checkpoint-ignores]\n"drafts/current" = ["DF105"]\n'
    )
    real = f.speculators(aux=[2, 4, 5]).write(tmp_path / "store" / "kimi-v3")
    link = repo / "drafts" / "current"
    link.symlink_to(real, target_is_directory=True)
    assert discover(link) == repo / "pyproject.toml"
    code, out, _ = run(capsys, "check", str(link), "--engine", SGLANG, "--format", "json")
    suppressed = {x["code"] for x in json.loads(out)["findings"] if x.get("suppressed")}
    assert code == 0 and suppressed == {"DF105"}


def test_show_settings_names_each_part_and_its_source(capsys, repo, monkeypatch) -> None:
    monkeypatch.chdir(repo)
    (repo / "pyproject.toml").write_text(
        '[tool.draftfit]\nselect = ["DF1", "DF3"]\nextend-select = ["DF9"]\n\n'
        '[tool.draftfit.ignore]\nDF105 = "SGLang serves a converted copy"\n'
    )
    code, out, err = run(
        capsys, "check", "drafts/kimi", "--show-settings", "--ignore", "DF903",
        "--extend-select", "DF2",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Settings for drafts/kimi",
        "  settings file  pyproject.toml  (discovered)",
        "  searched       drafts/kimi, drafts, .",
        "  select         DF1, DF3  (pyproject.toml)",
        "  extend-select  DF9  (pyproject.toml)",
        "                 DF2  (--extend-select)",
        '  ignore         DF105  "SGLang serves a converted copy"  (pyproject.toml)',
        "                 DF903  (--ignore)",
        "  draft-is-for-target  no  (default)",
    ]
    code, out, _ = run(capsys, "matrix", "drafts/kimi", "--show-settings", "--isolated")
    assert code == 0 and "  settings file  none (--isolated)" in out
    code, out, _ = run(capsys, "matrix", "drafts/kimi", "--show-settings", "--draft-is-for-target")
    assert code == 0 and "  draft-is-for-target  yes  (--draft-is-for-target)" in out
    (repo / "pyproject.toml").unlink()
    code, out, _ = run(capsys, "diff", "drafts/kimi", "drafts/kimi", "--show-settings")
    assert code == 0
    assert "  searched       drafts/kimi, drafts, .  (stopped: repository root (.git))" in out
    assert "  select         ALL  (default)" in out
