"""The command line's top level: its parser, without any command's options, and the one-line
summary of each command.

It needs argparse and nothing of draftfit's own, so that `draftfit`, `draftfit --help` and
`draftfit --version` are answered without importing the commands
(:mod:`draftfit.cli.entry`); :mod:`draftfit.cli.main` builds the same parser and adds the
command a run needs, so both print the same top-level help.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from draftfit.version import __version__

if TYPE_CHECKING:
    from typing import Any

# Each command's line in `draftfit --help`, in the order they are listed.
COMMAND_SUMMARIES: dict[str, str] = {
    "check": "check a draft against engine versions (and a target)",
    "diff": "compare a draft with a known-good reference, as the engine sees them",
    "matrix": "verdicts across every engine version draftfit knows, grouped into ranges",
    "convert": "rewrite a draft into the convention an engine expects (bytes copied verbatim)",
    "inspect": "show what a draft checkpoint holds",
    "rules": "list every rule",
    "rule": "explain one rule",
    "engines": "list the engine versions draftfit has data for",
    "schema": "print the JSON Schema of a command's --format json output",
    "demo": "run the built-in example (a Kimi-K2 EAGLE-3 draft)",
    "completion": "print a shell completion script (bash, zsh or fish)",
}

VERSION_LINE = f"draftfit {__version__}"


class UsageExit(Exception):
    """A usage error, as the one line the command line prints for it (exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def terminal_columns(fallback: int = 80) -> int:
    """The terminal's width as `shutil.get_terminal_size` gives it (`COLUMNS`, else the
    terminal of stdout, else `fallback`), without importing shutil, which argparse's help
    layout would import on every start-up to learn it."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    try:
        lines = int(os.environ["LINES"])
    except (KeyError, ValueError):
        lines = 0
    if columns > 0 and lines > 0:
        return columns
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return columns if columns > 0 else fallback
    return columns if columns > 0 else (size.columns or fallback)


class Formatter(argparse.HelpFormatter):
    """argparse's help layout at the width argparse itself would choose."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2, and the help is laid
    out by :class:`Formatter`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageExit(f"{self.prog}: {message} (see `{self.prog} --help`)")


def top_parser() -> tuple[Parser, Any]:
    """The top-level parser and its (still empty) group of command parsers."""
    parser = Parser(
        prog="draftfit",
        description="Will this speculative-decoding draft load and draft correctly in a serving "
        "engine? Checks EAGLE-3 / EAGLE-1 checkpoints without loading their weights "
        "(--values reads a sample of them).",
    )
    parser.add_argument("--version", action="version", version=VERSION_LINE)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    return parser, commands


def summary_parser() -> Parser:
    """The top-level parser with every command listed by its summary and given no options:
    what `draftfit --help` prints."""
    parser, commands = top_parser()
    for name, summary in COMMAND_SUMMARIES.items():
        commands.add_parser(name, help=summary)
    return parser
