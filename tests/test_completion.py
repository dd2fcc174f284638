"""`draftfit completion bash|zsh|fish`: scripts from the parser; bash's is run for real."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from draftfit.cli.main import main
from tests.timeouts import scaled


def script(capsys: pytest.CaptureFixture[str], shell: str) -> str:
    assert main(["completion", shell]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return out


def bash_complete(path: Path, line: str) -> list[str]:
    """COMPREPLY for the command line `line` (completing its last word)."""
    words = line.split(" ")
    program = (
        f"source {path}; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
        f"COMP_CWORD={len(words) - 1}; COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}; "
        '_shtab_draftfit; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    bash = shutil.which("bash") or "/bin/bash"
    done = subprocess.run(
        [bash, "-c", program], capture_output=True, text=True, check=True, timeout=scaled()
    )
    return [w for w in done.stdout.splitlines() if w]


def test_bash_completes_commands_formats_and_options(capsys, tmp_path) -> None:
    path = tmp_path / "draftfit.bash"
    path.write_text(script(capsys, "bash"))
    assert "completion" in bash_complete(path, "draftfit c") and "check" in bash_complete(
        path, "draftfit c"
    )
    assert bash_complete(path, "draftfit check d --format ") == [
        "text",
        "json",
        "sarif",
        "github",
        "junit",
    ]
    assert bash_complete(path, "draftfit matrix d --format m") == ["markdown"]
    assert set(bash_complete(path, "draftfit check --s")) == {
        "--select",
        "--show-settings",
        "--statistics",
        "--serve-config",
        "--serve-args",
    }


def test_zsh_and_fish_scripts_name_every_command(capsys) -> None:
    zsh = script(capsys, "zsh")
    fish = script(capsys, "fish")
    assert zsh.startswith("#compdef draftfit")
    for command in ("check", "diff", "matrix", "convert", "rule", "completion"):
        assert f"{command}:" in zsh or f'"{command}:' in zsh, command
        assert f"-eq 0' -a {command} " in fish, command
    assert "complete -c draftfit" in fish
    assert '"text json sarif github junit"' in fish


def test_unknown_shell_is_a_usage_error(capsys) -> None:
    assert main(["completion", "tcsh"]) == 2
    assert "invalid choice" in capsys.readouterr().err
