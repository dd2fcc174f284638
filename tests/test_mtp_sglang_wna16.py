"""GPTQ and AutoAWQ targets with MTP layers, judged as SGLang 0.5.23 builds and loads them on a
GPU (GPTQ Marlin, AWQ Marlin): a `-:` `dynamic` key matching a module's runtime name from the
start, or an AWQ entry contained in it, leaves it unquantized, fused modules by the fused
name; the fused experts of a GPTQ target are always GPTQ; GLM-4.5's shared experts and a
DeepSeek-style `q_a_proj` / `kv_a_proj_with_mqa` stored packed stop the build or the load
(DF542). The expected verdicts are those SGLang 0.5.23's own build and loader gave on a CPU
for the same tiny targets (the Marlin kernel choice answered as on a GPU:
`dev/mtp_oracle_sglang_wna16.py`; dev/mtp-schemes-oracle-results.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draftfit.checker import check_path
from draftfit.draft.mtp import MtpTarget
from draftfit.engines.launch import settings_from
from draftfit.engines.procedure.mtp_matching import sglang_fused_name
from draftfit.engines.procedure.mtp_quant_build import MAX_MATCHES
from draftfit.report import Report, Verdict
from tests.mtp_factory import mtp_target
from tests.sglang_nextn import convert_refused

SGL = "sglang==0.5.23"
GPTQ, AWQ = "gptq_int4", "awq_int4"
QUANT_CODES = ("DF540", "DF541", "DF542", "DF222")


def write_target(path: Path, family: str, quant: str, **variant: Any) -> Path:
    return mtp_target(path, family, quant=quant, engine_ready=True, **variant)


def _check(path: Path) -> Report:
    """The MTP check under a NEXTN launch that trusts the target's code (MiMo's config class
    ships with it)."""
    serve = settings_from(
        serve_args=f"python -m sglang.launch_server --model-path {path} "
        "--speculative-algorithm NEXTN --trust-remote-code"
    )
    return check_path(path, engines=[SGL], method="mtp", serve=serve)


def _codes(report: Report) -> set[str]:
    return {f.rule.code for f in report.findings if f.rule.code in QUANT_CODES}


def _relist(path: Path, **entries: Any) -> Path:
    """Rewrite the target's `quantization_config` keys (`dynamic`, `modules_to_not_convert`)."""
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"].update(entries)
    (path / "config.json").write_text(json.dumps(config))
    return path


