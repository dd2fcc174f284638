"""The JSON Schemas (draft 2020-12) of every `--format json` output, shipped with the package.

One file per output kind, `<kind>.schema.json`; `draftfit schema KIND` prints it. Within
`schema_version` 1 keys are only ever added, so the schemas require the documented keys and
allow unknown ones: a consumer written against them keeps working.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

SCHEMA_KINDS: tuple[str, ...] = (
    "check",
    "diff",
    "matrix",
    "convert",
    "inspect",
    "rules",
    "rule",
    "engines",
    "demo",
)


def schema_text(kind: str) -> str:
    """The schema of `kind`'s JSON output, as shipped (raises KeyError for an unknown kind)."""
    if kind not in SCHEMA_KINDS:
        raise KeyError(kind)
    # the files lie beside this module (importlib.resources would cost every start-up ~3 ms)
    return (Path(__file__).parent / f"{kind}.schema.json").read_text("utf-8")


def load_schema(kind: str) -> dict[str, Any]:
    """The schema of `kind`'s JSON output as a dictionary."""
    data: dict[str, Any] = json.loads(schema_text(kind))
    return data
