"""The output folder of `draftfit convert`: what may be replaced, and how, without data loss.

draftfit writes a marker file, `.draftfit-convert.json`, into every output it makes: the
source, the convention, the engine versions, a hash of the plan, the draftfit version, the
time, and the list of files it wrote. The marker is what lets draftfit tell its own output
from a user's folder:

* `--force` replaces an output only when it is empty, or carries the marker and holds
  nothing but the files the marker lists; anything else is refused, naming the foreign
  files, and left untouched.
* Outputs are written into a temporary sibling `.<name>.draftfit-XXXXXXXX` whose marker is
  written first (state `writing`), so a folder left behind by a kill that no cleanup can
  catch (SIGKILL, power loss) is recognised and removed by the next convert to the same
  output. A sibling without the marker, or holding files the marker does not list, is never
  removed.
* The finished folder is swapped into place atomically (`renameat2(RENAME_EXCHANGE)` on
  Linux; elsewhere the old output is renamed aside first): at every instant the output path
  holds either the old output or the new one, complete.

Folders and files are created with the user's usual permissions (`0o777` / `0o666` less
the umask, as `cp` does), so another user or a serving container can read them.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from draftfit.errors import OutputExistsError, UsageError
from draftfit.output.temporary import make_private_folder
from draftfit.records import asdict, field, fields, record

MARKER = ".draftfit-convert.json"
MARKER_PART = MARKER + ".part"  # the marker being rewritten (replaced atomically)
MARKER_FORMAT = "draftfit-convert/1"
WRITING, COMPLETE = "writing", "complete"
SHOWN_FOREIGN = 3  # foreign files named in a refusal before "and N more"
# Longest part of the output's name kept in a temporary sibling's name, so that
# `.<name>.draftfit-XXXXXXXX` stays under the usual 255-byte limit for a file name.
NAME_IN_TEMP = 200


@record
class Marker:
    """What `.draftfit-convert.json` records about one output folder."""

    source: str
    convention: str
    engines: list[str]
    plan_sha256: str
    files: list[str]
    draftfit_version: str
    state: str = WRITING
    created: str = ""
    pid: int = 0
    host: str = ""
    # When that process started (clock ticks after boot) and the boot it ran in: a live
    # process with the same pid but another start is not the writer (the pid was reused).
    started: int = 0
    boot: str = ""
    format: str = MARKER_FORMAT
    extra: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> str:
        data = asdict(self)
        data.pop("extra")
        return json.dumps({**data, **self.extra}, indent=2) + "\n"

    @classmethod
    def read(cls, folder: Path) -> Marker | None:
        """The marker of `folder`, or None when there is none or it is not draftfit's."""
        path = folder / MARKER
        try:
            if path.is_symlink() or not path.is_file():
                return None
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != MARKER_FORMAT:
            return None
        files = data.get("files")
        if not (isinstance(files, list) and all(isinstance(n, str) for n in files)):
            return None
        names = {spec.name for spec in fields(cls)}
        known = {k: data.pop(k) for k in list(data) if k in names}
        try:
            marker = cls(**known, extra=data)
        except TypeError:
            return None
        return marker if marker.well_typed() else None

    def well_typed(self) -> bool:
        """Whether the fields a leftover is judged by have their types (a hand-edited or
        foreign marker may not)."""
        numbers = (self.pid, self.started)
        texts = (self.state, self.host, self.boot)
        return all(type(n) is int for n in numbers) and all(isinstance(t, str) for t in texts)

    def owned(self) -> set[str]:
        """Every name draftfit may have written into a folder carrying this marker."""
        return {n for n in self.files if _plain_name(n)} | {MARKER, MARKER_PART}


def host_name() -> str:
    """This machine's name, as `socket.gethostname()` gives it (on POSIX the kernel's node
    name, read without loading the socket module: some 15 ms of every convert's start)."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket  # pragma: no cover - Windows

    return socket.gethostname()


def write_marker(folder: Path, marker: Marker) -> None:
    """Write (or atomically replace) the marker of `folder`, synced to disk."""
    if not marker.created:
        marker.created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    marker.pid, marker.host = os.getpid(), host_name()
    marker.started, marker.boot = process_start(marker.pid), boot_id()
    part = folder / MARKER_PART
    with part.open("w", encoding="utf-8") as handle:
        handle.write(marker.to_json())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(part, folder / MARKER)


def process_start(pid: int) -> int:
    """When process `pid` started, in clock ticks after boot (Linux `/proc`); 0 where that
    cannot be read."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        return int(text.rsplit(")", 1)[1].split()[19])  # field 22, after "(name) state"
    except (OSError, ValueError, IndexError):
        return 0


