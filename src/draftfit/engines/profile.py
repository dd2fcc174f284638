"""Engine knowledge as versioned data: load `engines/<engine>/data.toml`, resolve it at a version.

Each data file lists the engine versions whose source was read (`versions`) and a set of
*facts*. A fact is either

* ranged — `values = [{since, until, value, source}, ...]`: one value applies at a
  version (the entry whose `[since, until)` range contains it); or
* a set — `items = [{value, since, until, source}, ...]`: every item whose range
  contains the version applies (registries, allow-lists).

Every entry names its source (`path:line@tag`) and how far that source settles it, its
`confidence` (one of CONFIDENCE; an optional prose `note` says more). Beside the source,
`anchors` holds one short snippet per cited location (the stripped text of the cited line,
"" where there is none) and `anchor_missing` says why a location has none, so that
`dev/refresh_engine.py` can find the cited code again in a newer release. The file's
`data_date` is the day its releases were last checked against the package index, and
`not_read` lists releases known to exist whose source was not read, each with the reason.
A fact that rules rest on names them (`rules`, rule codes; `rank` orders a rule's facts
where key order does not serve): `draftfit rule CODE` lists the facts that name the rule
(:meth:`EngineData.facts_for_rule`). Resolving a fact at a version where no entry applies
gives an *unknown* fact, which rules report as unknown rather than guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cached_property
from itertools import pairwise
from typing import TYPE_CHECKING

from draftfit.engines.releases import Release, rank_versions, releases
from draftfit.errors import EngineDataError, UnknownEngineVersionError
from draftfit.records import field, frozen
from draftfit.rule_ids import ALL_RULE_IDS, Consequence

if TYPE_CHECKING:
    from typing import Any

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
# The keys a data entry may have.
ENTRY_KEYS = frozenset(
    {
        "value",
        "since",
        "until",
        "source",
        "confidence",
        "note",
        "anchors",
        "anchor_missing",
        "consequence",
    }
)
# Confidences whose findings say that draftfit's data is approximate.
APPROXIMATE_CONFIDENCE = frozenset({"inferred", "assumed", "reported", "unpinned"})
# How a fact is known, from the strongest to the weakest: a code line read at the release
# ranks first, the release's own documentation next (above everything reported or assumed).
# READ_ELSEWHERE is a `read` entry of an engine read from pinned commits, at a release other
# than the one its line was read at.
READ_ELSEWHERE = "read at another release"
CONFIDENCE_RANK = {
    "read": 0,
    "documented": 1,
    READ_ELSEWHERE: 2,
    "inferred": 2,
    "assumed": 3,
    "unpinned": 4,
    "reported": 5,
}
# What a basis entry says of how its fact is known (CONFIDENCE, and READ_ELSEWHERE).
KNOWN_BY = {
    **CONFIDENCE,
    READ_ELSEWHERE: "read in the engine's code at the cited release (a commit pinned to it), "
    "not at this one",
}


@frozen
class EngineVersion:
    """An engine release: what findings and verdicts are keyed by (`vllm==0.34.0` as
    text)."""

    engine: str
    version: str

    @property
    def label(self) -> str:
        return f"{self.engine}=={self.version}"

    def __str__(self) -> str:
        return self.label


@frozen
class Entry:
    """One versioned value of a fact: what holds from `since` (inclusive) to `until`
    (exclusive), where it was read and how sure it is."""

    value: Any
    since: Release | None
    until: Release | None
    source: str
    confidence: str
    note: str | None = None
    anchors: tuple[str, ...] = ()
    anchor_missing: str | None = None
    # What a finding resting on this entry does to serving, where the version decides it.
    consequence: Consequence | None = None

    @property
    def approximate(self) -> bool:
        return self.confidence in APPROXIMATE_CONFIDENCE

    def applies(self, version: Release) -> bool:
        return (self.since is None or version >= self.since) and (
            self.until is None or version < self.until
        )


@frozen
class FactData:
    """A fact of an engine's data: its key, what it says, and its versioned entries
    (`ranged`: one value per version range; `set`: members, each with its range)."""

    key: str
    doc: str
    kind: str  # "ranged" or "set"
    entries: tuple[Entry, ...]
    # The codes of the rules that rest on this fact (`rules`), sorted.
    rules: tuple[str, ...] = ()


@frozen
class NotRead:
    """A release known to exist on the package index whose source was not read, and why."""

    version: str
    reason: str


@frozen
class Pin:
    """The commit a release was read at, with the line of the engine's version file that names
    the release; or, with no commit, why none was found (`not_read`)."""

    version: str
    commit: str | None = None
    evidence: str | None = None
    not_read: str | None = None


@frozen
class EngineData:
    """One engine's data file, validated."""

    engine: str
    title: str
    repository: str
    versions: tuple[str, ...]
    latest: str
    facts: Mapping[str, FactData]
    notes: tuple[str, ...]
    data_date: str | None = None
    not_read: tuple[NotRead, ...] = ()
    # Per release in `versions`, the commit it was read at (engines read from their source
    # repository rather than a wheel; empty for the others).
    commits: tuple[Pin, ...] = ()
    # The Engine this data belongs to (None for data parsed on its own, e.g. in tests); read
    # it typed with :func:`draftfit.engines.interface.engine_of`.
    impl: object = field(default=None, compare=False, repr=False)
    # Per rule code, the keys of the facts that name it, in the order `draftfit rule` lists
    # them (see facts_for_rule).
    rule_facts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Every version text of the data as an ordered Release (see draftfit.engines.releases).
    releases: Mapping[str, Release] = field(default_factory=dict, compare=False, repr=False)

    def facts_for_rule(self, code: str) -> tuple[str, ...]:
        """The keys of the facts rule `code` rests on in this engine (those whose `rules`
        name it): first those whose `rank` places them, by rank, then the others by key;
        empty when the rule rests on none of this engine's data."""
        return self.rule_facts.get(code, ())

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

    def commit_for(self, version: str) -> str | None:
        """The commit `version` was read at, or None where it is not pinned."""
        return next((p.commit for p in self.commits if p.version == version), None)

    def read_at_pinned_commit(self, entry: Entry, version: str) -> bool:
        """Whether `entry` cites a line, with its anchor, at `version` and that release is
        pinned to a commit: what the entry says at `version` was read there."""
        if self.commit_for(version) is None:
            return False
        # Loaded here, not at start-up: only a TensorRT-LLM verdict's basis needs it.
        from draftfit.engines.citation import parse_locations

        cited = zip(parse_locations(entry.source), entry.anchors, strict=False)
        return any(loc.tag == version and loc.ranges and anchor for loc, anchor in cited)

    def resolve(self, version: str, requested: str | None = None) -> Profile:
        """The profile at a release draftfit has read; `requested` names the version the
        user asked for when that is another one (`~=`), so findings say they are
        extrapolated."""
        if version not in self.versions:
            raise UnknownEngineVersionError(
                f"no data for {self.engine}=={version}; known versions: "
                f"{_compact_versions(self.versions)}"
            )
        return Profile(self, version, self.releases[version], requested)


