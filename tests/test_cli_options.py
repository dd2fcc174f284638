"""The typed options the command line builds once from its arguments (draftfit.cli.options)."""

from __future__ import annotations

import argparse
from typing import get_args

import pytest

from draftfit.cli import options as options_module
from draftfit.cli.main import COMMANDS, build_parser
from draftfit.cli.options import (
    CHECK_METHODS,
    CONVENTIONS,
    METHODS,
    SHELLS,
    VALUES,
    CheckOptions,
    CommandOptions,
    CompletionOptions,
    ConvertOptions,
    DiffOptions,
    EnginesOptions,
    LaunchOptions,
    MatrixOptions,
    OutputOptions,
    SchemaOptions,
    SelectionOptions,
    from_namespace,
)
from draftfit.records import is_record
from draftfit.verdicts import FailOn


def options(*argv: str) -> CommandOptions:
    return from_namespace(build_parser().parse_args(list(argv)))


def check(*argv: str) -> CheckOptions:
    built = options("check", *argv)
    assert isinstance(built, CheckOptions)
    return built


@pytest.mark.parametrize("level", list(FailOn))
def test_fail_on_parses_into_the_threshold(level: FailOn) -> None:
    assert check("d", "--fail-on", str(level)).fail_on is level
    diffed = options("diff", "d", "r", "--fail-on", str(level))
    assert isinstance(diffed, DiffOptions) and diffed.fail_on is level
    matrix = options("matrix", "d", "--fail-on", str(level))
    assert isinstance(matrix, MatrixOptions) and matrix.fail_on is level


def test_fail_on_defaults_to_error_except_for_matrix() -> None:
    assert check("d").fail_on is FailOn.ERROR
    matrix = options("matrix", "d")
    assert isinstance(matrix, MatrixOptions) and matrix.fail_on is None


def test_repeated_engines_keep_their_order_and_none_given_is_empty() -> None:
    given = ("sglang==0.5.6", "vllm", "trtllm", "vllm~=0.10")
    argv = [part for engine in given for part in ("--engine", engine)]
    assert check("d", *argv).engines == given
    assert check("d").engines == ()
    converted = options("convert", "d", "--to", "vllm", *argv)
    assert isinstance(converted, ConvertOptions) and converted.engines == given


def test_a_check_with_every_part() -> None:
    built = check(
        "a",
        "b/*",
        "--target",
        "t",
        "--method",
        "auto",
        "--values",
        "--recipe",
        "--serve-args",
        "vllm serve M",
        "--format",
        "sarif",
        "--output-file",
        "out.sarif",
        "--select",
        "DF1, DF2",
        "--select",
        "DF3",
        "--ignore",
        "DF105",
        "--isolated",
        "-q",
    )
    assert built == CheckOptions(
        drafts=("a", "b/*"),
        target="t",
        engines=(),
        method="auto",
        fail_on=FailOn.ERROR,
        recipe=True,
        values="sampled",
        pre_commit=False,
        launch=LaunchOptions(serve_config=None, serve_args="vllm serve M"),
        output=OutputOptions(format="sarif", output_file="out.sarif", quiet=True),
        selection=SelectionOptions(select=("DF1", "DF2", "DF3"), ignore=("DF105",), isolated=True),
    )
    assert built.launch.given and not LaunchOptions().given


def test_select_not_given_differs_from_select_given_empty() -> None:
    assert check("d").selection.select is None
    assert check("d", "--select", "").selection.select == ()


def test_formats_default_to_the_first_of_the_kind() -> None:
    assert check("d").output.format == "text"
    assert options("engines").format == "text"  # type: ignore[union-attr]
    matrix = options("matrix", "d", "--format", "markdown")
    assert isinstance(matrix, MatrixOptions) and matrix.output.format == "markdown"
    assert not matrix.output.statistics  # matrix offers no --statistics


def test_convert_schema_completion_and_engines() -> None:
    converted = options("convert", "d", "--to", "sglang", "-o", "out", "--dry-run", "--force")
    assert isinstance(converted, ConvertOptions)
    assert (converted.to, converted.out, converted.dry_run, converted.force) == (
        "sglang",
        "out",
        True,
        True,
    )
    assert not (converted.unsafe_fixes or converted.anyway or converted.verify)
    assert options("schema", "matrix") == SchemaOptions(kind="matrix")
    assert options("completion", "fish") == CompletionOptions(shell="fish")
    assert options("engines", "vllm", "--format", "json") == EnginesOptions("vllm", "json")


def test_the_options_are_records_built_once() -> None:
    built = check("d")
    assert is_record(built) and built == check("d")
    assert hash(built) == hash(check("d"))


def test_the_parser_offers_exactly_the_typed_choices() -> None:
    typed = vars(options_module)
    assert set(CHECK_METHODS) == set(get_args(typed["Method"]))
    assert set(METHODS) < set(CHECK_METHODS)
    assert get_args(typed["Values"]) == VALUES
    assert get_args(typed["Convention"]) == CONVENTIONS
    assert get_args(typed["Shell"]) == SHELLS


def test_a_value_outside_the_choices_is_a_bug_not_a_usage_error() -> None:
    args = build_parser().parse_args(["check", "d"])
    args.format = "xml"
    with pytest.raises(ValueError, match="--format"):
        from_namespace(args)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_one_command_parser_reads_and_helps_as_the_whole_one(command: str) -> None:
    """A run builds only its command's parser: its help and what it parses are those of
    the whole command line's parser."""

    def command_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        found: argparse.ArgumentParser = action.choices[command]
        return found

    whole, single = build_parser(), build_parser(command)
    assert command_parser(single).format_help() == command_parser(whole).format_help()
    words = {"check": ["d", "--engine", "vllm"], "diff": ["a", "b"], "matrix": ["d"]}
    if command in words:
        argv = [command, *words[command]]
        assert single.parse_args(argv) == whole.parse_args(argv)


@pytest.mark.parametrize("columns", [None, "40", "200"])
def test_help_is_laid_out_as_argparse_lays_it_out(
    monkeypatch: pytest.MonkeyPatch, columns: str | None
) -> None:
    """The help formatter sizes the layout itself (no shutil); argparse's own gives the same
    text at every width."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    for command in (None, "check", "convert", "matrix"):
        parser = build_parser(command)
        if command is not None:
            (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            parser = commands.choices[command]
        ours = parser.format_help()
        parser.formatter_class = argparse.HelpFormatter
        assert parser.format_help() == ours, (command, columns)
