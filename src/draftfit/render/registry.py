"""Every (output kind, format) pair bound to its renderer, and the one way to emit a result.

A command computes a result object (a :class:`~draftfit.report.Report`, a
:class:`~draftfit.commands.release_matrix.Matrix`, ...) and hands it to :func:`emit` with
the `--format` the user chose; the registry picks the renderer by the result's type and the
format name.

Every renderer has the signature ``render(result, options: RenderOptions) -> str``. Adding a
format is one such function, its name in the kind's formats (:mod:`draftfit.render.kinds`)
and its `module:function` in :data:`RENDERERS` below.

`check`, `diff` and `matrix` write their results through :func:`render_all`: one document
for several results (a SARIF log of several runs, a JSON list of several drafts' reports)
and the short forms of `--quiet` and `--statistics` are renderers of a sequence of results
(``render(results, options) -> str``), each named in :data:`SET_RENDERERS`, by format
and :class:`~draftfit.render.options.Form`.

The renderers and result types are named by module and imported when first asked for, so
writing a check as JSON never loads rich, the XML library or the converter: each command
pays only for the output it writes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import import_module
from typing import TYPE_CHECKING

from draftfit.render.kinds import (
    CHECK,
    CONVERT,
    DEMO,
    DIFF,
    ENGINES,
    INSPECT,
    KINDS,
    MATRIX,
    RULE,
    RULE_LIST,
    Kind,
    formats_for,
)
from draftfit.render.options import Form, RenderOptions
from draftfit.rule_ids import Severity
from draftfit.verdicts import FailOn

if TYPE_CHECKING:
    from typing import IO, Any

    Renderer = Callable[[Any, RenderOptions], str]
    SetRenderer = Callable[[Sequence[Any], RenderOptions], str]


# The class of the result each kind renders: the class where it is at hand, else where it is
# defined (`module:Class`), loaded only when its module is (an instance of it needs it).
RESULT_TYPES: Mapping[Kind, type | str] = {
    CHECK: "draftfit.report:Report",
    DIFF: "draftfit.commands.comparison:DiffReport",
    MATRIX: "draftfit.commands.release_matrix:Matrix",
    CONVERT: "draftfit.conversion:ConvertResult",
    INSPECT: "draftfit.commands.inspection:InspectInfo",
    RULE_LIST: "draftfit.commands.explain:RuleList",
    RULE: "draftfit.rules.base:Rule",
    ENGINES: "draftfit.engines.listing:EngineListing",
    DEMO: "draftfit.commands.demo:DemoResult",
}


# Each renderer as `module:function`, imported when first asked for.
RENDERERS: Mapping[Kind, Mapping[str, str]] = {
    CHECK: {
        "text": "draftfit.render.text:render_check",
        "json": "draftfit.render.json:render_report_json",
        "sarif": "draftfit.render.sarif:render_sarif",
        "github": "draftfit.render.github:render_github",
        "junit": "draftfit.render.junit:render_junit_check",
    },
    DIFF: {
        "text": "draftfit.render.diff_text:render_diff",
        "json": "draftfit.render.json:render_report_json",
        "sarif": "draftfit.render.sarif:render_sarif",
        "github": "draftfit.render.github:render_github",
        "junit": "draftfit.render.junit:render_junit_diff",
    },
    MATRIX: {
        "text": "draftfit.render.matrix_text:render_matrix",
        "json": "draftfit.render.json:render_result_json",
        "markdown": "draftfit.render.matrix_markdown:render_markdown",
        "junit": "draftfit.render.junit:render_junit_matrix",
    },
    CONVERT: {
        "text": "draftfit.render.plan_text:render_convert",
        "json": "draftfit.render.json:render_result_json",
    },
    INSPECT: {
        "text": "draftfit.render.inspect_text:render_inspect",
        "json": "draftfit.render.json:render_result_json",
    },
    RULE_LIST: {
        "text": "draftfit.render.rules_text:render_rule_list",
        "json": "draftfit.render.json:render_result_json",
    },
    RULE: {
        "text": "draftfit.render.rules_text:render_rule",
        "json": "draftfit.render.json:render_rule_json",
    },
    ENGINES: {
        "text": "draftfit.render.engines_text:render_engines",
        "json": "draftfit.render.json:render_result_json",
    },
    DEMO: {
        "text": "draftfit.render.demo_text:render_demo",
        "json": "draftfit.render.json:render_result_json",
    },
}


# Renderers of a sequence of results of one kind, by format and form. A form a format does
# not list is not written in that format (JSON has no `--quiet` form); a format without a
# WHOLE entry writes each result with RENDERERS, one after the other.
SET_RENDERERS: Mapping[Kind, Mapping[str, Mapping[Form, str]]] = {
    CHECK: {
        "text": {
            Form.STATISTICS: "draftfit.render.verdicts:render_statistics",
            Form.VERDICTS: "draftfit.render.verdicts:render_verdicts",
        },
        "json": {
            Form.STATISTICS: "draftfit.render.json:render_statistics_json",
            Form.LIST: "draftfit.render.json:render_reports_json",
        },
        "sarif": {Form.WHOLE: "draftfit.render.sarif:render_sarif_many"},
        "github": {Form.WHOLE: "draftfit.render.github:render_github_many"},
        "junit": {Form.WHOLE: "draftfit.render.junit:render_junit_checks"},
    },
    DIFF: {
        "text": {
            Form.STATISTICS: "draftfit.render.verdicts:render_statistics",
            Form.VERDICTS: "draftfit.render.verdicts:render_verdicts",
        },
        "json": {Form.STATISTICS: "draftfit.render.json:render_statistics_json"},
        "sarif": {Form.WHOLE: "draftfit.render.sarif:render_sarif_many"},
        "github": {Form.WHOLE: "draftfit.render.github:render_github_many"},
        "junit": {Form.WHOLE: "draftfit.render.junit:render_junit_diffs"},
    },
    MATRIX: {"text": {Form.VERDICTS: "draftfit.render.verdicts:render_matrix_verdicts"}},
}


def kind_of(result: object) -> Kind:
    """The kind whose result type `result` is an instance of. A type named by its module is
    looked at only when that module is loaded: were `result` one, its module would be, so
    telling a rule from a report loads neither the converter nor the matrix."""
    for kind in KINDS:
        result_type = _loaded_type(RESULT_TYPES[kind])
        if result_type is not None and isinstance(result, result_type):
            return kind
    raise TypeError(f"no output kind renders {type(result).__qualname__}")


def _loaded_type(bound: type | str) -> type | None:
    """The class `bound` names, or None when its module is not loaded."""
    if isinstance(bound, type):
        return bound
    module_name, _, name = bound.partition(":")
    module = sys.modules.get(module_name)
    found = getattr(module, name, None) if module is not None else None
    return found if isinstance(found, type) else None


def renderer_for(kind: Kind, fmt: str) -> Renderer:
    """The renderer registered for `kind` in format `fmt`."""
    try:
        where = RENDERERS[kind][fmt]
    except KeyError:
        raise ValueError(
            f"{kind.name} output has no format {fmt!r}; choose from {', '.join(kind.formats)}"
        ) from None
    renderer: Renderer = _imported(where)
    return renderer


def _imported(where: str) -> Any:
    """The function `module:function` names, its module imported now if it was not."""
    module_name, _, name = where.partition(":")
    return getattr(import_module(module_name), name)


def render(result: object, fmt: str, options: RenderOptions | None = None) -> str:
    """`result` written in format `fmt` (plain text style unless `options` say otherwise)."""
    return renderer_for(kind_of(result), fmt)(result, options or RenderOptions())


def render_all(
    results: Sequence[object],
    fmt: str,
    options: RenderOptions | None = None,
    forms: Iterable[Form] = (),
) -> str:
    """`results` (one or more, of one kind) as one document in format `fmt`: in the first of
    `forms` (most wanted first) that format has for their kind, else whole."""
    kind = kind_of(results[0])
    renderers = SET_RENDERERS.get(kind, {}).get(fmt, {})
    shown = options or RenderOptions()
    for form in (*forms, Form.WHOLE):
        where = renderers.get(form)
        if where is not None:
            render_set: SetRenderer = _imported(where)
            return render_set(results, shown)
    render_one = renderer_for(kind, fmt)
    return "\n".join(render_one(result, shown) for result in results)


def emit(
    result: object,
    fmt: str,
    *,
    fail_on: FailOn | Severity | None = None,
    color: bool | None = None,
    stream: IO[str] | None = None,
) -> None:
    """Write `result` in format `fmt` to `stream` (stdout by default).

    `fail_on` is the `--fail-on` threshold a report states its exit status for (default:
    error); colour is used, unless `color` says otherwise, when the stream is a terminal
    and NO_COLOR is unset.
    """
    out = stream if stream is not None else sys.stdout
    if color is None:
        color = out.isatty() and "NO_COLOR" not in os.environ
    options = RenderOptions(color, FailOn.ERROR if fail_on is None else fail_on)
    out.write(render(result, fmt, options))


__all__ = [
    "KINDS",
    "RENDERERS",
    "SET_RENDERERS",
    "Form",
    "Kind",
    "emit",
    "formats_for",
    "kind_of",
    "render",
    "render_all",
]
