"""MiMo-7B's MTP layers (`model.mtp_layers.{i}.*`, a dense Qwen2-style decoder layer each with
its own norms and `input_proj`; the config class ships with the checkpoint), and vLLM 0.34.0's
load check of a fused layer's shards. Verdicts as the engines' own code gave them on the same
tiny targets (dev/mtp_corpus.py: vLLM 0.34.0 and SGLang 0.5.23, run on a CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Finding, Verdict
from draftfit.rule_ids import (
    MTP_DEPTH_ABSENT,
    MTP_DEPTH_TOKENS,
    MTP_LAUNCH_KIND,
    MTP_LAYER_MISSING,
    MTP_QUANT_UNCOVERED,
    MTP_TENSOR_MISSING,
)
from tests.mtp_factory import mtp_target as write_target

VLLM = (
    "vllm serve T --trust-remote-code --speculative-config "
    '\'{{"method": "mtp", "num_speculative_tokens": {k}}}\''
)
SGLANG = (
    "python -m sglang.launch_server --model-path T --trust-remote-code "
    "--speculative-algorithm {algorithm} --speculative-num-steps 1 "
    "--speculative-eagle-topk 1 --speculative-num-draft-tokens 2"
)
V34, S523 = "vllm==0.34.0", "sglang==0.5.23"


def check(
    path: Path, engine: str, k: int = 1, algorithm: str = "NEXTN"
) -> tuple[Verdict, list[Finding]]:
    line = SGLANG.format(algorithm=algorithm) if engine.startswith("sglang") else VLLM.format(k=k)
    report = check_path(path, engines=[engine], serve=settings_from(serve_args=line))
    (result,) = report.engines
    return result.verdict, list(report.findings)


def codes(findings: list[Finding]) -> set[str]:
    return {f.rule.code for f in findings}


@pytest.mark.parametrize(
    ("variant", "vllm", "sglang"),
    [
        ({}, Verdict.COMPATIBLE, Verdict.COMPATIBLE),
        ({"ship": 0}, Verdict.INCOMPATIBLE, Verdict.DRAFTS_GARBAGE),
        # `input_proj` is a plain Linear and the norms are counted by vLLM's load check
        ({"drop": ("input_proj.weight",)}, Verdict.INCOMPATIBLE, Verdict.DRAFTS_GARBAGE),
        ({"drop": ("token_layernorm.weight",)}, Verdict.INCOMPATIBLE, Verdict.DRAFTS_GARBAGE),
        # `o_proj` has a quantization method of its own: left out of the check, unset
        ({"drop": ("o_proj.weight",)}, Verdict.DRAFTS_GARBAGE, Verdict.DRAFTS_GARBAGE),
        # one shard of the fused `qkv_proj` bias: vLLM 0.34.0 counts an unfilled shard
        ({"drop": ("q_proj.bias",)}, Verdict.INCOMPATIBLE, Verdict.DRAFTS_GARBAGE),
        # the MTP layer stored DeepSeek-style: SGLang looks its own names up and stops
        ({"rename": "model.layers.2."}, Verdict.INCOMPATIBLE, Verdict.INCOMPATIBLE),
        # SGLang's MiMo class builds its one layer whatever the depth key says
        ({"depth": 0}, Verdict.INCOMPATIBLE, Verdict.COMPATIBLE),
        ({"depth": 2, "ship": 1}, Verdict.INCOMPATIBLE, Verdict.COMPATIBLE),
        # ... and loads every shipped layer into it: the last one wins
        ({"depth": 2, "ship": 2}, Verdict.COMPATIBLE, Verdict.DRAFTS_GARBAGE),
        # the released config class defaults the key to 0 (vLLM: integer modulo by zero)
        ({"depth": None}, Verdict.INCOMPATIBLE, Verdict.COMPATIBLE),
        ({"quant": "fp8"}, Verdict.DRAFTS_GARBAGE, Verdict.DRAFTS_GARBAGE),
        ({"quant": "fp8", "mtp_quantized": True}, Verdict.COMPATIBLE, Verdict.COMPATIBLE),
        # listed under the checkpoint's names: neither engine builds it under them
        ({"quant": "fp8", "exclude": "checkpoint"}, Verdict.DRAFTS_GARBAGE, Verdict.DRAFTS_GARBAGE),
        # listed under the decoder-layer index vLLM builds it at; SGLang builds it unprefixed
        ({"quant": "fp8", "exclude": "layer_index"}, Verdict.COMPATIBLE, Verdict.DRAFTS_GARBAGE),
    ],
)
def test_verdicts_as_the_engines_gave_them(
    tmp_path: Path, variant: dict[str, object], vllm: Verdict, sglang: Verdict
) -> None:
    path = write_target(tmp_path / "m", "mimo", **variant)  # type: ignore[arg-type]
    assert check(path, V34)[0] is vllm
    assert check(path, S523)[0] is sglang


def test_the_factory_writes_the_released_layout(tmp_path: Path) -> None:
    path = write_target(tmp_path / "m", "mimo")
    config = json.loads((path / "config.json").read_text())
    assert config["auto_map"] == {"AutoConfig": "configuration_mimo.MiMoConfig"}
    assert (path / "configuration_mimo.py").is_file()
    names = json.loads((path / "model.safetensors.index.json").read_text())["weight_map"]
    assert "model.mtp_layers.0.input_proj.weight" in names
    assert "model.mtp_layers.0.self_attn.q_proj.bias" in names


def test_vllm_matches_exclusions_under_the_decoder_layer_index(tmp_path: Path) -> None:
    path = write_target(tmp_path / "m", "mimo", quant="fp8", exclude="checkpoint")
    _, findings = check(path, V34)
    (finding,) = [f for f in findings if f.rule == MTP_QUANT_UNCOVERED]
    assert "`model.layers.2.self_attn.q_proj`" in finding.message
    assert "model.layers.2.<module>" in (finding.fix or "")


def test_sglang_says_no_exclusion_list_can_name_the_unprefixed_layer(tmp_path: Path) -> None:
    path = write_target(tmp_path / "m", "mimo", quant="fp8", exclude="checkpoint")
    _, findings = check(path, S523)
    (finding,) = [f for f in findings if f.rule == MTP_QUANT_UNCOVERED]
    assert "under no prefix" in (finding.fix or "")
    assert "list its modules" not in (finding.fix or "")


def test_a_missing_bias_is_named_by_its_tensor(tmp_path: Path) -> None:
    path = write_target(tmp_path / "m", "mimo", drop=("q_proj.bias",))
    _, findings = check(path, V34)
    (finding,) = [f for f in findings if f.rule == MTP_TENSOR_MISSING]
    assert "`model.mtp_layers.0.self_attn.q_proj.bias`" in finding.message
    assert "q_proj.bias.weight" not in finding.message


def test_two_layers_loaded_into_one_name_the_layer_drafted_with(tmp_path: Path) -> None:
    path = write_target(tmp_path / "m", "mimo", depth=2, ship=2)
    _, findings = check(path, S523)
    (finding,) = [f for f in findings if f.rule == MTP_DEPTH_TOKENS]
    assert "model.mtp_layers.1's weights" in finding.message


def test_a_renamed_layer_on_sglang_is_a_lookup_failure(tmp_path: Path) -> None:
    path = write_target(tmp_path / "m", "mimo", rename="model.layers.2.")
    _, findings = check(path, S523)
    (finding,) = [f for f in findings if f.rule == MTP_LAYER_MISSING]
    assert "KeyError" in finding.message and "model.layers.2." in finding.message


def test_an_absent_depth_reads_as_the_config_class_default(tmp_path: Path) -> None:
    path = write_target(tmp_path / "m", "mimo", depth=None)
    verdict, findings = check(path, V34)
    assert MTP_DEPTH_ABSENT.code in codes(findings) and verdict is Verdict.INCOMPATIBLE


def test_eagle3_on_the_target_is_refused_by_sglang(tmp_path: Path) -> None:
    path = write_target(tmp_path / "m", "mimo")
    verdict, findings = check(path, S523, algorithm="EAGLE3")
    assert verdict is Verdict.INCOMPATIBLE and MTP_LAUNCH_KIND.code in codes(findings)


@pytest.mark.parametrize(
    ("family", "drop"),
    [
        ("deepseek_v3", "q_a_proj.weight"),  # of `fused_qkv_a_proj`
        ("glm4_moe", "k_proj.weight"),  # of `qkv_proj`
        ("glm4_moe", "shared_experts.up_proj.weight"),  # of `gate_up_proj`
    ],
)
def test_one_missing_shard_of_a_fused_layer_is_refused_by_vllm_0_34(
    tmp_path: Path, family: str, drop: str
) -> None:
    path = write_target(tmp_path / "t", family, drop=(drop,))
    line = 'vllm serve T --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\''
    report = check_path(path, engines=[V34], serve=settings_from(serve_args=line))
    assert report.engines[0].verdict is Verdict.INCOMPATIBLE
    # the output projection is no stacked layer: left out of the check, drafts garbage
    path = write_target(tmp_path / "o", family, drop=("o_proj.weight",))
    report = check_path(path, engines=[V34], serve=settings_from(serve_args=line))
    assert report.engines[0].verdict is Verdict.DRAFTS_GARBAGE


def test_a_routed_expert_is_no_stacked_layer(tmp_path: Path) -> None:
    """A routed expert's projection is a slice of the fused MoE's one parameter: vLLM's
    check (and the engine oracle, which tracks parameters) sees it written; the slice keeps
    its initial values."""
    path = write_target(tmp_path / "t", "glm4_moe", drop=("experts.0.up_proj.weight",))
    line = 'vllm serve T --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\''
    report = check_path(path, engines=[V34], serve=settings_from(serve_args=line))
    assert report.engines[0].verdict is Verdict.DRAFTS_GARBAGE