@frozen
class Resolved:
    """A fact at one version: its value, the citations behind it, and whether it is known."""

    value: Any
    citations: tuple[str, ...]
    known: bool = True
    notes: tuple[str, ...] = ()
    consequence: Consequence | None = None


class Profile:
    """The engine's expectations at one version."""

    def __init__(
        self, data: EngineData, version: str, parsed: Release, requested: str | None = None
    ) -> None:
        self.data = data
        self.engine = data.engine
        self.version = version
        self.parsed = parsed
        # The version asked for with `~=` when it is not this read release: every finding
        # and the verdict are then extrapolated from this release to that one.
        self.requested = requested if requested != version else None
        # Why this version is checked when no --engine named it (`vLLM 0.10.2, installed
        # here`); None when --engine did.
        self.chosen_because: str | None = None
        self._cache: dict[str, Resolved] = {}
        # The last basis, with how many facts had been consulted when it was made: facts are
        # only ever added, so an equal count means an equal basis (a `matrix` asks again for
        # every recipe it checks).
        self._basis: tuple[int, dict[str, Any]] | None = None
        self._rated: dict[str, tuple[str, Entry] | None] = {}  # by fact, see _rate

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

    @cached_property
    def key(self) -> EngineVersion:
        """This release, as findings and verdicts are keyed."""
        return EngineVersion(self.engine, self.version)

    @property
    def title(self) -> str:
        return f"{self.data.title} {self.version}"

    def fact(self, key: str) -> Resolved:
        """The fact at this version, counted among the facts consulted (:meth:`basis`)."""
        if key in self._cache:
            return self._cache[key]
        result = self._resolve(key)
        self._cache[key] = result
        return result

    def peek(self, key: str) -> Resolved:
        """The fact at this version, as :meth:`fact`, but not counted among the facts
        consulted (:meth:`basis`): for a fact the view carries for a rule to read, which the
        view itself is not built on."""
        found = self._cache.get(key)
        return found if found is not None else self._resolve(key)

    def _resolve(self, key: str) -> Resolved:
        fact = self.data.facts.get(key)
        if fact is None:
            raise EngineDataError(f"{self.engine} data has no fact {key!r}")
        active = [e for e in fact.entries if e.applies(self.parsed)]
        notes = tuple(e.note for e in active if e.note)
        if fact.kind == "set":
            result = Resolved(
                [e.value for e in active], tuple(e.source for e in active), True, notes
            )
        elif active:
            first = active[0]
            result = Resolved(first.value, (first.source,), True, notes, first.consequence)
        else:
            result = Resolved(None, (), False)
        return result

    def value(self, key: str) -> Any:
        return self.fact(key).value

    def unknown_between(self) -> list[str]:
        """The facts consulted so far that are not known at this version although entries
        hold on both sides of it: a release between two that were read (or documented)
        differently, whose own code was not read. A rule skips such a fact rather than guess,
        so a verdict that rests on it is not proven."""
        out: list[str] = []
        for key in sorted(self._cache):
            entries = self.data.facts[key].entries
            if any(e.applies(self.parsed) for e in entries):
                continue
            before = any(e.until is not None and e.until <= self.parsed for e in entries)
            after = any(e.since is not None and e.since > self.parsed for e in entries)
            if before and after:
                out.append(key)
        return out

    def basis(self) -> dict[str, Any]:
        """The facts consulted so far at this version, by how they are known: `read` (code
        read at this release; for an engine read from pinned commits, at the commit this
        release is pinned to) and `below_read`, one item per other fact with its confidence
        (the weakest of its entries in effect), what that means and the entry's note: what a
        verdict built on them rests on."""
        if self._basis is None or self._basis[0] != len(self._cache):
            self._basis = (len(self._cache), self._basis_now())
        made = self._basis[1]
        out: dict[str, Any] = {"read": list(made["read"])}
        out["below_read"] = [dict(item) for item in made["below_read"]]
        if "read_at_pinned_commit" in made:
            out["read_at_pinned_commit"] = list(made["read_at_pinned_commit"])
            out["not_read_at_pinned_commit"] = dict(made["not_read_at_pinned_commit"])
        return out

    def _basis_now(self) -> dict[str, Any]:
        read: list[str] = []
        below: list[dict[str, Any]] = []
        for key in sorted(self._cache):
            if key not in self._rated:
                self._rated[key] = self._rate(key)
            rated = self._rated[key]
            if rated is None:
                continue  # not known at this version: the rules say so themselves
            confidence, weakest = rated
            if confidence == "read":
                read.append(key)
                continue
            below.append(
                {
                    "fact": key,
                    "confidence": confidence,
                    "how": KNOWN_BY[confidence],
                    "note": weakest.note,
                }
            )
        out: dict[str, Any] = {"read": read, "below_read": below}
        if self.data.commits:
            # The form TensorRT-LLM verdicts had before every engine's did (kept: JSON keys
            # are only ever added).
            out["read_at_pinned_commit"] = list(read)
            out["not_read_at_pinned_commit"] = {
                item["fact"]: "read at a release not pinned"
                if item["confidence"] == READ_ELSEWHERE
                else item["confidence"]
                for item in below
            }
        return out

    def _rate(self, key: str) -> tuple[str, Entry] | None:
        """How fact `key` is known at this version: the weakest confidence of its entries in
        effect, with that entry; None where none is in effect."""
        active = [e for e in self.data.facts[key].entries if e.applies(self.parsed)]
        if not active:
            return None
        rated = [(self._confidence(e), e) for e in active]
        return max(rated, key=lambda item: CONFIDENCE_RANK[item[0]])

    def _confidence(self, entry: Entry) -> str:
        """How `entry` is known at this version: its confidence, except that a `read` entry
        of an engine read from pinned commits (TensorRT-LLM) counts as read only at the
        pinned release whose line it cites."""
        if entry.confidence != "read" or not self.data.commits:
            return entry.confidence
        pinned = self.data.read_at_pinned_commit(entry, self.version)
        return "read" if pinned else READ_ELSEWHERE

    def citations(self, *keys: str) -> tuple[str, ...]:
        out: list[str] = []
        for key in keys:
            for source in self.fact(key).citations:
                if source not in out:
                    out.append(source)
        return tuple(out)

    def consequence(self, *keys: str) -> Consequence | None:
        """The consequence the data states at this version for the first of `keys` whose
        active entry names one (findings resting on it take it), else None."""
        for key in keys:
            found = self.fact(key).consequence
            if found is not None:
                return found
        return None

    def approximate_note(self, citations: tuple[str, ...]) -> str | None:
        """The note of the first approximate entry (see APPROXIMATE_CONFIDENCE) behind
        `citations` that is active at this version; None when all are exact."""
        index = self.data.approximate_entries
        found = [
            (order, entry)
            for source in citations
            for order, entry in index.get(source, ())
            if entry.applies(self.parsed)
        ]
        return min(found, key=lambda item: item[0])[1].note if found else None

    def item_sources(self, key: str, value: Any) -> tuple[str, ...]:
        """Sources of the set items equal to `value` that apply at this version."""
        fact = self.data.facts[key]
        return tuple(e.source for e in fact.entries if e.value == value and e.applies(self.parsed))


