"""Every rule case's rendered findings, pinned in `tests/snapshots/<family>.json`.

`test_rules.py` asserts which codes fire; this pins what the user reads for each finding:
its code, severity, consequence (where the finding states its own), message, location, fix
and citations. A change shows as a diff of the family's file. After an intended change,
rewrite the files and review that diff:

    python -m pytest tests/test_rule_snapshots.py --snapshot-update

Paths that depend on the run (the temporary folder, this checkout) are written as `<tmp>`
and `<repo>`.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest

from draftfit.report import Finding
from tests.cases import CASES, FAMILY_NAMES, FAMILY_OF

SNAPSHOTS = Path(__file__).parent / "snapshots"
REPO = Path(__file__).resolve().parents[1]


def rendered(findings: list[Finding], tmp: Path) -> list[dict[str, Any]]:
    """The findings as the user reads them, with run-dependent paths replaced."""

    def plain(text: str) -> str:
        return text.replace(str(tmp), "<tmp>").replace(str(REPO), "<repo>")

    return [
        {
            "code": f.code,
            "severity": str(f.severity),
            # the label, where this finding states its own (the rule's is in rule_ids.py)
            **({"consequence": str(f.consequence)} if f.consequence != f.rule.consequence else {}),
            "message": plain(f.message),
            "location": plain(str(f.location)),
            "fix": plain(f.fix) if f.fix is not None else None,
            "sources": [plain(s) for s in f.citations],
        }
        for f in findings
    ]


def document(cases: dict[str, list[dict[str, Any]]]) -> str:
    """The snapshot file: one case per key, one finding per line (diffs stay readable)."""
    parts = []
    for case_id, findings in cases.items():
        lines = [json.dumps(f, ensure_ascii=False) for f in findings]
        body = "[\n" + ",\n".join(f"    {line}" for line in lines) + "\n  ]" if lines else "[]"
        parts.append(f"  {json.dumps(case_id)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_rendered_findings(family: str, tmp_path: Path, snapshot_update: bool) -> None:
    cases: dict[str, list[dict[str, Any]]] = {}
    for item in CASES:
        if FAMILY_OF[item.id] != family:
            continue
        folder = tmp_path / item.id
        folder.mkdir()
        cases[item.id] = rendered(item.check(folder).findings, folder)
    now = document(cases)
    path = SNAPSHOTS / f"{family}.json"
    if snapshot_update:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(now, encoding="utf-8")
        return
    before = path.read_text(encoding="utf-8") if path.exists() else ""
    if now != before:
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(keepends=True),
                now.splitlines(keepends=True),
                f"tests/snapshots/{family}.json (pinned)",
                f"tests/snapshots/{family}.json (now)",
            )
        )
        pytest.fail(
            f"rendered findings changed; if intended, run `python -m pytest "
            f"tests/test_rule_snapshots.py --snapshot-update` and review:\n{diff}",
            pytrace=False,
        )


def test_snapshot_files_are_the_families() -> None:
    """No snapshot file is left behind by a renamed or removed family."""
    files = {p.stem for p in SNAPSHOTS.glob("*.json")}
    assert files == set(FAMILY_NAMES)
