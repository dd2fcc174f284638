"""How the reader reaches a checkpoint's files: a local directory, or a remote repository.

The reader only ever needs a file's size, a byte range of it, and (for small JSON files) its
whole content, so local directories and Hub repositories (see :mod:`draftfit.hub`) share one
code path. Failures raise `OSError`; the reader turns them into damage.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol


class FileAccess(Protocol):
    """Read access to the files of one checkpoint directory."""

    #: How many bytes to fetch with the first read of a safetensors file. Remote sources
    #: fetch the whole header in one request when it is small; local ones read exactly.
    prefetch: int

    def size(self, rel: str) -> int: ...

    def read_range(self, rel: str, start: int, end: int) -> bytes: ...

    def read_all(self, rel: str) -> bytes: ...

    def local_path(self, rel: str) -> Path | None: ...


class LocalAccess:
    """Files of a local directory."""

    prefetch = 8

    def __init__(self, root: Path) -> None:
        self.root = root

    def size(self, rel: str) -> int:
        return (self.root / rel).stat().st_size

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        with (self.root / rel).open("rb") as handle:
            handle.seek(start)
            return handle.read(max(end - start, 0))

    def read_all(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def local_path(self, rel: str) -> Path | None:
        return self.root / rel