def _consequence(engine: str, key: str, entry: dict[str, Any]) -> Consequence | None:
    """An entry's `consequence`, one of the :class:`Consequence` words, or None."""
    text = entry.get("consequence")
    if text is None:
        return None
    try:
        return Consequence.parse(text)
    except ValueError:
        words = ", ".join(c.value for c in Consequence)
        raise EngineDataError(
            f"engines/{engine}/data.toml: fact {key}: consequence {text!r} is not one of {words}"
        ) from None


def _compact_versions(versions: tuple[str, ...]) -> str:
    return (
        f"{versions[0]} … {versions[-1]} ({len(versions)} releases; `draftfit engines` lists them)"
    )


def parse_engine_data(
    engine: str,
    raw: dict[str, Any],
    impl: object = None,
    citations_checked: bool = False,
    ranks: dict[str, int] | None = None,
) -> EngineData:
    """Validate the structure strictly: every entry needs a source and a valid range.

    `citations_checked` marks data whose compiled form was checked when it was built: the
    locations each source cites are not re-counted against its anchors (the slowest part),
    and each fact is built and validated when it is first read (:class:`FactsOnDemand`: a
    check reads about a third of them). Otherwise every fact is built now. `ranks` orders
    the data's version texts as the compiled form ships them; without it they are ordered
    here (:func:`draftfit.engines.releases.rank_versions`).
    """
    try:
        versions = tuple(raw["versions"])
        latest = raw["latest"]
        facts_raw = raw["fact"]
    except KeyError as exc:
        raise EngineDataError(f"engines/{engine}/data.toml: missing top-level key {exc}") from exc
    known = releases(rank_versions(engine, raw) if ranks is None else ranks)
    for v in versions:
        _version(engine, v, "versions", known)
    if latest not in versions:
        raise EngineDataError(f"engines/{engine}/data.toml: latest {latest} not in versions")
    named: dict[str, tuple[str, ...]] = {}
    ranks_by_rule: dict[tuple[str, str], int] = {}
    for key, body in facts_raw.items():
        if not isinstance(body, dict) or "doc" not in body:
            raise EngineDataError(f"engines/{engine}/data.toml: fact {key} needs a doc")
        named[key] = _rules(engine, key, body.get("rules", []))
        ranks_by_rule.update(_ranks(engine, key, body.get("rank", {}), named[key]))
    facts: Mapping[str, FactData]
    if citations_checked:
        facts = FactsOnDemand(engine, facts_raw, known)
    else:
        facts = {key: build_fact(engine, key, body, known) for key, body in facts_raw.items()}
    return EngineData(
        engine,
        raw.get("title", engine),
        raw.get("repository", ""),
        versions,
        latest,
        facts,
        tuple(raw.get("notes", ())),
        _data_date(engine, raw.get("data_date")),
        _not_read(engine, raw.get("not_read", []), versions, known),
        _commits(engine, raw.get("commits", []), versions),
        impl,
        _rule_facts(engine, named, ranks_by_rule),
        known,
    )


