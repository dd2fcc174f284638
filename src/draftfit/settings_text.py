"""Bounded reading of the settings documents users hand to draftfit: YAML, TOML and JSON.

`--serve-config`, TensorRT-LLM's `--extra_llm_api_options` file and draftfit's own settings
files (`draftfit.toml`, `pyproject.toml`) come from a pull request as easily as from the user,
so they are read under the same caps as a checkpoint's JSON: a size cap before anything is
parsed, a nesting cap, a cap on the nodes a YAML document expands to through its aliases
(a "billion laughs" document of a few hundred bytes names billions of values), integers of
at most :data:`~draftfit.checkpoint.limits.MAX_JSON_NUMBER_DIGITS` digits, and strings that
are Unicode (no lone surrogate). A document past a cap is a :class:`UsageError` naming the
file and the cap, never a `RecursionError`, a hang or a huge allocation.

Messages quote values through :func:`shown`, which bounds what it formats: a message never
formats (or expands) a whole value from the document.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from draftfit.checkpoint.limits import MAX_JSON_DEPTH, MAX_JSON_NUMBER_DIGITS
from draftfit.errors import UsageError
from draftfit.escape import SHOWN_CHARS, clip

if TYPE_CHECKING:
    from typing import Any

#: Size of a settings document (a launch's settings, a settings file). Real ones are a few
#: hundred bytes; 1 MiB leaves room for comments and a long speculative config while
#: refusing a device, a FIFO or a huge file without reading it all.
MAX_SETTINGS_BYTES = 1024 * 1024
#: Nesting depth of a settings document, counted through YAML aliases: the same cap as a
#: checkpoint's JSON (real settings nest two or three levels).
MAX_SETTINGS_DEPTH = MAX_JSON_DEPTH
#: Values (scalars, lists and mappings) a YAML document holds once its aliases are expanded.
#: A settings file holds a few dozen; 100k bounds the time and memory of loading it and of
#: any code that walks what it holds, whatever its aliases repeat.
MAX_SETTINGS_NODES = 100_000
# Bits of the largest integer a settings document may hold (about 40 decimal digits).
_MAX_INT_BITS = 133


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """`value` for a message, bounded: a string or number as its `repr`, cut at `limit`
    characters; a list or mapping by its kind and size (never expanded)."""
    if isinstance(value, dict):
        return f"a mapping of {len(value)} key(s)"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return "a number too large to show"
    text = repr(value) if isinstance(value, (str, int, float, bool)) or value is None else None
    if text is None:
        text = f"a {type(value).__name__}"
    return clip(text, limit)


def shown_key(key: object, limit: int = SHOWN_CHARS) -> str:
    """A mapping key for a message: as written when it is a short string, else bounded."""
    if isinstance(key, str) and len(key) <= limit and key.isprintable():
        return key
    return shown(key, limit)


def check_tree(value: Any, what: str) -> None:
    """Refuse a parsed document nested past :data:`MAX_SETTINGS_DEPTH`, holding a string
    that is not Unicode (a lone surrogate such as `\\ud800`) or an integer of more than
    MAX_JSON_NUMBER_DIGITS digits. Walks without recursion;
    the document is already bounded in size."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _unicode(item, what)
        elif isinstance(item, int) and item.bit_length() > _MAX_INT_BITS:
            raise UsageError(f"{what}: a number of more than {MAX_JSON_NUMBER_DIGITS} digits")
        elif isinstance(item, (dict, list, tuple)):
            if depth >= MAX_SETTINGS_DEPTH:
                raise UsageError(f"{what}: nested more than {MAX_SETTINGS_DEPTH} levels deep")
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def _unicode(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        raise UsageError(
            f"{what}: a string holds \\u{code:04x}, a lone surrogate that is not Unicode text"
        ) from None


def decode_utf8(data: bytes, what: str) -> str:
    """`data` as UTF-8 text; bytes that are not are a usage error naming where."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{what}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


# ----------------------------------------------------------------------------------- TOML


# Dotted keys (`a.b.c`, parts bare or quoted): each part is a level of nesting, and tomllib
# walks each dotted key from the top (time quadratic in its parts). A chain starts only
# where a bare part can start and is matched greedily with nothing after it, so the scan
# is linear; a string that looks like a chain counts too, which no real settings file has.
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')[ \t]*\.[ \t]*"""
_DOTTED_CHAIN = rf"(?<![A-Za-z0-9_-])(?:{_KEY_PART})+"
_PART = _KEY_PART


def _deepest_dotted_key(text: str) -> int:
    """The most parts (dots) of one dotted-key chain in `text`."""
    deepest = 0
    for match in re.finditer(_DOTTED_CHAIN, text):
        if len(match.group()) >= 2 * MAX_SETTINGS_DEPTH:  # shorter: fewer parts than the cap
            deepest = max(deepest, len(re.findall(_PART, match.group())))
    return deepest


def load_toml(data: bytes, what: str) -> dict[str, Any]:
    """The TOML document in `data` (at most :data:`MAX_SETTINGS_BYTES`), checked by
    :func:`check_tree`; anything else is a usage error naming `what`."""
    if len(data) > MAX_SETTINGS_BYTES:
        raise UsageError(f"{what}: it is above the {MAX_SETTINGS_BYTES}-byte limit")
    text = decode_utf8(data, what)
    if _deepest_dotted_key(text) >= MAX_SETTINGS_DEPTH:
        raise UsageError(f"{what}: nested more than {MAX_SETTINGS_DEPTH} levels deep")
    toml = _tomllib()
    try:
        parsed: dict[str, Any] = toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise UsageError(f"{what} is not valid TOML: {exc}") from None
    except RecursionError:
        raise UsageError(f"{what}: nested more than {MAX_SETTINGS_DEPTH} levels deep") from None
    except ValueError:  # tomllib lets int()'s digit limit through
        raise UsageError(f"{what}: a number of more than {MAX_JSON_NUMBER_DIGITS} digits") from None
    check_tree(parsed, what)
    return parsed


# ----------------------------------------------------------------------------------- YAML


def _tomllib() -> Any:
    """tomllib (tomli on Python 3.10), loaded only when a settings file is parsed."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


def load_yaml(text: str, what: str) -> Any:
    """The one YAML document in `text`, loaded safely (no tags that build objects) once
    its expanded size, its depth and its integers are within the caps."""
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise UsageError(f"{what}: reading YAML needs PyYAML (pip install pyyaml)") from None
    if len(text) > MAX_SETTINGS_BYTES:
        raise UsageError(f"{what}: it is above the {MAX_SETTINGS_BYTES}-byte limit")
    loader = _bounded_loader(yaml)
    try:
        _measure(yaml.parse(text, Loader=loader), yaml, what)
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise UsageError(f"{what}: not valid YAML ({_yaml_problem(exc)})") from None
    check_tree(data, what)
    return data


def _bounded_loader(yaml: Any) -> Any:
    """A safe loader (libyaml's when installed) whose integers have at most
    MAX_JSON_NUMBER_DIGITS digits (`int()` of a 100k-digit string raises, and a long
    sexagesimal integer costs quadratic time)."""
    base = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

    def construct_int(loader: Any, node: Any) -> Any:
        if len(node.value) > MAX_JSON_NUMBER_DIGITS + 2:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"an integer of {len(node.value)} characters, above the "
                f"{MAX_JSON_NUMBER_DIGITS}-digit limit",
                node.start_mark,
            )
        return base.construct_yaml_int(loader, node)

    loader: Any = type("BoundedSafeLoader", (base,), {})
    loader.add_constructor("tag:yaml.org,2002:int", construct_int)
    return loader


def _measure(events: Iterator[Any], yaml: Any, what: str) -> None:
    """Walk the parser's events (no composing, no recursion) and stop at the first cap
    exceeded: nesting past MAX_SETTINGS_DEPTH or more than MAX_SETTINGS_NODES values, both
    counted with every alias expanded to what its anchor holds."""
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (expanded values, depth)
    open_: list[list[Any]] = []  # per open collection: [anchor, values, deepest child]
    total = 0
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            open_.append([event.anchor, 1, 0])
            if len(open_) > MAX_SETTINGS_DEPTH:
                raise UsageError(f"{what}: nested more than {MAX_SETTINGS_DEPTH} levels deep")
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, values, inner = open_.pop()
            depth = inner + 1
        elif isinstance(event, yaml.ScalarEvent):
            anchor, values, depth = event.anchor, 1, 0
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                raise UsageError(
                    f"{what}: the alias *{shown_key(event.anchor)} refers to a value that "
                    "is not complete (recursive) or not defined"
                )
            anchor = None
            values, depth = anchors[event.anchor]
        else:
            continue
        if anchor is not None:
            anchors[anchor] = (values, depth)
        if len(open_) + depth > MAX_SETTINGS_DEPTH:
            raise UsageError(
                f"{what}: nested more than {MAX_SETTINGS_DEPTH} levels deep once its aliases "
                "are expanded"
            )
        if open_:
            open_[-1][1] += values
            open_[-1][2] = max(open_[-1][2], depth)
            values = open_[-1][1]
        else:
            total += values
            values = total
        if values > MAX_SETTINGS_NODES:
            raise UsageError(
                f"{what}: it holds more than {MAX_SETTINGS_NODES} values once its aliases "
                "are expanded"
            )


def _yaml_problem(exc: Exception) -> str:
    """The parser's problem and where, without the snippet of the document PyYAML's own
    message quotes (a file that is not settings at all must not be echoed)."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if not problem:  # a ReaderError: a character YAML refuses, and its offset
        return clip(" ".join(str(exc).split()), 160)
    text = clip(" ".join(str(problem).split()), 160)
    if mark is not None:
        text += f" at line {mark.line + 1}, column {mark.column + 1}"
    return text