def boot_id() -> str:
    """This boot of the machine (Linux); '' where unknown."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return ""


# ------------------------------------------------------------------ what may be replaced


def check_output_path(source: Path, out: Path, force: bool) -> None:
    """Refuse an output that is a symbolic link (even a dangling one) or a special file, an
    output inside the input, the input itself, or a folder draftfit may not replace:
    non-empty without `force`, or (with `force`) holding files draftfit did not write."""
    from draftfit.output.guard import refuse_link_or_special

    with contextlib.suppress(OSError):  # ELOOP, ENOTDIR: reported below with their path
        refuse_link_or_special(out, "output", folder_ok=True)
    src = real_path(source)
    dst = real_path(out)
    if dst == src or src in dst.parents:
        raise UsageError(f"output {out} is inside the input checkpoint {source}; choose another")
    if dst in src.parents:
        raise UsageError(f"output {out} contains the input checkpoint {source}; choose another")
    check_replaceable(dst, force, shown=out)


def check_replaceable(out: Path, force: bool, shown: Path | None = None) -> None:
    """Raise :class:`OutputExistsError` unless `out` is absent, empty, or (with `force`) a
    folder that only holds what draftfit wrote into it."""
    shown = shown or out
    try:
        os.lstat(out)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:  # refused now, not after the whole write
            raise OSError(exc.errno, exc.strerror, str(shown)) from None
        return  # absent (a parent that is not a folder is reported when it is made)
    if out.is_symlink():
        raise OutputExistsError(
            f"output {shown} is a symbolic link; draftfit does not write through links "
            "(name the folder itself, or a new path)"
        )
    if not out.is_dir():
        raise OutputExistsError(f"output {shown} exists and is not a directory")
    entries = sorted(p.name for p in out.iterdir())
    if not entries:
        return
    marker = Marker.read(out)
    foreign = foreign_entries(out, entries, marker)
    if not force:
        hint = (
            "use --force to replace it"
            if not foreign
            else "it holds files draftfit did not write; choose another output"
        )
        raise OutputExistsError(f"output {shown} exists and is not empty ({hint})")
    if foreign and marker is None:
        raise OutputExistsError(
            f"output {shown} is not a draftfit output (no {MARKER}) and holds "
            f"{_first(foreign)}; --force replaces only a folder draftfit wrote, or an empty one"
        )
    if foreign:
        raise OutputExistsError(
            f"output {shown} holds {len(foreign)} file(s) draftfit did not write: "
            f"{_first(foreign)}; --force replaces only what draftfit wrote"
        )


def foreign_entries(folder: Path, entries: Iterable[str], marker: Marker | None) -> list[str]:
    """Entries of `folder` draftfit did not write: all of them without a marker; else those
    the marker does not list, or that are not plain files (a folder, a symlink)."""
    if marker is None:
        return sorted(entries)
    owned = marker.owned()
    foreign = []
    for name in sorted(entries):
        path = folder / name
        if name not in owned or path.is_symlink() or not path.is_file():
            foreign.append(name)
    return foreign


def _first(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_FOREIGN])
    more = len(names) - SHOWN_FOREIGN
    return f"{shown} and {more} more" if more > 0 else shown


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def real_path(path: Path) -> Path:
    """`path` absolute with symlinks resolved as far as they go (a symlink loop is left in
    place for the OS to report as ELOOP, rather than raised as a RuntimeError)."""
    return Path(os.path.realpath(path))


def real_output_path(out: Path) -> Path:
    """`out` absolute with the symlinks of its folders resolved, but not `out` itself: a
    link at the output's own name is refused, never followed to where it points."""
    if out.name in ("", ".", ".."):
        return real_path(out)
    return real_path(out.parent) / out.name


