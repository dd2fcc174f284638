"""No name, path or setting can forge a CI command or drive a terminal, in any output.

Hostile checkpoints (tensor names and config strings holding `\\n::error::INJECTED`, ESC, CR,
bidi controls), a draft folder and a target folder whose paths hold a newline and `::error::`,
and hostile launch settings go through every command of the parser in every `--format` it
offers (and `--quiet` / `--statistics` where a command has them). In everything printed,
stdout and stderr alike, no line starts (after blanks, as the GitHub runner reads it) with
`::` except draftfit's own annotations, whose properties hold no raw control character;
no raw ESC, CR or other control character appears; JUnit is well-formed XML; SARIF and JSON
parse, and each SARIF `artifactLocation.uri` is a valid relative URI reference naming an
existing file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

from draftfit.cli.main import build_parser, main
from tests import factory as f

INJECTED = "\n::error::INJECTED\r::add-mask::secret\n  ::stop-commands::tok\x1b[31m\u202e"
DRAFT_DIR = Path("sp ace") / "pct%41" / "x\n::error::dir"
TARGET_DIR = Path("tgt\n::warning::t")
OUT_DIR = "out\n::error::o\x1b[2J"

# Our own annotations: the command, its properties (no raw control, no `:` or `,` inside a
# value), then the message (no raw control either).
ANNOTATION = re.compile(r"::(error|warning|notice) ((?:[a-z]+=[^,:\x00-\x1f\x7f-\x9f]*,?)*)::")
# Raw characters no output may hold: C0 controls but tab and newline, DEL, C1 controls, the
# line and paragraph separators and the bidi controls.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069]")
# RFC 3986 relative-ref made of path characters only: unreserved, pct-encoded, sub-delims,
# `@` and `/` (a colon is left out: it would make the first segment read as a scheme).
RELATIVE_URI = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=@/]|%[0-9A-Fa-f]{2})*")


def hostile_draft() -> f.Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.add(f"model.layers.0.{INJECTED}.weight", "BF16", (4,))
    draft.add("::error::leading.weight", "BF16", (4,))
    draft.add("x" * 900 + INJECTED, "BF16", (2,))
    draft.config["rope_theta"] = INJECTED
    draft.config["torch_dtype"] = "bfloat16" + INJECTED
    draft.config["transformer_layer_config"]["model_type"] = "::error::mt" + INJECTED
    return draft


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder holding the hostile draft, a hostile target, a clean reference and a
    launch-settings file with hostile keys; the tests run with it as the current folder."""
    root = tmp_path_factory.mktemp("hostile")
    hostile_draft().write(root / DRAFT_DIR)
    f.specforge().write(root / "reference")
    f.llama_target(root / TARGET_DIR, model_type="llama" + INJECTED)
    (root / "serve.json").write_text(
        json.dumps({"method": "eagle3" + INJECTED, "num_speculative_tokens": 3, INJECTED: 1})
    )
    previous = Path.cwd()
    os.chdir(root)
    try:
        yield root
    finally:
        os.chdir(previous)


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def options_of(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings}


# The positional arguments (and required options) each command is run with; a command the
# parser gains fails the test below until it is listed here.
DRAFT = str(DRAFT_DIR)
TARGET = str(TARGET_DIR)
SERVE = ("--serve-config", "serve.json", "--serve-args", f"vllm serve M --bogus{INJECTED} 1")
ARGUMENTS: dict[str, list[tuple[str, ...]]] = {
    "check": [
        (DRAFT, "--target", TARGET, "--engine", "all", "--recipe"),
        (DRAFT, "--target", TARGET, *SERVE),
        (DRAFT, "reference", "--engine", "sglang"),
    ],
    "diff": [(DRAFT, "reference", "--target", TARGET, "--engine", "all")],
    "matrix": [(DRAFT, "--target", TARGET)],
    "convert": [
        (DRAFT, "--to", "vllm", "--target", TARGET, "--dry-run"),
        (DRAFT, "--to", "sglang", "--target", TARGET, "-o", OUT_DIR, "--force"),
    ],
    "inspect": [(DRAFT,)],
    "rules": [()],
    "rule": [("DF301",)],
    "engines": [(), ("trtllm",)],
    "schema": [("check",)],
    "demo": [()],
    "completion": [("bash",)],
}
# Lines that fail with one error line on stderr: a missing hostile path, a hostile option.
FAILING: list[tuple[str, ...]] = [
    ("check", "no\n::error::such\x1b[31mdir"),
    ("check", DRAFT, "--config", "no\n::error::cfg"),
    ("check", DRAFT, "--target", "no\n::error::target"),
    ("inspect", DRAFT, f"--bogus{INJECTED}"),
    ("rule", f"DF{INJECTED}"),
    ("convert", "no\n::error::src", "--to", "vllm", "--dry-run"),
]


