"""The examples of the README and the manual (`docs/`) are real: `dev/readme_examples.py
--check` rebuilds the checkpoints they name, runs every displayed command and fails when a
block differs from the run. The manual itself is checked here too: its command pages name
every option, and the README's test command is the one `.ci/run` runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.timeouts import scaled

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_readme_examples_match_a_real_run() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "dev" / "readme_examples.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=scaled(),
        check=False,
    )
    assert done.returncode == 0, (
        "README examples drifted; run `python dev/readme_examples.py --write`\n"
        + done.stdout
        + done.stderr
    )


@pytest.mark.slow
def test_a_drifted_example_is_reported(tmp_path: Path) -> None:
    """An example whose shown output differs from the run fails `--check` with a diff."""
    readme = tmp_path / "README.md"
    readme.write_text(
        "<!-- example: version-lines lines=1 -->\n"
        "```console\n"
        "$ draftfit rule DF310\n"
        "DF310 aux-ids-not-ascending — warning\n"
        "...\n"
        "```\n"
    )
    args = [sys.executable, str(ROOT / "dev" / "readme_examples.py"), "--readme", str(readme)]
    done = subprocess.run(
        [*args, "--check"], capture_output=True, text=True, check=False, timeout=scaled()
    )
    assert done.returncode == 1
    assert "+DF310 aux-ids-not-ascending — error" in done.stdout
    assert subprocess.run([*args, "--write"], check=False, timeout=scaled()).returncode == 0
    assert "DF310 aux-ids-not-ascending — error\n..." in readme.read_text()
    done = subprocess.run(
        [*args, "--check"], capture_output=True, text=True, check=False, timeout=scaled()
    )
    assert done.returncode == 0, done.stdout


def _synopses() -> list[tuple[str, str]]:
    """(command, synopsis) from each command page: a short title (`# `draftfit check``) and,
    under it, a `text` block whose lines start `draftfit CMD` (continuation lines indented)."""
    import re

    found: list[tuple[str, str]] = []
    for page in sorted((ROOT / "docs" / "commands").glob("*.md")):
        text = page.read_text("utf-8")
        head = re.match(r"# ([^\n]*)\n\n```text\n(.*?)^```$", text, re.S | re.M)
        assert head, f"{page.name}: a short title, then the synopsis as a ```text block"
        title, block = head.groups()
        assert "--" not in title and "[" not in title and len(title) <= 60, (page.name, title)
        for line in block.splitlines():
            if line.startswith("draftfit "):
                name, _, rest = line[len("draftfit ") :].partition(" ")
                found.append((name, rest))
                assert f"`draftfit {name}`" in title, (page.name, title)
            else:
                assert line.startswith(" ") and found, (page.name, line)
                found[-1] = (found[-1][0], found[-1][1] + " " + line.strip())
    return found


def test_command_pages_have_a_short_title_and_a_synopsis_block() -> None:
    """Every command has a synopsis on its page, once (the title is the command alone, so
    the page's heading and the site's navigation stay short)."""
    import argparse

    from draftfit.cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    names = [name for name, _ in _synopses()]
    assert sorted(names) == sorted(commands.choices)


def test_command_headings_name_every_option_and_only_real_ones() -> None:
    """Each command page's synopsis (`draftfit CMD ...`) names every option
    `draftfit CMD --help` lists (help aside), and no other."""
    import argparse
    import re

    from draftfit.cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    headings = _synopses()
    assert {name for name, _ in headings} >= {"check", "diff", "matrix", "convert", "engines"}
    for name, synopsis in headings:
        actions = [
            set(action.option_strings)
            for action in commands.choices[name]._actions
            if action.option_strings and "--help" not in action.option_strings
        ]
        # `--select/--extend-select/--ignore RULES` names three options, `-o OUT` one
        shown = set(re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", synopsis))
        missing = [sorted(a) for a in actions if not a & shown]
        unknown = sorted(shown - set().union(*actions))
        assert missing == [] and unknown == [], (name, missing, unknown)


def test_every_example_file_is_covered() -> None:
    """The harness reads the README and every page of the manual."""
    sys.path.insert(0, str(ROOT / "dev"))
    try:
        import readme_examples
    finally:
        sys.path.remove(str(ROOT / "dev"))
    files = readme_examples.example_files()
    assert files[0] == ROOT / "README.md"
    assert ROOT / "docs" / "commands" / "check.md" in files
    assert ROOT / "docs" / "python-api.md" in files  # the doctest example


def test_a_drifted_example_in_a_second_file_is_reported(tmp_path: Path) -> None:
    """Several files are checked in one run; drift names its file, and `--write` rewrites
    only the file that drifted."""
    good = tmp_path / "good.md"
    good.write_text("<!-- example: one -->\n```console\n$ echo one\none\n```\n")
    bad = tmp_path / "bad.md"
    bad.write_text("<!-- example: two -->\n```console\n$ echo two\nthree\n```\n")
    before = good.stat().st_mtime_ns
    args = [sys.executable, str(ROOT / "dev" / "readme_examples.py")]
    args += ["--readme", str(good), "--readme", str(bad)]
    done = subprocess.run([*args, "--check"], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "bad.md two" in done.stdout and "+two" in done.stdout
    assert subprocess.run([*args, "--write"], check=False).returncode == 0
    assert bad.read_text() == "<!-- example: two -->\n```console\n$ echo two\ntwo\n```\n"
    assert good.stat().st_mtime_ns == before


def test_two_examples_with_one_name_are_refused(tmp_path: Path) -> None:
    block = "<!-- example: same -->\n```console\n$ echo x\nx\n```\n"
    (tmp_path / "a.md").write_text(block)
    (tmp_path / "b.md").write_text(block)
    args = [sys.executable, str(ROOT / "dev" / "readme_examples.py"), "--check"]
    args += ["--readme", str(tmp_path / "a.md"), "--readme", str(tmp_path / "b.md")]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "same" in done.stderr


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """The README names the command `.ci/run` runs, word for word."""
    ci = (ROOT / ".ci" / "run").read_text("utf-8").strip().splitlines()[-1]
    assert ci.startswith("pip install -e '.[test,docs]'") and "mkdocs build --strict" in ci
    assert f"```bash\n{ci}\n```" in (ROOT / "README.md").read_text("utf-8")
    assert f"```bash\n{ci}\n```" in (ROOT / "CONTRIBUTING.md").read_text("utf-8")


def test_readme_is_short() -> None:
    """The README is the front page (at most 300 lines); the manual is `docs/`."""
    assert len((ROOT / "README.md").read_text("utf-8").splitlines()) <= 300
