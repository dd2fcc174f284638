"""Engine knowledge as versioned data: load `data/<engine>.toml` and resolve it at a version.

Each data file lists the engine versions whose source was read (`versions`) and a set of
*facts*. A fact is either

* ranged — `values = [{since, until, value, source}, ...]`: one value applies at a
  version (the entry whose `[since, until)` range contains it); or
* a set — `items = [{value, since, until, source}, ...]`: every item whose range
  contains the version applies (registries, allow-lists).

Every entry names its source (`path:line@tag`) and how far that source settles it, its
`confidence` (one of CONFIDENCE; an optional prose `note` says more). Resolving a fact
at a version where no entry applies gives an *unknown* fact, which rules report as unknown
rather than guess.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from itertools import pairwise
from typing import Any

from packaging.version import InvalidVersion, Version

from draftfit.errors import SpecDataError, UnknownEngineVersionError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

ENGINES = ("vllm", "sglang", "trtllm")
# How an entry's value and range were established: the fixed set a data entry's
# `confidence` must come from.
CONFIDENCE = {
    "read": "read (or run) in the engine's source at the cited release",
    "documented": "stated by the engine's own documentation or release notes, not read in code",
    "inferred": "derived from code that was read (not observed), or a boundary approximated "
    "from a scan of class bases",
    "assumed": "assumed equal to a neighbouring release that was read",
    "reported": "taken from earlier commit-level reading of the engine, not re-read at a release",
    "unpinned": "seen in the engine's main branch; the first release carrying it is not pinned",
}
# Confidences whose findings say that draftfit's data is approximate.
APPROXIMATE_CONFIDENCE = frozenset({"inferred", "assumed", "reported", "unpinned"})


@dataclass(frozen=True)
class Entry:
    value: Any
    since: Version | None
    until: Version | None
    source: str
    confidence: str
    note: str | None = None

    @property
    def approximate(self) -> bool:
        return self.confidence in APPROXIMATE_CONFIDENCE

    def applies(self, version: Version) -> bool:
        return (self.since is None or version >= self.since) and (
            self.until is None or version < self.until
        )


@dataclass(frozen=True)
class FactData:
    key: str
    doc: str
    kind: str  # "ranged" or "set"
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class EngineData:
    """One engine's data file, validated."""

    engine: str
    title: str
    repository: str
    versions: tuple[str, ...]
    latest: str
    facts: dict[str, FactData]
    notes: tuple[str, ...]
    # Release series deliberately not read, e.g. ("0.15", "no sdist on PyPI").
    not_read: tuple[tuple[str, str], ...] = ()

    @cached_property
    def approximate_entries(self) -> dict[str, list[tuple[int, Entry]]]:
        """Entries whose confidence marks them approximate, by source, with their position
        in the file (built once per engine)."""
        index: dict[str, list[tuple[int, Entry]]] = {}
        order = 0
        for fact in self.facts.values():
            for entry in fact.entries:
                order += 1
                if entry.approximate:
                    index.setdefault(entry.source, []).append((order, entry))
        return index

    def resolve(self, version: str, requested: str | None = None) -> Profile:
        """The profile at a release draftfit has read; `requested` names the version the
        user asked for when that is another one (`~=`), so findings say they are
        extrapolated."""
        if version not in self.versions:
            raise UnknownEngineVersionError(
                f"no data for {self.engine}=={version}; known versions: "
                f"{_compact_versions(self.versions)}"
            )
        return Profile(self, version, Version(version), requested)


@dataclass(frozen=True)
class Resolved:
    """A fact at one version: its value, the sources behind it, and whether it is known."""

    value: Any
    sources: tuple[str, ...]
    known: bool = True
    notes: tuple[str, ...] = ()


