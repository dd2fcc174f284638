"""The engines draftfit knows, one line each, and the look-ups the rest of draftfit uses.

Adding an engine is adding its line to :data:`ENGINES` (with its import); `--engine`,
`draftfit engines`, `matrix`, `convert` and the serve recipes iterate this tuple. The
first engine is the default of `--engine`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from draftfit.engines.interface import Engine
from draftfit.engines.profile import EngineData, Profile
from draftfit.engines.sglang import SGLANG
from draftfit.engines.trtllm import TRTLLM
from draftfit.engines.vllm import VLLM
from draftfit.errors import UnknownEngineVersionError, UsageError

if TYPE_CHECKING:
    from packaging.version import Version

ENGINES: tuple[Engine, ...] = (
    VLLM,
    SGLANG,
    TRTLLM,
)
DEFAULT_ENGINE = ENGINES[0]


def engine_names() -> tuple[str, ...]:
    """The names `--engine` accepts, in registry order."""
    return tuple(engine.name for engine in ENGINES)


def engine_named(name: str) -> Engine:
    """The engine called `name`; UsageError for a name no engine has."""
    for engine in ENGINES:
        if engine.name == name:
            return engine
    raise UsageError(f"unknown engine {name!r}; known: {', '.join(engine_names())}")


def load_engine(name: str) -> EngineData:
    """The data of the engine called `name`."""
    return engine_named(name).data


def planning_engine(convention: str) -> Engine | None:
    """The engine whose data a convention is planned with (and verified against by
    default), or None when no engine plans it."""
    return next((e for e in ENGINES if convention in e.plans), None)


def conventions(engines: tuple[Engine, ...] = ENGINES) -> tuple[str, ...]:
    """Every convention `draftfit convert --to` writes: each engine's own first, in registry
    order, then the other conventions the engines plan."""
    own = [engine.convention for engine in engines]
    planned = [convention for engine in engines for convention in engine.plans]
    return tuple(dict.fromkeys([*own, *planned]))


def parse_engine_selector(text: str, engines: tuple[Engine, ...] = ENGINES) -> list[Profile]:
    """Parse `vllm`, `vllm==0.10.2`, `vllm~=0.34` or `all` into profiles.

    `==` names a release draftfit has read; anything else is refused with one line that
    says why and what to pass instead (the matching releases of a partial version, the
    nearest read release of one that is newer or was not read). `~=V` checks against the
    nearest read release — V itself when read, else the newest read release in V's series
    (`~=0.10`), else the newest read release before V — and marks the result extrapolated.
    """
    text = text.strip()
    if text == "all":
        return [e.resolve(e.data.latest) for e in engines]
    names = tuple(e.name for e in engines)
    match = re.fullmatch(_SELECTOR, text)
    if match is None:
        loose = re.fullmatch(_LOOSE, text)
        if loose is not None and loose["name"].lower() in names:
            raise UsageError(
                f"--engine {text!r}: did you mean --engine "
                f"{loose['name'].lower()}=={loose['version'].lstrip('vV')}?"
            )
        raise UsageError(f"cannot read --engine {text!r}; expected ENGINE, ENGINE==VERSION or all")
    name, operator, version = match["name"].lower(), match["op"], match["version"]
    found = next((e for e in engines if e.name == name), None)
    if found is None:
        raise UsageError(f"unknown engine {name!r} in --engine {text!r}; known: {', '.join(names)}")
    data = found.data
    if not operator:
        return [data.resolve(data.latest)]
    version = version.lstrip("vV")
    if operator == "=":
        raise UsageError(f"--engine {text!r}: did you mean --engine {name}=={version}?")
    if operator not in ("==", "~="):
        raise UsageError(
            f"--engine {text!r}: draftfit checks single releases; use {name}=={version} "
            f"(exactly that release) or {name}~={version} (the nearest release draftfit has "
            "read, extrapolated)"
        )
    if not version:
        raise UsageError(f"--engine {text!r}: no version after {operator}")
    if version in data.versions:
        return [data.resolve(version)]
    if operator == "~=":
        requested = f"{version}.x" if _series(data, version) else version
        return [data.resolve(nearest_read(data, version, text), requested=requested)]
    raise UnknownEngineVersionError(_why_unknown(data, version))


_SELECTOR = (
    r"(?P<name>[A-Za-z][A-Za-z0-9_-]*)\s*(?:(?P<op>==|~=|>=|<=|!=|>|<|=)\s*(?P<version>\S*))?"
)


# `vllm 0.10.2`, `vllm@0.10.2`, `vllm:0.10.2`, `vllm-0.10.2`: a version meant as `==`.
_LOOSE = r"(?P<name>[A-Za-z]+)\s*[\s@:-]\s*(?P<version>[vV]?\d\S*)"


def _series(data: EngineData, version: str) -> list[str]:
    """Read releases whose version starts with `version` followed by a dot (`0.10` ->
    0.10.0, 0.10.1, ...)."""
    return [v for v in data.versions if v.startswith(version + ".")]


def _parsed(data: EngineData, version: str, text: str) -> Version:
    from packaging.version import InvalidVersion, Version  # only for a version the user typed

    try:
        return Version(version)
    except InvalidVersion as exc:
        raise UsageError(
            f"--engine {text!r}: {version!r} is not a version ({data.title} releases look like "
            f"{data.latest})"
        ) from exc


def nearest_read(data: EngineData, version: str, text: str) -> str:
    """The read release `~=version` checks against (see parse_engine_selector)."""
    from packaging.version import Version

    series = _series(data, version)
    if series:
        return max(series, key=Version)
    wanted = _parsed(data, version, text)
    before = [v for v in data.versions if Version(v) <= wanted]
    if not before:
        raise UnknownEngineVersionError(
            f"{data.title} {version} is older than every release draftfit has read (the "
            f"oldest is {data.engine}=={min(data.versions, key=Version)}); nothing to "
            "extrapolate from"
        )
    return max(before, key=Version)


def _listing(versions: list[str], limit: int = 8) -> str:
    """`0.10.0, 0.10.1, 0.10.2`, or the first and last three of a longer list."""
    if len(versions) <= limit:
        return ", ".join(versions)
    return f"{', '.join(versions[:3])}, … {', '.join(versions[-3:])} ({len(versions)} releases)"


def _why_unknown(data: EngineData, version: str) -> str:
    """One line: why `engine==version` has no data, and what to pass instead."""
    engine = data.engine
    text = f"{engine}=={version}"
    series = _series(data, version)
    if series:
        return (
            f"{text} names no single release; draftfit has read {_listing(series)}: pass "
            f"one (e.g. --engine {engine}=={series[-1]}), or --engine {engine}~={version} for "
            f"the newest of them"
        )
    from packaging.version import Version

    wanted = _parsed(data, version, f"{text}")
    ordered = sorted(data.versions, key=Version)
    if wanted > Version(ordered[-1]):
        return (
            f"no data for {text}: it is newer than the newest release draftfit has read "
            f"({ordered[-1]}); --engine {engine}~={version} checks against {ordered[-1]} and "
            "marks the findings extrapolated"
        )
    if wanted < Version(ordered[0]):
        return (
            f"no data for {text}: it is older than every release draftfit has read (the "
            f"oldest is {ordered[0]})"
        )
    below = max((v for v in ordered if Version(v) < wanted), key=Version)
    above = min((v for v in ordered if Version(v) > wanted), key=Version)
    reason = not_read_reason(data, version)
    why = (
        f"{data.title} {version} was not read ({reason})"
        if reason
        else f"no data for {text} (not a release draftfit has read)"
    )
    return (
        f"{why}; the nearest read releases are {below} and {above}: --engine "
        f"{engine}~={version} checks against {below} and marks the findings extrapolated"
    )


def not_read_reason(data: EngineData, version: str) -> str | None:
    """Why `version` was not read: its own `not_read` entry, else one of its series (the
    first two components, e.g. 1.3.0rc1 for 1.3.0rc0's reason), else None."""
    exact = next((item.reason for item in data.not_read if item.version == version), None)
    if exact is not None:
        return exact
    series = ".".join(version.split(".")[:2]) + "."
    return next((item.reason for item in data.not_read if item.version.startswith(series)), None)