NO_G_IDX = {"mtp_quantized": True, "g_idx": False}
# (family, scheme, factory keywords) -> (SGLang 0.5.23's verdict, the rules that say why), as run
CASES: list[tuple[str, str, dict[str, Any], str, set[str]]] = [
    # GPTQ, a BF16 MTP layer: its linear modules are built GPTQ without a key
    ("deepseek_v3", GPTQ, {}, "incompatible", {"DF540"}),  # KeyError at a stacked shard
    ("glm4_moe_lite", GPTQ, {}, "drafts-garbage", {"DF540"}),  # skipped silently
    ("qwen3_5", GPTQ, {}, "drafts-garbage", {"DF540"}),
    ("qwen3_5_dense", GPTQ, {}, "drafts-garbage", {"DF540"}),
    ("mimo", GPTQ, {}, "incompatible", {"DF540"}),
    # ... vLLM's key (the checkpoint's names) matches none of SGLang's runtime names
    ("deepseek_v3", GPTQ, {"exclude": "regex"}, "incompatible", {"DF540"}),
    ("mimo", GPTQ, {"exclude": "regex"}, "incompatible", {"DF540"}),
    # ... SGLang's runtime names: the linear modules are left unquantized, never the experts
    ("deepseek_v3", GPTQ, {"exclude": "runtime"}, "drafts-garbage", {"DF540"}),
    ("glm4_moe_lite", GPTQ, {"exclude": "runtime"}, "drafts-garbage", {"DF540"}),
    ("qwen3_5", GPTQ, {"exclude": "regex"}, "drafts-garbage", {"DF540"}),  # `-:mtp\..*`
    ("mimo", GPTQ, {"exclude": "runtime"}, "compatible", set()),  # dense: nothing left
    # GPTQ, stored like the backbone
    ("qwen3_5", GPTQ, NO_G_IDX, "compatible", set()),
    ("qwen3_5_dense", GPTQ, NO_G_IDX, "compatible", set()),
    ("mimo", GPTQ, {"mtp_quantized": True}, "compatible", set()),  # `g_idx` loaded
    ("mimo", GPTQ, {**NO_G_IDX, "exclude": "runtime"}, "incompatible", {"DF541"}),
    ("qwen3_5", GPTQ, {**NO_G_IDX, "exclude": "regex"}, "drafts-garbage", {"DF541"}),
    ("deepseek_v3", GPTQ, {**NO_G_IDX, "exclude": "runtime"}, "incompatible", {"DF541", "DF542"}),
    # GPTQ: the defects of DF542
    ("glm4_moe", GPTQ, {}, "incompatible", {"DF540", "DF542"}),
    ("glm4_moe", GPTQ, {"exclude": "runtime"}, "incompatible", {"DF540", "DF542"}),
    ("glm4_moe", GPTQ, NO_G_IDX, "incompatible", {"DF542"}),
    ("deepseek_v3", GPTQ, NO_G_IDX, "incompatible", {"DF542"}),
    ("glm4_moe_lite", GPTQ, {"mtp_quantized": True}, "incompatible", {"DF542"}),
    # AWQ, a BF16 MTP layer: no entry, vLLM's prefix, the shards' own runtime names
    ("deepseek_v3", AWQ, {}, "incompatible", {"DF540"}),
    ("glm4_moe", AWQ, {}, "drafts-garbage", {"DF540"}),
    ("qwen3_5", AWQ, {}, "drafts-garbage", {"DF540"}),
    ("mimo", AWQ, {}, "incompatible", {"DF540"}),
    ("deepseek_v3", AWQ, {"exclude": "glob"}, "incompatible", {"DF540"}),
    ("deepseek_v3", AWQ, {"exclude": "runtime"}, "incompatible", {"DF540"}),
    ("glm4_moe", AWQ, {"exclude": "runtime"}, "drafts-garbage", {"DF540"}),
    ("qwen3_5", AWQ, {"exclude": "checkpoint"}, "drafts-garbage", {"DF540"}),
    ("qwen3_5", AWQ, {"exclude": "glob"}, "compatible", set()),  # `mtp.`
    # AWQ, stored like the backbone (DeepSeek's loader joins `q_a_proj` and `kv_a` rightly)
    ("deepseek_v3", AWQ, {"mtp_quantized": True}, "compatible", set()),
    ("glm4_moe", AWQ, {"mtp_quantized": True}, "compatible", set()),
    ("mimo", AWQ, {"mtp_quantized": True}, "compatible", set()),
    ("qwen3_5", AWQ, {"mtp_quantized": True, "exclude": "glob"}, "drafts-garbage", {"DF541"}),
    (
        "deepseek_v3",
        AWQ,
        {"mtp_quantized": True, "exclude": "runtime"},
        "drafts-garbage",
        {"DF541"},
    ),
    (
        "glm4_moe_lite",
        AWQ,
        {"mtp_quantized": True, "exclude": "runtime"},
        "incompatible",
        {"DF542"},
    ),
]


@pytest.mark.parametrize(("family", "scheme", "variant", "verdict", "codes"), CASES)
def test_each_target_gets_the_verdict_sglang_gave_it(
    tmp_path: Path,
    family: str,
    scheme: str,
    variant: dict[str, Any],
    verdict: str,
    codes: set[str],
) -> None:
    report = _check(write_target(tmp_path / "t", family, scheme, **variant))
    assert report.engines[0].verdict.value == verdict, [f.to_dict() for f in report.findings]
    assert _codes(report) == codes


def test_the_prefix_entries_of_sglangs_runtime_names_serve_a_bf16_layer(tmp_path: Path) -> None:
    """`model.decoder.` (AWQ) is contained in every module name of DeepSeek's NextN layer and
    in no backbone name; `-:mtp\\.layers\\.0\\..*` leaves Qwen3.5's linear modules
    unquantized (run: its experts stay GPTQ and drafts garbage); `mtp.layers.0.` serves a
    BF16 Qwen3.5 AWQ layer whole (run)."""
    deepseek = write_target(tmp_path / "ds", "deepseek_v3", AWQ)
    _relist(deepseek, modules_to_not_convert=["model.decoder."])
    assert _check(deepseek).engines[0].verdict is Verdict.COMPATIBLE
    qwen = _relist(
        write_target(tmp_path / "q", "qwen3_5", GPTQ), dynamic={r"-:mtp\.layers\.0\..*": {}}
    )
    (finding,) = [f for f in _check(qwen).findings if f.rule.code == "DF540"]
    assert "`mtp.layers.0.mlp.experts`" in str(finding.to_dict()["message"])
    qwen_awq = _relist(
        write_target(tmp_path / "qa", "qwen3_5", AWQ), modules_to_not_convert=["mtp.layers.0."]
    )
    assert _check(qwen_awq).engines[0].verdict is Verdict.COMPATIBLE


