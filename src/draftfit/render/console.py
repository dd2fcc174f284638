"""A rich console configured once: colour only on a TTY without NO_COLOR, no markup."""

from __future__ import annotations

import io
import os
import sys

from rich.console import Console


def make_console(file=None, color: bool | None = None) -> Console:
    """A console writing to `file` (a buffer by default), never interpreting markup.

    Output that is not a terminal is not wrapped, so lines stay greppable.
    """
    target = file if file is not None else io.StringIO()
    if color is None:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    return Console(
        file=target,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=not color,
        width=None if color else 100,
    )


def render_to_string(draw, color: bool = False) -> str:
    """Run `draw(console)` against a buffer and return what it printed."""
    buffer = io.StringIO()
    console = make_console(buffer, color)
    draw(console)
    return buffer.getvalue()
