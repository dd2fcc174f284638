"""Every output kind, the formats it can be written in, and the renderer for each.

A command computes a result object (a :class:`~draftfit.report.Report`, a
:class:`~draftfit.matrix.Matrix`, ...) and hands it to :func:`emit` with the `--format` the
user chose; the registry below picks the renderer by the result's type and the format name.
Each command's `--format` choices are :func:`formats_for` its kind, so the parser and the
renderers cannot disagree.

Every renderer has the signature ``render(result, options: RenderOptions) -> str``. Adding a
format is one such function and one line in the kind's ``renderers`` below.

Renderers and result types are named as ``"module:attribute"`` and imported only when used,
so building the parser (`draftfit --help`) loads none of them.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from draftfit.render.options import RenderOptions
    from draftfit.rules.base import Severity

Renderer = Callable[[Any, "RenderOptions"], str]


@dataclass(frozen=True, eq=False)
class Kind:
    """One kind of command output (compared by identity: each is defined once, below).

    Attributes:
        name: what the output is (`check`, `matrix`, ...).
        result_type: the class of the result object, as ``"module:QualName"``.
        renderers: format name -> renderer, as ``"module:function"``; the first is the default.
    """

    name: str
    result_type: str
    renderers: Mapping[str, str]

    @property
    def formats(self) -> tuple[str, ...]:
        return tuple(self.renderers)


CHECK = Kind(
    "check",
    "draftfit.report:Report",
    {
        "text": "draftfit.render.text:render_check",
        "json": "draftfit.render.json:render_report_json",
    },
)
DIFF = Kind(
    "diff",
    "draftfit.diff:DiffReport",
    {
        "text": "draftfit.render.diff_text:render_diff",
        "json": "draftfit.render.json:render_report_json",
    },
)
MATRIX = Kind(
    "matrix",
    "draftfit.matrix:Matrix",
    {
        "text": "draftfit.render.matrix_text:render_matrix",
        "json": "draftfit.render.json:render_result_json",
        "markdown": "draftfit.render.matrix_markdown:render_markdown",
    },
)
CONVERT = Kind(
    "convert",
    "draftfit.convert:ConvertResult",
    {
        "text": "draftfit.render.plan_text:render_convert",
        "json": "draftfit.render.json:render_result_json",
    },
)
INSPECT = Kind(
    "inspect",
    "draftfit.inspect:InspectInfo",
    {
        "text": "draftfit.render.inspect_text:render_inspect",
        "json": "draftfit.render.json:render_result_json",
    },
)
RULE_LIST = Kind(
    "rules",
    "draftfit.explain:RuleList",
    {
        "text": "draftfit.render.rules_text:render_rule_list",
        "json": "draftfit.render.json:render_result_json",
    },
)
RULE = Kind(
    "rule",
    "draftfit.rules.base:Rule",
    {
        "text": "draftfit.render.rules_text:render_rule",
        "json": "draftfit.render.json:render_rule_json",
    },
)
ENGINES = Kind(
    "engines",
    "draftfit.engines.listing:EngineListing",
    {
        "text": "draftfit.render.engines_text:render_engines",
        "json": "draftfit.render.json:render_result_json",
    },
)
DEMO = Kind(
    "demo",
    "draftfit.demo:DemoResult",
    {
        "text": "draftfit.render.demo_text:render_demo",
        "json": "draftfit.render.json:render_result_json",
    },
)

KINDS: tuple[Kind, ...] = (CHECK, DIFF, MATRIX, CONVERT, INSPECT, RULE_LIST, RULE, ENGINES, DEMO)


def formats_for(kind: Kind) -> tuple[str, ...]:
    """The `--format` choices of a command that outputs `kind`, default first."""
    return kind.formats


def kind_of(result: object) -> Kind:
    """The kind whose result type `result` is an instance of (its class or a base class)."""
    names = {f"{cls.__module__}:{cls.__qualname__}" for cls in type(result).__mro__}
    for kind in KINDS:
        if kind.result_type in names:
            return kind
    raise TypeError(f"no output kind renders {type(result).__qualname__}")


def renderer_for(kind: Kind, fmt: str) -> Renderer:
    """The renderer registered for `kind` in format `fmt`."""
    try:
        return _resolve(kind.renderers[fmt])
    except KeyError:
        raise ValueError(
            f"{kind.name} output has no format {fmt!r}; choose from {', '.join(kind.formats)}"
        ) from None


def render(result: object, fmt: str, options: RenderOptions | None = None) -> str:
    """`result` written in format `fmt` (plain text style unless `options` say otherwise)."""
    from draftfit.render.options import PLAIN

    return renderer_for(kind_of(result), fmt)(result, options or PLAIN)


def emit(
    result: object,
    fmt: str,
    *,
    fail_on: Severity | None = None,
    color: bool | None = None,
    stream: IO[str] | None = None,
) -> None:
    """Write `result` in format `fmt` to `stream` (stdout by default).

    `fail_on` is the `--fail-on` threshold a report states its exit status for (default:
    error); colour is used, unless `color` says otherwise, when the stream is a terminal
    and NO_COLOR is unset.
    """
    from draftfit.render.options import RenderOptions
    from draftfit.rules.base import Severity

    out = stream if stream is not None else sys.stdout
    if color is None:
        color = out.isatty() and "NO_COLOR" not in os.environ
    options = RenderOptions(color, Severity.ERROR if fail_on is None else fail_on)
    out.write(render(result, fmt, options))


def _resolve(name: str) -> Any:
    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)
