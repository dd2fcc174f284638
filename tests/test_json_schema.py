"""Every JSON document draftfit prints validates against the schema it ships for that
command (`draftfit schema KIND`), carries `schema_version` and the tool version, and every
rule case's `check --format json` is valid too (see also `test_rules.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from draftfit import __version__
from draftfit.cli.main import main
from draftfit.render.kinds import KINDS
from draftfit.render.registry import render
from draftfit.schemas import SCHEMA_KINDS, load_schema
from tests import factory as f
from tests.cases import CASES, Case
from tests.sampling import sampled


def validate(kind: str, data: dict[str, Any]) -> None:
    validator = Draft202012Validator(load_schema(kind))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
    detail = "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])
    assert not errors, f"{kind} JSON does not follow its schema:\n{detail}"
    assert data["schema_version"] == 1
    assert data["tool"] == {"name": "draftfit", "version": __version__}


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    main([*argv, "--format", "json"])
    out, _ = capsys.readouterr()
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize("kind", SCHEMA_KINDS)
def test_every_shipped_schema_is_a_valid_schema(kind: str) -> None:
    schema = load_schema(kind)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_one_schema_per_output_kind() -> None:
    assert set(SCHEMA_KINDS) == {kind.name for kind in KINDS}


def test_schema_command_prints_the_shipped_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "matrix"]) == 0
    assert json.loads(capsys.readouterr().out) == load_schema("matrix")


def test_schema_rejects_what_it_should() -> None:
    """The schema is not vacuous: a finding with a made-up severity is refused."""
    bad = {
        "schema_version": 1,
        "tool": {"name": "draftfit", "version": __version__},
        "draft": {"source": "x"},
        "target": None,
        "engines": [],
        "findings": [{"code": "DF301", "name": "n", "severity": "fatal", "message": "m"}],
        "skipped_rules": [],
        "summary": {"error": 0, "warning": 0, "info": 0, "exit_code": 0},
    }
    assert list(Draft202012Validator(load_schema("check")).iter_errors(bad))


@pytest.mark.parametrize("case", sampled(CASES, 10, lambda c: c.id))
def test_check_json_of_every_rule_case(case: Case, tmp_path: Path) -> None:
    report = case.check(tmp_path)
    validate("check", json.loads(render(report, "json")))


def test_every_other_command(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    draft = f.modelopt(aux=[1, 2, 3]).write(tmp_path / "draft")
    reference = f.specforge().write(tmp_path / "reference")
    target = f.llama_target(tmp_path / "target")
    t = ("--target", str(target))
    validate("check", run_json(capsys, "check", str(draft), *t, "--engine", "all", "--recipe"))
    validate("diff", run_json(capsys, "diff", str(draft), str(reference), *t))
    validate("matrix", run_json(capsys, "matrix", str(draft), *t))
    validate("inspect", run_json(capsys, "inspect", str(draft)))
    validate("rules", run_json(capsys, "rules"))
    validate("rule", run_json(capsys, "rule", "DF301"))
    validate("engines", run_json(capsys, "engines"))
    validate("engines", run_json(capsys, "engines", "trtllm"))
    for convention in ("vllm", "sglang"):
        to = ("convert", str(draft), "--to", convention)
        validate("convert", run_json(capsys, *to, "-o", str(tmp_path / f"out-{convention}")))
        validate("convert", run_json(capsys, *to, "--dry-run"))


def test_engines_has_one_shape(capsys: pytest.CaptureFixture[str]) -> None:
    one = run_json(capsys, "engines", "sglang")
    every = run_json(capsys, "engines")
    assert [e["engine"] for e in one["engines"]] == ["sglang"]
    assert one["engines"][0] in every["engines"]


def test_several_drafts_statistics_and_suppressed_findings_follow_the_schemas(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The other JSON shapes of check and diff: one report per draft, the per-rule
    statistics, and suppressed findings (which stay in the report)."""
    first = f.modelopt(aux=[1, 2, 3]).write(tmp_path / "a")
    second = f.specforge().write(tmp_path / "b")
    target = ("--target", str(f.llama_target(tmp_path / "target")))
    many = json.loads(_run_raw(capsys, "check", str(first), str(second), *target))
    assert isinstance(many, list) and len(many) == 2
    validator = Draft202012Validator(load_schema("check"))
    assert not list(validator.iter_errors(many))
    for argv in (
        ("check", str(first), *target, "--statistics"),
        ("check", str(first), *target, "--ignore", "DF1"),
        ("diff", str(first), str(second), *target, "--statistics"),
    ):
        data = json.loads(_run_raw(capsys, *argv))
        assert not list(Draft202012Validator(load_schema(argv[0])).iter_errors(data)), argv
        assert data["schema_version"] == 1 and data["tool"]["version"] == __version__
    suppressed = json.loads(_run_raw(capsys, "check", str(first), *target, "--ignore", "DF1"))
    assert any(item.get("suppressed") for item in suppressed["findings"])
    # a made-up shape is refused: the schema is not vacuous for these shapes either
    assert list(validator.iter_errors([{"schema_version": 1}]))


def _run_raw(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    main([*argv, "--format", "json"])
    out, _ = capsys.readouterr()
    return out
