"""A progress bar on the terminal for long byte work: value reads (full mode, Hub reads)
and the bytes `convert` copies.

Drawn with rich on stderr, only for the command line (`terminal_bars`; the Python API
never prints) and only when stderr is a terminal: nothing when piped or captured, so output
and logs stay clean. Removed when done.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Progress = Callable[[int], None]
_shown = {"bars": False}


@contextmanager
def terminal_bars() -> Iterator[None]:
    """While the command line runs: progress bars may be drawn on a terminal."""
    before = _shown["bars"]
    _shown["bars"] = True
    try:
        yield
    finally:
        _shown["bars"] = before


def _none(_: int) -> None:
    return None


@contextmanager
def progress_for(description: str, total: int, enabled: bool = True) -> Iterator[Progress]:
    """Yield a callable that advances a bar by a number of bytes (a no-op when not shown)."""
    if not (enabled and _shown["bars"]) or total <= 0 or not sys.stderr.isatty():
        yield _none
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.progress import Progress as Bar

    from draftfit.escape import escape_field

    with Bar(
        TextColumn(f"draftfit: {escape_field(description)}".replace("[", "\\[")),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        row = bar.add_task(description, total=total)

        def advance(n: int) -> None:
            bar.advance(row, n)

        yield advance