def build_fact(
    engine: str,
    key: str,
    body: dict[str, Any],
    known: Mapping[str, Release],
    citations_checked: bool = False,
) -> FactData:
    """One fact of an engine's data, validated: its entries, their ranges and sources
    (`known`: the data's version texts, ordered)."""
    if ("values" in body) == ("items" in body):
        raise EngineDataError(
            f"engines/{engine}/data.toml: fact {key} needs exactly one of values/items"
        )
    kind = "ranged" if "values" in body else "set"
    entries = []
    for entry in body["values" if kind == "ranged" else "items"]:
        unknown = set(entry) - ENTRY_KEYS
        if unknown:
            raise EngineDataError(
                f"engines/{engine}/data.toml: fact {key}: unknown keys {sorted(unknown)}"
            )
        if "source" not in entry or not entry["source"]:
            raise EngineDataError(f"engines/{engine}/data.toml: fact {key}: an entry has no source")
        if "value" not in entry:
            raise EngineDataError(f"engines/{engine}/data.toml: fact {key}: an entry has no value")
        if entry.get("confidence") not in CONFIDENCE:
            raise EngineDataError(
                f"engines/{engine}/data.toml: fact {key}: confidence "
                f"{entry.get('confidence')!r} is not one of {', '.join(CONFIDENCE)}"
            )
        if entry["confidence"] in APPROXIMATE_CONFIDENCE and not entry.get("note"):
            raise EngineDataError(
                f"engines/{engine}/data.toml: fact {key}: a {entry['confidence']} entry needs a "
                "note saying why (findings quote it)"
            )
        where = f"fact {key}"
        since = _version(engine, entry["since"], where, known) if "since" in entry else None
        until = _version(engine, entry["until"], where, known) if "until" in entry else None
        if since and until and since >= until:
            raise EngineDataError(
                f"engines/{engine}/data.toml: fact {key}: empty range {since}..{until}"
            )
        entries.append(
            Entry(
                entry["value"],
                since,
                until,
                entry["source"],
                entry["confidence"],
                entry.get("note"),
                *_anchors(engine, key, entry, citations_checked),
                _consequence(engine, key, entry),
            )
        )
    if kind == "ranged":
        _check_disjoint(engine, key, entries)
    rules = _rules(engine, key, body.get("rules", []))
    return FactData(key, body["doc"], kind, tuple(entries), rules)


