"""Engine knowledge as versioned data: the records of a data file and a :class:`Profile`, the
data resolved at one version (:mod:`draftfit.engines.data_file` reads the file).

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

from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING

from draftfit.engines.releases import Release
from draftfit.errors import EngineDataError, UnknownEngineVersionError
from draftfit.records import field, frozen
from draftfit.rule_ids import Consequence

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
        # (ranks compared directly: a `matrix` asks this ~40,000 times)
        rank = version.rank
        return (self.since is None or rank >= self.since.rank) and (
            self.until is None or rank < self.until.rank
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


def _compact_versions(versions: tuple[str, ...]) -> str:
    return (
        f"{versions[0]} … {versions[-1]} ({len(versions)} releases; `draftfit engines` lists them)"
    )
