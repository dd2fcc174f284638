"""Which files a piece of code opens: the `open` audit events of this process (every
`open()`, `io.open` and `os.open`), recorded for the paths under one folder.

An audit hook cannot be removed once added, so one hook is added on first use and records
only while a :func:`files_opened` block is active.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_watched: list[tuple[str, list[str]]] = []
_installed = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _watched or not args:
        return
    path = args[0]
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        return  # a file descriptor
    with _lock:
        for folder, found in _watched:
            if path.startswith(folder):
                found.append(path[len(folder) :])


@contextmanager
def files_opened(folder: Path) -> Iterator[list[str]]:
    """The names (relative to `folder`) of the files opened under `folder` inside the
    block, in order, once for each opening."""
    global _installed
    with _lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
    found: list[str] = []
    entry = (str(folder.resolve()) + os.sep, found)
    alias = (str(folder) + os.sep, found)
    with _lock:
        _watched.extend([entry, alias] if alias[0] != entry[0] else [entry])
    try:
        yield found
    finally:
        with _lock:
            _watched[:] = [w for w in _watched if w[1] is not found]


__all__ = ["files_opened"]
