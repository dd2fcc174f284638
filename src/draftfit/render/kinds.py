"""The kinds of command output and the formats each can be written in.

This module is deliberately light (no renderer, no result type imported), so that building
the command-line parser stays fast: each command's `--format` choices are
:func:`formats_for` its kind. :mod:`draftfit.render.registry` binds every (kind, format)
pair to a renderer, and a test keeps the two in step.
"""

from __future__ import annotations


class Kind:
    """One kind of command output (compared by identity: each is defined once, below).

    Attributes:
        name: what the output is (`check`, `matrix`, ...).
        formats: the format names it can be written in; the first is the default.
    """

    __slots__ = ("formats", "name")

    def __init__(self, name: str, formats: tuple[str, ...]) -> None:
        self.name = name
        self.formats = formats

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"


TEXT_JSON = ("text", "json")
# What CI tools read: code scanning (SARIF 2.1.0), GitHub annotations, JUnit test reports.
CI_FORMATS = ("sarif", "github", "junit")

CHECK = Kind("check", TEXT_JSON + CI_FORMATS)
DIFF = Kind("diff", TEXT_JSON + CI_FORMATS)
MATRIX = Kind("matrix", ("text", "json", "markdown", "junit"))
CONVERT = Kind("convert", TEXT_JSON)
INSPECT = Kind("inspect", TEXT_JSON)
RULE_LIST = Kind("rules", TEXT_JSON)
RULE = Kind("rule", TEXT_JSON)
ENGINES = Kind("engines", TEXT_JSON)
DEMO = Kind("demo", TEXT_JSON)

KINDS: tuple[Kind, ...] = (CHECK, DIFF, MATRIX, CONVERT, INSPECT, RULE_LIST, RULE, ENGINES, DEMO)


def formats_for(kind: Kind) -> tuple[str, ...]:
    """The `--format` choices of a command that outputs `kind`, default first."""
    return kind.formats
