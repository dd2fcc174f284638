"""A bounded JSON reader for every JSON document draftfit takes from a checkpoint or target.

`config.json`, shard indexes, safetensors headers and Hub-fetched JSON are written by
whoever made the checkpoint, so they are hostile input. Python's `json` module recurses
once per nesting level (a few thousand `[` raise `RecursionError`), refuses integers of
more than 4300 digits with a `ValueError` from `int()`, and silently keeps the last of
duplicated keys. This reader scans the text first, without recursion, and refuses a
document that exceeds a cap with :class:`JsonLimitError`; a document that is not UTF-8
JSON raises :class:`JsonSyntaxError`; duplicated keys are returned for a warning. Callers
turn each into a finding (DF022 `reader-limit-exceeded`, DF023 `duplicate-json-key`).

The caps live in :class:`JsonLimits`; their values are the named constants of
:mod:`draftfit.checkpoint.limits`, each with the reason for its number.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint.limits import (
    MAX_JSON_CONTAINERS,
    MAX_JSON_DEPTH,
    MAX_JSON_FILE_BYTES,
    MAX_JSON_ITEMS,
    MAX_JSON_MEMBERS,
    MAX_JSON_NUMBER_DIGITS,
    MAX_JSON_STRINGS,
)
from draftfit.checkpoint.model import Damage
from draftfit.records import frozen

if TYPE_CHECKING:
    from typing import Any

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.DUPLICATE_JSON_KEY,)
EMITS_STAGE = "checkpoint reader: JSON files"

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# A `\uD800`-`\uDFFF` escape: a surrogate, which only a valid pair may write.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class JsonLimitError(ValueError):
    """The document exceeds one of the reader's caps (DF022)."""


class JsonSyntaxError(ValueError):
    """The document is not UTF-8 JSON; `detail` is the decoder's own message."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


@frozen
class JsonLimits:
    """Caps for one kind of document."""

    max_bytes: int = MAX_JSON_FILE_BYTES
    max_depth: int = MAX_JSON_DEPTH
    max_digits: int = MAX_JSON_NUMBER_DIGITS
    max_members: int = MAX_JSON_MEMBERS
    max_containers: int = MAX_JSON_CONTAINERS
    max_strings: int = MAX_JSON_STRINGS
    max_items: int = MAX_JSON_ITEMS


CONFIG_LIMITS = JsonLimits()


@frozen
class JsonDocument:
    """A parsed document and the keys that were written more than once in some object."""

    value: Any
    duplicate_keys: tuple[str, ...]


def parse_json(data: bytes, limits: JsonLimits = CONFIG_LIMITS) -> JsonDocument:
    """Parse `data` as UTF-8 JSON within `limits`.

    Raises :class:`JsonLimitError` when a cap is exceeded and :class:`JsonSyntaxError` when
    the bytes are not UTF-8 JSON; never `RecursionError` or the `int()` digit-limit error.
    Duplicate keys keep the last value (as every engine's JSON loader does) and are
    reported in `duplicate_keys`.
    """
    if len(data) > limits.max_bytes:
        raise JsonLimitError(f"it is {len(data)} bytes, above the {limits.max_bytes}-byte limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonSyntaxError(f"not UTF-8 text: {exc}", str(exc)) from None
    bounds = _scan(data, limits)
    numbers = _Numbers(limits.max_digits)
    if bounds is not None:
        colons, openers = bounds
        # Each member written is one colon outside strings, so the bytes hold at least
        # as many colons as members written: when the parsed objects hold as many members
        # as the bytes hold colons, no key was written twice, and the slower parse that
        # names such keys is not needed.
        try:
            value = json.loads(text, parse_int=numbers.whole, parse_float=numbers.real)
        except JsonLimitError:
            raise
        except RecursionError:  # pragma: no cover - the scan bounds the depth first
            raise JsonLimitError(f"it is nested more than {limits.max_depth} levels deep") from None
        except ValueError as exc:
            raise JsonSyntaxError(f"not valid JSON: {exc}", str(exc)) from None
        if _members(value, openers) == colons:
            if _SURROGATE_ESCAPE.search(data):
                _refuse_lone_surrogates(value)
            return JsonDocument(value, ())
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(items)
        if len(result) != len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen and key not in duplicates:
                    duplicates.append(key)
                seen.add(key)
        return result

    try:
        value = json.loads(
            text, object_pairs_hook=pairs, parse_int=numbers.whole, parse_float=numbers.real
        )
    except JsonLimitError:
        raise
    except RecursionError:  # pragma: no cover - the scan bounds the depth first
        raise JsonLimitError(f"it is nested more than {limits.max_depth} levels deep") from None
    except ValueError as exc:
        raise JsonSyntaxError(f"not valid JSON: {exc}", str(exc)) from None
    if _SURROGATE_ESCAPE.search(data):
        _refuse_lone_surrogates(value)
    return JsonDocument(value, tuple(duplicates))


def _refuse_lone_surrogates(value: Any) -> None:
    """Raise :class:`JsonSyntaxError` when a string (key or value) holds a lone surrogate
    (`"\\ud800"`): Python's decoder accepts it, but it is not Unicode text (the safetensors
    reference reader refuses it) and no output could encode it. Walks without recursion;
    only run when the bytes hold a surrogate escape."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                detail = f"a string holds \\u{ord(item[exc.start]):04x}, a lone surrogate"
                raise JsonSyntaxError(f"not valid JSON: {detail}", detail) from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _members(value: Any, containers: int) -> int:
    """The members of every object in `value`, counted without recursion; `containers` is
    at least the number of objects and arrays in it (once that many are found, the values
    left are not looked through: a shard index's ~100,000 names are not)."""
    count = 0
    stack = [value]
    left = containers - 1
    while stack:
        item = stack.pop()
        values = item.values() if isinstance(item, dict) else item
        count += len(item) if isinstance(item, dict) else 0
        if left <= 0 or not isinstance(item, (dict, list)):
            continue
        nested = [v for v in values if isinstance(v, (dict, list))]
        left -= len(nested)
        stack.extend(nested)
    return count


