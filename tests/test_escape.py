"""Names and values from a checkpoint cannot drive the terminal: control characters are shown
escaped in every text output, while JSON keeps them as JSON escapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.cli.main import main
from draftfit.escape import (
    annotation_data,
    annotation_property,
    escape_controls,
    escape_field,
    guard_line_starts,
    markdown_code,
    markdown_text,
    uri_reference,
    xml_text,
)
from tests import factory as f
from tests.timeouts import scaled

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


def test_a_field_shows_every_control_and_cannot_start_a_command() -> None:
    assert escape_field("a\nb\rc\td\x1b[31m\u2028") == "a\\nb\\rc\\td\\x1b[31m\\u2028"
    assert escape_field("  ::error::x") == "  \\x3a:error::x"
    assert escape_field("a::b") == "a::b"
    assert escape_field("\ud800") == "\\ud800"
    long = escape_field("n" * 5000)
    assert long.startswith("n" * 2000 + "…") and long.endswith("(5,000 characters)")


def test_guard_line_starts_only_touches_lines_starting_with_two_colons() -> None:
    text = "ok ::x\n::error::a\n \t::add-mask::b\n:single"
    assert guard_line_starts(text) == "ok ::x\n\\x3a:error::a\n \t\\x3a:add-mask::b\n:single"


def test_annotation_escaping_follows_the_runner_and_shows_other_controls() -> None:
    assert annotation_data("50%\r\nx\x1b") == "50%25%0D%0Ax\\x1b"
    assert annotation_property("a:b,c\n%\x1b") == "a%3Ab%2Cc%0A%25\\x1b"


def test_xml_text_makes_any_text_well_formed() -> None:
    import xml.etree.ElementTree as ET

    hostile = "a\x00b\x1bc\rd\ufffe\ud800\tok\n"
    element = ET.Element("x", {"name": xml_text(hostile)})
    element.text = xml_text(hostile)
    parsed = ET.fromstring(ET.tostring(element, "unicode"))
    assert parsed.text == "a\\x00b\\x1bc\\rd\\ufffe\\ud800\tok\n"


def test_uri_reference_percent_encodes_per_rfc_3986() -> None:
    assert uri_reference("sp ace/pct%41/x\n") == "sp%20ace/pct%2541/x%0A"
    assert uri_reference("../a:b/ü#?") == "../a%3Ab/%C3%BC%23%3F"
    assert uri_reference("raw\udcff") == "raw%FF"  # a non-UTF-8 byte read with surrogateescape


def test_markdown_escapes_what_acts_outside_code_spans() -> None:
    assert markdown_text("model_type `kimi_k2` [2, 3]") == "model_type `kimi_k2` [2, 3]"
    assert markdown_text("[x](u) <b> *e* _u_ a|b `c|d`") == (
        "[x\\](u) \\<b\\> \\*e\\* \\_u\\_ a\\|b `c\\|d`"
    )
    assert markdown_text("x\n::error::y") == "x\\\\n::error::y"
    assert markdown_code("a``b") == "```a``b```"
    assert markdown_code("`x") == "`` `x ``"


def test_a_shell_word_with_a_control_character_stays_on_one_line_and_reads_back() -> None:
    import shutil
    import subprocess

    from draftfit.engines.serve import shell_word

    word = "x\n::error::y 'q' \\ \x1b[31m"
    quoted = shell_word(word)
    assert "\n" not in quoted and "\x1b" not in quoted
    assert shell_word("plain/path") == "plain/path"
    if shutil.which("bash"):
        run = subprocess.run(
            ["bash", "-c", f"printf %s {quoted}"], capture_output=True, check=True, timeout=scaled()
        )
        assert run.stdout.decode() == word
