"""Module-name lists of a quantization config (`ignore`, `targets`), matched bounded.

compressed-tensors names modules exactly or by `re:` + a regular expression matched from
the start of the name, and engines match them with Python's `re`. The lists come from a
checkpoint: a list may be of the wrong type, hold a hundred thousand entries, or patterns
that do not compile (`re:(`) or that take exponential time on a backtracking matcher
(`re:(.*)*x`). So a list is read only when it is a list of strings of at most
:data:`MAX_ENTRIES` entries, each pattern of at most :data:`MAX_PATTERN_CHARS` characters,
compiling, and of a shape whose matching time is bounded (:func:`bounded_pattern`); and
a name longer than :data:`MAX_NAME_CHARS` (no engine module is) matches no pattern. Any
other list is *unreadable*: the caller then models nothing from the config, rather than
guess which modules it quantizes.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

#: Entries of one list read (real lists name a few modules, or one per layer of a large
#: model: a few thousand).
MAX_ENTRIES = 10_000
#: `re:` patterns of one list (real ones hold a handful).
MAX_PATTERNS = 256
#: Characters of one pattern.
MAX_PATTERN_CHARS = 256
#: Repetitions (`*`, `+`, `{m,n}`) in one pattern: each multiplies the worst-case
#: matching time by the length of the name; real patterns have one or two (`re:.*lm_head`,
#: `re:model.layers.\d+.mlp.*`).
MAX_REPEATS = 2
#: A name longer than this matches no pattern (module names are a few dozen characters).
MAX_NAME_CHARS = 512
RE_PREFIX = "re:"


class NameList:
    """A list of module names and `re:` patterns, ready to match (see the module docstring).

    Attributes:
        entries: the list as written (strings).
        unreadable: why the list cannot be used, or None.
    """

    __slots__ = ("_exact", "_patterns", "entries", "unreadable")

    def __init__(self, value: Any, what: str) -> None:
        """Read `value` (the JSON value of the list; None or absent: empty); `what` names
        it in the reason it is unreadable."""
        self.entries: tuple[str, ...] = ()
        self.unreadable: str | None = None
        self._exact: frozenset[str] = frozenset()
        self._patterns: tuple[re.Pattern[str], ...] = ()
        if value is None:
            return
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.unreadable = f"`{what}` is not a list of module names"
            return
        if len(value) > MAX_ENTRIES:
            self.unreadable = f"`{what}` holds more than {MAX_ENTRIES} entries"
            return
        texts = [item[len(RE_PREFIX) :] for item in value if item.startswith(RE_PREFIX)]
        if len(texts) > MAX_PATTERNS:
            self.unreadable = f"`{what}` holds more than {MAX_PATTERNS} `re:` patterns"
            return
        patterns = []
        for text in texts:
            compiled = bounded_pattern(text)
            if compiled is None:
                self.unreadable = (
                    f"a `{what}` pattern is not one draftfit matches safely (it does not "
                    f"compile, is longer than {MAX_PATTERN_CHARS} characters, or nests or "
                    f"holds more than {MAX_REPEATS} repetitions)"
                )
                return
            patterns.append(compiled)
        self.entries = tuple(value)
        self._exact = frozenset(item for item in value if not item.startswith(RE_PREFIX))
        self._patterns = tuple(patterns)

    def matches(self, name: str) -> bool:
        """Whether `name` is in the list: equal to an entry, or matched from its start by
        a pattern. An unreadable list matches nothing."""
        if name in self._exact:
            return True
        if len(name) > MAX_NAME_CHARS:
            return False
        return any(pattern.match(name) is not None for pattern in self._patterns)


@lru_cache(maxsize=1024)
def bounded_pattern(text: str) -> re.Pattern[str] | None:
    """`text` compiled, when its matching time on a name of n characters is at most
    polynomial of degree :data:`MAX_REPEATS`: at most that many repetitions, each of one
    character (a literal, `.`, a class), none inside another, no back-references or
    look-arounds; else None (also for a pattern that does not compile or is too long)."""
    if len(text) > MAX_PATTERN_CHARS:
        return None
    try:
        compiled = re.compile(text)
        parsed = _parser().parse(text)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    return compiled if _bounded(parsed) else None


def _parser() -> Any:
    """Python's own parser of regular expressions (the one `re.compile` uses)."""
    if sys.version_info >= (3, 11):
        from re import _parser as parser  # type: ignore[attr-defined]
    else:  # pragma: no cover - Python 3.10
        import sre_parse as parser
    return parser


def _constants() -> Any:
    if sys.version_info >= (3, 11):
        from re import _constants as constants  # type: ignore[attr-defined]
    else:  # pragma: no cover - Python 3.10
        import sre_constants as constants
    return constants


def _bounded(parsed: Any) -> bool:
    """Whether the parsed pattern has the bounded shape :func:`bounded_pattern` wants."""
    c = _constants()
    single = {c.LITERAL, c.NOT_LITERAL, c.ANY, c.IN, c.CATEGORY}
    repeat_ops = {c.MAX_REPEAT, c.MIN_REPEAT}
    if hasattr(c, "POSSESSIVE_REPEAT"):
        repeat_ops.add(c.POSSESSIVE_REPEAT)
    repeats = 0
    stack = [parsed]
    while stack:
        for op, av in stack.pop():
            if op in single or op is c.AT:
                continue
            if op in repeat_ops:
                _low, high, body = av
                items = list(body)
                if len(items) != 1 or items[0][0] not in single:
                    return False  # a repeated group: nested or alternated repetition
                if high != 1:
                    repeats += 1
            elif op is c.SUBPATTERN:
                stack.append(av[-1])
            elif op is c.BRANCH:
                stack.extend(av[1])
            else:
                return False  # back-references, look-arounds, conditionals, atomic groups
    return repeats <= MAX_REPEATS