class Profile:
    """The engine's expectations at one version."""

    def __init__(
        self, data: EngineData, version: str, parsed: Version, requested: str | None = None
    ) -> None:
        self.data = data
        self.engine = data.engine
        self.version = version
        self.parsed = parsed
        # The version asked for with `~=` when it is not this read release: every finding
        # and the verdict are then extrapolated from this release to that one.
        self.requested = requested if requested != version else None
        self._cache: dict[str, Resolved] = {}

    @property
    def extrapolation_note(self) -> str | None:
        """`extrapolated to vLLM 0.34.1 from the data for 0.34.0`, or None."""
        if self.requested is None:
            return None
        return (
            f"extrapolated to {self.data.title} {self.requested} from draftfit's data for "
            f"{self.version}"
        )

    @property
    def label(self) -> str:
        return f"{self.engine}=={self.version}"

    @property
    def title(self) -> str:
        return f"{self.data.title} {self.version}"

    def fact(self, key: str) -> Resolved:
        if key in self._cache:
            return self._cache[key]
        fact = self.data.facts.get(key)
        if fact is None:
            raise SpecDataError(f"{self.engine} data has no fact {key!r}")
        active = [e for e in fact.entries if e.applies(self.parsed)]
        notes = tuple(e.note for e in active if e.note)
        if fact.kind == "set":
            result = Resolved(
                [e.value for e in active], tuple(e.source for e in active), True, notes
            )
        elif active:
            result = Resolved(active[0].value, (active[0].source,), True, notes)
        else:
            result = Resolved(None, (), False)
        self._cache[key] = result
        return result

    def value(self, key: str) -> Any:
        return self.fact(key).value

    def sources(self, *keys: str) -> tuple[str, ...]:
        out: list[str] = []
        for key in keys:
            for source in self.fact(key).sources:
                if source not in out:
                    out.append(source)
        return tuple(out)

    def approximate_note(self, sources: tuple[str, ...]) -> str | None:
        """The note of the first approximate entry (see APPROXIMATE_CONFIDENCE) behind
        `sources` that is active at this version; None when all are exact."""
        index = self.data.approximate_entries
        found = [
            (order, entry)
            for source in sources
            for order, entry in index.get(source, ())
            if entry.applies(self.parsed)
        ]
        return min(found, key=lambda item: item[0])[1].note if found else None

    def item_sources(self, key: str, value: Any) -> tuple[str, ...]:
        """Sources of the set items equal to `value` that apply at this version."""
        fact = self.data.facts[key]
        return tuple(e.source for e in fact.entries if e.value == value and e.applies(self.parsed))


def _compact_versions(versions: tuple[str, ...]) -> str:
    return (
        f"{versions[0]} … {versions[-1]} ({len(versions)} releases; `draftfit engines` lists them)"
    )


