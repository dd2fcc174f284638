"""New temporary files and folders beside an output, under names no one else holds.

What `tempfile.mkstemp` / `tempfile.mkdtemp` do (a random name, created exclusively, private
to the user), without importing `tempfile`: it loads `shutil` and `random`, with `bz2`,
`lzma` and friends (~4 ms at every `convert` start, a tenth of its time outside the copy).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

# Names tried before giving up: a clash needs 64 random bits to repeat.
_ATTEMPTS = 100


def _names(folder: Path, prefix: str, suffix: str) -> Iterator[Path]:
    """Up to `_ATTEMPTS` random names, each made only when the one before was taken."""
    for _ in range(_ATTEMPTS):
        yield folder / f"{prefix}{os.urandom(8).hex()}{suffix}"


def make_private_folder(folder: Path, prefix: str) -> Path:
    """A new empty folder in `folder` named `prefix` + random characters, mode 0o700."""
    for path in _names(folder, prefix, ""):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no unused temporary name in {folder}")


def open_private_file(folder: Path, prefix: str, suffix: str) -> tuple[int, Path]:
    """A new empty file in `folder` named `prefix` + random characters + `suffix`, mode
    0o600, opened for writing; returns its descriptor and path."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    flags |= getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    for path in _names(folder, prefix, suffix):
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {folder}")
