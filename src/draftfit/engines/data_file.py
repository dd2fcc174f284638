"""Reading an engine's data file (`engines/<engine>/data.toml`, compiled to `data.json`)
into :class:`~draftfit.engines.profile.EngineData`: every fact, entry, source and rule
reference validated, each fact built when it is first read (:class:`FactsOnDemand`).
:mod:`draftfit.engines.profile` holds the records and resolves them at a version.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from itertools import pairwise
from typing import TYPE_CHECKING

from draftfit.engines.profile import (
    APPROXIMATE_CONFIDENCE,
    CONFIDENCE,
    ENTRY_KEYS,
    EngineData,
    Entry,
    FactData,
    NotRead,
    Pin,
)
from draftfit.engines.releases import Release, rank_versions, releases
from draftfit.errors import EngineDataError
from draftfit.rule_ids import ALL_RULE_IDS, Consequence

if TYPE_CHECKING:
    from typing import Any


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