class FactsOnDemand(Mapping[str, FactData]):
    """An engine's facts by key, each built (and validated) from its compiled table the
    first time it is read; keys, order and length are the table's."""

    def __init__(
        self, engine: str, tables: dict[str, dict[str, Any]], known: Mapping[str, Release]
    ) -> None:
        self._engine = engine
        self._tables = tables
        self._known = known
        self._built: dict[str, FactData] = {}

    def __getitem__(self, key: str) -> FactData:
        fact = self._built.get(key)
        if fact is None:
            fact = build_fact(
                self._engine, key, self._tables[key], self._known, citations_checked=True
            )
            self._built[key] = fact
        return fact

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def __contains__(self, key: object) -> bool:
        return key in self._tables

    def __repr__(self) -> str:
        return f"FactsOnDemand({self._engine!r}, {len(self)} facts)"


def _rules(engine: str, key: str, raw: Any) -> tuple[str, ...]:
    """A fact's `rules`: the codes of the rules that rest on it, each a code draftfit has a
    rule for, sorted, each once."""
    where = f"engines/{engine}/data.toml: fact {key}"
    if not isinstance(raw, list) or not all(isinstance(code, str) for code in raw):
        raise EngineDataError(f"{where}: rules must be a list of rule codes")
    unknown = [code for code in raw if code not in _RULE_CODES]
    if unknown:
        raise EngineDataError(f"{where}: rules names {', '.join(unknown)}, which no rule has")
    if raw != sorted(set(raw)):
        raise EngineDataError(f"{where}: rules must be sorted, each code once")
    return tuple(raw)


