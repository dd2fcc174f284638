"""The README's examples are real: `dev/readme_examples.py --check` rebuilds the checkpoints
they name, runs every displayed command and fails when a block differs from the run."""

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


def test_command_headings_name_every_option_and_only_real_ones() -> None:
    """Each `### draftfit CMD ...` heading of the README names every option `draftfit CMD
    --help` lists (help aside), and no other."""
    import argparse
    import re

    from draftfit.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    readme = (ROOT / "README.md").read_text("utf-8")
    headings = re.findall(r"^### `draftfit (\w+)([^`]*)`", readme, re.MULTILINE)
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
