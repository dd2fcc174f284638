"""Names and values from a checkpoint cannot drive the terminal: control characters are shown
escaped in every text output, while JSON keeps them as JSON escapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.cli import main
from draftfit.render.escape import escape_controls
from tests import factory as f

HOSTILE = "evil\x1b[2J\x1b]0;pwned\x07\u202ename"


@pytest.fixture
def hostile_draft(tmp_path: Path) -> Path:
    draft = f.speculators(aux=[2, 4, 5])
    draft.add(f"{HOSTILE}.weight", "BF16", (4,))
    draft.config["rope_theta"] = HOSTILE
    return draft.write(tmp_path / "draft")


@pytest.mark.parametrize(
    "argv",
    [
        ("check", "{d}"),
        ("check", "{d}", "--engine", "all", "--recipe"),
        ("inspect", "{d}"),
        ("diff", "{d}", "{d}"),
        ("matrix", "{d}"),
    ],
)
def test_text_output_shows_control_characters_escaped(
    capsys: pytest.CaptureFixture[str], hostile_draft: Path, argv: tuple[str, ...]
) -> None:
    main([a.format(d=hostile_draft) for a in argv])
    out, err = capsys.readouterr()
    for stream in (out, err):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream
    if argv[0] in ("check", "inspect"):
        # (rich itself drops BEL; everything else is shown escaped)
        assert "evil\\x1b[2J\\x1b]0;pwned" in out and "\\u202ename" in out


def test_json_output_keeps_the_name_as_data(
    capsys: pytest.CaptureFixture[str], hostile_draft: Path
) -> None:
    main(["inspect", str(hostile_draft), "--format", "json"])
    out, _ = capsys.readouterr()
    assert "\x1b" not in out
    names = [t["name"] for t in json.loads(out)["tensors"]]
    assert f"{HOSTILE}.weight" in names


def test_error_lines_are_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code = main(["check", str(tmp_path / "no\x1b[31mdir")])
    _, err = capsys.readouterr()
    assert code == 2 and "\x1b" not in err and "no\\x1b[31mdir" in err


def test_escape_controls_keeps_ordinary_text() -> None:
    text = "layers.0.self_attn.q_proj.weight → [2, 4, 5]\tüñí\n"
    assert escape_controls(text) == text
    assert escape_controls("\x00\x7f\x9b") == "\\x00\\x7f\\x9b"
