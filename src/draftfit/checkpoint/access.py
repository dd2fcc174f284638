"""How the reader reaches a checkpoint's files: a local directory, or a remote repository.

The reader only ever needs a file's size, a byte range of it, and (for small JSON files) its
whole content, so local directories and Hub repositories (see :mod:`draftfit.origins.hub`) share one
code path. Failures raise `OSError`; the reader turns them into damage.

Local reads are confined and never block: a name that climbs out of the folder (`../x`, an
absolute path) or a symlink that resolves outside it is refused with
:class:`OutsideCheckpointError`; files are opened non-blocking and must be regular files,
so a FIFO, a device or a directory where a file is expected is an error, not a hang.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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

    class FolderAccess(FileAccess, Protocol):
        """Read access to one checkpoint directory that can also name its files (a target's
        weights are found by listing them; a draft's reader is given its list instead)."""

        def names(self) -> list[str]:
            """The names of the directory's entries that are not directories, sorted.
            Raises `OSError` (with the directory as its `filename`) when it cannot be listed."""
            ...


class OutsideCheckpointError(OSError):
    """A name or symlink leads outside the checkpoint folder; draftfit does not read there."""


class NotRegularFileError(OSError):
    """A FIFO, a device, a socket or a directory where a file is expected."""


def escapes_folder(rel: str) -> bool:
    """Whether the relative name `rel` climbs out of its folder (absolute, `..`, a drive)."""
    if not rel or "\x00" in rel or rel.startswith(("/", "\\")) or ":" in rel[:3]:
        return True
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    return ".." in parts


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str | Path) -> tuple[int, os.stat_result]:
    """Open `path` for reading without blocking; it must be a regular file, checked before
    it is opened (a FIFO, a device or a socket is never opened) and again once open.

    Returns the descriptor (the caller closes it) and its status. Raises `OSError`
    (:class:`NotRegularFileError` for a FIFO, device, socket or directory).
    """
    # Checked before opening too: opening some devices acts (a tape rewinds, a watchdog
    # arms), and the check after opening catches a file swapped in between.
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(errno.EINVAL, f"{_kind(mode)}, not a regular file", str(path))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFileError(
                errno.EINVAL, f"{_kind(status.st_mode)}, not a regular file", str(path)
            )
    except BaseException:
        os.close(fd)
        raise
    return fd, status


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The content of the regular file at `path`, refusing one above `max_bytes`.

    Raises `OSError`, or `ValueError` naming the size when the file is too large.
    """
    fd, status = open_regular(path)
    try:
        if status.st_size > max_bytes:
            raise ValueError(f"it is {status.st_size} bytes, above the {max_bytes}-byte limit")
        return _pread(fd, 0, max_bytes + 1)
    finally:
        os.close(fd)


def _pread(fd: int, start: int, count: int) -> bytes:
    """Up to `count` bytes from `start`, fewer only at the end of the file."""
    chunks: list[bytes] = []
    while count > 0:
        chunk = os.pread(fd, min(count, 1 << 24), start)
        if not chunk:
            break
        chunks.append(chunk)
        start += len(chunk)
        count -= len(chunk)
    return b"".join(chunks)


class LocalAccess:
    """Files of a local directory, confined to `confine` (default: the directory itself).

    `confine` is wider than `root` only for the Hugging Face cache, whose snapshot files are
    symlinks into the repository's `blobs/` folder.
    """

    prefetch = 8

    def __init__(self, root: Path, confine: Path | None = None) -> None:
        self.root = root
        self._confine = os.path.realpath(confine if confine is not None else root)
        self._where = (
            "the checkpoint folder"
            if confine is None or self._confine == os.path.realpath(root)
            else f"its repository's cache folder ({Path(confine).name})"
        )

    def _checked(self, rel: str) -> Path:
        if escapes_folder(rel):
            raise OutsideCheckpointError(
                errno.EPERM, "the name leads outside the checkpoint folder; not read", rel
            )
        path = self.root / rel
        real = os.path.realpath(path)
        if real != self._confine and not real.startswith(self._confine.rstrip(os.sep) + os.sep):
            try:
                shown = os.readlink(path)  # as written (the resolved path may name a PID)
            except OSError:
                shown = "a path"
            raise OutsideCheckpointError(
                errno.EPERM,
                f"it is a symlink to {shown}, outside {self._where}; not read",
                rel,
            )
        return path

    def size(self, rel: str) -> int:
        fd, status = open_regular(self._checked(rel))
        os.close(fd)
        return status.st_size

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        fd, _ = open_regular(self._checked(rel))
        try:
            return _pread(fd, start, max(end - start, 0))
        finally:
            os.close(fd)

    def read_all(self, rel: str) -> bytes:
        fd, status = open_regular(self._checked(rel))
        try:
            return _pread(fd, 0, status.st_size)
        finally:
            os.close(fd)

    def local_path(self, rel: str) -> Path | None:
        return self._checked(rel)

    def names(self) -> list[str]:
        # every entry but folders: a file that is a FIFO, a device or a link is then read
        # through this access, which refuses it by name, never passed over in silence
        return sorted(p.name for p in self.root.iterdir() if not p.is_dir())


class PlannedAccess:
    """A checkpoint's files with some of them replaced by planned content held in memory
    (a conversion's output that a serve recipe checks before `draftfit convert` writes it):
    the planned names are read from `planned`, every other name from `base`."""

    def __init__(self, base: FileAccess, planned: dict[str, bytes]) -> None:
        self.base = base
        self.planned = planned
        self.prefetch = base.prefetch

    def size(self, rel: str) -> int:
        """The size of `rel`: its planned content's, else the file's."""
        content = self.planned.get(rel)
        return len(content) if content is not None else self.base.size(rel)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        """Bytes `start`..`end` of `rel` (planned or read)."""
        content = self.planned.get(rel)
        return content[start:end] if content is not None else self.base.read_range(rel, start, end)

    def read_all(self, rel: str) -> bytes:
        """All of `rel` (planned or read)."""
        content = self.planned.get(rel)
        return content if content is not None else self.base.read_all(rel)

    def local_path(self, rel: str) -> Path | None:
        """The local file of `rel`; None for a planned one (it has no file yet)."""
        return None if rel in self.planned else self.base.local_path(rel)