def make_parent(folder: Path) -> None:
    """Create `folder` and its parents (user's usual permissions); when something in the
    way is not a folder, raise the precise OS error for it (ENOTDIR, ELOOP) with its path."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        for path in [*reversed(folder.parents), folder]:
            try:
                mode = os.stat(path).st_mode  # ELOOP and others propagate with the path
            except FileNotFoundError:
                break
            if not stat.S_ISDIR(mode):
                code = errno.ENOTDIR
                raise NotADirectoryError(code, os.strerror(code), str(path)) from None
        raise


# ------------------------------------------------------------------ temporary siblings


def temp_prefix(out: Path) -> str:
    """The name every temporary sibling of `out` starts with."""
    return f".{out.name[:NAME_IN_TEMP]}.draftfit-"


def make_temp_folder(out: Path) -> Path:
    """A new empty temporary sibling of `out`, with the user's usual folder permissions."""
    tmp = make_private_folder(out.parent, temp_prefix(out))
    os.chmod(tmp, 0o777 & ~current_umask())
    return tmp


def current_umask() -> int:
    """The process umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove_leftovers(out: Path) -> list[Path]:
    """Remove the temporary siblings of `out` that an earlier convert left behind (killed
    before it could clean up); returns them. Only folders carrying the marker, holding
    nothing it does not list, and not being written by a live process are removed."""
    removed = []
    prefix = temp_prefix(out)
    try:
        siblings = sorted(p for p in out.parent.iterdir() if p.name.startswith(prefix))
    except FileNotFoundError:
        return []
    for path in siblings:
        if path.is_symlink() or not path.is_dir():
            continue
        marker = Marker.read(path)
        if marker is None or _in_progress(marker):
            continue
        if foreign_entries(path, (p.name for p in path.iterdir()), marker):
            continue
        if remove_owned(path, marker.owned()):
            removed.append(path)
    return removed


def _in_progress(marker: Marker) -> bool:
    """Whether another live process on this machine is still writing that folder: the
    marker's pid is running, and (where the marker says when its writer started) it is the
    same process, not a later one that was given the same pid, in the same boot."""
    if marker.state != WRITING or marker.pid == os.getpid():
        return False
    if marker.host != host_name():
        return True  # cannot tell from here: leave it
    if marker.pid <= 0 or (marker.boot and boot_id() not in ("", marker.boot)):
        return False  # no writer named, or the machine has restarted since
    try:
        os.kill(marker.pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        pass
    return not marker.started or process_start(marker.pid) in (0, marker.started)


def remove_owned(folder: Path, names: Iterable[str]) -> bool:
    """Delete the files `names` from `folder`, then the folder if that emptied it; never
    anything else. The marker goes last, so a folder whose removal is cut short stays
    recognisable. Best effort (nothing raised); returns whether the folder is gone."""
    listed = list(dict.fromkeys(names))
    markers = [n for n in (MARKER_PART, MARKER) if n in listed]
    ordered = [n for n in listed if n not in markers] + markers
    for name in ordered:
        if not _plain_name(name):
            continue
        path = folder / name
        with contextlib.suppress(OSError):
            if path.is_symlink() or not path.is_dir():
                path.unlink()
    try:
        folder.rmdir()
    except OSError:
        return False
    return True


# ------------------------------------------------------------------ the swap


def swap_into_place(new: Path, out: Path, force: bool) -> Path | None:
    """Put the finished folder `new` at `out`; returns where the previous output now lies
    (a sibling to remove), or None when there was none."""
    check_replaceable(out, force)
    if not os.path.lexists(out):
        os.rename(new, out)
        return None
    if not any(out.iterdir()):
        os.rename(new, out)  # replaces an empty folder atomically
        return None
    if _exchange(new, out):
        return new
    aside = make_private_folder(out.parent, temp_prefix(out))
    os.rmdir(aside)
    os.rename(out, aside)
    try:
        os.rename(new, out)
    except BaseException:
        os.rename(aside, out)
        raise
    return aside


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(first: Path, second: Path) -> bool:
    """Atomically swap two paths with Linux `renameat2(RENAME_EXCHANGE)`; False where that
    call is not available (another OS, old libc or kernel, a filesystem without it)."""
    import ctypes  # here, not at import: ctypes.util loads subprocess
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError, TypeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    result = renameat2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(second))


# ------------------------------------------------------------------ signals


TERMINATING = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold back SIGINT, SIGTERM and SIGHUP while the block runs (a swap, a cleanup), so
    it is never cut in half; a signal that arrives meanwhile is delivered at the end."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - Windows
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, TERMINATING)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def sync_folder(folder: Path) -> None:
    """fsync a folder, so renames and new entries in it survive a crash (where possible)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms that cannot open folders
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
