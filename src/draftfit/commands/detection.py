"""Where each rule is detected: the modules that emit it, by their own declarations.

Every module that emits findings (an engine procedure's steps and launch checks, the
checkpoint reader, a rule module's own checks, the diff) says so at its top::

    EMITS: tuple[RuleId, ...] = (rule_ids.METHOD_MISMATCH, rule_ids.METHOD_UNSUPPORTED)
    EMITS_STAGE = "engine procedure: route and class resolution"

`tests/test_emitted_by.py` holds each declaration to what the module's code emits.
:func:`detections` collects the declarations by walking the package and importing the
modules that make one, so a module that moves takes its declaration along.

`draftfit rule` reads them from `detected_in.json` beside this module, which
`dev/gen_rule_docs.py` compiles from :func:`detections` (with the rule pages, which show
the same): importing every emitting module — the engine procedures, the launch parts, the
diff and the checker behind it — costs `draftfit rule` about a quarter of its time again
and loads what a command that checks nothing keeps out (`tests/test_startup.py`). The test
fails while the compiled index differs from the declarations.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from draftfit.records import frozen

if TYPE_CHECKING:
    from draftfit.rule_ids import RuleId

DECLARATION = "EMITS"
"""The module constant naming the rules a module emits (imported `RuleId` constants)."""

STAGE = "EMITS_STAGE"
"""The module constant saying where in the procedure the module is, in a few words."""

INDEX = os.path.join(os.path.dirname(__file__), "detected_in.json")
"""The compiled index `draftfit rule` reads: rule code -> the modules that emit it."""

PACKAGE = "draftfit"
_DECLARES = re.compile(rf"^{DECLARATION}\b", re.MULTILINE)


@frozen
class Detection:
    """One module that emits a rule: its dotted name and where in the procedure it is."""

    module: str
    stage: str

    def to_dict(self) -> dict[str, str]:
        return {"module": self.module, "stage": self.stage}


def declaring_modules() -> list[str]:
    """The dotted names of the package's modules that declare what they emit, found by
    walking the package's files (a declaration is a top-level assignment, so a module that
    makes none is not imported)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d.isidentifier())
        for name in sorted(files):
            if not name.endswith(".py") or name == "__main__.py":
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as handle:
                if not _DECLARES.search(handle.read()):
                    continue
            parts = os.path.relpath(path, root)[: -len(".py")].split(os.sep)
            if parts[-1] == "__init__":
                parts.pop()
            found.append(".".join([PACKAGE, *parts]))
    return sorted(found)


def detections() -> dict[str, list[Detection]]:
    """Rule code -> the modules that emit it, in module order, from their declarations."""
    import importlib

    out: dict[str, list[Detection]] = {}
    for name in declaring_modules():
        module = importlib.import_module(name)
        emits: tuple[RuleId, ...] = getattr(module, DECLARATION)
        stage: str = getattr(module, STAGE)
        for rule_id in emits:
            out.setdefault(rule_id.code, []).append(Detection(name, stage))
    return {code: out[code] for code in sorted(out)}


def index_text(found: dict[str, list[Detection]]) -> str:
    """The compiled index's text (what `dev/gen_rule_docs.py` writes to :data:`INDEX`)."""
    import json

    data = {code: [d.to_dict() for d in where] for code, where in found.items()}
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def compiled_index() -> dict[str, list[Detection]]:
    """The compiled index, as :func:`detections` returned it when it was written."""
    import json

    with open(INDEX, encoding="utf-8") as handle:
        data = json.load(handle)
    return {
        code: [Detection(d["module"], d["stage"]) for d in where] for code, where in data.items()
    }


def detected_in(code: str) -> list[Detection]:
    """Where rule `code` is detected (from the compiled index)."""
    return compiled_index().get(code, [])
