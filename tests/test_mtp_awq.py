"""AutoAWQ targets with MTP layers, judged as vLLM 0.34.0 builds and loads them (`auto_awq`):
an entry of `modules_to_not_convert` contained in a module's name leaves it unquantized (the
fused experts by their own name, so a list of every expert's name does not reach them);
without entries vLLM lists the modules the checkpoint stores unquantized, by their
checkpoint names (MiMo's layer is built under other names). The expected verdicts are those
vLLM 0.34.0's own build and load gave on a CPU for the same tiny targets (the int4 kernel
choice forced: `dev/mtp_oracle_wna16.py`; dev/mtp-schemes-oracle-results.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draftfit.checker import check_path
from draftfit.report import Report, Verdict
from tests.mtp_factory import mtp_target
from tests.test_mtp_commands import digest, recipes, run, tensor_bytes

V34, V33, V30, V29 = "vllm==0.34.0", "vllm==0.33.0", "vllm==0.30.0", "vllm==0.29.0"
AWQ = "awq_int4"


def write_target(path: Path, family: str, **variant: Any) -> Path:
    return mtp_target(path, family, quant=AWQ, engine_ready=True, **variant)


def _check(path: Path, engine: str = V34) -> Report:
    return check_path(path, engines=[engine], method="mtp")


# (family, factory keywords) -> (vLLM 0.34.0's verdict, the rule that says why), as run
CASES: list[tuple[str, dict[str, Any], str, str | None]] = [
    # a BF16 MTP layer with no list: its experts are built AWQ
    ("deepseek_v3", {}, "incompatible", "DF540"),
    ("glm4_moe", {}, "incompatible", "DF540"),
    ("qwen3_5", {}, "incompatible", "DF540"),
    ("qwen3_next", {}, "incompatible", "DF540"),
    # every module listed by its own name: still not the fused experts (nor Qwen's `mtp.fc`)
    ("deepseek_v3", {"exclude": "checkpoint"}, "incompatible", "DF540"),
    ("qwen3_5", {"exclude": "checkpoint"}, "incompatible", "DF540"),
    # the layer's prefix listed
    ("deepseek_v3", {"exclude": "glob"}, "compatible", None),
    ("glm4_moe", {"exclude": "glob"}, "compatible", None),
    ("qwen3_5", {"exclude": "glob"}, "compatible", None),
    ("qwen3_next", {"exclude": "glob"}, "compatible", None),
    # MiMo's layer is built under `model.layers.{L+i}`: its checkpoint names reach nothing
    ("mimo", {}, "incompatible", "DF540"),
    ("mimo", {"exclude": "glob"}, "incompatible", "DF540"),
    ("mimo", {"mtp_quantized": True}, "compatible", None),
    # a dense Qwen3.5 / 3.6: its BF16 modules are listed by vLLM itself, under its names
    ("qwen3_5_dense", {}, "compatible", None),
    ("qwen3_5_dense", {"mtp_quantized": True}, "compatible", None),
    # stored AWQ like the backbone
    ("glm4_moe", {"mtp_quantized": True}, "compatible", None),
    ("qwen3_5", {"mtp_quantized": True}, "compatible", None),
    # ... but listed: built unquantized, `qweight` has no parameter
    ("glm4_moe", {"mtp_quantized": True, "exclude": "glob"}, "incompatible", "DF541"),
    ("qwen3_next", {"mtp_quantized": True, "exclude": "glob"}, "incompatible", "DF541"),
]


@pytest.mark.parametrize(("family", "variant", "verdict", "code"), CASES)
def test_each_awq_target_gets_the_verdict_vllm_gave_it(
    tmp_path: Path, family: str, variant: dict[str, Any], verdict: str, code: str | None
) -> None:
    report = _check(write_target(tmp_path / "t", family, **variant))
    assert report.engines[0].verdict.value == verdict, [f.to_dict() for f in report.findings]
    codes = {f.rule.code for f in report.findings if f.rule.code in ("DF540", "DF541")}
    assert codes == ({code} if code else set())


def test_the_fix_names_the_prefix_and_the_list_vllm_would_derive(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", "deepseek_v3")
    (finding,) = [f for f in _check(path).findings if f.rule.code == "DF540"]
    data = finding.to_dict()
    assert data["location"] == {
        "file": "config.json",
        "pointer": "/quantization_config/modules_to_not_convert",
    }
    fix = str(data["fix"])
    assert "add `model.layers.2.` to `modules_to_not_convert`" in fix
    assert "every module the checkpoint stores unquantized" in fix


@pytest.mark.parametrize("family", ["deepseek_v3", "qwen3_5", "mimo"])
def test_convert_writes_the_prefix_and_keeps_the_derived_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], family: str
) -> None:
    """A config that lists no module: convert writes the MTP layer's prefix, then every
    module the checkpoint stores unquantized (vLLM derives those only while the key is
    absent), keeps every tensor byte and the input; the output checks compatible (the
    DeepSeek-V3, Qwen3.5 and MiMo outputs loaded in vLLM 0.34.0's own loader)."""
    path = write_target(tmp_path / "t", family)
    before = digest(path)
    out = tmp_path / "out"
    code, stdout, err = run(
        capsys, "convert", str(path), "--method", "mtp", "--engine", V34, "-o", str(out)
    )
    assert code == 0, stdout + err
    listed = json.loads((out / "config.json").read_text())["quantization_config"][
        "modules_to_not_convert"
    ]
    prefix = "mtp.layers.0." if family == "qwen3_5" else "model.layers.2."
    assert listed[0] == prefix and "lm_head" in listed
    backbone = ("model.layers.0.", "model.language_model.layers.0.")
    # the backbone's quantized projections stay quantized
    assert not any(n.startswith(backbone) and n.endswith(("q_proj", "down_proj")) for n in listed)
    assert digest(path) == before and tensor_bytes(out) == tensor_bytes(path)
    assert _check(out).engines[0].verdict is Verdict.COMPATIBLE


def test_the_recipe_converts_a_listed_config_and_leaves_a_derived_one_to_convert(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    listed = write_target(tmp_path / "listed", "glm4_moe", exclude="checkpoint")
    (vllm,) = [
        r
        for r in recipes(capsys, listed)["recipes"]  # type: ignore[union-attr]
        if r["version"] == "0.34.0"
    ]
    assert vllm["steps"][0].startswith("draftfit convert ")
    derived = write_target(tmp_path / "derived", "glm4_moe")
    (missing,) = [
        m
        for m in recipes(capsys, derived)["no_recipes"]  # type: ignore[union-attr]
        if m["version"] == "0.34.0"
    ]
    assert "needs every tensor's dtype" in missing["reason"]


@pytest.mark.parametrize("engine", [V29])
def test_releases_whose_awq_build_was_not_read_are_unverified(tmp_path: Path, engine: str) -> None:
    result = _check(write_target(tmp_path / "t", "glm4_moe", exclude="glob"), engine).engines[0]
    assert result.verdict is Verdict.UNVERIFIED


@pytest.mark.parametrize("engine", [V30, V33])
@pytest.mark.parametrize(("family", "variant", "verdict", "code"), CASES[:4] + CASES[6:8])
def test_releases_read_with_the_same_awq_code_give_the_same_verdicts(
    tmp_path: Path,
    engine: str,
    family: str,
    variant: dict[str, Any],
    verdict: str,
    code: str | None,
) -> None:
    """0.30.0-0.33.0 have the `auto_awq` matching and derived list run at 0.34.0 (read)."""
    report = _check(write_target(tmp_path / "t", family, **variant), engine)
    assert report.engines[0].verdict.value == verdict, [f.to_dict() for f in report.findings]


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        ({"bits": 8}, "`bits` 8 (it takes 4 bits)"),
        ({"zero_point": None}, "no `zero_point` key"),
        ({"w_bit": 3}, "`bits` 3"),  # `w_bit` is read before `bits`
    ],
)
def test_a_config_vllms_awq_class_refuses_is_not_judged(
    tmp_path: Path, edit: dict[str, Any], reason: str
) -> None:
    path = write_target(tmp_path / "t", "deepseek_v3", exclude="glob")
    config = json.loads((path / "config.json").read_text())
    quant = config["quantization_config"]
    for key, value in edit.items():
        if value is None:
            quant.pop(key)
        else:
            quant[key] = value
    (path / "config.json").write_text(json.dumps(config))
    result = _check(path).engines[0]
    assert result.verdict is Verdict.UNVERIFIED
    assert any("AWQ config class refuses" in r and reason in r for r in result.unverified_reasons)