def runs() -> list[tuple[str, ...]]:
    """Every listed argument line of every command, in every format and output mode."""
    commands = subcommands()
    assert set(commands) == set(ARGUMENTS), "list the arguments of every command"
    lines = []
    for name, parser in commands.items():
        options = options_of(parser)
        formats = options["--format"].choices if "--format" in options else [None]
        modes: list[tuple[str, ...]] = [()]
        modes += [(flag,) for flag in ("--quiet", "--statistics") if flag in options]
        for arguments in ARGUMENTS[name]:
            for fmt in formats:
                for mode in modes:
                    chosen = ("--format", fmt) if fmt is not None else ()
                    lines.append((name, *arguments, *chosen, *mode))
    return lines


def assert_no_forged_line(text: str, annotations_allowed: bool, argv: tuple[str, ...]) -> None:
    for line in text.split("\n"):
        if not line.lstrip(" \t\f\v").startswith("::"):
            continue
        assert annotations_allowed, (argv, line)
        assert ANNOTATION.match(line), (argv, line)


def assert_output_safe(argv: tuple[str, ...], out: str, err: str) -> None:
    fmt = argv[argv.index("--format") + 1] if "--format" in argv else "text"
    for stream in (out, err):
        assert RAW_CONTROL.search(stream) is None, (argv, RAW_CONTROL.search(stream))
    assert_no_forged_line(out, fmt == "github", argv)
    assert_no_forged_line(err, False, argv)
    if not out:
        return
    if fmt == "junit":
        ET.fromstring(out)
    elif fmt in ("json", "sarif") or argv[0] == "schema":
        data = json.loads(out)
        if fmt == "sarif":
            assert_sarif_uris(data, argv)


def assert_sarif_uris(data: dict, argv: tuple[str, ...]) -> None:
    uris = [
        location["physicalLocation"]["artifactLocation"]["uri"]
        for run in data["runs"]
        for result in run["results"]
        for location in result.get("locations", [])
    ]
    assert uris, argv
    for uri in uris:
        assert RELATIVE_URI.fullmatch(uri), (argv, uri)
        path = unquote(uri, errors="surrogateescape")
        assert Path(path).is_file(), (argv, uri)


@pytest.mark.slow
def test_hostile_names_forge_no_line_in_any_command_or_format(
    place: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argvs = runs()
    assert len(argvs) > 40
    for argv in argvs:
        code = main(list(argv))
        out, err = capsys.readouterr()
        assert code in (0, 1), (argv, code, err)
        assert_output_safe(argv, out, err)
    # The hostile names do reach the output, shown escaped.
    main(["inspect", DRAFT])
    out, _ = capsys.readouterr()
    assert "x\\n::error::dir" in out and "\\x3a:error::leading.weight" in out
    assert "\\n::error::INJECTED\\r::add-mask::secret\\n  ::stop-commands::tok\\x1b[31m" in out


@pytest.mark.parametrize("argv", FAILING, ids=lambda argv: argv[0])
def test_error_lines_forge_nothing(
    place: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (argv, out)
    assert len(err.splitlines()) == 1, err
    assert_output_safe(argv, out, err)


def test_a_very_long_tensor_name_is_shown_short_and_quickly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 1 MB tensor name (of blanks, the worst case for trimming line ends) is cut short in
    the table, with its length."""
    draft = f.speculators(aux=[2, 4, 5])
    draft.add("a" + " " * 1_000_000 + "b", "BF16", (4,))
    draft.write(tmp_path / "draft")
    assert main(["inspect", str(tmp_path / "draft")]) == 0
    out, _ = capsys.readouterr()
    assert "(1,000,002 characters)" in out
    assert max(len(line) for line in out.splitlines()) < 1000


def test_a_very_long_tensor_name_is_quoted_short_in_every_release(tmp_path: Path) -> None:
    """Each release's findings quote a 1 MB tensor name cut short, so that `matrix` (every
    release of every engine) does not hold a copy of the name per release."""
    from draftfit.commands.release_matrix import build_matrix
    from draftfit.origins.reference import open_checkpoint

    draft = f.specforge()
    draft.add("model.layers.0." + "a" * 1_000_000, "BF16", (2,))
    checkpoint = open_checkpoint(draft.write(tmp_path / "draft"))
    matrix = build_matrix(checkpoint, None)
    messages = [x.message for row in matrix.rows for x in row.findings_for_exit]
    assert messages and max(len(m) for m in messages) < 5000
