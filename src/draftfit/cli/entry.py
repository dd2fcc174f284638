"""The `draftfit` program's entry point: answers `draftfit`, `--help` and `--version` from
the top-level parser alone, and hands every other call to :func:`draftfit.cli.main.main`.

Importing the commands costs a start-up several times a bare interpreter's; a call that
only asks what the program is should not pay it.
"""

from __future__ import annotations

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
    from draftfit.cli.main import main as run_command

    return run_command(words)
