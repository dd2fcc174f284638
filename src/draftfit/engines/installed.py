"""The engines installed where draftfit runs: the default of `--engine`.

Without `--engine`, draftfit checks the vLLM, SGLang and TensorRT-LLM releases installed in
the running Python environment, found by their distribution metadata (the `*.dist-info` or
`*.egg-info` folders on the search path). Nothing is imported or started, and only those
three names are looked up, never every distribution. An installed release draftfit has not
read is checked against the nearest read one and marked extrapolated, as `~=` does. With
none installed, the default is the newest vLLM draftfit has read, and the report says so.

`DRAFTFIT_ENGINE_PATH` (folders separated by the path separator) replaces `sys.path` as the
search path; set to an empty value, no engine counts as installed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from draftfit.engines.interface import Engine
from draftfit.engines.profile import Profile
from draftfit.engines.registry import (
    DEFAULT_ENGINE,
    ENGINES,
    nearest_read,
    not_read_reason,
    parse_engine_selector,
)
from draftfit.errors import UnknownEngineVersionError
from draftfit.records import frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib import metadata

    from packaging.version import Version

SEARCH_PATH_ENV = "DRAFTFIT_ENGINE_PATH"

# The distribution names each engine is published under (looked up one by one).
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm",),
    "sglang": ("sglang",),
    "trtllm": ("tensorrt_llm",),
}
# Each engine's name as its data's title starts (tests/test_installed_engine.py keeps them
# equal), so that the default's reason names all engines without loading their data.
PRODUCTS: dict[str, str] = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


@frozen
class Installed:
    """One engine release found in the environment."""

    engine: Engine
    version: str
    distribution: str


def search_path() -> list[str]:
    """Where distributions are looked for: `DRAFTFIT_ENGINE_PATH` when set, else `sys.path`."""
    value = os.environ.get(SEARCH_PATH_ENV)
    if value is None:
        return list(sys.path)
    return [entry for entry in value.split(os.pathsep) if entry]


def find_installed(path: list[str] | None = None) -> list[Installed]:
    """The engines installed on `path` (default: :func:`search_path`), in registry order.
    A distribution whose metadata has no version is skipped."""
    where = search_path() if path is None else path
    if not where or not _may_hold(where, [n for names in DISTRIBUTIONS.values() for n in names]):
        return []
    from importlib import metadata  # only where a folder may hold an engine's metadata

    found: list[Installed] = []
    for engine in ENGINES:
        for name in DISTRIBUTIONS.get(engine.name, ()):
            dist = next(iter(metadata.distributions(name=name, path=where)), None)
            version = _version_of(dist)
            if version is not None:
                found.append(Installed(engine, version, name))
                break
    return found


def _may_hold(where: list[str], names: list[str]) -> bool:
    """Whether a folder on `where` may hold the metadata of one of `names`: an entry whose
    name, lowercased and without `-`, `_` and `.`, starts with one of theirs (a superset of
    what `importlib.metadata` matches), or an entry that is not a folder draftfit can list
    (a zip, an egg). False spares the import of `importlib.metadata` on every plain run."""
    keys = tuple(_squeezed(name) for name in names)
    for entry in where:
        root = entry or "."
        if root.lower().endswith(".egg"):
            return True
        try:
            children = os.listdir(root)
        except FileNotFoundError:
            continue
        except OSError:
            return os.path.exists(root)
        if any(_squeezed(child).startswith(keys) for child in children):
            return True
    return False


def _squeezed(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "").replace(".", "")


def _version_of(dist: metadata.Distribution | None) -> str | None:
    if dist is None:
        return None
    try:
        version = dist.version
    except (OSError, KeyError, ValueError):
        return None
    return version.strip() or None if isinstance(version, str) else None


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
    names = [PRODUCTS.get(e.name) or e.data.title.split(" (")[0] for e in ENGINES]
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
