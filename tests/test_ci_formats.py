"""The CI formats of check/diff/matrix (SARIF validated against the published schema, GitHub
workflow commands, JUnit XML), several drafts per run, --output-file, --quiet, --statistics,
and the JSON line locator behind file/line annotations."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from draftfit.cli.main import main
from draftfit.location import Location, config_at, in_target_file, target_config_at
from draftfit.output.json_lines import line_of, pointer_lines
from draftfit.render.places import Place, location_text, place_of
from tests import factory as f

SCHEMA = json.loads(
    (Path(__file__).parent / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text()
)
ENGINES = ("--engine", "vllm", "--engine", "sglang==0.5.23")
ANNOTATION = re.compile(r"^::(error|warning|notice) ((?:[a-z]+=[^,:]*,?)*)::(.*)$")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """cwd = a repository with a broken (speculators on SGLang) and a clean draft."""
    (tmp_path / ".git").mkdir()
    f.speculators(aux=[2, 4, 5]).write(tmp_path / "drafts" / "kimi")
    f.specforge().write(tmp_path / "drafts" / "llama")
    f.llama_target(tmp_path / "target")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def validate_sarif(text: str) -> dict:
    data = json.loads(text)
    jsonschema.Draft4Validator(SCHEMA).validate(data)
    return data


def key_line(path: Path, key: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.strip().startswith(f'"{key}"'))


def test_sarif_of_check_validates_and_points_at_the_key(capsys, repo) -> None:
    code, out, err = run(
        capsys, "check", "drafts/kimi", "--target", "target", *ENGINES, "--format", "sarif"
    )
    assert code == 1 and err == ""
    data = validate_sarif(out)
    assert data["version"] == "2.1.0"
    (run_,) = data["runs"]
    assert run_["tool"]["driver"]["name"] == "draftfit"
    result = next(r for r in run_["results"] if r["ruleId"] == "DF105")
    assert result["level"] == "error"
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "drafts/kimi/config.json"
    expected = key_line(repo / "drafts/kimi/config.json", "speculators_model_type")
    assert physical["region"]["startLine"] == expected
    rule = run_["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["id"] == "DF105" and rule["helpUri"].endswith("/docs/rules/DF105.md")


def test_sarif_of_several_drafts_and_of_diff_and_suppressions_validate(capsys, repo) -> None:
    code, out, _ = run(
        capsys,
        "check",
        "drafts/kimi",
        "drafts/llama",
        *ENGINES,
        "--format",
        "sarif",
        "--ignore",
        "DF108",
    )
    data = validate_sarif(out)
    assert len(data["runs"]) == 2 and code == 1
    suppressed = [r for run_ in data["runs"] for r in run_["results"] if "suppressions" in r]
    assert suppressed and all(r["ruleId"] == "DF108" for r in suppressed)
    assert suppressed[0]["suppressions"][0]["justification"] == "--ignore DF108"
    code, out, _ = run(capsys, "diff", "drafts/kimi", "drafts/llama", "--format", "sarif")
    data = validate_sarif(out)
    assert code == 1 and data["runs"][0]["results"]


def test_github_annotations_carry_file_line_and_title(capsys, repo) -> None:
    code, out, _ = run(
        capsys, "check", "drafts/kimi", "--target", "target", *ENGINES, "--format", "github"
    )
    assert code == 1
    annotations = [ANNOTATION.match(line) for line in out.splitlines() if line.startswith("::")]
    assert annotations and all(annotations)
    parsed = []
    for match in annotations:
        assert match is not None
        props = dict(p.split("=", 1) for p in match.group(2).split(",") if p)
        parsed.append((match.group(1), props, match.group(3)))
    level, props, message = next(p for p in parsed if p[1]["title"].startswith("DF105"))
    assert level == "error"
    assert props["file"] == "drafts/kimi/config.json"
    assert int(props["line"]) == key_line(
        repo / "drafts/kimi/config.json", "speculators_model_type"
    )
    assert "%0Afix: " in message and "\n" not in message
    assert any(p[0] == "notice" for p in parsed)  # DF108 is info
    assert "drafts/kimi: SGLang 0.5.23: incompatible" in out


def test_github_escapes_newlines_and_percent_from_the_checkpoint(capsys, tmp_path) -> None:
    draft = f.specforge()
    draft.config["architectures"] = ["Evil\n::error::50%"]
    path = draft.write(tmp_path / "d")
    _, out, _ = run(capsys, "check", str(path), "--format", "github")
    for line in out.splitlines():
        assert line.startswith("::") or ": " in line
    # A newline of the checkpoint's is shown as `\n` (the message's own line breaks are %0A).
    assert "Evil\\n::error::50%25" in out


def test_junit_has_a_case_per_engine_version_and_a_failure_per_finding(capsys, repo) -> None:
    code, out, _ = run(
        capsys,
        "check",
        "drafts/kimi",
        "drafts/llama",
        "--target",
        "target",
        *ENGINES,
        "--format",
        "junit",
    )
    assert code == 1
    root = ET.fromstring(out)
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "draftfit check drafts/kimi",
        "draftfit check drafts/llama",
    ]
    cases = suites[0].findall("testcase")
    assert [c.get("name") for c in cases] == ["vLLM 0.34.0", "SGLang 0.5.23"]
    failures = cases[1].findall("failure")
    assert [x.get("type") for x in failures] == ["DF105"]
    assert cases[0].findall("failure") == []
    assert suites[0].get("failures") == "1" and suites[1].get("failures") == "0"
    assert root.get("tests") == "4"
    # --fail-on info makes the info finding a failure too
    _, out, _ = run(
        capsys, "check", "drafts/kimi", *ENGINES, "--format", "junit", "--fail-on", "info"
    )
    cases = ET.fromstring(out).find("testsuite").findall("testcase")  # type: ignore[union-attr]
    assert [x.get("type") for x in cases[0].findall("failure")] == ["DF108"]


def test_junit_of_matrix_and_diff(capsys, repo) -> None:
    _, out, _ = run(capsys, "matrix", "drafts/kimi", "--target", "target", "--format", "junit")
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert len(cases) > 20
    failed = [c for c in cases if c.find("failure") is not None]
    assert failed and int(suite.get("failures", "0")) == len(failed)
    _, out, _ = run(capsys, "diff", "drafts/kimi", "drafts/llama", "--format", "junit")
    assert ET.fromstring(out).find("testsuite/testcase/failure") is not None


NO_TARGET = (
    " · no target: DF303, DF405, DF501, DF502, DF503, DF504, DF505, DF506, DF507, DF516, DF517,"
    " DF518, DF519, DF530, DF531, DF532, DF533 not checked"
)


def test_several_drafts_exit_with_the_worst_and_json_is_a_list(capsys, repo) -> None:
    code, out, _ = run(capsys, "check", "drafts/llama", *ENGINES)
    assert code == 0
    code, out, _ = run(capsys, "check", "drafts/llama", "drafts/kimi", *ENGINES, "--format", "json")
    data = json.loads(out)
    assert code == 1 and [d["draft"]["source"] for d in data] == ["drafts/llama", "drafts/kimi"]
    # a quoted glob is expanded by draftfit; a missing draft is one line and exit 2
    code, out, err = run(capsys, "check", "drafts/*", *ENGINES, "--quiet")
    assert code == 1 and err == ""
    assert out.splitlines() == [
        # no --target: nothing found is not proof (unverified), and the line says why
        "drafts/kimi: vLLM 0.34.0: unverified (0 error, 0 warning, 1 info)" + NO_TARGET,
        "drafts/kimi: SGLang 0.5.23: incompatible (1 error, 0 warning, 0 info)",
        "drafts/llama: vLLM 0.34.0: unverified (0 error, 0 warning, 1 info)" + NO_TARGET,
        "drafts/llama: SGLang 0.5.23: unverified (0 error, 0 warning, 0 info)" + NO_TARGET,
    ]
    code, out, err = run(capsys, "check", "drafts/llama", "./drafts/missing", "--quiet")
    assert code == 2 and "drafts/missing" in err and err.count("\n") == 1
    assert out.startswith("drafts/llama: vLLM")
    code, _, err = run(capsys, "check", "nothing/*")
    assert code == 2 and "no checkpoint folder matches" in err


def test_statistics_counts_per_code(capsys, repo) -> None:
    _, out, _ = run(capsys, "check", "drafts/kimi", "--engine", "all", "--statistics")
    lines = out.splitlines()
    assert lines[0] == "drafts/kimi"
    assert "  2  DF105  speculators-format-unsupported (error)" in lines
    assert "  1  DF108  method-not-detected-from-path (info)" in lines
    _, out, _ = run(
        capsys, "check", "drafts/kimi", "--engine", "all", "--statistics", "--ignore", "DF108"
    )
    assert "  2 suppressed" not in out and "  1 suppressed" in out.splitlines()


def test_output_file_is_written_whole_and_stdout_stays_empty(capsys, repo) -> None:
    out_path = repo / "reports" / "draftfit.sarif"
    out_path.parent.mkdir()
    out_path.write_text("old")
    code, out, err = run(
        capsys,
        "check",
        "drafts/kimi",
        *ENGINES,
        "--format",
        "sarif",
        "--output-file",
        str(out_path),
    )
    assert code == 1 and out == "" and err == ""
    validate_sarif(out_path.read_text())
    assert sorted(os.listdir(out_path.parent)) == ["draftfit.sarif"]  # no temporary file left
    mask = os.umask(0)
    os.umask(mask)
    assert out_path.stat().st_mode & 0o777 == 0o666 & ~mask
    code, _, err = run(capsys, "check", "drafts/kimi", "--output-file", str(repo / "no" / "x"))
    assert code == 2 and "No such file or directory" in err and err.count("\n") == 1


def test_matrix_quiet_prints_one_line_per_range(capsys, repo) -> None:
    _, out, _ = run(capsys, "matrix", "drafts/llama", "--quiet")
    assert out and all(re.match(r"^.+ \S+: [a-z-]+$", line) for line in out.splitlines())


def test_pointer_lines_of_nested_keys_arrays_and_escapes() -> None:
    text = (
        '{\n  "a": 1,\n  "b": {\n    "c/d": [\n      5,\n      {"e~": null}\n    ]\n  },\n'
        '  "\\u0066": "x"\n}\n'
    )
    lines = pointer_lines(text)
    assert lines["/a"] == 2 and lines["/b"] == 3 and lines["/b/c~1d"] == 4
    assert lines["/b/c~1d/0"] == 5 and lines["/b/c~1d/1/e~0"] == 6 and lines["/f"] == 9
    assert line_of(lines, "/b/missing") == 3 and line_of(lines, "/zz") == 1
    assert pointer_lines("{not json") == {}


def test_target_findings_point_into_the_target_config(capsys, repo) -> None:
    f.llama_target(repo / "deepseek", model_type="kimi_k2", architectures=["DeepseekV3ForCausalLM"])
    argv = ["check", "drafts/llama", "--target", "deepseek", "--engine", "trtllm"]
    _, out, _ = run(capsys, *argv, "--format", "github")
    line = next(x for x in out.splitlines() if "title=DF501" in x)
    expected = key_line(repo / "deepseek" / "config.json", "architectures") + 1
    assert line.startswith(f"::error file=deepseek/config.json,line={expected},")
    _, out, _ = run(capsys, *argv, "--format", "sarif")
    data = validate_sarif(out)
    (result,) = [r for r in data["runs"][0]["results"] if r["ruleId"] == "DF501"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "deepseek/config.json"
    )


def test_every_sarif_result_of_a_local_draft_has_a_file(capsys, repo) -> None:
    broken = f.specforge().drop("d2t")
    broken.config["architectures"] = ["UnknownEagle"]
    broken.write(repo / "drafts" / "broken")
    _, out, _ = run(capsys, "check", "drafts/broken", "--engine", "all", "--format", "sarif")
    results = validate_sarif(out)["runs"][0]["results"]
    assert len(results) >= 3
    for result in results:
        physical = result["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"]["uri"].startswith("drafts/broken/")
        assert physical["region"]["startLine"] >= 1


def test_a_pattern_matching_only_files_is_a_usage_error(capsys, repo) -> None:
    code, out, err = run(capsys, "check", "drafts/*/config.json")
    assert code == 2 and out == "" and "no checkpoint folder matches" in err


def test_diff_quiet_and_statistics(capsys, repo) -> None:
    code, out, _ = run(capsys, "diff", "drafts/kimi", "drafts/llama", "--quiet")
    assert code == 1
    assert out.splitlines() == ["drafts/kimi: vLLM 0.34.0: different (1 that matter, 5 spelling)"]
    _, out, _ = run(capsys, "diff", "drafts/kimi", "drafts/llama", "--statistics")
    lines = out.splitlines()
    assert lines[0] == "drafts/kimi" and any(" DF810 " in line for line in lines)
    assert any(" DF811 " in line for line in lines)
    assert lines[-1] == "vLLM 0.34.0: different (1 that matter, 5 spelling)"


def test_statistics_as_json_rows(capsys, repo) -> None:
    argv = ["check", "drafts/kimi", "drafts/llama", "--engine", "all", "--statistics"]
    code, out, _ = run(capsys, *argv, "--format", "json", "--ignore", "DF108")
    data = json.loads(out)
    assert data["schema_version"] == 1 and data["tool"]["name"] == "draftfit"
    rows = data["statistics"]
    assert code == 1
    assert rows[0] == {
        "draft": "drafts/kimi",
        "code": "DF105",
        "name": "speculators-format-unsupported",
        "severity": "error",
        "count": 2,
        "suppressed": 0,
    }
    assert {"draft": "drafts/llama", "code": "DF108", "count": 0, "suppressed": 1}.items() <= (
        next(r for r in rows if r["draft"] == "drafts/llama" and r["code"] == "DF108").items()
    )


def test_sarif_runs_have_one_category_per_draft_and_a_source_root(capsys, repo) -> None:
    _, out, _ = run(capsys, "check", "drafts/kimi", "drafts/llama", "--format", "sarif")
    runs = validate_sarif(out)["runs"]
    ids = [r["automationDetails"]["id"] for r in runs]
    assert ids == ["draftfit/drafts/kimi/", "draftfit/drafts/llama/"]
    categories = {i.rsplit("/", 1)[0] for i in ids}
    assert len(categories) == 2
    root = runs[0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert root == repo.resolve().as_uri() + "/"
    physical = runs[0]["results"][0]["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uriBaseId"] == "%SRCROOT%"


def test_sarif_rules_carry_what_code_scanning_requires(capsys, repo) -> None:
    _, out, _ = run(capsys, "check", "drafts/kimi", "--engine", "all", "--format", "sarif")
    for rule in validate_sarif(out)["runs"][0]["tool"]["driver"]["rules"]:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert "## What it checks" in rule["help"]["markdown"]
        assert rule["helpUri"] in rule["help"]["text"]


def test_a_finding_on_another_target_file_points_at_that_file(capsys, repo) -> None:
    f.modelslim_target(repo / "quarot")
    argv = ["check", "drafts/llama", "--target", "quarot", "--engine", "vllm==0.14.0"]
    _, out, _ = run(capsys, *argv, "--format", "github")
    line = next(x for x in out.splitlines() if "title=DF516" in x)
    assert line.startswith("::error file=quarot/quant_model_description.json,")
    _, out, _ = run(capsys, *argv, "--format", "sarif")
    (result,) = [r for r in validate_sarif(out)["runs"][0]["results"] if r["ruleId"] == "DF516"]
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "quarot/quant_model_description.json"


def test_a_target_place_is_a_field_of_the_location_not_its_file_name(repo) -> None:
    """Findings name the target's files `target config.json` (or `<source> config.json
    (target)`), and CI formats point into the target folder by the location's field: a draft
    file whose own name reads the same stays the draft's."""
    line = key_line(repo / "target" / "config.json", "hidden_size")
    where = target_config_at("/hidden_size")
    assert str(where) == "target config.json /hidden_size"
    assert where.to_dict() == {"file": "target config.json", "pointer": "/hidden_size"}
    assert place_of("drafts/llama", where, "target") == Place("target/config.json", line)
    assert place_of("drafts/llama", where, None) == Place()
    named = target_config_at("/hidden_size", origin="target")
    assert str(named) == "target config.json (target) /hidden_size"
    assert location_text("drafts/llama", named, "target") == (
        f"target config.json (target):{line} /hidden_size"
    )
    other = in_target_file("quant_model_description.json")
    assert str(other) == "target quant_model_description.json"
    (repo / "drafts" / "llama" / "target config.json").write_text("{}\n")
    assert place_of("drafts/llama", Location("target config.json"), "target") == Place(
        "drafts/llama/target config.json"
    )
    draft_line = key_line(repo / "drafts" / "llama" / "config.json", "hidden_size")
    assert place_of("drafts/llama", config_at("/hidden_size"), "target") == Place(
        "drafts/llama/config.json", draft_line
    )


def test_placing_a_finding_loads_no_engine_module() -> None:
    code = (
        "import sys, draftfit.render.places; "
        "print(sorted(m for m in sys.modules if m.startswith('draftfit.engines')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
