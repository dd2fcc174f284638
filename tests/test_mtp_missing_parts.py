"""One tensor of a module that is otherwise there: a MoE router's weight or its
score-correction bias, an attention bias. An MTP decoder layer must carry every tensor its
target's last decoder layer carries for the same module. Verdicts as the engines' own code
gave them on the same tiny targets (dev/mtp_corpus.py, run on a CPU): vLLM 0.34.0 leaves the
router out of its load check (it has a quantization method of its own) and loads it unset;
SGLang 0.5.23 loads every missing tensor unset. The same holds for a quantized module's
scales (the tensors the target's own quantized layers carry for it): on a quantized target
neither engine runs a load check, and a missing scale keeps its initial value (but for a
symmetric GPTQ config's zero points, which Marlin never reads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Verdict
from draftfit.rule_ids import MTP_QUANT_EXCLUDED_STORED, MTP_TENSOR_MISSING, Consequence
from tests.mtp_factory import mtp_target

LINES = {
    "vllm==0.34.0": "vllm serve T --speculative-config "
    '\'{"method": "mtp", "num_speculative_tokens": 1}\'',
    "sglang==0.5.23": "python -m sglang.launch_server --model-path T --speculative-algorithm "
    "NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 2",
}


@pytest.mark.parametrize(
    ("family", "drop", "tensor"),
    [
        ("deepseek_v3", "mlp.gate.weight", "model.layers.2.mlp.gate.weight"),
        (
            "deepseek_v3",
            "e_score_correction_bias",
            "model.layers.2.mlp.gate.e_score_correction_bias",
        ),
        ("glm4_moe", "e_score_correction_bias", "model.layers.2.mlp.gate.e_score_correction_bias"),
    ],
)
@pytest.mark.parametrize("engine", sorted(LINES))
def test_a_router_tensor_missing_drafts_garbage(
    tmp_path: Path, family: str, drop: str, tensor: str, engine: str
) -> None:
    path = mtp_target(tmp_path / "t", family, drop=(drop,), engine_ready=True)
    report = check_path(path, engines=[engine], serve=settings_from(serve_args=LINES[engine]))
    assert report.engines[0].verdict is Verdict.DRAFTS_GARBAGE
    (finding,) = [f for f in report.findings if f.rule == MTP_TENSOR_MISSING]
    assert f"`{tensor}`" in finding.message


def test_a_quantized_weight_counts_as_the_weight(tmp_path: Path) -> None:
    """An MTP layer stored FP8 like the backbone carries each weight (with its scales)."""
    path = mtp_target(tmp_path / "t", quant="fp8", mtp_quantized=True)
    report = check_path(
        path, engines=["vllm==0.34.0"], serve=settings_from(serve_args=LINES["vllm==0.34.0"])
    )
    assert report.engines[0].verdict is Verdict.COMPATIBLE


# A module stored quantized (and built quantized) without one of its scales: neither engine's
# load check runs for a quantized target, and the scale keeps its initial value.
@pytest.mark.parametrize(
    ("family", "compressed", "drop", "tensor"),
    [
        (
            "deepseek_v3",
            False,
            "self_attn.o_proj.weight_scale_inv",
            "model.layers.2.self_attn.o_proj.weight_scale_inv",
        ),
        (
            "deepseek_v3",
            False,
            "self_attn.kv_a_proj_with_mqa.weight_scale_inv",
            "model.layers.2.self_attn.kv_a_proj_with_mqa.weight_scale_inv",
        ),
        (
            "glm4_moe",
            True,
            "self_attn.k_proj.weight_scale",
            "model.layers.2.self_attn.k_proj.weight_scale",
        ),
        (
            "qwen3_5_dense",
            False,
            "mlp.gate_proj.weight_scale_inv",
            "mtp.layers.0.mlp.gate_proj.weight_scale_inv",
        ),
        (
            "mimo",
            False,
            "self_attn.o_proj.weight_scale_inv",
            "model.mtp_layers.0.self_attn.o_proj.weight_scale_inv",
        ),
    ],
)
@pytest.mark.parametrize("engine", sorted(LINES))
def test_a_quantized_module_without_its_scale_drafts_garbage(
    tmp_path: Path, family: str, compressed: bool, drop: str, tensor: str, engine: str
) -> None:
    path = mtp_target(
        tmp_path / "t",
        family,
        quant="fp8",
        compressed=compressed,
        mtp_quantized=True,
        drop_quantized=(drop,),
        engine_ready=True,
    )
    line = LINES[engine] + (" --trust-remote-code" if family == "mimo" else "")
    report = check_path(path, engines=[engine], serve=settings_from(serve_args=line))
    assert report.engines[0].verdict is Verdict.DRAFTS_GARBAGE
    (finding,) = [f for f in report.findings if f.rule == MTP_TENSOR_MISSING]
    assert f"`{tensor}`" in finding.message
    assert finding.consequence is Consequence.DRAFTS_GARBAGE


@pytest.mark.parametrize("engine", sorted(LINES))
def test_one_routed_experts_scale_missing_degrades(tmp_path: Path, engine: str) -> None:
    """One expert's scale unset within the fused MoE layer: only the tokens routed to it are
    drafted wrong (a warning); every expert's missing is every draft."""
    one = mtp_target(
        tmp_path / "one",
        quant="fp8",
        mtp_quantized=True,
        drop_quantized=("mlp.experts.0.up_proj.weight_scale_inv",),
        engine_ready=True,
    )
    serve = settings_from(serve_args=LINES[engine])
    report = check_path(one, engines=[engine], serve=serve)
    (finding,) = [f for f in report.findings if f.rule == MTP_TENSOR_MISSING]
    assert finding.consequence is Consequence.DEGRADES
    assert report.engines[0].verdict is Verdict.DEGRADED
    every = mtp_target(
        tmp_path / "every",
        quant="fp8",
        mtp_quantized=True,
        drop_quantized=tuple(f"mlp.experts.{e}.up_proj.weight_scale_inv" for e in range(4)),
        engine_ready=True,
    )
    report = check_path(every, engines=[engine], serve=serve)
    assert report.engines[0].verdict is Verdict.DRAFTS_GARBAGE


