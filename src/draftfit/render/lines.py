"""Line-by-line text output that loads rich only when it colours.

Most text output is read in a pipe, a CI log or a file, where it is plain: lines of text,
never wrapped. A renderer built on :class:`Styled` lines and a :class:`LinePrinter` writes
those lines directly; only when colour is on (a terminal without NO_COLOR, or colour asked
for) are the lines handed to the rich console of :mod:`draftfit.render.console`, styles and
terminal wrapping included. Either way every character from a checkpoint, a path or a
setting is shown escaped (:func:`~draftfit.escape.escape_controls`), and no line can read
as a CI workflow command (:func:`~draftfit.escape.guard_line_starts`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from draftfit.escape import escape_controls, guard_line_starts, strip_line_ends

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


class Styled:
    """Text with a base style and styled pieces (rich style names such as "bold red"),
    the part of rich's `Text` the text renderers use, without loading rich."""

    __slots__ = ("base", "pieces")

    def __init__(self, text: str = "", style: str | None = None) -> None:
        self.base = style
        self.pieces: list[tuple[str, str | None]] = [(text, None)] if text else []

    def append(self, text: str, style: str | None = None) -> Styled:
        """Add `text` (in `style`, over the base style) at the end."""
        self.pieces.append((text, style))
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.pieces)

    def to_rich(self) -> Text:
        """The same text as rich's `Text`, for a colour console."""
        from rich.text import Text

        text = Text(style=self.base or "")
        for piece, style in self.pieces:
            text.append(piece, style=style)
        return text


if TYPE_CHECKING:
    from typing import Protocol

    class LinePrinter(Protocol):
        """What a renderer prints through: a line (plain or styled), or an empty line (a
        type only: anything with this `print` will do)."""

        def print(self, line: Styled | str = "", *, soft_wrap: bool | None = None) -> None: ...


class _PlainPrinter:
    """Collects plain lines: no styles, no wrapping."""

    def __init__(self) -> None:
        self.chunks: list[str] = []

    def print(self, line: Styled | str = "", *, soft_wrap: bool | None = None) -> None:
        self.chunks.append(line if isinstance(line, str) else line.plain)
        self.chunks.append("\n")


class RichPrinter:
    """Prints each line through a rich console (styles, and wrapping where it wraps)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def print(self, line: Styled | str = "", *, soft_wrap: bool | None = None) -> None:
        item = line.to_rich() if isinstance(line, Styled) else line
        self.console.print(item, soft_wrap=soft_wrap)


def render_lines(draw: Callable[[LinePrinter], None], color: bool = False) -> str:
    """Run `draw(printer)` and return what it printed: through rich when `color`, else as
    plain lines, escaped and with no blanks at line ends (as a pipe wants them)."""
    if color:
        from draftfit.render.console import render_to_string

        return render_to_string(lambda console: draw(RichPrinter(console)), color=True)
    printer = _PlainPrinter()
    draw(printer)
    return guard_line_starts(strip_line_ends(escape_controls("".join(printer.chunks))))


__all__ = ["RichPrinter", "Styled", "render_lines"]
