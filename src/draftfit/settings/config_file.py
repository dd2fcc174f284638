"""draftfit's own settings file: where it is found and what it may say.

A project keeps its rule selection next to its checkpoints, the way ruff keeps its settings
in `ruff.toml` or `pyproject.toml`. Discovery starts in the checkpoint's folder (for a Hub
checkpoint, in the current directory) and walks up through its parents:

* in each folder, `draftfit.toml` is used if present, else `pyproject.toml` if it has a
  `[tool.draftfit]` table (a `pyproject.toml` without one is passed over);
* the first folder that has either wins — settings are not merged across folders;
* the walk stops after the repository root (the first folder that holds `.git` or `.hg`)
  or after the user's home folder, whichever comes first (outside both, at the filesystem
  root);
* a shared temporary folder (writable by every user, with the sticky bit: `/tmp`,
  `/var/tmp`, `/dev/shm`) is never searched and ends the walk: a settings file there could
  have been put by anyone, and would decide which findings count for everyone below it;
* the walk follows the path as the user named it: a checkpoint reached through a
  symlinked folder gets the settings of the folders it was named in, not of the link's
  target.

`draftfit.toml` holds the keys at its top level, `pyproject.toml` under `[tool.draftfit]`:

    select = ["DF"]                 # rules that count (default: every rule)
    extend-select = []              # added to `select`
    ignore = ["DF903"]              # rules that do not count, without a reason, or:

    [ignore]                        # ([tool.draftfit.ignore] in pyproject.toml)
    DF108 = "our serving stack sets the architecture itself"

    [per-checkpoint-ignores]        # like ruff's per-file-ignores, for checkpoint folders
    "drafts/kimi-*" = ["DF105"]     # glob on the folder's path relative to this file's folder
    "drafts/old" = { DF3 = "trained before the aux-id fix; kept for comparison" }

    draft-is-for-target = true      # the drafts below were trained for the target they are
                                    # checked with, whatever verifier they record (DF507);
                                    # or a list of globs as above: ["drafts/kimi-*"]

(`draft-is-for-target` sits at the top level: in a `draftfit.toml`, before any table.)

Selectors are a code (`DF108`), a code prefix (`DF1`, `DF` for every rule, or `ALL`) or a
rule name (`method-mismatch`). The file is only read: TOML is parsed with tomllib (tomli on
Python 3.10), never executed, under the caps of every settings document (1 MiB, nesting,
number length: :mod:`draftfit.settings_text`).
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint.access import read_regular
from draftfit.errors import UsageError
from draftfit.records import field, frozen
from draftfit.settings_text import MAX_SETTINGS_BYTES, load_toml

if TYPE_CHECKING:
    from typing import Any

DRAFTFIT_TOML = "draftfit.toml"
REPOSITORY_MARKERS = (".git", ".hg")
PYPROJECT_TOML = "pyproject.toml"
DRAFT_IS_FOR_TARGET = "draft-is-for-target"
KEYS = ("select", "extend-select", "ignore", "per-checkpoint-ignores", DRAFT_IS_FOR_TARGET)


@frozen
class FileSettings:
    """The rule selection one settings file states.

    Attributes:
        path: the file read.
        select: selectors of the rules that count; None when the file does not say.
        extend_select: selectors added to `select`.
        ignore: selector -> reason (None when the file gives none), in file order.
        per_checkpoint: (glob, {selector -> reason}) pairs: ignores for the checkpoint
            folders whose path relative to the file's folder matches the glob.
        draft_is_for_target: `draft-is-for-target`: True for every checkpoint below the
            file, or the globs of the checkpoint folders it is said for (empty: none).
    """

    path: Path
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: Mapping[str, str | None] = field(default_factory=dict)
    per_checkpoint: tuple[tuple[str, Mapping[str, str | None]], ...] = ()
    draft_is_for_target: bool | tuple[str, ...] = False

    def declares_draft_for_target(self, checkpoint: Path | None) -> bool:
        """Whether the file says the checkpoint folder `checkpoint` was trained for the
        target it is checked with (`True` covers a Hub checkpoint too; a list of globs only
        the local folders it matches)."""
        said = self.draft_is_for_target
        if isinstance(said, bool):
            return said
        if checkpoint is None:
            return False
        relative = _relative(checkpoint, self.path.parent)
        if relative is None:
            return False
        return any(fnmatch.fnmatchcase(relative.as_posix(), p.strip("/")) for p in said)

    def ignores_for(self, checkpoint: Path | None) -> dict[str, str | None]:
        """The file's ignores that apply to the checkpoint folder `checkpoint` (None: a Hub
        checkpoint, to which only the general `ignore` applies)."""
        out = dict(self.ignore)
        if checkpoint is None:
            return out
        relative = _relative(checkpoint, self.path.parent)
        if relative is None:
            return out
        for pattern, ignores in self.per_checkpoint:
            if fnmatch.fnmatchcase(relative.as_posix(), pattern.strip("/")):
                out.update(ignores)
        return out


def _relative(checkpoint: Path, folder: Path) -> Path | None:
    """`checkpoint`'s path below `folder`, as named (a symlinked folder keeps its name), else
    with both resolved; None when it is not below."""
    for mine, theirs in (
        (named_path(checkpoint), named_path(folder)),
        (checkpoint.resolve(), folder.resolve()),
    ):
        try:
            return mine.relative_to(theirs)
        except ValueError:
            continue
    return None


def named_path(path: Path) -> Path:
    """`path` made absolute without resolving symlinks (`..` is taken lexically)."""
    return Path(os.path.abspath(path))


@frozen
class Discovery:
    """Where discovery looked: the file found (or None), the folders searched in order, and
    why the walk ended there (`repository root (.git)`, `home folder`, `shared folder
    (writable by every user)`, `filesystem root`, or `found`)."""

    found: Path | None
    searched: tuple[Path, ...]
    stop: str


def discover(start: Path) -> Path | None:
    """The settings file that applies to a checkpoint in `start`, or None (see module doc)."""
    return discover_from(start).found


def discover_from(start: Path) -> Discovery:
    """The settings file that applies to a checkpoint in `start`, and where the walk went."""
    folder = named_path(start)
    if not folder.is_dir():
        folder = folder.parent
    homes = _home_folders()
    searched: list[Path] = []
    for candidate in (folder, *folder.parents):
        if _shared(candidate):
            return Discovery(None, tuple(searched), "shared folder (writable by every user)")
        searched.append(candidate)
        found = _settings_in(candidate)
        if found is not None:
            return Discovery(found, tuple(searched), "found")
        marker = next((m for m in REPOSITORY_MARKERS if (candidate / m).exists()), None)
        if marker is not None:
            return Discovery(None, tuple(searched), f"repository root ({marker})")
        if candidate in homes:
            return Discovery(None, tuple(searched), "home folder")
    return Discovery(None, tuple(searched), "filesystem root")


def _shared(folder: Path) -> bool:
    """Whether `folder` is a shared temporary folder like `/tmp`: writable by every user,
    with the sticky bit (each user's files their own). Its settings are not trusted."""
    shared = stat.S_IWOTH | stat.S_ISVTX
    try:
        return os.stat(folder).st_mode & shared == shared
    except OSError:
        return False


def _settings_in(folder: Path) -> Path | None:
    """`draftfit.toml` in `folder`, else its `pyproject.toml` when that has [tool.draftfit]."""
    own = folder / DRAFTFIT_TOML
    if own.is_file():
        return own
    pyproject = folder / PYPROJECT_TOML
    if pyproject.is_file() and _pyproject_table(pyproject) is not None:
        return pyproject
    return None


def _home_folders() -> set[Path]:
    """The user's home folder, as named and resolved (empty when there is none)."""
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # no HOME and no password entry
        return set()
    if not home.is_absolute():
        return set()
    return {named_path(home), home.resolve()}


def load(path: Path) -> FileSettings:
    """Read the settings in `path` (a draftfit.toml or a pyproject.toml); a file that cannot
    be read or says something draftfit does not understand is a usage error."""
    if path.name == PYPROJECT_TOML:
        table = _pyproject_table(path)
        where = "[tool.draftfit]"
        if table is None:
            raise UsageError(f"{path}: no [tool.draftfit] table")
    else:
        table = _read_toml(path)
        where = "top level"
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise UsageError(
            f"{path}: unknown key(s) {', '.join(unknown)} at the {where} "
            f"(draftfit reads {', '.join(KEYS)})"
        )
    return FileSettings(
        path,
        _selectors(path, table, "select") if "select" in table else None,
        _selectors(path, table, "extend-select") if "extend-select" in table else (),
        _ignore(path, table.get("ignore", [])),
        _per_checkpoint(path, table.get("per-checkpoint-ignores", {})),
        _draft_is_for_target(path, table.get(DRAFT_IS_FOR_TARGET, False)),
    )


def _draft_is_for_target(path: Path, value: Any) -> bool | tuple[str, ...]:
    if isinstance(value, bool):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise UsageError(
        f"{path}: `{DRAFT_IS_FOR_TARGET}` must be true, false or a list of checkpoint-folder globs"
    )


def _read_toml(path: Path) -> dict[str, Any]:
    """The TOML in `path`, read bounded (a regular file of at most MAX_SETTINGS_BYTES, its
    nesting, numbers and strings capped: :func:`draftfit.settings_text.load_toml`)."""
    try:
        data = read_regular(path, MAX_SETTINGS_BYTES)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read it ({exc})") from None
    return load_toml(data, str(path))


def _pyproject_table(path: Path) -> dict[str, Any] | None:
    tool = _read_toml(path).get("tool")
    table = tool.get("draftfit") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise UsageError(f"{path}: tool.draftfit must be a table")
    return table


def _selectors(path: Path, table: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{path}: `{key}` must be a list of rule codes, prefixes or names")
    return tuple(value)


#: Globs of `per-checkpoint-ignores`, and characters of one: `fnmatch` turns a glob into a
#: regular expression in time that grows with the square of its length (a glob of a few
#: hundred thousand `[` took minutes), and each glob is matched against every checkpoint.
MAX_GLOBS = 1_000
MAX_GLOB_CHARS = 1_024


def _per_checkpoint(path: Path, value: Any) -> tuple[tuple[str, Mapping[str, str | None]], ...]:
    if not isinstance(value, dict):
        raise UsageError(f"{path}: `per-checkpoint-ignores` must be a table of glob = ignores")
    if len(value) > MAX_GLOBS:
        raise UsageError(f"{path}: `per-checkpoint-ignores` holds more than {MAX_GLOBS} globs")
    if any(len(str(pattern)) > MAX_GLOB_CHARS for pattern in value):
        raise UsageError(
            f"{path}: a glob of `per-checkpoint-ignores` is longer than {MAX_GLOB_CHARS} characters"
        )
    return tuple((str(pattern), _ignore(path, ignores)) for pattern, ignores in value.items())


def _ignore(path: Path, value: Any) -> dict[str, str | None]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return dict.fromkeys(value)
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return dict(value)
    raise UsageError(
        f'{path}: `ignore` must be a list of rule selectors or a table of selector = "reason"'
    )
