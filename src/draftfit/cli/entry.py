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
        asks_help = "-h" in words or "--help" in words
        _import_commands(PRELOAD.get(words[0], ()) if words and not asks_help else ())
    from draftfit.cli.main import main as run_command

    return run_command(words)


_COMMANDS = "draftfit.cli.main"
# What a command loads besides the command line (the checker and the engines for a command
# that checks a draft; the renderer a matrix draws with), loaded with the command line.
PRELOAD: dict[str, tuple[str, ...]] = {
    "check": ("draftfit.checker",),
    "demo": ("draftfit.checker",),
    "diff": ("draftfit.checker",),
    "matrix": (
        "draftfit.checker",
        "draftfit.commands.release_matrix",
        "draftfit.render.matrix_text",
    ),
}


def _import_commands(modules: tuple[str, ...]) -> None:
    """Import the commands and `modules` with the garbage collector paused, then freeze
    what they made.

    The imports make tens of thousands of objects that live as long as the process and no
    garbage: the collector's passes over them while importing, and again while the command
    runs, are pure cost (~10 ms of a ~70 ms check, ~15 ms more of a `matrix`,
    bench/README.md). Once frozen they are out of its reach; it collects as usual from then
    on. Done once, on the first command only (a process that calls :func:`main` again, a
    test run, has nothing new to freeze)."""
    gc.disable()
    try:
        for name in (_COMMANDS, *modules):
            # the import statement's own machinery (`-X importtime` reports it, unlike
            # importlib's)
            __import__(name)
    finally:
        gc.freeze()
        gc.enable()
