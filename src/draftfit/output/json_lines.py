"""The line of `config.json` a JSON pointer names, for annotations that point at a line.

Python's json module keeps no positions, so this is a small scanner over the same text: it
walks the document once and records, for every object member, the line of its key, and for
every array element, the line where the element starts. A pointer to a key the file does not
have (a finding about a missing field) gets the line of its nearest existing parent.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from json import decoder

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _scan_string(text: str, end: int) -> tuple[str, int]:
    """The JSON string whose body starts at `end` (after the quote), and where it stops."""
    scan = getattr(decoder, "scanstring")  # noqa: B009 - public, though not in the stubs
    found: tuple[str, int] = scan(text, end)
    return found


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.newlines = [i for i, ch in enumerate(text) if ch == "\n"]
        self.lines: dict[str, int] = {}

    def line(self, offset: int) -> int:
        return bisect_right(self.newlines, offset - 1) + 1

    def skip(self, pos: int) -> int:
        match = _WS.match(self.text, pos)
        return match.end() if match else pos

    def value(self, pos: int, pointer: str) -> int:
        pos = self.skip(pos)
        self.lines.setdefault(pointer, self.line(pos))
        ch = self.text[pos : pos + 1]
        if ch == "{":
            return self.members(pos + 1, pointer)
        if ch == "[":
            return self.elements(pos + 1, pointer)
        if ch == '"':
            return _scan_string(self.text, pos + 1)[1]
        for literal in ("true", "false", "null", "NaN", "Infinity", "-Infinity"):
            if self.text.startswith(literal, pos):
                return pos + len(literal)
        match = _NUMBER.match(self.text, pos)
        if match is None:
            raise ValueError(f"unexpected character at offset {pos}")
        return match.end()

    def members(self, pos: int, pointer: str) -> int:
        pos = self.skip(pos)
        if self.text.startswith("}", pos):
            return pos + 1
        while True:
            pos = self.skip(pos)
            key_line = self.line(pos)
            key, pos = _scan_string(self.text, pos + 1)
            child = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
            self.lines[child] = key_line
            pos = self.skip(pos)
            pos = self.value(pos + 1, child)  # past the colon
            pos = self.skip(pos)
            if self.text.startswith("}", pos):
                return pos + 1
            pos += 1  # the comma

    def elements(self, pos: int, pointer: str) -> int:
        pos = self.skip(pos)
        if self.text.startswith("]", pos):
            return pos + 1
        index = 0
        while True:
            pos = self.skip(pos)
            child = f"{pointer}/{index}"
            self.lines[child] = self.line(pos)
            pos = self.value(pos, child)
            pos = self.skip(pos)
            if self.text.startswith("]", pos):
                return pos + 1
            pos += 1
            index += 1


def pointer_lines(text: str) -> dict[str, int]:
    """Every JSON pointer in the document `text` -> its 1-based line ("" is the document).

    Text that is not valid JSON gives an empty mapping (the finding then has no line)."""
    try:
        json.loads(text)
        scanner = _Scanner(text)
        scanner.value(0, "")
    except (ValueError, IndexError, RecursionError):
        return {}
    return scanner.lines


def line_of(lines: dict[str, int], pointer: str) -> int | None:
    """The line of `pointer`, or of its nearest parent present in `lines`."""
    current = pointer
    while True:
        if current in lines:
            return lines[current]
        if not current:
            return None
        current = current.rsplit("/", 1)[0]
