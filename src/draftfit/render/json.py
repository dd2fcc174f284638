"""JSON output: a result's documented dictionary, pretty-printed with sorted keys.

Every JSON document draftfit prints carries `schema_version` and `tool` (name and version)
at the top level, so a consumer can tell which contract it reads; the schemas themselves
ship in :mod:`draftfit.schemas` (`draftfit schema KIND`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from draftfit.render.options import PLAIN, RenderOptions
from draftfit.report import SCHEMA_VERSION
from draftfit.rules.base import Rule
from draftfit.version import __version__

if TYPE_CHECKING:
    from typing import Any


def render_json(data: dict[str, Any]) -> str:
    return json.dumps(with_envelope(data), indent=2, sort_keys=True) + "\n"


def with_envelope(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with `schema_version` and `tool` added where the result did not set them."""
    envelope = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "draftfit", "version": __version__},
    }
    return {**envelope, **data}


def render_result_json(result: Any, options: RenderOptions = PLAIN) -> str:
    """Any result with a `to_dict()`: a matrix, an inspection, a conversion, ..."""
    return render_json(result.to_dict())


def render_report_json(report: Any, options: RenderOptions = PLAIN) -> str:
    """A check or diff report, whose `summary.exit_code` follows `options.fail_on`."""
    return render_json(report.to_dict(options.fail_on))


def render_reports_json(reports: Sequence[Any], options: RenderOptions = PLAIN) -> str:
    """Several check reports (several drafts named) as one JSON list of their documents."""
    documents = [report.to_dict(options.fail_on) for report in reports]
    return json.dumps(documents, indent=2, sort_keys=True) + "\n"


def render_statistics_json(reports: Sequence[Any], options: RenderOptions = PLAIN) -> str:
    """`--statistics --format json`: `{"statistics": [...]}`, a row per draft and code."""
    from draftfit.render.verdicts import statistics_rows

    return render_json({"statistics": [row for r in reports for row in statistics_rows(r)]})


def render_rule_json(item: Rule, options: RenderOptions = PLAIN) -> str:
    from draftfit.commands.explain import rule_dict

    return render_json(rule_dict(item, data=True))
