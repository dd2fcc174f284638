"""The tensor names of a shard index (`model.safetensors.index.json`), all or only those a
query picks, each with the shard that holds it.

A 671B target's index is a 9 MB document naming ~90,000 tensors, and an MTP check needs a
few thousand of them. Parsing it exactly builds ~180,000 Python strings and a dict (~45 ms,
half the check); searching those names again for the few that matter costs another ~25 ms.
Given a :class:`NameQuery`, :func:`read_index_names` settles a plain index without building
them: when the bytes are ASCII and hold no escape, the `weight_map` object is recognised as
what JSON allows of a flat map of strings to strings (its bytes mapped to a few classes,
then one pattern over them), the rest of the document is parsed by the bounded JSON reader
with the map left out, and the names the query picks are found in the raw bytes. Anything
else (an escape, non-ASCII text, a `weight_map` that is not such a map, a document over a
cap) is read by the exact reader, whose names are searched with :func:`pick_names`: both
ways give the same names, in the same order, with the same duplicates (tests hold this on
generated indexes, valid and broken).

With a query, a key written twice is reported (DF023, in sorted order) where it is a name
the check reads or a key outside `weight_map`: the names a query leaves out are not
examined.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint.jsonread import (
    CONFIG_LIMITS,
    JsonLimitError,
    JsonSyntaxError,
    duplicate_key_damage,
    parse_json,
)
from draftfit.checkpoint.local import parse_json_object, read_json_bytes
from draftfit.checkpoint.model import Damage
from draftfit.records import frozen

if TYPE_CHECKING:
    from draftfit.checkpoint.access import FileAccess

EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.INVALID_INDEX,)
EMITS_STAGE = "checkpoint reader: a shard index's names"

WEIGHT_MAP = "weight_map"


@frozen
class NameQuery:
    """Which names of an index to keep: those beginning with a match of one of `starts`
    (regular expressions over ASCII names) or whose lower-cased form holds one of `words`
    (lower-case ASCII)."""

    starts: tuple[str, ...] = ()
    words: tuple[str, ...] = ()


class PickedNames(list[str]):
    """Names, in the index's order, known to be those `query` picks (for names that are not
    plain ASCII, a superset): picking them again by the same query is not needed."""

    def __init__(self, names: Iterable[str], query: NameQuery) -> None:
        super().__init__(names)
        self.query = query


def picked(names: Collection[str], query: NameQuery) -> PickedNames:
    """`names` picked by `query` (:func:`pick_names`), unless they already were."""
    if isinstance(names, PickedNames) and names.query == query:
        return names
    return PickedNames(pick_names(names, query), query)


@frozen
class IndexNames:
    """The names read from an index, each with its shard, in the index's order.

    Attributes:
        shards: name -> shard file.
        complete: every name of the index (False: only those a query picked).
    """

    shards: dict[str, str]
    complete: bool


def pick_names(names: Collection[str], query: NameQuery) -> list[str]:
    """The names of `names`, in order, that begin with a match of one of `query.starts` or
    whose lower-cased form holds one of `query.words`, found by searching all names as one
    text (each pattern skips the ~100,000 names it cannot match at C speed). Names that are
    not plain ASCII, or that hold a line break, are all returned (the caller tests each)."""
    text = "\n" + "\n".join(names)
    if not text.isascii() or text.count("\n") != len(names):
        return list(names)
    found: set[int] = set()
    if query.starts:
        for match in re.finditer(rf"\n(?:{'|'.join(query.starts)})", text):
            found.add(match.start() + 1)
    if query.words:
        lowered = text.lower()
        for word in query.words:  # one plain search per word: far faster than an alternation
            at = lowered.find(word)
            while at >= 0:
                found.add(lowered.rfind("\n", 0, at) + 1)
                at = lowered.find(word, at + len(word))
    out = []
    for start in sorted(found):
        end = text.find("\n", start)
        out.append(text[start:] if end < 0 else text[start:end])
    return out


def read_index_names(
    access: FileAccess, rel: str, damage: list[Damage], query: NameQuery | None = None
) -> IndexNames | None:
    """The names of the index `rel`, each with its shard: all of them, or with `query` only
    those it picks (a superset where a name is not plain ASCII). None when the index cannot
    be used (its damage recorded: unreadable, over a cap, not JSON, or no `weight_map` of
    strings to strings)."""
    data = read_json_bytes(access, rel, damage)
    if data is None:
        return None
    if query is not None:
        settled = _read_plain(data, query)
        if settled is not None:
            shards, duplicates = settled
            damage.extend(duplicate_key_damage(rel, tuple(sorted(duplicates))))
            return IndexNames(shards, complete=False)
    return _read_exact(data, rel, damage, query)


def _read_exact(
    data: bytes, rel: str, damage: list[Damage], query: NameQuery | None
) -> IndexNames | None:
    """The index parsed by the bounded JSON reader; with `query`, only the names it picks."""
    kind = rule_ids.INVALID_INDEX
    document = parse_json_object(data, rel, damage, kind)
    if document is None:
        return None
    weight_map = document.value.get(WEIGHT_MAP)
    # (the types of ~100,000 names and shards, checked at C speed: JSON gives no subclass)
    if not isinstance(weight_map, dict) or not set(map(type, weight_map.values())) <= {str}:
        damage.extend(duplicate_key_damage(rel, document.duplicate_keys))
        damage.append(Damage(kind, rel, "`weight_map` is not a map"))
        return None
    if query is None:
        damage.extend(duplicate_key_damage(rel, document.duplicate_keys))
        return IndexNames(weight_map, complete=True)
    picked = {name: weight_map[name] for name in pick_names(weight_map, query)}
    # as the plain reading reports them: the names read, and the keys outside the map
    duplicates = {k for k in document.duplicate_keys if k in picked or k not in weight_map}
    damage.extend(duplicate_key_damage(rel, tuple(sorted(duplicates))))
    return IndexNames(picked, complete=False)


# The plain reading. Each byte of the map is put in a class: a byte a name may hold without
# an escape ("a"; an upper-case letter "A"), JSON whitespace (" "), a quote, `:` `,` `{` `}`,
# or one the plain reading does not take ("!": a control character, a backslash, `[` or
# `]`, anything not ASCII).
def _classes() -> bytes:
    table = bytearray(b"!" * 256)
    for byte in range(0x20, 0x7F):
        table[byte] = ord("A") if ord("A") <= byte <= ord("Z") else ord("a")
    for byte in b" \t\n\r":
        table[byte] = ord(" ")
    for byte in b'":,{}':
        table[byte] = byte
    for byte in b"\\[]":
        table[byte] = ord("!")
    return bytes(table)


_CLASSES = _classes()
# A flat JSON object of strings to strings, over the classes. Possessive loops over one
# class run at C speed: the 9 MB map of a 671B target is settled in a few milliseconds.
_STRING = rb'"a*+"'
_PAIR = _STRING + rb" *+: *+" + _STRING
_FLAT_MAP = re.compile(rb"\{ *+(?:" + _PAIR + rb"(?: *+, *+" + _PAIR + rb")*+ *+)?\}")
_MAP_START = re.compile(rb'"weight_map"[ \t\n\r]*:[ \t\n\r]*\{')
# What stands in for the map while the rest of the document is parsed: a string no plain
# document can hold (it has no backslash).
_PLACEHOLDER = b'"\\u0000"'


def _read_plain(data: bytes, query: NameQuery) -> tuple[dict[str, str], tuple[str, ...]] | None:
    """The names `query` picks with their shards, and the duplicates among them and among
    the keys outside the map, when `data` is a plain index; None when it is not (the exact
    reader decides)."""
    if not data.isascii() or b"\\" in data:
        return None
    opening = _MAP_START.search(data)
    if opening is None:
        return None
    begin = opening.end() - 1
    end = data.find(b"}", begin) + 1
    if end <= 0:
        return None
    # Names are searched for their words in lower case: when the map holds no upper-case
    # letter (the pattern refuses class "A"), in the bytes as they are; otherwise in a
    # lower-cased copy (a 9 MB copy costs its pages, so only then).
    lowered = data
    if _FLAT_MAP.fullmatch(data.translate(_CLASSES), begin, end) is None:
        lowered = data.lower()
        if _FLAT_MAP.fullmatch(lowered.translate(_CLASSES), begin, end) is None:
            return None
    rest = data[:begin] + _PLACEHOLDER + data[end:]
    try:
        document = parse_json(rest, CONFIG_LIMITS)
    except (JsonLimitError, JsonSyntaxError):
        return None
    if not isinstance(document.value, dict) or document.value.get(WEIGHT_MAP) != "\x00":
        return None  # the map found is not the document's own `weight_map`
    pairs = data.count(b":", begin, end)  # names cannot hold a colon (they are class "a")
    if not _within_caps(pairs, rest):
        return None
    shards, duplicates = _picked_pairs(data, lowered, begin, end, query)
    return shards, (*document.duplicate_keys, *duplicates)


def _within_caps(pairs: int, rest: bytes) -> bool:
    """Whether the whole document (the map's `pairs` and the parsed `rest`) is within the
    reader's caps; otherwise the exact reader reports the cap exceeded."""
    limits = CONFIG_LIMITS
    quotes = rest.count(b'"')  # every quote of `rest` opens or closes a string
    return (
        pairs + rest.count(b":") <= limits.max_members
        and quotes // 2 + 2 * pairs <= limits.max_strings
        and rest.count(b",") + max(pairs - 1, 0) + 1 <= limits.max_items
        and rest.count(b"[") + rest.count(b"{") + 1 <= limits.max_containers
    )


# A member of a plain map from the opening quote of its name: the name, then its shard.
_MEMBER = rb'([^"]*)"[ \t\n\r]*:[ \t\n\r]*"([^"]*)"'


def _picked_pairs(
    data: bytes, lowered: bytes, begin: int, end: int, query: NameQuery
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The names of the plain map `data[begin:end]` (`lowered`: the same bytes with each
    letter in lower case) that `query` picks, each with its shard (the last written, as
    JSON readers keep it), in the order the map first writes them, and those written more
    than once."""
    starts = "|".join(query.starts).encode("ascii")
    # every member whose name begins with a start, in the map's order
    picked: list[tuple[bytes, bytes]] = []
    if query.starts:
        pattern = re.compile(rb'"((?:' + starts + rb')[^"]*)"[ \t\n\r]*:[ \t\n\r]*"([^"]*)"')
        picked = pattern.findall(data, begin, end)
    # where each member a word picks begins -> its name and shard, unless a start picks it
    # (then each time it is written is in `picked` already)
    by_word: dict[int, tuple[bytes, bytes]] = {}
    member = re.compile(_MEMBER)
    start = re.compile(rb"(?:" + starts + rb")") if query.starts else None
    for word in query.words:
        # searched from the end: CPython's backward search is ~3x faster on such text
        needle = word.encode("ascii")
        at = lowered.rfind(needle, begin, end)
        while at >= 0:
            opening = lowered.rfind(b'"', begin, at)
            pair = member.match(data, opening + 1, end)
            # (no pair: the name of a shard file, not of a tensor)
            if pair is not None and (start is None or start.match(pair[1]) is None):
                by_word[opening + 1] = (pair[1], pair[2])
            at = lowered.rfind(needle, begin, opening)
    if by_word:  # rare (a name that only looks like an MTP tensor): ordered by position
        found = dict(by_word)
        if query.starts:
            for match in pattern.finditer(data, begin, end):
                found[match.start(1)] = (match[1], match[2])
        picked = [found[position] for position in sorted(found)]
    if not picked:
        return {}, ()
    # decoded at once (a plain name holds no NUL); a dict keeps each name where it was
    # first written, with the shard written last, as JSON readers do
    names = b"\0".join(name for name, _ in picked).decode("ascii").split("\0")
    files = b"\0".join(shard for _, shard in picked).decode("ascii").split("\0")
    shards = dict(zip(names, files, strict=True))
    if len(shards) == len(names):
        return shards, ()
    seen: set[str] = set()
    duplicates: dict[str, None] = {}
    for name in names:
        if name in seen:
            duplicates[name] = None
        seen.add(name)
    return shards, tuple(duplicates)


__all__ = [
    "IndexNames",
    "NameQuery",
    "PickedNames",
    "pick_names",
    "picked",
    "read_index_names",
]