def _ranks(engine: str, key: str, raw: Any, rules: tuple[str, ...]) -> dict[tuple[str, str], int]:
    """A fact's `rank`: for some of the rules it names, a positive place among that rule's
    facts, by (rule code, fact key)."""
    where = f"engines/{engine}/data.toml: fact {key}"
    if not isinstance(raw, dict):
        raise EngineDataError(f"{where}: rank must be a table of rule code = place")
    out: dict[tuple[str, str], int] = {}
    for code, place in raw.items():
        if code not in rules:
            raise EngineDataError(f"{where}: rank names {code}, which its rules do not")
        if not isinstance(place, int) or isinstance(place, bool) or place < 1:
            raise EngineDataError(f"{where}: rank {code} must be a positive integer")
        out[code, key] = place
    return out


def _rule_facts(
    engine: str, named: dict[str, tuple[str, ...]], ranks: dict[tuple[str, str], int]
) -> dict[str, tuple[str, ...]]:
    """Per rule code, the keys of the facts that name it (`named`: each fact's rules): those
    ranked first, by rank, then the others by key."""
    by_rule: dict[str, list[str]] = {}
    for key, codes in named.items():
        for code in codes:
            by_rule.setdefault(code, []).append(key)
    out: dict[str, tuple[str, ...]] = {}
    for code, keys in sorted(by_rule.items()):
        placed = [ranks[code, k] for k in keys if (code, k) in ranks]
        if len(placed) != len(set(placed)):
            raise EngineDataError(
                f"engines/{engine}/data.toml: rule {code}: two facts have the same rank"
            )
        ranked = sorted((k for k in keys if (code, k) in ranks), key=lambda k: ranks[code, k])
        out[code] = (*ranked, *sorted(k for k in keys if (code, k) not in ranks))
    return out


def _anchors(
    engine: str, key: str, entry: dict[str, Any], citations_checked: bool = False
) -> tuple[tuple[str, ...], str | None]:
    """An entry's `anchors` (one string per location its source cites, "" for none) and its
    `anchor_missing` reason, required exactly when some location has no anchor. Both may be
    absent: the data test, not the loader, insists on them."""
    anchors, missing = entry.get("anchors"), entry.get("anchor_missing")
    where = f"engines/{engine}/data.toml: fact {key}"
    if missing is not None and (not isinstance(missing, str) or not missing.strip()):
        raise EngineDataError(f"{where}: anchor_missing must be a non-empty reason")
    if anchors is None:
        return (), missing
    if not isinstance(anchors, list) or not all(isinstance(a, str) for a in anchors):
        raise EngineDataError(f"{where}: anchors must be a list of strings")
    if not citations_checked:
        _check_anchor_count(where, anchors, entry["source"])
    if ("" in anchors) != (missing is not None):
        raise EngineDataError(
            f"{where}: anchor_missing must say why exactly when a location has no anchor"
        )
    return tuple(anchors), missing


