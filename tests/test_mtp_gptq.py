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
from draftfit.engines.launch import settings_from
from draftfit.mtp_check import mtp_target as read_target
from draftfit.report import Report, Verdict
from tests.mtp_factory import mtp_target
from tests.test_mtp_commands import digest, run, tensor_bytes

V34, V33, V30, V29 = "vllm==0.34.0", "vllm==0.33.0", "vllm==0.30.0", "vllm==0.29.0"
GPTQ = "gptq_int4"


def write_target(path: Path, family: str, **variant: Any) -> Path:
    """A tiny GPTQ target at the oracle's widths (hidden 128, experts 128 wide, group 32:
    widths vLLM's Marlin MoE method takes; narrower experts fall back to a method that reads
    no `dynamic` key, see the fallback test)."""
    return mtp_target(path, family, engine_ready=True, **variant)


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
    # so is a dense Qwen3.5 / 3.6's (Qwen3.6-27B), stored BF16 or GPTQ
    ("qwen3_5_dense", {}, "compatible", None),
    ("qwen3_5_dense", {"mtp_quantized": True}, "compatible", None),
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


@pytest.mark.parametrize("engine", [V34, V33, V30])
@pytest.mark.parametrize(("family", "variant", "verdict", "code"), CASES)
def test_each_gptq_target_gets_the_verdict_vllm_gave_it(
    tmp_path: Path,
    family: str,
    variant: dict[str, Any],
    verdict: str,
    code: str | None,
    engine: str,
) -> None:
    """Run on 0.34.0; 0.30.0-0.33.0 have the same GPTQ and MTP loading code (read). Where
    a release left a part of the family's MTP layers unread (its unquantized target is
    `unverified` there), a target the GPTQ rules find nothing wrong with stays unverified."""
    if engine != V34 and verdict == "compatible":
        plain = _check(mtp_target(tmp_path / "plain", family, engine_ready=True), engine)
        if plain.engines[0].verdict is Verdict.UNVERIFIED:
            verdict = "unverified"
    report = _check(write_target(tmp_path / "t", family, quant=GPTQ, **variant), engine)
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
    assert "draftfit convert TARGET --method mtp" in str(data["fix"])
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
    target = read_target(load_checkpoint(path))
    assert target.quant.blocks[:2] == ("self_attn.q_proj", "self_attn.k_proj")
    (finding,) = [f for f in _check(path).findings if f.rule.code == "DF540"]
    message = str(finding.to_dict()["message"])
    assert "`model.layers.2.self_attn.q_proj`" in message
    assert "o_proj" not in message


@pytest.mark.parametrize("engine", [V29])
def test_releases_whose_gptq_build_was_not_read_are_unverified(tmp_path: Path, engine: str) -> None:
    path = write_target(tmp_path / "t", "glm4_moe", quant=GPTQ, exclude="regex")
    result = _check(path, engine).engines[0]
    assert result.verdict is Verdict.UNVERIFIED
    assert any("gptq" in reason for reason in result.unverified_reasons)


def _convert(capsys: pytest.CaptureFixture[str], path: Path, out: Path) -> tuple[int, str, str]:
    return run(capsys, "convert", str(path), "--method", "mtp", "--engine", V34, "-o", str(out))


def _dynamic(path: Path) -> dict[str, Any]:
    config = json.loads((path / "config.json").read_text())
    dynamic = config["quantization_config"].get("dynamic", {})
    assert isinstance(dynamic, dict)
    return dynamic


@pytest.mark.parametrize("family", ["deepseek_v3", "glm4_moe", "qwen3_5", "qwen3_next"])
def test_convert_adds_the_dynamic_key_first_and_the_output_is_compatible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], family: str
) -> None:
    """A BF16 MTP layer in a GPTQ target: convert adds the layer's `-:` key before the keys
    the config has (a `+:` key matching the layer would otherwise win), keeps theirs, copies
    every tensor byte, leaves the input as it was; the output checks compatible (the outputs
    of these targets loaded in vLLM 0.34.0's own loader, dev/mtp-schemes-oracle-results.md)."""
    path = write_target(tmp_path / "t", family, quant=GPTQ)
    keep = r"+:.*layers\.0\..*"
    _with_dynamic(path, [keep])
    before = digest(path)
    out = tmp_path / "out"
    code, stdout, _ = _convert(capsys, path, out)
    assert code == 0, stdout
    keys = list(_dynamic(out))
    prefix = r"mtp\.layers\.0\." if family.startswith("qwen") else r"model\.layers\.2\."
    assert keys == [f"-:{prefix}.*", keep]
    assert digest(path) == before
    assert tensor_bytes(out) == tensor_bytes(path)
    assert _check(out).engines[0].verdict is Verdict.COMPATIBLE