def test_each_fix_names_what_serves_the_layer_on_sglang(tmp_path: Path) -> None:
    def fix(path: Path, code: str = "DF540") -> str:
        (finding,) = [f for f in _check(path).findings if f.rule.code == code]
        return str(finding.to_dict()["fix"])

    assert "add `model.decoder.` to `modules_to_not_convert`" in fix(
        write_target(tmp_path / "a", "deepseek_v3", AWQ)
    )
    mimo = fix(write_target(tmp_path / "m", "mimo", GPTQ))
    assert "`-:self_attn\\..*`" in mimo
    assert "`-:mlp\\..*`" in mimo
    assert "whatever `dynamic` says" in fix(write_target(tmp_path / "d", "deepseek_v3", GPTQ))
    assert "add the key `-:mtp\\.layers\\.0\\..*`" in fix(
        write_target(tmp_path / "g", "qwen3_5_dense", GPTQ)
    )
    shared = fix(write_target(tmp_path / "s", "glm4_moe", GPTQ, **NO_G_IDX), "DF542")
    assert "leave the shared experts unquantized" in shared
    fused = fix(write_target(tmp_path / "f", "deepseek_v3", GPTQ, **NO_G_IDX), "DF542")
    assert "store `q_a_proj` and `kv_a_proj_with_mqa` unquantized" in fused


def test_the_backbone_shared_experts_of_glm_stop_the_build_too(tmp_path: Path) -> None:
    """The MTP layer's shared experts left unquantized by a `-:` key: the backbone's MoE layers
    are built first and stop the build (run: `AttributeError` while the target is built)."""
    path = write_target(tmp_path / "t", "glm4_moe", GPTQ, exclude="runtime")
    (finding,) = [f for f in _check(path).findings if f.rule.code == "DF542"]
    message = str(finding.to_dict()["message"])
    assert "the backbone layer model.layers.0" in message  # `first_k_dense_replace: 0`
    excluded = _relist(
        write_target(tmp_path / "x", "glm4_moe", GPTQ),
        dynamic={r"-:model\.decoder\..*": {}, r"-:model\.layers\.\d+\.mlp\.shared_experts\..*": {}},
    )
    assert "DF542" not in _codes(_check(excluded))


def test_configs_off_the_marlin_path_are_unverified(tmp_path: Path) -> None:
    """SGLang registers no plain `gptq` method for a GPU: a config Marlin cannot take is
    refused for the whole target; an AWQ one goes to another kernel (not read)."""
    gptq = _relist(write_target(tmp_path / "g", "qwen3_5_dense", GPTQ), bits=3)
    result = _check(gptq).engines[0]
    assert result.verdict is Verdict.UNVERIFIED
    assert any(
        "no Marlin kernel" in r and "refuses the whole target" in r
        for r in result.unverified_reasons
    )
    awq = _relist(write_target(tmp_path / "a", "qwen3_5_dense", AWQ), zero_point=False)
    result = _check(awq).engines[0]
    assert result.verdict is Verdict.UNVERIFIED
    assert any("another AWQ method" in r for r in result.unverified_reasons)


def test_convert_leaves_sglangs_fix_to_the_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_target(tmp_path / "t", "mimo", GPTQ)
    assert "does not write SGLang 0.5.23's fix" in convert_refused(capsys, path, tmp_path / "o")


@pytest.mark.parametrize(
    ("name", "modules", "built"),
    [
        (
            "model.decoder.mlp.shared_experts.gate_proj",
            {"mlp.shared_experts.gate_proj"},
            "model.decoder.mlp.shared_experts.gate_up_proj",
        ),
        ("mtp.layers.0.self_attn.k_proj", {"self_attn.k_proj"}, "mtp.layers.0.self_attn.qkv_proj"),
        ("self_attn.q_proj", {"self_attn.q_proj"}, "self_attn.qkv_proj"),
        # an MLA layer: `q_a_proj` joins `kv_a_proj_with_mqa`; without it `q_proj` stays alone
        (
            "model.decoder.self_attn.q_a_proj",
            {"self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa"},
            "model.decoder.self_attn.fused_qkv_a_proj_with_mqa",
        ),
        (
            "model.decoder.self_attn.q_proj",
            {"self_attn.q_proj", "self_attn.kv_a_proj_with_mqa"},
            "model.decoder.self_attn.q_proj",
        ),
        (
            "model.decoder.self_attn.kv_a_proj_with_mqa",
            {"self_attn.q_proj", "self_attn.kv_a_proj_with_mqa"},
            "model.decoder.self_attn.kv_a_proj_with_mqa",
        ),
        (
            "mtp.layers.0.mlp.experts.3.gate_proj",
            {"mlp.experts.3.gate_proj"},
            "mtp.layers.0.mlp.experts.3.gate_proj",
        ),
        ("model.decoder.self_attn.o_proj", {"self_attn.o_proj"}, "model.decoder.self_attn.o_proj"),
    ],
)
def test_sglang_matches_the_fused_module_it_builds(
    name: str, modules: set[str], built: str
) -> None:
    assert sglang_fused_name(name, modules) == built