# Every byte but those the scan counts.
_NOT_COUNTED = bytes(b for b in range(256) if b not in b'":,[{')


def _scan(data: bytes, limits: JsonLimits) -> tuple[int, int] | None:
    """Check string, member and container counts, depth and number lengths on the raw
    bytes, without recursion, and before allocating anything per string.

    The counts over the whole bytes, strings included, are first taken as upper bounds:
    when they are all within the caps, so are the exact ones, and the colon count is
    returned with the count of `[` and `{` (a large shard index is settled so, several times
    faster; long numbers are then refused as the decoder reads them, see :class:`_Numbers`).
    Otherwise (a header: its three brackets per tensor exceed the depth cap as a count) the
    exact counts outside strings decide, and None is returned."""
    marks = data.translate(None, _NOT_COUNTED)  # the bytes counted, kept in a few KB
    quotes = marks.count(b'"')  # escaped quotes count too: an over-estimate, never under
    if quotes > 2 * limits.max_strings:
        raise JsonLimitError(f"it has more than {limits.max_strings} strings")
    colons = marks.count(b":")
    openers = marks.count(b"[") + marks.count(b"{")
    if (
        colons <= limits.max_members
        and marks.count(b",") + 1 <= limits.max_items
        and openers <= min(limits.max_containers, limits.max_depth)
    ):
        return colons, openers
    outside = _outside_strings(data, quotes)
    members = outside.count(b":")
    if members > limits.max_members:
        raise JsonLimitError(
            f"it has {members} object members, above the limit of {limits.max_members}"
        )
    items = outside.count(b",") + 1
    if items > limits.max_items:
        raise JsonLimitError(f"it has {items} values, above the limit of {limits.max_items}")
    containers = outside.count(b"[") + outside.count(b"{")
    if containers > limits.max_containers:
        raise JsonLimitError(
            f"it has {containers} objects and arrays, above the limit of {limits.max_containers}"
        )
    _check_depth(outside.translate(None, _NOT_BRACKETS), limits.max_depth)
    # Only a run of number characters longer than the cap can hold too many digits (looked
    # for over the bytes marked number or not, at C speed, before any pattern runs).
    if b"1" * (limits.max_digits + 1) not in outside.translate(_NUMBER_MARKS):
        return None
    long_runs = re.compile(rb"[-+.0-9eE]{%d,}" % (limits.max_digits + 1))
    for match in long_runs.finditer(outside):
        digits = sum(1 for c in match.group() if 48 <= c <= 57)
        if digits > limits.max_digits:
            raise JsonLimitError(
                f"a number has {digits} digits, above the limit of {limits.max_digits}"
            )
    return None


