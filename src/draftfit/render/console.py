"""A rich console configured once: colour only on a TTY without NO_COLOR, no markup.

Names and values printed by draftfit come from checkpoints, which anyone can write: a tensor
name holding an ANSI escape sequence or a bidirectional-override character must not drive
the user's terminal. Every string and :class:`~rich.text.Text` this console prints passes
through :func:`escape_controls`, which shows such characters as visible escapes.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleRenderable, RenderHook
from rich.text import Text

from draftfit.escape import UNSAFE_CHARACTERS, escape_controls, guard_line_starts, strip_line_ends

if TYPE_CHECKING:
    from typing import IO, Any


def _safe_text(text: Text) -> Text:
    """A copy of `text` with :func:`escape_controls` applied, keeping every style."""
    if not re.search(UNSAFE_CHARACTERS, text.plain):
        return text
    cuts = sorted({offset for span in text.spans for offset in (span.start, span.end)})
    safe = Text(style=text.style, justify=text.justify, overflow=text.overflow, end=text.end)
    for piece in text.divide(cuts):
        part = Text(escape_controls(piece.plain))
        for span in piece.spans:
            part.stylize(span.style)
        safe.append_text(part)
    return safe


class _EscapeHook(RenderHook):
    """Escapes control characters in every top-level Text before it is rendered."""

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        return [_safe_text(r) if isinstance(r, Text) else r for r in renderables]


class SafeConsole(Console):
    """A console whose plain strings (table cells included) are escaped too."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(escape_controls(text), **kwargs)


# The width of a console that is not a terminal: wide enough that no table cell is folded.
UNWRAPPED_WIDTH = 1_000_000


def make_console(file: IO[str] | None = None, color: bool | None = None) -> Console:
    """A console writing to `file` (a buffer by default), never interpreting markup.

    Output that is not a terminal is not wrapped, so lines stay greppable: long lines are
    kept whole, and tables are laid out as wide as their longest cells need
    (:func:`render_to_string` then drops the padding at line ends).
    """
    target = file if file is not None else io.StringIO()
    if color is None:
        color = sys.stdout.isatty() and "NO_COLOR" not in os.environ
    console = SafeConsole(
        file=target,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=not color,
        width=None if color else UNWRAPPED_WIDTH,
    )
    console.push_render_hook(_EscapeHook())
    return console


def render_to_string(draw: Callable[[Console], None], color: bool = False) -> str:
    """Run `draw(console)` against a buffer and return what it printed."""
    buffer = io.StringIO()
    console = make_console(buffer, color)
    draw(console)
    if color:
        return guard_line_starts(buffer.getvalue())
    # Without colour nothing here is a legitimate escape sequence: escape whatever a
    # renderable nested deeper than the hook sees (a Text inside a table cell) still holds.
    # Table cells are padded to their column's width; the padding at a line's end is noise
    # in a pipe (`grep`, `diff`), so it goes. No line may read as a workflow command.
    return guard_line_starts(strip_line_ends(escape_controls(buffer.getvalue())))


__all__ = ["escape_controls", "make_console", "render_to_string"]
