"""Every (output kind, format) pair bound to its renderer, and the one way to emit a result.

A command computes a result object (a :class:`~draftfit.report.Report`, a
:class:`~draftfit.commands.release_matrix.Matrix`, ...) and hands it to :func:`emit` with
the `--format` the user chose; the registry picks the renderer by the result's type and the
format name.

Every renderer has the signature ``render(result, options: RenderOptions) -> str``. Adding a
format is one such function, its name in the kind's formats (:mod:`draftfit.render.kinds`)
and one loader in :data:`RENDERERS` below.

The renderers and result types are bound through small loader functions that import them
when first asked for, so writing a check as JSON never loads rich, the XML library or the
converter: each command pays only for the output it writes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from draftfit.fail_on import FailOn
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
from draftfit.render.options import RenderOptions
from draftfit.rule_ids import Severity

if TYPE_CHECKING:
    from typing import IO, Any

    Renderer = Callable[[Any, RenderOptions], str]
    Loader = Callable[[], Renderer]


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


def _check_text() -> Renderer:
    from draftfit.render.text import render_check

    return render_check


def _report_json() -> Renderer:
    from draftfit.render.json import render_report_json

    return render_report_json


def _result_json() -> Renderer:
    from draftfit.render.json import render_result_json

    return render_result_json


def _rule_json() -> Renderer:
    from draftfit.render.json import render_rule_json

    return render_rule_json


def _sarif() -> Renderer:
    from draftfit.render.sarif import render_sarif

    return render_sarif


def _github() -> Renderer:
    from draftfit.render.github import render_github

    return render_github


def _junit_check() -> Renderer:
    from draftfit.render.junit import render_junit_check

    return render_junit_check


def _junit_diff() -> Renderer:
    from draftfit.render.junit import render_junit_diff

    return render_junit_diff


def _junit_matrix() -> Renderer:
    from draftfit.render.junit import render_junit_matrix

    return render_junit_matrix


def _diff_text() -> Renderer:
    from draftfit.render.diff_text import render_diff

    return render_diff


def _matrix_text() -> Renderer:
    from draftfit.render.matrix_text import render_matrix

    return render_matrix


def _matrix_markdown() -> Renderer:
    from draftfit.render.matrix_markdown import render_markdown

    return render_markdown


def _convert_text() -> Renderer:
    from draftfit.render.plan_text import render_convert

    return render_convert


def _inspect_text() -> Renderer:
    from draftfit.render.inspect_text import render_inspect

    return render_inspect


def _rule_list_text() -> Renderer:
    from draftfit.render.rules_text import render_rule_list

    return render_rule_list


def _rule_text() -> Renderer:
    from draftfit.render.rules_text import render_rule

    return render_rule


def _engines_text() -> Renderer:
    from draftfit.render.engines_text import render_engines

    return render_engines


def _demo_text() -> Renderer:
    from draftfit.render.demo_text import render_demo

    return render_demo


RENDERERS: Mapping[Kind, Mapping[str, Loader]] = {
    CHECK: {
        "text": _check_text,
        "json": _report_json,
        "sarif": _sarif,
        "github": _github,
        "junit": _junit_check,
    },
    DIFF: {
        "text": _diff_text,
        "json": _report_json,
        "sarif": _sarif,
        "github": _github,
        "junit": _junit_diff,
    },
    MATRIX: {
        "text": _matrix_text,
        "json": _result_json,
        "markdown": _matrix_markdown,
        "junit": _junit_matrix,
    },
    CONVERT: {"text": _convert_text, "json": _result_json},
    INSPECT: {"text": _inspect_text, "json": _result_json},
    RULE_LIST: {"text": _rule_list_text, "json": _result_json},
    RULE: {"text": _rule_text, "json": _rule_json},
    ENGINES: {"text": _engines_text, "json": _result_json},
    DEMO: {"text": _demo_text, "json": _result_json},
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
        load = RENDERERS[kind][fmt]
    except KeyError:
        raise ValueError(
            f"{kind.name} output has no format {fmt!r}; choose from {', '.join(kind.formats)}"
        ) from None
    return load()


def render(result: object, fmt: str, options: RenderOptions | None = None) -> str:
    """`result` written in format `fmt` (plain text style unless `options` say otherwise)."""
    return renderer_for(kind_of(result), fmt)(result, options or RenderOptions())


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


__all__ = ["KINDS", "RENDERERS", "Kind", "emit", "formats_for", "kind_of", "render"]
