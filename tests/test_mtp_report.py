"""How an MTP check presents its checkpoint (the target carrying its own MTP layers) in
text, JSON and the CI formats, and the stand-alone NextN export, which is not checked yet."""

from __future__ import annotations

import json
import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from jsonschema import Draft202012Validator

from draftfit.checkpoint.safetensors import TensorToWrite, write_safetensors
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


def _nextn_export(target: Path, out: Path) -> Path:
    """A stand-alone NextN export of `target` as SGLang's export script writes one: the
    target's NextN layer renamed to layer 0 of a one-layer `...ForCausalLMNextN` model."""
    config = json.loads((target / "config.json").read_text())
    first = f"model.layers.{config['num_hidden_layers']}."
    tensors = []
    for shard in sorted(target.glob("*.safetensors")):
        raw = shard.read_bytes()
        size = struct.unpack("<Q", raw[:8])[0]
        for name, info in json.loads(raw[8 : 8 + size]).items():
            if name.startswith(first):
                renamed = "model.layers.0." + name[len(first) :]
                tensors.append(TensorToWrite(renamed, info["dtype"], tuple(info["shape"]), None))
    assert tensors
    out.mkdir()
    config.update(architectures=["DeepseekV3ForCausalLMNextN"], num_hidden_layers=1)
    (out / "config.json").write_text(json.dumps(config))
    write_safetensors(out / "nextn_layer_parameters.safetensors", tensors)
    return out


@pytest.mark.parametrize(
    "extra",
    [("--target", "target"), ("--method", "mtp"), ("--target", "target", "--method", "eagle3")],
)
def test_a_nextn_export_is_a_usage_error_that_says_what_is_not_checked(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: tuple[str, ...]
) -> None:
    monkeypatch.chdir(tmp_path)
    target = mtp_target(tmp_path / "target", sharded=False)
    _nextn_export(target, tmp_path / "nextn")
    before = sorted(p.name for p in (tmp_path / "nextn").iterdir())
    code, out, err = run(capsys, "check", "nextn", *extra, "--engine", "sglang==0.5.23")
    assert code == 2 and out == ""
    assert "stand-alone NextN export (`DeepseekV3ForCausalLMNextN`" in err
    assert "draftfit does not check NextN exports yet" in err
    assert "draftfit check TARGET --method mtp" in err
    assert sorted(p.name for p in (tmp_path / "nextn").iterdir()) == before


def test_the_target_the_export_came_from_is_checked_as_before(capsys, tmp_path: Path) -> None:
    target = mtp_target(tmp_path / "target", sharded=False)
    _nextn_export(target, tmp_path / "nextn")
    code, out, _ = run(capsys, "check", str(target), "--method", "mtp", "--engine", "sglang")
    assert code == 0 and "SGLang 0.5.23: compatible" in out