def test_convert_takes_out_the_key_that_unquantizes_a_gptq_mtp_layer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_target(tmp_path / "t", "qwen3_5", quant=GPTQ, mtp_quantized=True, exclude="regex")
    assert _codes(_check(path)) == {"DF541"}
    out = tmp_path / "out"
    code, stdout, _ = _convert(capsys, path, out)
    assert code == 0 and "take 1 entry out of `dynamic`" in stdout
    assert _dynamic(out) == {}
    assert _check(out).engines[0].verdict is Verdict.COMPATIBLE


@pytest.mark.parametrize(
    ("family", "variant", "key", "said"),
    [
        # MiMo's layer is built under names no GPTQ list reaches
        ("mimo", {"g_idx": False}, None, "under names no quantized tensor"),
        # BF16 experts Marlin does not take: the fallback reads no key
        ("glm4_moe", {"mtp_quantized": False, "narrow": True}, None, "MoE WNA16 fallback"),
        # a key that also leaves backbone modules unquantized is not taken out
        ("glm4_moe", {"g_idx": False}, r"-:model\.layers\..*", "backbone modules"),
    ],
)
def test_convert_writes_nothing_where_no_dynamic_key_fixes_the_target(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    family: str,
    variant: dict[str, Any],
    key: str | None,
    said: str,
) -> None:
    variant = {"mtp_quantized": True, **variant}
    narrow = variant.pop("narrow", False)
    path = write_target(tmp_path / "t", family, quant=GPTQ, **variant)
    if narrow:
        _with_widths(path, 96, 128)
    if key is not None:
        _with_dynamic(path, [key])
    before = digest(path)
    out = tmp_path / "out"
    code, _, err = _convert(capsys, path, out)
    assert code == 2 and err.count("\n") == 1 and said in err
    assert digest(path) == before and not out.exists()


def _with_widths(path: Path, hidden: int, experts: int) -> Path:
    config = json.loads((path / "config.json").read_text())
    config.update(hidden_size=hidden, moe_intermediate_size=experts)
    (path / "config.json").write_text(json.dumps(config))
    return path


@pytest.mark.parametrize(
    ("widths", "serve", "verdict"),
    [
        # Marlin takes them: the `-:` key leaves the experts unquantized
        ((128, 128), None, "compatible"),
        # an expert width the group size does not divide: the MoE WNA16 fallback, no key read
        ((128, 48), None, "incompatible"),
        # a hidden size Marlin does not take
        ((96, 128), None, "incompatible"),
        # 128 wide over 8 ranks is 16 per rank, which a group of 32 does not divide
        ((128, 128), "--tensor-parallel-size 8", "incompatible"),
        ((128, 128), "--tensor-parallel-size 4", "compatible"),
    ],
)
def test_a_dynamic_key_reaches_the_experts_only_where_marlin_builds_them(
    tmp_path: Path, widths: tuple[int, int], serve: str | None, verdict: str
) -> None:
    """vLLM 0.34.0's `auto_gptq` builds GPTQ experts with its Marlin MoE method only for
    widths Marlin takes (`check_moe_marlin_supports_layer`); otherwise it falls back to the
    MoE WNA16 method, which reads `modules_to_not_convert` and no `dynamic` key: a BF16 MTP
    layer's experts are then built GPTQ whatever the `-:` key says (run on a CPU: a tiny
    target of hidden size 32 is refused with the key)."""
    path = _with_widths(
        write_target(tmp_path / "t", "glm4_moe", quant=GPTQ, exclude="regex"), *widths
    )
    settings = None
    if serve is not None:
        spec = json.dumps({"method": "mtp", "num_speculative_tokens": 1})
        settings = settings_from(
            serve_args=f"vllm serve {path} {serve} --speculative-config '{spec}'"
        )
    report = check_path(path, engines=[V34], method="mtp", serve=settings)
    assert report.engines[0].verdict.value == verdict, [f.to_dict() for f in report.findings]
    if verdict == "incompatible":
        (finding,) = [f for f in report.findings if f.rule.code == "DF540"]
        assert "MoE WNA16 fallback" in str(finding.to_dict()["fix"])


