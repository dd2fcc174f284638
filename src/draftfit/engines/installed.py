"""The engines installed where draftfit runs: the default of `--engine`.

Without `--engine`, draftfit checks the vLLM, SGLang and TensorRT-LLM releases installed in
the running Python environment, found by their distribution metadata (the `*.dist-info` or
`*.egg-info` entries of the folders on the search path). Nothing is imported or started, and
only the names the engines are published under (each Engine's `distributions`) are looked
up, never every distribution. An installed release
draftfit has not read is checked against the nearest read one and marked extrapolated, as
`~=` does. With none installed, the default is the newest vLLM draftfit has read, and the
report says so.

`DRAFTFIT_ENGINE_PATH` (folders separated by the path separator) replaces `sys.path` as the
search path; set to an empty value, no engine counts as installed. Each folder it names must
be one (anything else is a usage error); a `sys.path` entry that is not a folder (a zip) is
not searched.

The metadata found is read bounded, as anything else from outside: a regular file only
(checked before it is opened, and opened without blocking: never a FIFO, a device or a
socket), at most :data:`MAX_METADATA_BYTES`, and of it only the `Version` header in the
first :data:`MAX_HEADER_BYTES`; the version must be at most :data:`MAX_VERSION_CHARS`
characters of those a version is written with. Metadata that is none of that is skipped
with one notice naming its path.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from draftfit.checkpoint.access import open_regular
from draftfit.engines.interface import Engine
from draftfit.engines.profile import Profile
from draftfit.engines.registry import (
    DEFAULT_ENGINE,
    ENGINES,
    nearest_read,
    not_read_reason,
    parse_engine_selector,
)
from draftfit.errors import UnknownEngineVersionError, UsageError
from draftfit.output.notices import notice
from draftfit.records import frozen

if TYPE_CHECKING:
    from packaging.version import Version

SEARCH_PATH_ENV = "DRAFTFIT_ENGINE_PATH"


#: Size of a metadata file read. pip's METADATA carries the project's long description (a
#: few tens of KB for the engines); a larger file is not metadata.
MAX_METADATA_BYTES = 16 * 1024 * 1024
#: Bytes read from the start of a metadata file: the headers come first, `Version` among
#: the first lines.
MAX_HEADER_BYTES = 64 * 1024
#: Characters of a version (PEP 440 versions are short: `0.10.2.post1+cu128`).
MAX_VERSION_CHARS = 64
# What a version is written with (PEP 440, local labels included).
_VERSION_CHARACTERS = frozenset(
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.+!_-"
)
_SUFFIXES = (".dist-info", ".egg-info")


@frozen
class Installed:
    """One engine release found in the environment."""

    engine: Engine
    version: str
    distribution: str


def search_path() -> list[str]:
    """Where distributions are looked for: `DRAFTFIT_ENGINE_PATH` when set (each entry must
    be a folder: anything else is a :class:`UsageError`), else `sys.path`."""
    value = os.environ.get(SEARCH_PATH_ENV)
    if value is None:
        return list(sys.path)
    entries = [entry for entry in value.split(os.pathsep) if entry]
    for entry in entries:
        _require_folder(entry)
    return entries


def _require_folder(entry: str) -> None:
    try:
        mode = os.stat(entry).st_mode
    except OSError as exc:
        raise UsageError(
            f"{SEARCH_PATH_ENV}: {entry}: {exc.strerror or exc} (it names the folders "
            "engines are installed in)"
        ) from None
    if not stat.S_ISDIR(mode):
        raise UsageError(
            f"{SEARCH_PATH_ENV}: {entry} is not a folder (it names the folders engines are "
            "installed in, separated by " + repr(os.pathsep) + ")"
        )


def find_installed(path: list[str] | None = None) -> list[Installed]:
    """The engines installed on `path` (default: :func:`search_path`), in registry order:
    for each, the first distribution on the path whose metadata gives a version (metadata
    that cannot be read safely is skipped with a notice)."""
    where = search_path() if path is None else path
    wanted = {_normalized(name): name for engine in ENGINES for name in engine.distributions}
    versions: dict[str, str] = {}
    for entry in where:
        for name, metadata in _candidates(entry, wanted):
            if name in versions:
                continue
            version = _version_in(metadata)
            if version is not None:
                versions[name] = version
    found: list[Installed] = []
    for engine in ENGINES:
        for name in engine.distributions:
            if name in versions:
                found.append(Installed(engine, versions[name], name))
                break
    return found


def _normalized(name: str) -> str:
    """A distribution name as the metadata lookup compares it: lower case, runs of `-`,
    `_` and `.` as one `_`."""
    out: list[str] = []
    for char in name.lower():
        if char in "-_.":
            if not out or out[-1] != "_":
                out.append("_")
        else:
            out.append(char)
    return "".join(out)


def _candidates(entry: str, wanted: dict[str, str]) -> Iterator[tuple[str, str]]:
    """(distribution, metadata file) for each `NAME-VERSION.dist-info` / `.egg-info` entry
    of the folder `entry` whose NAME is one of `wanted` (sorted, so the choice does not
    depend on the order the folder lists them in). A folder that cannot be listed (absent,
    not a folder, a zip) holds none."""
    try:
        with os.scandir(entry or ".") as listing:
            names = [item.name for item in listing if item.name.lower().endswith(_SUFFIXES)]
    except OSError:
        return
    for child in sorted(names):
        stem = child.rpartition(".")[0].partition("-")[0]
        name = wanted.get(_normalized(stem))
        if name is None:
            continue
        path = os.path.join(entry or ".", child)
        try:
            is_folder = stat.S_ISDIR(os.stat(path).st_mode)
        except OSError:
            continue  # a dangling link: nothing installed there
        if not is_folder:
            yield name, path  # an `.egg-info` file is the metadata itself
            continue
        for file in ("METADATA", "PKG-INFO"):
            inside = os.path.join(path, file)
            if os.path.lexists(inside):
                yield name, inside
                break


def _version_in(path: str) -> str | None:
    """The `Version` header of the metadata file at `path`, read bounded (see the module
    docstring); None, after a notice naming the path, when it cannot be read safely."""
    try:
        fd, status = open_regular(path)
    except OSError as exc:
        return _skipped(path, exc.strerror or str(exc))
    try:
        if status.st_size > MAX_METADATA_BYTES:
            return _skipped(path, f"it is above the {MAX_METADATA_BYTES}-byte limit")
        head = os.pread(fd, MAX_HEADER_BYTES, 0)
    except OSError as exc:
        return _skipped(path, exc.strerror or str(exc))
    finally:
        os.close(fd)
    version = _version_header(head.decode("utf-8", "replace"))
    if version is None:
        return _skipped(path, f"no Version header in its first {MAX_HEADER_BYTES} bytes")
    if len(version) > MAX_VERSION_CHARS:
        return _skipped(path, f"its Version is longer than {MAX_VERSION_CHARS} characters")
    if not version or not set(version) <= _VERSION_CHARACTERS:
        return _skipped(path, "its Version is not written with letters, digits and `.+!_-`")
    return version


def _version_header(text: str) -> str | None:
    """The value of the first `Version:` header (headers end at the first blank line)."""
    for line in text.splitlines():
        if not line.strip():
            return None
        key, colon, value = line.partition(":")
        if colon and key.strip().lower() == "version":
            return value.strip()
    return None


def _skipped(path: str, why: str) -> str | None:
    """Say that the metadata at `path` is skipped, and why; None (no version)."""
    notice(f"engine metadata {path} skipped: {why}", warning=True)
    return None


def resolve_engines(specs: Iterable[str] | str | None) -> list[Profile]:
    """`["vllm==0.10.2", "vllm"]` -> profiles, de-duplicated, in the order given (a string is
    one selector). Without any, the engines installed here (:func:`default_profiles`), else
    the newest vLLM, each saying why it was chosen."""
    specs = [specs] if isinstance(specs, str) else list(specs or [])
    if not specs:
        return default_profiles()
    profiles: list[Profile] = []
    seen = set()
    for text in specs:
        for profile in parse_engine_selector(text):
            if profile.label not in seen:
                seen.add(profile.label)
                profiles.append(profile)
    return profiles


def default_profiles(path: list[str] | None = None) -> list[Profile]:
    """The profiles `--engine` defaults to, each saying why it was chosen
    (`Profile.chosen_because`)."""
    installed = find_installed(path)
    profiles = [p for item in installed if (p := installed_profile(item)) is not None]
    if profiles:
        return profiles
    data = DEFAULT_ENGINE.data
    profile = data.resolve(data.latest)
    names = [e.product or e.data.title.split(" (")[0] for e in ENGINES]
    unreadable = [f"{i.engine.data.title} {i.version}" for i in installed]
    found = f" ({', '.join(unreadable)} has no version draftfit can read)" if unreadable else ""
    profile.chosen_because = (
        f"{data.title} {data.latest}, the newest release draftfit has read: none of "
        f"{', '.join(names[:-1])} or {names[-1]} is installed here{found}; --engine chooses "
        "another"
    )
    return [profile]


def installed_profile(item: Installed) -> Profile | None:
    """The profile an installed release is checked with: its own when draftfit has read it,
    else the nearest read release (extrapolated); None for a version that is no version."""
    data = item.engine.data
    title = f"{data.title} {item.version}, installed here"
    from packaging.version import InvalidVersion, Version  # only for an installed engine

    try:
        wanted = Version(item.version)
    except InvalidVersion:
        return None
    exact = wanted.public if wanted.public in data.versions else None
    if exact is None and wanted.base_version in data.versions and not wanted.is_prerelease:
        exact = wanted.base_version  # a post or local build of a read release
    if exact is not None:
        profile = data.resolve(exact)
        profile.chosen_because = title
        return profile
    nearest = _nearest(item.engine, wanted)
    profile = data.resolve(nearest, requested=item.version)
    reason = not_read_reason(data, item.version)
    why = f" ({reason})" if reason else ""
    profile.chosen_because = (
        f"{title}; draftfit has not read that release{why}, so it checks {data.title} "
        f"{nearest}, the nearest release it has read, and marks the findings extrapolated"
    )
    return profile


def _nearest(engine: Engine, wanted: Version) -> str:
    """The newest read release not after `wanted`, else (older than all) the oldest."""
    data = engine.data
    try:
        return nearest_read(data, str(wanted), str(wanted))
    except UnknownEngineVersionError:
        from packaging.version import Version

        return min(data.versions, key=Version)
