"""A command line read as a POSIX shell reads it: the words of `--serve-args`.

:mod:`shlex` splits words, quotes and escapes as the shell does, but not the line
continuation: the shell removes a backslash followed by a newline (outside single quotes),
joining the lines, while `shlex` keeps the newline as a word of its own (outside quotes) or
as part of a word. A launch pasted with its ` \\`-newline continuations (as the serve
recipes print them) is one command to the shell, and is read here the same way.
"""

from __future__ import annotations

__all__ = ["join_continuations", "split_command"]


def join_continuations(text: str) -> str:
    """`text` with every line continuation removed as a POSIX shell removes it: a backslash
    followed by a newline, outside single quotes (inside double quotes too). Inside single
    quotes both stay; an escaped backslash (`\\\\`) does not start one."""
    if "\\\n" not in text:
        return text
    out: list[str] = []
    quote = ""  # the open quote: "", "'" or '"'
    i = 0
    while i < len(text):
        char = text[i]
        if quote == "'":
            if char == "'":
                quote = ""
        elif char == "\\" and i + 1 < len(text):
            if text[i + 1] == "\n":
                i += 2  # the continuation: both go
                continue
            out.append(text[i : i + 2])  # an escaped character stays as written
            i += 2
            continue
        elif char in "'\"":
            if not quote:
                quote = char
            elif char == quote:
                quote = ""
        out.append(char)
        i += 1
    return "".join(out)


def split_command(text: str) -> list[str]:
    """The words a POSIX shell makes of `text` (a `#` is not a comment: a launch's values may
    hold one); a ValueError for an unclosed quote, as :func:`shlex.split` raises."""
    import shlex  # here, not at import: only a launch command is split

    return shlex.split(join_continuations(text), comments=False)