def test_without_the_widths_the_gptq_experts_are_not_judged(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", "glm4_moe", quant=GPTQ, exclude="regex")
    config = json.loads((path / "config.json").read_text())
    del config["moe_intermediate_size"]
    (path / "config.json").write_text(json.dumps(config))
    result = _check(path).engines[0]
    assert result.verdict is Verdict.UNVERIFIED
    assert any("moe_intermediate_size" in reason for reason in result.unverified_reasons)


@pytest.mark.parametrize("key", [r"-:(.*)*x", r"-:(a+)+$", "-:model.layers.2.[", "-:" + "a" * 300])
def test_a_dynamic_key_draftfit_cannot_match_safely_is_not_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    """A key from the checkpoint that nests repetitions (exponential on a backtracking
    matcher), does not compile or is too long: the check says what it could not judge,
    and convert writes nothing, instead of matching it."""
    path = _with_dynamic(write_target(tmp_path / "t", "glm4_moe", quant=GPTQ), [key])
    result = _check(path).engines[0]
    assert result.verdict is Verdict.UNVERIFIED
    assert any("cannot bound" in reason for reason in result.unverified_reasons)
    code, _, err = _convert(capsys, path, tmp_path / "out")
    assert code == 2 and "cannot bound" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("quantization", "refused"),
    [
        ({"desc_act": True}, True),
        ({"sym": False}, True),
        ({"bits": 3}, True),
        ({"bits": 8}, False),
        # per-channel: vLLM turns activation ordering off itself
        ({"desc_act": True, "group_size": -1}, False),
        # an override asking for it (its missing keys take the config's)
        ({"dynamic": {r"+:model\.layers\.0\..*": {"desc_act": True}}}, True),
        ({"dynamic": {r"-:model\.layers\.2\..*": {"desc_act": True}}}, False),
    ],
)
def test_a_gptq_config_vllm_refuses_is_not_called_compatible(
    tmp_path: Path, quantization: dict[str, Any], refused: bool
) -> None:
    """vLLM 0.30.0+ refuses a GPTQ config asymmetric, of 3 bits or with `desc_act: true`
    and a group size (the whole target, at start-up): the MTP layers are not judged, and
    never `compatible`."""
    path = write_target(tmp_path / "t", "glm4_moe", quant=GPTQ, exclude="regex")
    config = json.loads((path / "config.json").read_text())
    dynamic = quantization.pop("dynamic", None)
    config["quantization_config"].update(quantization)
    if dynamic is not None:
        config["quantization_config"]["dynamic"].update(dynamic)
    (path / "config.json").write_text(json.dumps(config))
    result = _check(path).engines[0]
    assert (result.verdict is Verdict.UNVERIFIED) is refused
    assert any("config class refuses" in r for r in result.unverified_reasons) is refused


@pytest.mark.parametrize(
    ("flags", "spec_quant", "verdict"),
    [
        ("", None, "compatible"),
        ("--quantization moe_wna16", None, "compatible"),  # the target's: not the draft's
        ("", "gptq_marlin", "compatible"),
        ("", "moe_wna16", "unverified"),  # the draft's own, another method: not read
    ],
)
def test_the_speculative_configs_quantization_decides_the_method_judged(
    tmp_path: Path, flags: str, spec_quant: str | None, verdict: str
) -> None:
    """vLLM builds the MTP draft's model config with the speculative config's own
    `quantization` (the target's `--quantization` does not reach it)."""
    path = write_target(tmp_path / "t", "glm4_moe", quant=GPTQ, exclude="regex")
    spec: dict[str, Any] = {"method": "mtp", "num_speculative_tokens": 1}
    if spec_quant is not None:
        spec["quantization"] = spec_quant
    serve = settings_from(
        serve_args=f"vllm serve {path} {flags} --speculative-config '{json.dumps(spec)}'"
    )
    result = check_path(path, engines=[V34], method="mtp", serve=serve).engines[0]
    assert result.verdict.value == verdict, result.unverified_reasons