# Every byte but brackets; each byte marked "1" where it may be part of a number, else "0".
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NUMBER_MARKS = bytes(ord("1") if b in b"-+.0123456789eE" else ord("0") for b in range(256))
# Openers and closers of both kinds, as one pair of bytes.
_NESTING = bytes.maketrans(b"[]{}", b"()()")


def _check_depth(brackets: bytes, max_depth: int) -> None:
    """Refuse `brackets` (the document's brackets outside strings, in order) when they nest
    deeper than `max_depth`. Each pass takes out the innermost pairs, so a balanced
    document `max_depth` deep is settled in that many passes at C speed (a header is 3
    deep); anything else is walked bracket by bracket."""
    shape = brackets.translate(_NESTING)
    for _ in range(max_depth):
        inner = shape.replace(b"()", b"")
        if not inner:
            return
        if len(inner) == len(shape):
            break  # not balanced: the walk decides
        shape = inner
    depth = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            if depth > max_depth:
                raise JsonLimitError(f"it is nested more than {max_depth} levels deep")
        else:
            depth -= 1


def _outside_strings(data: bytes, quotes: int) -> bytes:
    """`data` with every string's contents taken out (each string becomes `""`). Without a
    backslash every quote opens or closes a string, so the text between the odd and even
    quotes is the strings' contents: cut at the quotes, which is several times faster than
    the string pattern on a large shard index; otherwise (escapes, or an unclosed string),
    the pattern."""
    if quotes % 2 or b"\\" in data:
        return _STRING.sub(b'""', data)
    return b'""'.join(data.split(b'"')[0::2])


class _Numbers:
    """The decoder's number hooks: a number of more than `max_digits` digits is refused
    (DF022) before `int()` or `float()` sees it. The decoder hands each number over as its
    text, so a document whose structure the scan settled from its raw counts needs no pass
    over its bytes for long numbers. A header holds four integers per tensor, so each hook
    is one call that settles a short number itself."""

    def __init__(self, max_digits: int) -> None:
        self.max_digits = max_digits

        def whole(text: str) -> int:
            return int(text) if len(text) <= max_digits else int(self._refuse_long(text))

        def real(text: str) -> float:
            return float(text) if len(text) <= max_digits else float(self._refuse_long(text))

        self.whole = whole
        self.real = real

    def _refuse_long(self, text: str) -> str:
        """`text`, unless it holds more than `max_digits` digits (then DF022)."""
        digits = sum(1 for char in text if "0" <= char <= "9")
        if digits > self.max_digits:
            raise JsonLimitError(
                f"a number has {digits} digits, above the limit of {self.max_digits}"
            )
        return text


def duplicate_key_damage(rel: str, keys: tuple[str, ...]) -> list[Damage]:
    """DF023 for keys written more than once in one object of `rel` (the last value wins)."""
    if not keys:
        return []
    shown = ", ".join(f"`{k}`" for k in keys[:5]) + (" ..." if len(keys) > 5 else "")
    return [
        Damage(
            rule_ids.DUPLICATE_JSON_KEY,
            rel,
            f"{len(keys)} key(s) written more than once in one object ({shown}); JSON loaders "
            "keep the last value, other tools the first",
        )
    ]