def test_the_marlin_reading_of_each_config(tmp_path: Path) -> None:
    from draftfit.draft.mtp import read_quant

    def refused(qc: dict[str, Any]) -> str | None:
        return read_quant({"quantization_config": qc}, None).marlin_refused

    gptq = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True, "desc_act": True}
    assert refused(gptq) is None  # activation order is Marlin's too
    assert refused({**gptq, "group_size": 16}) is not None
    assert refused({**gptq, "sym": False}) is not None
    assert refused({k: v for k, v in gptq.items() if k != "desc_act"}) == "no `desc_act` key"
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
    assert refused(awq) is None
    assert refused({**awq, "bits": 8}) is not None
    assert refused({"quant_method": "fp8"}) is None
    assert isinstance(MtpTarget, type)


@pytest.mark.parametrize(
    ("flags", "verdict"),
    [
        ("", "incompatible"),
        ("--quantization gptq_marlin", "incompatible"),  # the method of the config
        ("--quantization marlin", "incompatible"),
        ("--speculative-draft-model-quantization unquant", "incompatible"),  # left to the config
        ("--quantization moe_wna16", "unverified"),  # another MoE method: not read
        ("--quantization gptq", "unverified"),
        ("--quantization moe_wna16 --speculative-draft-model-quantization unquant", "incompatible"),
    ],
)
def test_the_launchs_quantization_decides_the_method_judged(
    tmp_path: Path, flags: str, verdict: str
) -> None:
    """The MTP draft takes `--speculative-draft-model-quantization`, else the target's
    `--quantization`; a value that builds it with another method than its config's leaves the
    quantization part unjudged (`unquant` leaves the method to the config: run, an FP8 target's
    MTP layer is still built FP8)."""
    path = write_target(tmp_path / "t", "deepseek_v3", GPTQ)
    serve = settings_from(
        serve_args=f"python -m sglang.launch_server --model-path {path} "
        f"--speculative-algorithm NEXTN {flags}"
    )
    result = check_path(path, engines=[SGL], method="mtp", serve=serve).engines[0]
    assert result.verdict.value == verdict
    if verdict == "unverified":
        assert any("another" not in r and "not the method" in r for r in result.unverified_reasons)


def test_a_quantization_asked_for_an_unquantized_target_is_not_judged(tmp_path: Path) -> None:
    path = mtp_target(tmp_path / "t", "deepseek_v3", engine_ready=True)
    serve = settings_from(
        serve_args=f"python -m sglang.launch_server --model-path {path} "
        "--speculative-algorithm NEXTN --quantization fp8"
    )
    result = check_path(path, engines=[SGL], method="mtp", serve=serve).engines[0]
    assert result.verdict is Verdict.UNVERIFIED
    assert any("the target is not quantized" in r for r in result.unverified_reasons)


def test_a_defect_of_the_marlin_path_is_not_claimed_for_another_method(tmp_path: Path) -> None:
    """DeepSeek's loader joins `q_a_proj` and `kv_a_proj_with_mqa` along the packed dimension
    under `moe_wna16` (read): DF542 is a GPTQ Marlin defect, not said of a launch that asks
    for another method."""
    path = write_target(tmp_path / "t", "deepseek_v3", GPTQ, **NO_G_IDX)
    assert "DF542" in _codes(_check(path))
    serve = settings_from(
        serve_args=f"python -m sglang.launch_server --model-path {path} "
        "--speculative-algorithm NEXTN --quantization moe_wna16"
    )
    report = check_path(path, engines=[SGL], method="mtp", serve=serve)
    assert report.engines[0].verdict is Verdict.UNVERIFIED
    assert _codes(report) == set()


@pytest.mark.slow
def test_a_config_beyond_the_matching_bound_is_not_judged(tmp_path: Path) -> None:
    """Whether each backbone MoE layer's shared experts are built quantized is matched one
    (layer, entry) pair at a time, up to MAX_MATCHES: 21 MoE layers and 10,000 `dynamic` keys
    are beyond it, and the release's result says so instead of guessing (the MTP layer's
    fused experts, GPTQ whatever the keys say, still fail it); the same target with its own
    keys alone is judged (its backbone stops the build)."""
    path = write_target(tmp_path / "t", "glm4_moe", GPTQ, exclude="runtime", layers=21)
    own = json.loads((path / "config.json").read_text())["quantization_config"]["dynamic"]
    assert "DF542" in _codes(_check(path))
    filler = {rf"-:model\.vision\.block{n}\..*": {} for n in range(10_000 - len(own))}
    assert MAX_MATCHES < 21 * 10_000
    crowded = _relist(path, dynamic={**own, **filler})
    result = _check(crowded).engines[0]
    assert "DF542" not in _codes(_check(crowded))
    assert result.verdict is Verdict.DRAFTS_GARBAGE
    assert any(
        "21 MoE layers and 10000 exclusion entries" in r for r in result.unverified_reasons
    ), result.unverified_reasons