@cache
def load_engine(engine: str) -> EngineData:
    """Load and validate the shipped data for `engine`."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
    text = resources.files("draftfit.engines").joinpath("data", f"{engine}.toml").read_text("utf-8")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecDataError(f"{engine}.toml: {exc}") from exc
    return parse_engine_data(engine, raw)


def parse_engine_data(engine: str, raw: dict[str, Any]) -> EngineData:
    """Validate the structure strictly: every entry needs a source and a valid range."""
    try:
        versions = tuple(raw["versions"])
        latest = raw["latest"]
        facts_raw = raw["fact"]
    except KeyError as exc:
        raise SpecDataError(f"{engine}.toml: missing top-level key {exc}") from exc
    for v in versions:
        _version(engine, v, "versions")
    if latest not in versions:
        raise SpecDataError(f"{engine}.toml: latest {latest} not in versions")
    facts: dict[str, FactData] = {}
    for key, body in facts_raw.items():
        if not isinstance(body, dict) or "doc" not in body:
            raise SpecDataError(f"{engine}.toml: fact {key} needs a doc")
        if ("values" in body) == ("items" in body):
            raise SpecDataError(f"{engine}.toml: fact {key} needs exactly one of values/items")
        kind = "ranged" if "values" in body else "set"
        entries = []
        for entry in body["values" if kind == "ranged" else "items"]:
            unknown = set(entry) - {"value", "since", "until", "source", "confidence", "note"}
            if unknown:
                raise SpecDataError(f"{engine}.toml: fact {key}: unknown keys {sorted(unknown)}")
            if "source" not in entry or not entry["source"]:
                raise SpecDataError(f"{engine}.toml: fact {key}: an entry has no source")
            if "value" not in entry:
                raise SpecDataError(f"{engine}.toml: fact {key}: an entry has no value")
            if entry.get("confidence") not in CONFIDENCE:
                raise SpecDataError(
                    f"{engine}.toml: fact {key}: confidence {entry.get('confidence')!r} is not "
                    f"one of {', '.join(CONFIDENCE)}"
                )
            if entry["confidence"] in APPROXIMATE_CONFIDENCE and not entry.get("note"):
                raise SpecDataError(
                    f"{engine}.toml: fact {key}: a {entry['confidence']} entry needs a note "
                    "saying why (findings quote it)"
                )
            since = _version(engine, entry["since"], key) if "since" in entry else None
            until = _version(engine, entry["until"], key) if "until" in entry else None
            if since and until and since >= until:
                raise SpecDataError(f"{engine}.toml: fact {key}: empty range {since}..{until}")
            entries.append(
                Entry(
                    entry["value"],
                    since,
                    until,
                    entry["source"],
                    entry["confidence"],
                    entry.get("note"),
                )
            )
        if kind == "ranged":
            _check_disjoint(engine, key, entries)
        facts[key] = FactData(key, body["doc"], kind, tuple(entries))
    not_read = []
    for item in raw.get("not_read", ()):
        if not isinstance(item, dict) or set(item) != {"series", "reason"}:
            raise SpecDataError(f"{engine}.toml: not_read entries need `series` and `reason`")
        not_read.append((str(item["series"]), str(item["reason"])))
    return EngineData(
        engine,
        raw.get("title", engine),
        raw.get("repository", ""),
        versions,
        latest,
        facts,
        tuple(raw.get("notes", ())),
        tuple(not_read),
    )


def _check_disjoint(engine: str, key: str, entries: list[Entry]) -> None:
    ordered = sorted(entries, key=lambda e: e.since or Version("0"))
    for before, after in pairwise(ordered):
        if before.until is None or (after.since is not None and after.since < before.until):
            raise SpecDataError(f"{engine}.toml: fact {key}: overlapping ranges")


def _version(engine: str, text: str, where: str) -> Version:
    try:
        return Version(text)
    except (InvalidVersion, TypeError) as exc:
        raise SpecDataError(f"{engine}.toml: {where}: bad version {text!r}") from exc


def parse_engine_spec(text: str) -> list[Profile]:
    """Parse `vllm`, `vllm==0.10.2`, `vllm~=0.34` or `all` into profiles.

    `==` names a release draftfit has read; anything else is refused with one line that
    says why and what to pass instead (the matching releases of a partial version, the
    nearest read release of one that is newer or was not read). `~=V` checks against the
    nearest read release — V itself when read, else the newest read release in V's series
    (`~=0.10`), else the newest read release before V — and marks the result extrapolated.
    """
    text = text.strip()
    if text == "all":
        return [load_engine(e).resolve(load_engine(e).latest) for e in ENGINES]
    match = _SPEC.fullmatch(text)
    if match is None:
        loose = _LOOSE.fullmatch(text)
        if loose is not None and loose["name"].lower() in ENGINES:
            raise UsageError(
                f"--engine {text!r}: did you mean --engine "
                f"{loose['name'].lower()}=={loose['version'].lstrip('vV')}?"
            )
        raise UsageError(f"cannot read --engine {text!r}; expected ENGINE, ENGINE==VERSION or all")
    name, operator, version = match["name"].lower(), match["op"], match["version"]
    if name not in ENGINES:
        raise UsageError(
            f"unknown engine {name!r} in --engine {text!r}; known: {', '.join(ENGINES)}"
        )
    data = load_engine(name)
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
        return [data.resolve(_nearest(data, version, text), requested=requested)]
    raise UnknownEngineVersionError(_why_unknown(data, version))


_SPEC = re.compile(
    r"(?P<name>[A-Za-z][A-Za-z0-9_-]*)\s*(?:(?P<op>==|~=|>=|<=|!=|>|<|=)\s*(?P<version>\S*))?"
)


# `vllm 0.10.2`, `vllm@0.10.2`, `vllm:0.10.2`, `vllm-0.10.2`: a version meant as `==`.
_LOOSE = re.compile(r"(?P<name>[A-Za-z]+)\s*[\s@:-]\s*(?P<version>[vV]?\d\S*)")


def _series(data: EngineData, version: str) -> list[str]:
    """Read releases whose version starts with `version` followed by a dot (`0.10` ->
    0.10.0, 0.10.1, ...)."""
    return [v for v in data.versions if v.startswith(version + ".")]


def _parsed(data: EngineData, version: str, text: str) -> Version:
    try:
        return Version(version)
    except InvalidVersion as exc:
        raise UsageError(
            f"--engine {text!r}: {version!r} is not a version ({data.title} releases look like "
            f"{data.latest})"
        ) from exc


def _nearest(data: EngineData, version: str, text: str) -> str:
    """The read release `~=version` checks against (see parse_engine_spec)."""
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
    reason = next(
        (why for series_, why in data.not_read if version.startswith(series_ + ".")),
        None,
    )
    why = (
        f"{data.title} {version} was deliberately not read ({reason})"
        if reason
        else f"no data for {text} (not a release draftfit has read)"
    )
    return (
        f"{why}; the nearest read releases are {below} and {above}: --engine "
        f"{engine}~={version} checks against {below} and marks the findings extrapolated"
    )
