"""Where a finding points, as CI formats want it: a path relative to the current directory
and, for a key of `config.json`, the line of that key.

Only files that exist locally have such places: a Hub checkpoint's findings carry no file
path (a CI annotation cannot point into a Hub repository), and neither do findings about a
tensor the checkpoint lacks. A finding about the target's config points at the target's
`config.json` (or the other target file it names) when the target is a local folder.
`config.json` is only read.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from draftfit.location import CONFIG_FILE, Location
from draftfit.output.json_lines import line_of, pointer_lines
from draftfit.records import frozen


@frozen
class Place:
    """A file path (POSIX, relative to the current directory) and a 1-based line, if known."""

    path: str | None = None
    line: int | None = None


def place_of(draft_source: str, location: Location, target_source: str | None = None) -> Place:
    """The place of a finding with `location` in the checkpoint named `draft_source` (a
    finding about the target's config points into `target_source`'s folder)."""
    if location.file is None:
        return Place()
    folder_name, name = draft_source, location.file
    if location.in_target:
        if target_source is None:
            return Place()
        folder_name = target_source
    file_path = Path(folder_name) / name
    try:
        if not file_path.is_file():
            return Place()
    except OSError:
        return Place()
    relative = Path(os.path.relpath(file_path)).as_posix()
    line = None
    if name == CONFIG_FILE and location.pointer is not None:
        line = line_of(_lines_now(file_path), location.pointer)
    return Place(relative, line)


def location_text(draft_source: str, location: Location, target_source: str | None = None) -> str:
    """`str(location)` with the line of a `config.json` key after the file's name
    (`config.json:44 /transformer_layer_config/head_dim`) where the file is local and holds
    the key, as SARIF and GitHub annotations point at it; else `str(location)`."""
    text = str(location)
    shown = location.shown_file
    if shown is None or location.pointer is None or not text.startswith(shown):
        return text
    line = place_of(draft_source, location, target_source).line
    if line is None:
        return text
    return f"{shown}:{line}{text[len(shown) :]}"


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