def _check_anchor_count(where: str, anchors: list[str], source: str) -> None:
    """One anchor per location `source` cites."""
    from draftfit.engines.citation import parse_locations

    cited = len(parse_locations(source))
    if len(anchors) != cited:
        raise EngineDataError(
            f"{where}: {len(anchors)} anchors for {cited} cited locations in {source!r}"
        )


def _data_date(engine: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise EngineDataError(f"engines/{engine}/data.toml: data_date must be a YYYY-MM-DD string")
    return value


def _not_read(
    engine: str, raw: Any, versions: tuple[str, ...], known: Mapping[str, Release]
) -> tuple[NotRead, ...]:
    if not isinstance(raw, list):
        raise EngineDataError(
            f"engines/{engine}/data.toml: not_read must be a list of {{version, reason}}"
        )
    out = []
    for item in raw:
        if not isinstance(item, dict) or set(item) != {"version", "reason"}:
            raise EngineDataError(
                f"engines/{engine}/data.toml: not_read entries need exactly version and reason"
            )
        _version(engine, item["version"], "not_read", known)
        if item["version"] in versions:
            raise EngineDataError(
                f"engines/{engine}/data.toml: not_read {item['version']} is in versions"
            )
        if not isinstance(item["reason"], str) or not item["reason"].strip():
            raise EngineDataError(
                f"engines/{engine}/data.toml: not_read {item['version']} needs a reason"
            )
        out.append(NotRead(item["version"], item["reason"]))
    return tuple(out)


def _commits(engine: str, raw: Any, versions: tuple[str, ...]) -> tuple[Pin, ...]:
    """`commits`: one row per release in `versions` (when the list is given at all), each with
    a 40-digit `commit` and its `evidence`, or a `not_read` reason."""
    if not isinstance(raw, list):
        raise EngineDataError(f"engines/{engine}/data.toml: commits must be a list")
    out: list[Pin] = []
    for item in raw:
        where = f"engines/{engine}/data.toml: commits"
        if not isinstance(item, dict) or item.get("version") not in versions:
            raise EngineDataError(f"{where}: each row needs a version from versions")
        pinned = set(item) == {"version", "commit", "evidence"}
        if not pinned and set(item) != {"version", "not_read"}:
            raise EngineDataError(
                f"{where} {item['version']}: needs commit and evidence, or not_read"
            )
        if pinned and not re.fullmatch(r"[0-9a-f]{40}", str(item["commit"])):
            raise EngineDataError(f"{where} {item['version']}: commit must be 40 hex digits")
        if not all(isinstance(v, str) and v.strip() for v in item.values()):
            raise EngineDataError(f"{where} {item['version']}: empty field")
        out.append(
            Pin(item["version"], item.get("commit"), item.get("evidence"), item.get("not_read"))
        )
    if out and sorted(p.version for p in out) != sorted(versions):
        raise EngineDataError(
            f"engines/{engine}/data.toml: commits must have one row per release in versions"
        )
    return tuple(out)


def _check_disjoint(engine: str, key: str, entries: list[Entry]) -> None:
    ordered = sorted(entries, key=lambda e: e.since.rank if e.since else -1)
    for before, after in pairwise(ordered):
        if before.until is None or (after.since is not None and after.since < before.until):
            raise EngineDataError(f"engines/{engine}/data.toml: fact {key}: overlapping ranges")


def _version(engine: str, text: Any, where: str, known: Mapping[str, Release]) -> Release:
    """`text`, a version text of the data, as its ordered Release."""
    release = known.get(text) if isinstance(text, str) else None
    if release is None:
        raise EngineDataError(f"engines/{engine}/data.toml: {where}: bad version {text!r}")
    return release


# The codes a fact's `rules` may name.
_RULE_CODES = frozenset(rule.code for rule in ALL_RULE_IDS)
