"""How an MTP check presents its checkpoint (the target carrying its own MTP layers) in
text, JSON and the CI formats."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from jsonschema import Draft202012Validator

from draftfit.cli.main import main
from draftfit.schemas import load_schema
from tests.mtp_factory import mtp_target

SARIF = json.loads(
    (Path(__file__).parent / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text()
)
ENGINES = ("--engine", "vllm==0.34.0", "--engine", "sglang==0.5.23", "--engine", "trtllm==1.2.0")
ANNOTATION = re.compile(r"^::(error|warning|notice) ((?:[a-z]+=[^,:]*,?)*)::(.*)$")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fp8_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """cwd = a folder with an FP8 DeepSeek-V3 target whose BF16 MTP layer is not excluded."""
    monkeypatch.chdir(tmp_path)
    return mtp_target(tmp_path / "ds", quant="fp8")


def test_text_shows_the_checkpoint_as_the_target_with_its_mtp_layers(capsys, fp8_target) -> None:
    code, out, _ = run(capsys, "check", "ds", "--method", "mtp", *ENGINES)
    assert code == 1
    header = out.split("\n\n", 1)[0]
    assert header.splitlines()[0] == "Target  ds"
    assert "carries its own MTP layers · method mtp" in header
    assert "`DeepseekV3ForCausalLM`" in header and "`num_nextn_predict_layers` 1" in header
    assert "MTP layers shipped: model.layers.2" in header and "quantized `fp8`" in header
    assert "Draft" not in header and "none given" not in out and "unknown convention" not in out


def test_json_has_an_mtp_part_that_follows_the_schema(capsys, fp8_target) -> None:
    _, out, _ = run(capsys, "check", "ds", "--method", "mtp", *ENGINES, "--format", "json")
    data = json.loads(out)
    Draft202012Validator(load_schema("check")).validate(data)
    assert data["mtp"] == {
        "role": "target",
        "source": "ds",
        "architecture": "DeepseekV3ForCausalLM",
        "model_type": "deepseek_v3",
        "family": "deepseek_v3",
        "family_title": "DeepSeek-V3 / R1 (and Kimi-K2)",
        "depth_key": "num_nextn_predict_layers",
        "depth_declared": 1,
        "layers_shipped": ["model.layers.2"],
        "quantization": "fp8",
        "excluded_modules": 0,
    }
    assert data["draft"]["dialect"]["name"] == "mtp-target"
    assert data["draft"]["dialect"]["evidence"] == []


def test_an_eagle_check_has_no_mtp_part(capsys, tmp_path: Path) -> None:
    from tests import factory

    draft = factory.specforge().write(tmp_path / "d")
    _, out, _ = run(capsys, "check", str(draft), "--format", "json")
    assert "mtp" not in json.loads(out)


def test_sarif_of_an_mtp_check_validates_and_points_at_the_quantization_config(
    capsys, fp8_target
) -> None:
    code, out, _ = run(capsys, "check", "ds", "--method", "mtp", *ENGINES, "--format", "sarif")
    assert code == 1
    data = json.loads(out)
    jsonschema.Draft4Validator(SARIF).validate(data)
    results = data["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"DF540"}
    physical = results[0]["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "ds/config.json"
    lines = (fp8_target / "config.json").read_text().splitlines()
    expected = next(i for i, line in enumerate(lines, 1) if '"quantization_config"' in line)
    assert physical["region"]["startLine"] == expected
    verdicts = {v["engine"]: v["verdict"] for v in data["runs"][0]["properties"]["verdicts"]}
    assert verdicts == {"vllm": "drafts-garbage", "sglang": "incompatible", "trtllm": "unverified"}


def test_github_annotations_of_an_mtp_check(capsys, fp8_target) -> None:
    code, out, _ = run(capsys, "check", "ds", "--method", "mtp", *ENGINES, "--format", "github")
    assert code == 1
    annotations = [ANNOTATION.match(line) for line in out.splitlines() if line.startswith("::")]
    assert len(annotations) == 2 and all(annotations)
    for match in annotations:
        assert match is not None and match.group(1) == "error"
        props = dict(p.split("=", 1) for p in match.group(2).split(",") if p)
        assert props["file"] == "ds/config.json" and props["title"].startswith("DF540")
        assert "\n" not in match.group(3)
    assert "ds: TensorRT-LLM (PyTorch backend) 1.2.0: unverified" in out


def test_junit_of_an_mtp_check_has_a_case_per_release(capsys, fp8_target) -> None:
    code, out, _ = run(capsys, "check", "ds", "--method", "mtp", *ENGINES, "--format", "junit")
    assert code == 1
    suite = ET.fromstring(out).find("testsuite")
    assert suite is not None and suite.get("name") == "draftfit check ds"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [
        "vLLM 0.34.0",
        "SGLang 0.5.23",
        "TensorRT-LLM (PyTorch backend) 1.2.0",
    ]
    assert [[f.get("type") for f in c.findall("failure")] for c in cases[:2]] == [
        ["DF540"],
        ["DF540"],
    ]
