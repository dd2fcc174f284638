"""GPTQ targets with MTP layers, judged as vLLM 0.34.0 builds and loads them (`auto_gptq`):
the BF16 linear modules of an MTP layer are built unquantized (vLLM lists the modules of the
checkpoint's integer tensors), the fused experts are built GPTQ unless a `-:` `dynamic` key
matches them, Qwen3.5's MTP class builds every MTP layer unquantized when a `-:` key contains
`mtp`, and the DeepSeek, GLM and MiMo MTP loaders stop on GPTQ's `g_idx`. The expected
verdicts are those vLLM 0.34.0's own build and load gave on a CPU for the same tiny targets
(the WNA16 kernel choice forced: `dev/mtp_oracle_wna16.py`, dev/mtp-schemes-oracle-results.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draftfit.checker import check_path
from draftfit.checkpoint import load_checkpoint
from draftfit.mtp_check import mtp_target
from draftfit.report import Report, Verdict
from tests.mtp_factory import mtp_target as write_target
from tests.test_mtp_commands import digest, run

V34, V33, SGL = "vllm==0.34.0", "vllm==0.33.0", "sglang==0.5.23"
GPTQ = "gptq_int4"


def _check(path: Path, engine: str = V34) -> Report:
    return check_path(path, engines=[engine], method="mtp")


def _codes(report: Report) -> set[str]:
    return {f.rule.code for f in report.findings if f.rule.code in ("DF540", "DF541", "DF222")}


# (family, factory keywords) -> (vLLM 0.34.0's verdict, the rule that says why), as run
CASES: list[tuple[str, dict[str, Any], str, str | None]] = [
    # a BF16 MTP layer: its MoE experts are built GPTQ (KeyError / AttributeError at load)
    ("glm4_moe", {}, "incompatible", "DF540"),
    ("glm4_moe_lite", {}, "incompatible", "DF540"),
    ("deepseek_v3", {}, "incompatible", "DF540"),
    ("qwen3_5", {}, "incompatible", "DF540"),
    # ... unless a `-:` key matches the layer
    ("glm4_moe", {"exclude": "regex"}, "compatible", None),
    ("glm4_moe_lite", {"exclude": "regex"}, "compatible", None),
    ("deepseek_v3", {"exclude": "regex"}, "compatible", None),
    ("qwen3_5", {"exclude": "regex"}, "compatible", None),
    ("qwen3_next", {"exclude": "regex"}, "compatible", None),
    # MiMo's MTP layer is dense: its BF16 modules are not among the quantized ones
    ("mimo", {}, "compatible", None),
    ("mimo", {"exclude": "regex"}, "compatible", None),
    # stored GPTQ like the backbone: `g_idx` stops the DeepSeek / GLM / MiMo MTP loaders
    ("glm4_moe", {"mtp_quantized": True}, "incompatible", "DF222"),
    ("glm4_moe_lite", {"mtp_quantized": True}, "incompatible", "DF222"),
    ("deepseek_v3", {"mtp_quantized": True}, "incompatible", "DF222"),
    ("glm4_moe", {"mtp_quantized": True, "g_idx": False}, "compatible", None),
    # Qwen's loaders drop `g_idx`
    ("qwen3_5", {"mtp_quantized": True}, "compatible", None),
    ("qwen3_next", {"mtp_quantized": True}, "compatible", None),
    # stored GPTQ but matched by a `-:` key: built unquantized, `qweight` has no parameter
    (
        "glm4_moe",
        {"mtp_quantized": True, "g_idx": False, "exclude": "regex"},
        "incompatible",
        "DF541",
    ),
    ("qwen3_5", {"mtp_quantized": True, "exclude": "regex"}, "incompatible", "DF541"),
    ("qwen3_next", {"mtp_quantized": True, "exclude": "regex"}, "incompatible", "DF541"),
    # MiMo's layer is built under `model.layers.{L+i}`, a name no quantized tensor has
    ("mimo", {"mtp_quantized": True, "g_idx": False}, "incompatible", "DF541"),
]


@pytest.mark.parametrize(("family", "variant", "verdict", "code"), CASES)
def test_each_gptq_target_gets_the_verdict_vllm_gave_it(
    tmp_path: Path, family: str, variant: dict[str, Any], verdict: str, code: str | None
) -> None:
    report = _check(write_target(tmp_path / "t", family, quant=GPTQ, **variant))
    assert report.engines[0].verdict.value == verdict, [f.to_dict() for f in report.findings]
    assert _codes(report) == ({code} if code else set())


def _with_dynamic(path: Path, keys: list[str]) -> Path:
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"]["dynamic"] = {key: {} for key in keys}
    (path / "config.json").write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(
    ("family", "key", "verdict"),
    [
        # Qwen3.5's switch is a substring test: any `-:` key containing `mtp` will do
        ("qwen3_5", r"-:model\.mtp.*", "compatible"),
        ("qwen3_5", r"-:.*mtp.*", "compatible"),
        # Qwen3-Next has none: the pattern must match the experts' name from its start
        ("qwen3_next", r"-:model\.mtp.*", "incompatible"),
        ("qwen3_next", r"-:mtp\.layers\..*", "compatible"),
        ("qwen3_next", r"-:.*mtp.*", "compatible"),
        # a positive key met first decides: the module stays quantized
        ("glm4_moe", r"+:model\.layers\.2\..*", "incompatible"),
        # a pattern that is no regular expression matches nothing
        ("glm4_moe", "-:model.layers.2.[", "incompatible"),
    ],
)
def test_dynamic_keys_are_matched_as_vllm_matches_them(
    tmp_path: Path, family: str, key: str, verdict: str
) -> None:
    path = _with_dynamic(write_target(tmp_path / "t", family, quant=GPTQ), [key])
    assert _check(path).engines[0].verdict.value == verdict


def test_a_positive_key_before_a_negative_one_keeps_the_experts_quantized(tmp_path: Path) -> None:
    first = r"+:model\.layers\.2\.mlp.*"
    negative = r"-:model\.layers\.2\..*"
    before = _with_dynamic(write_target(tmp_path / "a", "glm4_moe", quant=GPTQ), [first, negative])
    after = _with_dynamic(write_target(tmp_path / "b", "glm4_moe", quant=GPTQ), [negative, first])
    assert _check(before).engines[0].verdict is Verdict.INCOMPATIBLE
    assert _check(after).engines[0].verdict is Verdict.COMPATIBLE


def test_the_fix_names_the_dynamic_key_and_adding_it_clears_the_finding(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", "deepseek_v3", quant=GPTQ)
    (finding,) = [f for f in _check(path).findings if f.rule.code == "DF540"]
    data = finding.to_dict()
    assert data["location"] == {"file": "config.json", "pointer": "/quantization_config/dynamic"}
    assert "`model.layers.2.mlp.experts`" in str(data["message"])
    key = str(data["fix"]).split("add the key `", 1)[1].split("`", 1)[0]
    assert key == r"-:model\.layers\.2\..*"
    _with_dynamic(path, [key])
    assert _check(path).engines[0].verdict is Verdict.COMPATIBLE


def test_modules_in_block_to_quantize_decides_the_linear_modules(tmp_path: Path) -> None:
    """With `modules_in_block_to_quantize`, an entry contained in a module's name builds it
    quantized, whatever the checkpoint stores: MiMo's BF16 attention listed by its short
    name is built GPTQ (DF540), the same layer with the list naming the MLP only is too."""
    path = write_target(tmp_path / "t", "mimo", quant=GPTQ)
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"]["modules_in_block_to_quantize"] = [
        ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"],
        ["mlp.down_proj"],
    ]
    (path / "config.json").write_text(json.dumps(config))
    target = mtp_target(load_checkpoint(path))
    assert target.quant.blocks[:2] == ("self_attn.q_proj", "self_attn.k_proj")
    (finding,) = [f for f in _check(path).findings if f.rule.code == "DF540"]
    message = str(finding.to_dict()["message"])
    assert "`model.layers.2.self_attn.q_proj`" in message
    assert "o_proj" not in message


@pytest.mark.parametrize("engine", [V33, SGL])
def test_releases_whose_gptq_build_was_not_read_are_unverified(tmp_path: Path, engine: str) -> None:
    path = write_target(tmp_path / "t", "glm4_moe", quant=GPTQ, exclude="regex")
    result = _check(path, engine).engines[0]
    assert result.verdict is Verdict.UNVERIFIED
    assert any("gptq" in reason for reason in result.unverified_reasons)


def test_convert_names_the_dynamic_key_to_add_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`convert --method mtp` does not write GPTQ's `dynamic` object: it says so on one
    line (exit 2), leaves the input as it was and writes no output folder."""
    path = write_target(tmp_path / "t", "glm4_moe", quant=GPTQ)
    before = digest(path)
    out = tmp_path / "out"
    code, _, err = run(
        capsys, "convert", str(path), "--method", "mtp", "--engine", V34, "-o", str(out)
    )
    assert code == 2 and err.count("\n") == 1
    assert "`dynamic`" in err and "DF540" in err
    assert digest(path) == before and not out.exists()