def test_convert_takes_the_prefix_of_an_awq_stored_layer_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An MTP layer stored AWQ whose prefix `modules_to_not_convert` lists (DF541): convert
    takes the entry out and keeps the others (the output loaded in vLLM 0.34.0's loader);
    where that would leave the list empty (vLLM would then derive it from the checkpoint's
    dtypes, a change beyond the MTP layer), it writes nothing."""
    path = write_target(tmp_path / "t", "glm4_moe", mtp_quantized=True, exclude="glob")
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"]["modules_to_not_convert"].insert(0, "lm_head")
    (path / "config.json").write_text(json.dumps(config))
    assert {f.rule.code for f in _check(path).findings} >= {"DF541"}
    out = tmp_path / "out"
    code, stdout, err = run(
        capsys, "convert", str(path), "--method", "mtp", "--engine", V34, "-o", str(out)
    )
    assert code == 0, stdout + err
    listed = json.loads((out / "config.json").read_text())["quantization_config"]
    assert listed["modules_to_not_convert"] == ["lm_head"]
    assert _check(out).engines[0].verdict is Verdict.COMPATIBLE
    alone = write_target(tmp_path / "alone", "glm4_moe", mtp_quantized=True, exclude="glob")
    code, _, err = run(
        capsys, "convert", str(alone), "--method", "mtp", "--engine", V34, "-o", str(out / "x")
    )
    assert code == 2 and "empty" in err and not (out / "x").exists()
