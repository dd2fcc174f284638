"""Every (output kind, format) pair bound to its renderer, and the one way to emit a result.

A command computes a result object (a :class:`~draftfit.report.Report`, a
:class:`~draftfit.release_matrix.Matrix`, ...) and hands it to :func:`emit` with the `--format` the
user chose; the registry picks the renderer by the result's type and the format name.

Every renderer has the signature ``render(result, options: RenderOptions) -> str``. Adding a
format is one such function, its name in the kind's formats (:mod:`draftfit.render.kinds`)
and one line in :data:`RENDERERS` below.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import IO, Any

from draftfit.comparison import DiffReport
from draftfit.conversion import ConvertResult
from draftfit.demo import DemoResult
from draftfit.engines.listing import EngineListing
from draftfit.explain import RuleList
from draftfit.fail_on import FailOn
from draftfit.inspection import InspectInfo
from draftfit.release_matrix import Matrix
from draftfit.render.demo_text import render_demo
from draftfit.render.diff_text import render_diff
from draftfit.render.engines_text import render_engines
from draftfit.render.github import render_github
from draftfit.render.inspect_text import render_inspect
from draftfit.render.json import render_report_json, render_result_json, render_rule_json
from draftfit.render.junit import render_junit_check, render_junit_diff, render_junit_matrix
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
from draftfit.render.matrix_markdown import render_markdown
from draftfit.render.matrix_text import render_matrix
from draftfit.render.options import RenderOptions
from draftfit.render.plan_text import render_convert
from draftfit.render.rules_text import render_rule, render_rule_list
from draftfit.render.sarif import render_sarif
from draftfit.render.text import render_check
from draftfit.report import Report
from draftfit.rules.base import Rule, Severity

Renderer = Callable[[Any, RenderOptions], str]

# The class of the result each kind renders.
RESULT_TYPES: Mapping[Kind, type] = {
    CHECK: Report,
    DIFF: DiffReport,
    MATRIX: Matrix,
    CONVERT: ConvertResult,
    INSPECT: InspectInfo,
    RULE_LIST: RuleList,
    RULE: Rule,
    ENGINES: EngineListing,
    DEMO: DemoResult,
}

RENDERERS: Mapping[Kind, Mapping[str, Renderer]] = {
    CHECK: {
        "text": render_check,
        "json": render_report_json,
        "sarif": render_sarif,
        "github": render_github,
        "junit": render_junit_check,
    },
    DIFF: {
        "text": render_diff,
        "json": render_report_json,
        "sarif": render_sarif,
        "github": render_github,
        "junit": render_junit_diff,
    },
    MATRIX: {
        "text": render_matrix,
        "json": render_result_json,
        "markdown": render_markdown,
        "junit": render_junit_matrix,
    },
    CONVERT: {"text": render_convert, "json": render_result_json},
    INSPECT: {"text": render_inspect, "json": render_result_json},
    RULE_LIST: {"text": render_rule_list, "json": render_result_json},
    RULE: {"text": render_rule, "json": render_rule_json},
    ENGINES: {"text": render_engines, "json": render_result_json},
    DEMO: {"text": render_demo, "json": render_result_json},
}


def kind_of(result: object) -> Kind:
    """The kind whose result type `result` is an instance of."""
    for kind in KINDS:
        if isinstance(result, RESULT_TYPES[kind]):
            return kind
    raise TypeError(f"no output kind renders {type(result).__qualname__}")


def renderer_for(kind: Kind, fmt: str) -> Renderer:
    """The renderer registered for `kind` in format `fmt`."""
    try:
        return RENDERERS[kind][fmt]
    except KeyError:
        raise ValueError(
            f"{kind.name} output has no format {fmt!r}; choose from {', '.join(kind.formats)}"
        ) from None


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
