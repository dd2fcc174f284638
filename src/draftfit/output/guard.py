"""Where draftfit may write: never onto something it must not replace.

A report (`--output-file`) is written only to a regular file or a new path, and a converted
draft (`convert -o`) only to a folder or a new path. Anything else is refused with one line
before the command does its work, and nothing is written:

* a symbolic link (dangling or not): draftfit does not write through it to wherever it points;
* a FIFO, a socket, a device node (or, for a report, a directory): replacing it would destroy
  what it stands for (`--output-file /dev/null` as root would replace the system's
  `/dev/null`);
* a path inside an input checkpoint folder or the target folder, or a file draftfit reads in
  this run (a settings file, a `--serve-config` file): the report would overwrite its input;
* a path anywhere inside the Hugging Face cache folder of an input (`models--OWNER--NAME`:
  its `blobs/`, `refs/` and `snapshots/`), when an input is one of its snapshots: a
  snapshot's files are links into `blobs/`, so replacing a blob replaces the input;
* the same file as an input by identity (device and inode): a hard link of a checkpoint's
  `config.json`, of a blob, or of a settings file, and a folder that is an input folder
  reached another way (a bind mount).

Paths are compared after resolving symbolic links in their folders (realpath), so a second
name for an input folder is recognised, and then by identity, so a second name for an
input file is too.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from draftfit.errors import UsageError
from draftfit.records import field, record

# What a file that is not a regular file is called in a refusal.
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


@record
class Inputs:
    """What a command reads, each with the words that name it in a refusal: folders (the
    checkpoints, the target, the Hugging Face cache folders they lie in) and single files
    (settings files, a launch's files)."""

    folders: list[tuple[Path, str]] = field(default_factory=list)
    files: list[tuple[Path, str]] = field(default_factory=list)

    def add_path(self, text: str | Path | None, role: str = "the checkpoint") -> None:
        """A draft, reference or target argument: its folder when it names a local one
        (a file named instead counts with the folder holding it), and the Hugging Face
        cache folder that folder is a snapshot of; a Hub id adds nothing."""
        if text is None or not os.path.exists(text):
            return
        path = Path(text)
        folder = path if path.is_dir() else path.parent
        self.folders.append((folder, f"{role} {folder}"))
        self._add_cache_of(folder, f"{role} {folder}")

    def add_file(self, text: str | Path | None, role: str) -> None:
        """A file read in this run (only when it exists: a Hub id or inline JSON is none)."""
        if text is not None and os.path.isfile(text):
            self.files.append((Path(text), f"{role} {text}"))
            self._add_cache_of(Path(text).parent, f"{role} {text}")

    def _add_cache_of(self, folder: Path, role: str) -> None:
        cache = cache_repository(folder)
        if cache is not None and all(cache != known for known, _ in self.folders):
            self.folders.append((cache, f"the Hugging Face cache folder {cache} of {role}"))


# Where a Hugging Face cache repository keeps its files, and the prefixes of its folder name.
_CACHE_PARTS = frozenset({"snapshots", "blobs", "refs"})
_CACHE_PREFIXES = ("models--", "datasets--", "spaces--")
#: Entries of the input folders compared by identity with an output that already exists.
#: Checkpoints hold a few dozen files (at most 4,096 weight files); past this many the
#: comparison stops, and an output with other names (a hard link) is refused as unsure.
MAX_COMPARED_ENTRIES = 20_000


def cache_repository(path: str | Path) -> Path | None:
    """The Hugging Face cache repository folder (`…/models--OWNER--NAME`) that `path` lies
    in (under its `snapshots/`, `blobs/` or `refs/`), as written or with its links
    resolved; None when it lies in none."""
    for form in (Path(os.path.abspath(path)), real_path(path)):
        for folder in (form, *form.parents):
            parent = folder.parent
            if (
                folder.name in _CACHE_PARTS
                and parent.name.startswith(_CACHE_PREFIXES)
                and not parent.name.endswith("--")
            ):
                return parent
    return None


def kind_of(mode: int) -> str | None:
    """'a FIFO', 'a directory', ... for a file that is not regular; None for a regular one."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def real_path(path: str | Path) -> Path:
    """`path` absolute, with the symbolic links in it resolved as far as they go."""
    return Path(os.path.realpath(path))


def refuse_link_or_special(path: str | Path, what: str, folder_ok: bool = False) -> None:
    """Refuse `path` when it exists as a symbolic link or as anything but a regular file
    (or, with `folder_ok`, a folder). `what` names it in the message (e.g. "--output-file")."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return  # a new path (a missing parent folder is reported when it is written)
    if stat.S_ISLNK(mode):
        itself = "folder" if folder_ok else "file"
        raise UsageError(
            f"{what} {path} is a symbolic link; draftfit does not write through links "
            f"(name the {itself} itself, or a new path)"
        )
    if folder_ok and stat.S_ISDIR(mode):
        return
    kind = kind_of(mode)
    if kind is not None:
        wanted = "a folder or a new path" if folder_ok else "a regular file or a new path"
        raise UsageError(f"{what} {path} is {kind}; draftfit writes only to {wanted}")


def refuse_inputs(path: str | Path, what: str, inputs: Inputs) -> None:
    """Refuse `path` when it is, or lies inside, something this run reads: by its path
    (symbolic links in its folders resolved), then by identity (device and inode), so that
    a hard link of an input file or a second mount of an input folder counts too."""
    real = real_path(path)
    for folder, role in inputs.folders:
        inside = real_path(folder)
        if real == inside or inside in real.parents:
            raise UsageError(f"{what} {path} is inside {role}, an input; write it elsewhere")
    for read, role in inputs.files:
        if real == real_path(read):
            raise UsageError(f"{what} {path} is {role}, an input; write it elsewhere")
    _refuse_inside_by_identity(path, real, what, inputs)
    refuse_same_file(path, what, inputs)


def _identity(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of what `path` leads to (links followed); None when it is absent."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return status.st_dev, status.st_ino


def _refuse_inside_by_identity(path: str | Path, real: Path, what: str, inputs: Inputs) -> None:
    """Refuse `path` when it, or a folder above it, is an input folder by identity."""
    folders: dict[tuple[int, int], str] = {}
    for folder, role in inputs.folders:
        key = _identity(folder)
        if key is not None:
            folders.setdefault(key, role)
    if not folders:
        return
    for step in (real, *real.parents):
        found = folders.get(_identity(step) or (-1, -1))
        if found is not None:
            raise UsageError(f"{what} {path} is inside {found}, an input; write it elsewhere")


def refuse_same_file(path: str | Path, what: str, inputs: Inputs) -> None:
    """Refuse an existing regular file `path` that is an input file by identity: one of
    the files named, or a file in (or linked from) an input folder. A new path is no
    input."""
    try:
        status = os.lstat(path)
    except (OSError, ValueError):
        return
    if not stat.S_ISREG(status.st_mode):
        return
    key = (status.st_dev, status.st_ino)
    for read, role in inputs.files:
        if _identity(read) == key:
            raise UsageError(
                f"{what} {path} is the same file as {role} (another name for it), an input; "
                "write it elsewhere"
            )
    seen = 0
    for folder, role in inputs.folders:
        for entry in _files_under(folder):
            seen += 1
            if seen > MAX_COMPARED_ENTRIES:
                if status.st_nlink > 1:
                    raise UsageError(
                        f"{what} {path} has other names (hard links), and the inputs hold "
                        f"more than {MAX_COMPARED_ENTRIES} files to compare it with; write "
                        "it elsewhere"
                    )
                return
            if _identity(entry) == key:
                raise UsageError(
                    f"{what} {path} is the same file as {entry}, in {role} (another name "
                    "for it), an input; write it elsewhere"
                )


def _files_under(folder: Path) -> Iterable[str]:
    """The entries under `folder` that are not folders (links included: they are compared
    by what they lead to), without following linked folders."""
    for where, _folders, files in os.walk(folder):
        for name in files:
            yield os.path.join(where, name)


def check_output_file(path: str | Path, inputs: Inputs) -> None:
    """Refuse a `--output-file` that is not a regular file or a new path, or that is an
    input of this run (see the module docstring)."""
    what = "--output-file"
    refuse_link_or_special(path, what)
    refuse_inputs(path, what, inputs)


def files_in_command(command: str | None) -> Iterable[str]:
    """The words of a launch command (`--serve-args`) that name existing files: what
    reading that launch may open (e.g. `--extra_llm_api_options FILE`)."""
    if not command:
        return []
    from draftfit.shell_text import split_command  # only a launch command needs it

    try:
        words = split_command(command)
    except ValueError:
        words = command.split()
    names = []
    for word in words:
        value = word.split("=", 1)[1] if word.startswith("-") and "=" in word else word
        if value and os.path.isfile(value):
            names.append(value)
    return names
