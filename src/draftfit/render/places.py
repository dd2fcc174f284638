"""Where a finding points, as CI formats want it: a path relative to the current directory
and, for a key of `config.json`, the line of that key.

Only local checkpoints have such places; a Hub checkpoint's findings carry no file path (a
CI annotation cannot point into a Hub repository). `config.json` is only read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from draftfit.json_lines import line_of, pointer_lines
from draftfit.location import Location

CONFIG_FILE = "config.json"


@dataclass(frozen=True)
class Place:
    """A file path (POSIX, relative to the current directory) and a 1-based line, if known."""

    path: str | None = None
    line: int | None = None


def place_of(draft_source: str, location: Location) -> Place:
    """The place of a finding with `location` in the checkpoint named `draft_source`."""
    if location.file is None:
        return Place()
    folder = Path(draft_source)
    try:
        if not folder.is_dir():
            return Place()
    except OSError:
        return Place()
    file_path = folder / location.file
    relative = Path(os.path.relpath(file_path)).as_posix()
    line = None
    if location.file == CONFIG_FILE and location.pointer is not None:
        line = line_of(_lines_now(file_path), location.pointer)
    return Place(relative, line)


def _lines_now(path: Path) -> dict[str, int]:
    try:
        stat = path.stat()
    except OSError:
        return {}
    return _lines(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _lines(path: str, _mtime_ns: int, _size: int) -> dict[str, int]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return pointer_lines(text)