def test_a_scale_is_not_asked_of_a_module_built_unquantized(tmp_path: Path) -> None:
    """A module the config lists as left unquantized is built unquantized: its stored FP8
    values are DF541's finding, and no scale is asked of it."""
    path = mtp_target(
        tmp_path / "t",
        quant="fp8",
        mtp_quantized=True,
        exclude="checkpoint",
        drop_quantized=("self_attn.o_proj.weight_scale_inv",),
        engine_ready=True,
    )
    serve = settings_from(serve_args=LINES["vllm==0.34.0"])
    report = check_path(path, engines=["vllm==0.34.0"], serve=serve)
    assert not [f for f in report.findings if f.rule == MTP_TENSOR_MISSING]
    assert [f for f in report.findings if f.rule == MTP_QUANT_EXCLUDED_STORED]


@pytest.mark.parametrize(
    ("family", "quant", "drop", "verdict"),
    [
        ("deepseek_v3", "modelopt_fp8", "self_attn.o_proj.input_scale", Verdict.DRAFTS_GARBAGE),
        ("glm4_moe", "quark_fp8", "self_attn.k_proj.weight_scale", Verdict.DRAFTS_GARBAGE),
        ("glm4_moe", "awq_int4", "self_attn.q_proj.scales", Verdict.DRAFTS_GARBAGE),
        ("qwen3_5_dense", "awq_int4", "self_attn.q_proj.qzeros", Verdict.DRAFTS_GARBAGE),
        # symmetric GPTQ: Marlin never reads the zero points
        ("glm4_moe", "gptq_int4", "self_attn.q_proj.qzeros", Verdict.COMPATIBLE),
        ("qwen3_5_dense", "gptq_int4", "self_attn.q_proj.qzeros", Verdict.COMPATIBLE),
    ],
)
def test_the_other_schemes_scales_are_asked_for_as_vllm_reads_them(
    tmp_path: Path, family: str, quant: str, drop: str, verdict: Verdict
) -> None:
    path = mtp_target(
        tmp_path / "t",
        family,
        quant=quant,
        mtp_quantized=True,
        drop_quantized=(drop,),
        engine_ready=True,
        **({"g_idx": False} if quant == "gptq_int4" else {}),
    )
    serve = settings_from(serve_args=LINES["vllm==0.34.0"])
    report = check_path(path, engines=["vllm==0.34.0"], serve=serve)
    assert report.engines[0].verdict is verdict, [f.to_dict() for f in report.findings]


@pytest.mark.parametrize(
    ("engine", "compressed", "exclude", "fused"),
    [
        ("vllm==0.34.0", False, "checkpoint", "model.layers.2.self_attn.q_a_proj"),
        ("vllm==0.34.0", True, "checkpoint", "model.layers.2.self_attn.q_a_proj"),
        ("sglang==0.5.23", False, "runtime", "model.decoder.self_attn.fused_qkv_a_proj_with_mqa"),
    ],
)
def test_a_missing_shard_mate_is_built_all_the_same(
    tmp_path: Path, engine: str, compressed: bool, exclude: str, fused: str
) -> None:
    """An FP8 DeepSeek-V3 target whose BF16 MTP layer lacks `kv_a_proj_with_mqa` and whose
    exclusion list names the modules it ships (under the names each engine matches): the
    engine builds the missing module from the config, quantized, beside the listed
    `q_a_proj`, and refuses the fused module (run on a CPU: vLLM 0.34.0 with
    compressed-tensors, `Found different quantization schemes for the shards of
    model.layers.2.self_attn.fused_qkv_a_proj`; SGLang 0.5.23 with FP8, `Detected some but not
    all shards of model.decoder.self_attn.fused_qkv_a_proj_with_mqa are quantized`)."""
    path = mtp_target(
        tmp_path / "t",
        quant="fp8",
        compressed=compressed,
        exclude=exclude,
        drop=("kv_a_proj_with_mqa.weight",),
        engine_ready=True,
    )
    report = check_path(path, engines=[engine], serve=settings_from(serve_args=LINES[engine]))
    assert report.engines[0].verdict is Verdict.INCOMPATIBLE
    partial = [f.message for f in report.findings if "shard" in f.message]
    assert partial and fused in partial[0]
