"""The `draftfit` program's entry point: answers `draftfit`, `--help` and `--version` from
the top-level parser alone, and hands every other call to :func:`draftfit.cli.main.main`.

Importing the commands costs a start-up several times a bare interpreter's; a call that
only asks what the program is should not pay it.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence

from draftfit.cli.top import VERSION_LINE, summary_parser

EXIT_OK = 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words in ([], ["-h"], ["--help"]):
        summary_parser().print_help(sys.stdout)
        return EXIT_OK
    if words == ["--version"]:
        print(VERSION_LINE)
        return EXIT_OK
    if _COMMANDS not in sys.modules:
        _import_commands()
    from draftfit.cli.main import main as run_command

    return run_command(words)


_COMMANDS = "draftfit.cli.main"


def _import_commands() -> None:
    """Import the commands with the garbage collector paused, then freeze what they made.

    The import makes tens of thousands of objects that live as long as the process and no
    garbage: the collector's passes over them while importing are pure cost (~5 ms of a
    ~65 ms check, bench/README.md). Once frozen they are out of its reach for the rest of
    the call; it collects as usual from then on. Done once, on the first command only (a
    process that calls :func:`main` again, a test run, has nothing new to freeze)."""
    gc.disable()
    try:
        import draftfit.cli.main  # noqa: F401 - imported for its side effect of loading
    finally:
        gc.freeze()
        gc.enable()
