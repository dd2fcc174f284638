"""An independent MTP corpus: draftfit's verdicts against the engines' own code, run live.

    PYTHONPATH=src:tests python dev/mtp_corpus.py build DIR
    PYTHONPATH=src:tests python dev/mtp_corpus.py oracle DIR RELEASE PYTHON [RUN ...]
    PYTHONPATH=src:tests python dev/mtp_corpus.py compare DIR [RELEASE ...]
    PYTHONPATH=src:tests python dev/mtp_corpus.py --random SEED:N build|oracle|compare DIR ...

`build` writes the targets of `TARGETS` with `tests/mtp_factory.py` (`engine_ready`: the
oracle's width, the router and rope keys a release carries; bytes written by the test
factory, not by `make_mtp_targets.py`, whose targets the engine data was written from).
`oracle` runs `../shared/oracle/mtp_oracle.py` with the release's venv interpreter over the
runs of `RUNS` for that release, one at a time under `nice` (DIR/oracle/RELEASE/RUN.json;
a run already there is kept, so an interrupted batch resumes). `compare` runs
`draftfit check T --engine RELEASE --serve-args "<the launch the oracle emulated>"` (the
graded form) on each labelled run and prints a row per run, then per release: runs,
agreements, false `compatible`s (draftfit compatible where the engine refused or drafted
garbage). Runs the oracle could not finish (`oracle-error`, or a platform stop named in
`PLATFORM_STOPS`) are listed apart and not counted.

`--random SEED:N` replaces the corpus with N targets drawn from SEED (:func:`random_runs`):
a family, a depth and shipped layers, at most one damage (a tensor left out, moved out of its
layer, the layer renamed), a quantization and its exclusion list, and one launch per engine
(method names and aliases, token counts, the target named as its draft, SGLang's step flags
and quantization flags). The same seed and count give the same targets and runs: a sweep
for combinations the named corpus does not hold. A run whose moved or renamed tensor lies
outside every MTP prefix is one vLLM's own loader for the target stops on, which the
dummy-weight oracle cannot see (`ORACLE_BLIND`); `compare` lists such runs of a random
sweep with the rest, and they read as a difference.

The oracle's label is its own: refused (`incompatible`), accepted with parameters no tensor
reached, tensors skipped or cast into another dtype (`drafts-garbage`), or `compatible`.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from run_mtp_oracle import ORACLE

from mtp_factory import mtp_target

VLLM, SGLANG = "vllm==0.34.0", "sglang==0.5.23"
C = "compatible"
# errors that are a limit of running the engine on a CPU, not a verdict on the target (the
# CUDA-only FP8 quantize op after loading, FP4 kernels, SGLang's per-tensor FP8 kernel)
PLATFORM_STOPS = (
    "Found no NVIDIA driver",
    "MLA is not supported on CPU",
    "intel_extension",
    "static_scaled_fp8_quant",
    "Failed to find a kernel that can implement",
    "sgl_per_tensor_quant_fp8",
    # DeepSeek's MLA runs its `kv_b_proj` through the int4 kernel after loading
    "cpu_gemm_wna16",
)

# target name -> mtp_target keyword arguments (family first)
# what a Qwen3.5 FP8 export leaves in BF16 and lists (its delta-net's few-row projections)
Q35_SMALL = [f"model.language_model.layers.0.linear_attn.in_proj_{x}" for x in "ba"]
TARGETS: dict[str, dict[str, Any]] = {
    # correct
    "ds": {"family": "deepseek_v3"},
    "glm": {"family": "glm4_moe"},
    "qn": {"family": "qwen3_next", "depth": None},
    "ds_flat": {"family": "deepseek_v3", "sharded": False},
    # MTP dropped
    "ds_dropped": {"family": "deepseek_v3", "ship": 0},
    "glm_dropped": {"family": "glm4_moe", "ship": 0},
    "qn_dropped": {"family": "qwen3_next", "depth": None, "ship": 0},
    # one tensor missing
    "ds_no_eh": {"family": "deepseek_v3", "drop": ("eh_proj.weight",)},
    "ds_no_head": {"family": "deepseek_v3", "drop": ("shared_head.head.weight",)},
    "ds_no_embed": {"family": "deepseek_v3", "drop": ("embed_tokens.weight",)},
    "ds_no_o_proj": {"family": "deepseek_v3", "drop": ("o_proj.weight",)},
    "glm_no_enorm": {"family": "glm4_moe", "drop": ("enorm.weight",)},
    "glm_no_head": {"family": "glm4_moe", "drop": ("shared_head.head.weight",)},
    "glm_no_shared_norm": {"family": "glm4_moe", "drop": ("shared_head.norm.weight",)},
    "glm_no_post_norm": {"family": "glm4_moe", "drop": ("post_attention_layernorm.weight",)},
    "qn_no_fc": {"family": "qwen3_next", "depth": None, "drop": ("fc.weight",)},
    # one shard of a fused (stacked) projection
    "ds_no_q_a_proj": {"family": "deepseek_v3", "drop": ("q_a_proj.weight",)},
    "glm_no_k_proj": {"family": "glm4_moe", "drop": ("k_proj.weight",)},
    "glm_no_shared_up": {"family": "glm4_moe", "drop": ("shared_experts.up_proj.weight",)},
    # renamed
    "ds_renamed_block": {"family": "deepseek_v3", "rename": "model.mtp_block."},
    "glm_renamed_mtp": {"family": "glm4_moe", "rename": "mtp.layers.0."},
    # depth
    "ds_depth0": {"family": "deepseek_v3", "depth": 0},
    "glm_depth0": {"family": "glm4_moe", "depth": 0},
    "ds_depth_absent": {"family": "deepseek_v3", "depth": None},
    "ds_depth2": {"family": "deepseek_v3", "depth": 2, "ship": 2},
    "glm_depth2": {"family": "glm4_moe", "depth": 2, "ship": 2},
    "ds_depth2_ship1": {"family": "deepseek_v3", "depth": 2, "ship": 1},
    # FP8 block (`quant_method: fp8`)
    "ds_fp8_mtp_fp8": {"family": "deepseek_v3", "quant": "fp8", "mtp_quantized": True},
    "ds_fp8_bf16": {"family": "deepseek_v3", "quant": "fp8"},
    "ds_fp8_excluded": {"family": "deepseek_v3", "quant": "fp8", "exclude": "checkpoint"},
    "ds_fp8_excluded_runtime": {"family": "deepseek_v3", "quant": "fp8", "exclude": "runtime"},
    "ds_fp8_excluded_partial": {"family": "deepseek_v3", "quant": "fp8", "exclude": "partial"},
    "glm_fp8_mtp_fp8": {"family": "glm4_moe", "quant": "fp8", "mtp_quantized": True},
    "glm_fp8_bf16": {"family": "glm4_moe", "quant": "fp8"},
    "glm_fp8_excluded": {"family": "glm4_moe", "quant": "fp8", "exclude": "checkpoint"},
    "glm_fp8_excluded_runtime": {"family": "glm4_moe", "quant": "fp8", "exclude": "runtime"},
    # compressed-tensors FP8 (per-channel)
    "ds_ct_mtp_fp8": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "compressed": True,
        "mtp_quantized": True,
    },
    "ds_ct_bf16": {"family": "deepseek_v3", "quant": "fp8", "compressed": True},
    "ds_ct_excluded": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "compressed": True,
        "exclude": "checkpoint",
    },
    "glm_ct_bf16": {"family": "glm4_moe", "quant": "fp8", "compressed": True},
    "glm_ct_excluded": {
        "family": "glm4_moe",
        "quant": "fp8",
        "compressed": True,
        "exclude": "checkpoint",
    },
    # ModelOpt FP8 (`hf_quant_config.json`) and Quark FP8: the schemes vLLM builds on a CPU
    "ds_mo_fp8_bf16": {"family": "deepseek_v3", "quant": "modelopt_fp8"},
    "glm_mo_fp8_bf16": {"family": "glm4_moe", "quant": "modelopt_fp8"},
    "ds_mo_fp8_glob": {"family": "deepseek_v3", "quant": "modelopt_fp8", "exclude": "glob"},
    "glm_mo_fp8_glob": {"family": "glm4_moe", "quant": "modelopt_fp8", "exclude": "glob"},
    "ds_mo_fp8_excluded": {
        "family": "deepseek_v3",
        "quant": "modelopt_fp8",
        "exclude": "checkpoint",
    },
    "glm_mo_fp8_excluded": {"family": "glm4_moe", "quant": "modelopt_fp8", "exclude": "checkpoint"},
    "glm_qk_fp8_bf16": {"family": "glm4_moe", "quant": "quark_fp8"},
    "glm_qk_fp8_excluded": {"family": "glm4_moe", "quant": "quark_fp8", "exclude": "checkpoint"},
    "glm_qk_fp8_glob": {"family": "glm4_moe", "quant": "quark_fp8", "exclude": "glob"},
    "ds_qk_fp8_regex": {"family": "deepseek_v3", "quant": "quark_fp8", "exclude": "regex"},
    # GPTQ int4 (vLLM only, run through dev/mtp_oracle_wna16.py): a BF16 MTP layer with and
    # without the `-:` key, stored GPTQ with and without `g_idx`, and matched by the key
    **{
        f"{short}_gptq_{variant}": {"family": family, "quant": "gptq_int4", **extra}
        for short, family in (
            ("ds", "deepseek_v3"),
            ("glm", "glm4_moe"),
            ("glml", "glm4_moe_lite"),
            ("q35", "qwen3_5"),
            ("qn", "qwen3_next"),
            ("mimo", "mimo"),
        )
        for variant, extra in (
            ("bf16", {}),
            ("bf16_keyed", {"exclude": "regex"}),
            ("q", {"mtp_quantized": True}),
            ("q_nog", {"mtp_quantized": True, "g_idx": False}),
            ("q_nog_keyed", {"mtp_quantized": True, "g_idx": False, "exclude": "regex"}),
        )
        # Qwen's loaders drop `g_idx`, which the oracle lists as skipped tensors: their
        # targets stored GPTQ with `g_idx` are left out
        if not (short in ("q35", "qn") and variant == "q")
    },
    # a dense Qwen3.5 / 3.6 (Qwen3.6-27B, vllm#52649's family): plain, FP8, GPTQ and AWQ
    "q35d": {"family": "qwen3_5_dense"},
    "q35d_fp8_bf16": {"family": "qwen3_5_dense", "quant": "fp8"},
    "q35d_fp8_excluded": {"family": "qwen3_5_dense", "quant": "fp8", "exclude": "checkpoint"},
    "q35d_gptq_bf16": {"family": "qwen3_5_dense", "quant": "gptq_int4"},
    "q35d_gptq_q_nog": {
        "family": "qwen3_5_dense",
        "quant": "gptq_int4",
        "mtp_quantized": True,
        "g_idx": False,
    },
    "q35d_awq_bf16": {"family": "qwen3_5_dense", "quant": "awq_int4"},
    "q35d_awq_q": {"family": "qwen3_5_dense", "quant": "awq_int4", "mtp_quantized": True},
    # AutoAWQ int4 (vLLM only, the same way): a BF16 MTP layer with no list, with its prefix
    # listed, with its modules listed by name; stored AWQ with no list and with its prefix
    **{
        f"{short}_awq_{variant}": {"family": family, "quant": "awq_int4", **extra}
        for short, family in (
            ("ds", "deepseek_v3"),
            ("glm", "glm4_moe"),
            ("q35", "qwen3_5"),
            ("qn", "qwen3_next"),
            ("mimo", "mimo"),
        )
        for variant, extra in (
            ("bf16", {}),
            ("bf16_prefix", {"exclude": "glob"}),
            ("bf16_named", {"exclude": "checkpoint"}),
            ("q", {"mtp_quantized": True}),
            ("q_prefix", {"mtp_quantized": True, "exclude": "glob"}),
        )
    },
    # SGLang's runtime names (`model.decoder.*` for DeepSeek's NextN class, no prefix for
    # MiMo's layer): GPTQ's `-:` keys and AWQ's entries of them, BF16 and stored quantized
    **{
        f"{short}_{scheme}_{variant}_runtime": {
            "family": family,
            "quant": f"{scheme}_int4",
            "exclude": "runtime",
            **extra,
        }
        for short, family in (
            ("ds", "deepseek_v3"),
            ("glm", "glm4_moe"),
            ("glml", "glm4_moe_lite"),
            ("q35d", "qwen3_5_dense"),
            ("mimo", "mimo"),
        )
        for scheme in ("gptq", "awq")
        for variant, extra in (
            ("bf16", {}),
            ("q", {"mtp_quantized": True, "g_idx": False}),
        )
    },
    # Qwen3-Next compressed-tensors (SGLang builds its MTP layer as `model.layers.0.*`)
    "qn_ct_bf16": {"family": "qwen3_next", "quant": "fp8", "compressed": True},
    "qn_ct_mtp_fp8": {
        "family": "qwen3_next",
        "quant": "fp8",
        "compressed": True,
        "mtp_quantized": True,
    },
    "qn_ct_excluded": {
        "family": "qwen3_next",
        "quant": "fp8",
        "compressed": True,
        "exclude": "checkpoint",
    },
    # compressed-tensors under SGLang's runtime names: each module by name (the fused experts
    # as `model.decoder.mlp.experts`, which SGLang does not read), the experts by expert 0's
    # projections, and one `re:` pattern of the layer; BF16 and stored FP8
    **{
        f"{short}_ct_{how}" + ("_q" if quantized else ""): {
            "family": family,
            "quant": "fp8",
            "compressed": True,
            "exclude": how,
            **({"mtp_quantized": True} if quantized else {}),
        }
        for short, family in (("ds", "deepseek_v3"), ("glm", "glm4_moe"), ("mimo", "mimo"))
        for how in ("runtime", "runtime_expert0", "runtime_regex")
        for quantized in (False, True)
        if not (short == "mimo" and how == "runtime_expert0")
    },
    # the MTP layer stored FP8 like the backbone, but listed as left unquantized (DF541)
    "ds_fp8_q_listed": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "mtp_quantized": True,
        "exclude": "checkpoint",
    },
    "glm_fp8_q_listed": {
        "family": "glm4_moe",
        "quant": "fp8",
        "mtp_quantized": True,
        "exclude": "checkpoint",
    },
    "ds_fp8_q_listed_runtime": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "mtp_quantized": True,
        "exclude": "runtime",
    },
    "ds_ct_q_listed": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "compressed": True,
        "mtp_quantized": True,
        "exclude": "checkpoint",
    },
    "glm_fp8_q_listed_runtime": {
        "family": "glm4_moe",
        "quant": "fp8",
        "mtp_quantized": True,
        "exclude": "runtime",
    },
    # Qwen3.5 (multimodal MoE: its keys in `text_config`, its MTP block `mtp.*`)
    "q35": {"family": "qwen3_5"},
    "q35_dropped": {"family": "qwen3_5", "ship": 0},
    "q35_no_fc": {"family": "qwen3_5", "drop": ("fc.weight",)},
    "q35_no_norm": {"family": "qwen3_5", "drop": ("pre_fc_norm_hidden.weight",)},
    "q35_no_o_proj": {"family": "qwen3_5", "drop": ("o_proj.weight",)},
    "q35_depth0": {"family": "qwen3_5", "depth": 0},
    "q35_depth_absent": {"family": "qwen3_5", "depth": None},
    "q35_depth2": {"family": "qwen3_5", "depth": 2, "ship": 2},
    "q35_depth2_ship1": {"family": "qwen3_5", "depth": 2, "ship": 1},
    "q35_fp8_bf16": {"family": "qwen3_5", "quant": "fp8"},
    "q35_fp8_excluded": {"family": "qwen3_5", "quant": "fp8", "exclude": "checkpoint"},
    "q35_fp8_mtp_fp8": {"family": "qwen3_5", "quant": "fp8", "mtp_quantized": True},
    "q35_fp8_q_listed": {
        "family": "qwen3_5",
        "quant": "fp8",
        "mtp_quantized": True,
        "exclude": "checkpoint",
    },
    "q35_ct_bf16": {"family": "qwen3_5", "quant": "fp8", "compressed": True},
    "q35_ct_excluded": {
        "family": "qwen3_5",
        "quant": "fp8",
        "compressed": True,
        "exclude": "checkpoint",
    },
    "q35_ct_mtp_fp8": {
        "family": "qwen3_5",
        "quant": "fp8",
        "compressed": True,
        "mtp_quantized": True,
    },
    # GLM-4.7-Flash (`Glm4MoeLiteForCausalLM`: DeepSeek-V3's MLA layers)
    "glml": {"family": "glm4_moe_lite"},
    "glml_dropped": {"family": "glm4_moe_lite", "ship": 0},
    "glml_no_eh": {"family": "glm4_moe_lite", "drop": ("eh_proj.weight",)},
    "glml_no_o_proj": {"family": "glm4_moe_lite", "drop": ("o_proj.weight",)},
    "glml_depth0": {"family": "glm4_moe_lite", "depth": 0},
    "glml_depth2": {"family": "glm4_moe_lite", "depth": 2, "ship": 2},
    # Qwen3-Next FP8 (vLLM builds its `mtp.fc` with the target's quantization)
    "qn_fp8_bf16": {"family": "qwen3_next", "depth": None, "quant": "fp8"},
    "qn_fp8_mtp_fp8": {
        "family": "qwen3_next",
        "depth": None,
        "quant": "fp8",
        "mtp_quantized": True,
    },
    "qn_fp8_excluded": {
        "family": "qwen3_next",
        "depth": None,
        "quant": "fp8",
        "exclude": "checkpoint",
    },
    # MiMo-7B (dense, `model.mtp_layers.{i}.*`, its config class in the checkpoint)
    "mimo": {"family": "mimo"},
    "mimo_dropped": {"family": "mimo", "ship": 0},
    "mimo_no_proj": {"family": "mimo", "drop": ("input_proj.weight",)},
    "mimo_no_token_norm": {"family": "mimo", "drop": ("token_layernorm.weight",)},
    "mimo_no_o_proj": {"family": "mimo", "drop": ("o_proj.weight",)},
    "mimo_no_q_bias": {"family": "mimo", "drop": ("q_proj.bias",)},
    "mimo_renamed": {"family": "mimo", "rename": "model.layers.2."},
    "mimo_renamed_mtp": {"family": "mimo", "rename": "mtp.layers.0."},
    # one tensor under another name of the same layer
    "ds_retag_eh": {"family": "deepseek_v3", "retag": (("eh_proj.weight", "e_proj.weight"),)},
    "glm_retag_head": {
        "family": "glm4_moe",
        "retag": (("shared_head.head.weight", "lm_head.weight"),),
    },
    "glm_retag_enorm": {"family": "glm4_moe", "retag": (("enorm.weight", "e_norm.weight"),)},
    "mimo_retag_proj": {"family": "mimo", "retag": (("input_proj.weight", "in_proj.weight"),)},
    "mimo_retag_o": {"family": "mimo", "retag": (("o_proj.weight", "out_proj.weight"),)},
    "q35_retag_fc": {"family": "qwen3_5", "retag": (("fc.weight", "proj.weight"),)},
    "q35_retag_o": {"family": "qwen3_5", "retag": (("o_proj.weight", "out_proj.weight"),)},
    "glml_retag_kv_b": {
        "family": "glm4_moe_lite",
        "retag": (("kv_b_proj.weight", "kv_up_proj.weight"),),
    },
    # more MTP layers shipped than the depth declares
    "ds_depth1_ship2": {"family": "deepseek_v3", "ship": 2},
    "glm_depth1_ship2": {"family": "glm4_moe", "ship": 2},
    "q35_depth1_ship2": {"family": "qwen3_5", "ship": 2},
    "mimo_depth1_ship2": {"family": "mimo", "ship": 2},
    "glml_depth1_ship2": {"family": "glm4_moe_lite", "ship": 2},
    # exclusion lists as other exporters write them (`listed`: key, entries)
    "ds_fp8_parent": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "listed": ("modules_to_not_convert", ["model.layers.2"]),
    },
    "ds_fp8_glob": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "listed": ("modules_to_not_convert", ["model.layers.2.*"]),
    },
    "ds_fp8_ignored_parent": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "listed": ("ignored_layers", ["model.layers.2"]),
    },
    "glm_fp8_parent_runtime": {
        "family": "glm4_moe",
        "quant": "fp8",
        "listed": ("modules_to_not_convert", ["model.decoder", "model.eh_proj"]),
    },
    "ds_ct_regex": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "compressed": True,
        "listed": ("ignore", ["lm_head", r"re:model\.layers\.2\..*"]),
    },
    "ds_ct_regex_loose": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "compressed": True,
        "listed": ("ignore", ["lm_head", "re:.*layers.2.*"]),
    },
    "ds_ct_parent": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "compressed": True,
        "listed": ("ignore", ["lm_head", "model.layers.2"]),
    },
    "q35_fp8_mtp_parent": {
        "family": "qwen3_5",
        "quant": "fp8",
        "listed": ("modules_to_not_convert", [*Q35_SMALL, "mtp"]),
    },
    "q35_fp8_mtp_layers": {
        "family": "qwen3_5",
        "quant": "fp8",
        "listed": ("modules_to_not_convert", [*Q35_SMALL, "mtp.fc", "mtp.layers.0"]),
    },
    "mimo_fp8_parent": {
        "family": "mimo",
        "quant": "fp8",
        "listed": ("modules_to_not_convert", ["model.layers.2"]),
    },
    # quantized targets with a tensor or a layer missing, or two layers
    "ds_fp8_mtp_fp8_no_kv_norm": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "mtp_quantized": True,
        "drop": ("kv_a_layernorm.weight",),
    },
    "ds_fp8_mtp_fp8_no_o_proj": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "mtp_quantized": True,
        "drop": ("o_proj.weight", "o_proj.weight_scale_inv"),
    },
    "glm_fp8_dropped": {"family": "glm4_moe", "quant": "fp8", "ship": 0},
    "glm_fp8_mtp_fp8_depth2": {
        "family": "glm4_moe",
        "quant": "fp8",
        "mtp_quantized": True,
        "depth": 2,
        "ship": 2,
    },
    # one more tensor missing, per family: norms, routers, a projection that is no shard
    "ds_no_kv_a_norm": {"family": "deepseek_v3", "drop": ("kv_a_layernorm.weight",)},
    "ds_no_router": {"family": "deepseek_v3", "drop": ("mlp.gate.weight",)},
    "ds_no_bias_correction": {"family": "deepseek_v3", "drop": ("e_score_correction_bias",)},
    "ds_no_kv_b": {"family": "deepseek_v3", "drop": ("kv_b_proj.weight",)},
    "glm_no_hnorm": {"family": "glm4_moe", "drop": ("hnorm.weight",)},
    "glm_no_embed": {"family": "glm4_moe", "drop": ("embed_tokens.weight",)},
    "glm_no_q_proj": {"family": "glm4_moe", "drop": ("q_proj.weight",)},
    "glml_no_kv_a_norm": {"family": "glm4_moe_lite", "drop": ("kv_a_layernorm.weight",)},
    "glml_no_head": {"family": "glm4_moe_lite", "drop": ("shared_head.head.weight",)},
    "q35_no_q_norm": {"family": "qwen3_5", "drop": ("q_norm.weight",)},
    "q35_no_final_norm": {"family": "qwen3_5", "drop": ("norm.weight",)},
    "q35_no_router": {"family": "qwen3_5", "drop": ("mlp.gate.weight",)},
    "q35_no_expert_gate": {"family": "qwen3_5", "drop": ("shared_expert_gate.weight",)},
    "q35_no_shared_down": {"family": "qwen3_5", "drop": ("shared_expert.down_proj.weight",)},
    "qn_no_o_proj": {"family": "qwen3_next", "drop": ("o_proj.weight",)},
    "qn_no_embed_norm": {"family": "qwen3_next", "drop": ("pre_fc_norm_embedding.weight",)},
    "mimo_no_hidden_norm": {"family": "mimo", "drop": ("hidden_layernorm.weight",)},
    "mimo_no_final_norm": {"family": "mimo", "drop": ("final_layernorm.weight",)},
    "mimo_no_down": {"family": "mimo", "drop": ("down_proj.weight",)},
    "mimo_no_gate": {"family": "mimo", "drop": ("gate_proj.weight",)},
    # renamed to another family's naming, or one decoder index too far
    "ds_renamed_next": {"family": "deepseek_v3", "rename": "model.layers.3."},
    "ds_renamed_mimo": {"family": "deepseek_v3", "rename": "model.mtp_layers.0."},
    "glml_renamed_block": {"family": "glm4_moe_lite", "rename": "model.mtp_block."},
    "q35_renamed_model": {"family": "qwen3_5", "rename": "model.mtp.layers.0."},
    "qn_renamed_layers": {"family": "qwen3_next", "rename": "model.layers.2."},
    "mimo_depth0": {"family": "mimo", "depth": 0},
    "mimo_depth_absent": {"family": "mimo", "depth": None},
    "mimo_depth2": {"family": "mimo", "depth": 2, "ship": 2},
    "mimo_depth2_ship1": {"family": "mimo", "depth": 2, "ship": 1},
    "mimo_fp8_bf16": {"family": "mimo", "quant": "fp8"},
    "mimo_fp8_mtp_fp8": {"family": "mimo", "quant": "fp8", "mtp_quantized": True},
    "mimo_fp8_excluded": {"family": "mimo", "quant": "fp8", "exclude": "checkpoint"},
    "mimo_fp8_excluded_index": {"family": "mimo", "quant": "fp8", "exclude": "layer_index"},
    "mimo_ct_bf16": {"family": "mimo", "quant": "fp8", "compressed": True},
    "mimo_ct_excluded": {
        "family": "mimo",
        "quant": "fp8",
        "compressed": True,
        "exclude": "checkpoint",
    },
    "glm_ct_router_only": {
        "family": "glm4_moe",
        "quant": "fp8",
        "compressed": True,
        "listed": ("ignore", ["lm_head", r"re:.*mlp\.gate$"]),
    },
    "ds_ct_router_only_q": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "compressed": True,
        "mtp_quantized": True,
        "listed": ("ignore", ["lm_head", r"re:.*mlp\.gate$"]),
    },
    "q35_ct_regex_mtp": {
        "family": "qwen3_5",
        "quant": "fp8",
        "compressed": True,
        "listed": ("ignore", ["lm_head", *Q35_SMALL, r"re:mtp\..*"]),
    },
    "q35_ct_regex_loose": {
        "family": "qwen3_5",
        "quant": "fp8",
        "compressed": True,
        "listed": ("ignore", ["lm_head", *Q35_SMALL, "re:.*mtp.*"]),
    },
    "ds_fp8_ignored_runtime": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "listed": ("ignored_layers", ["model.decoder"]),
    },
    "ds_fp8_both_namings": {
        "family": "deepseek_v3",
        "quant": "fp8",
        "listed": ("modules_to_not_convert", ["model.layers.2", "model.decoder"]),
    },
    "glm_fp8_glob_star": {
        "family": "glm4_moe",
        "quant": "fp8",
        "listed": ("modules_to_not_convert", ["*layers.2*"]),
    },
    "mimo_fp8_mtp_parent": {
        "family": "mimo",
        "quant": "fp8",
        "listed": ("modules_to_not_convert", ["model.mtp_layers"]),
    },
    "mimo_ct_regex_mtp": {
        "family": "mimo",
        "quant": "fp8",
        "compressed": True,
        "listed": ("ignore", ["lm_head", r"re:model\.mtp_layers\..*"]),
    },
    "glml_ct_parent": {
        "family": "glm4_moe_lite",
        "quant": "fp8",
        "compressed": True,
        "listed": ("ignore", ["lm_head", "model.layers.2"]),
    },
}
# families x schemes x lists not yet combined above: FP8 block and compressed-tensors for
# GLM-4.7-Flash, the dense Qwen3.5, GLM-4.5, MiMo and Qwen3-Next, stored FP8 and listed, two
# FP8 layers, the list under SGLang's DeepSeek names and one module left off it
COMBINED: dict[str, dict[str, Any]] = {
    f"{short}_{scheme}_{variant}": {
        "family": family,
        "quant": "fp8",
        **({"compressed": True} if scheme == "ct" else {}),
        **extra,
    }
    for short, family in (
        ("glml", "glm4_moe_lite"),
        ("q35d", "qwen3_5_dense"),
        ("glm", "glm4_moe"),
        ("mimo", "mimo"),
        ("qn", "qwen3_next"),
    )
    for scheme in ("fp8", "ct")
    for variant, extra in (
        ("bf16", {}),
        ("mtp_fp8", {"mtp_quantized": True}),
        ("excluded", {"exclude": "checkpoint"}),
        ("q_listed", {"mtp_quantized": True, "exclude": "checkpoint"}),
        ("excluded_runtime", {"exclude": "runtime"}),
        ("partial", {"exclude": "partial"}),
        ("depth2", {"mtp_quantized": True, "depth": 2, "ship": 2}),
        ("depth2_bf16_excluded", {"exclude": "checkpoint", "depth": 2, "ship": 2}),
    )
}
# The families the per-scheme combinations below run over (short name, factory family); the
# first three are those with a NextN layer under SGLang's `model.decoder`.
EVERY_FAMILY = (
    ("ds", "deepseek_v3"),
    ("glm", "glm4_moe"),
    ("glml", "glm4_moe_lite"),
    ("q35", "qwen3_5"),
    ("q35d", "qwen3_5_dense"),
    ("mimo", "mimo"),
    ("qn", "qwen3_next"),
)
# ModelOpt FP8 (`hf_quant_config.json`, run on SGLang with its requantization after loading
# skipped) for every family: BF16 unlisted, stored FP8, listed by checkpoint names, by
# ModelOpt's layer glob, under SGLang's DeepSeek runtime names, and one module left off
COMBINED.update(
    {
        f"{short}_mo_fp8_{variant}": {"family": family, "quant": "modelopt_fp8", **extra}
        for short, family in EVERY_FAMILY
        for variant, extra in (
            ("bf16", {}),
            ("mtp_fp8", {"mtp_quantized": True}),
            ("excluded", {"exclude": "checkpoint"}),
            ("glob", {"exclude": "glob"}),
            ("excluded_runtime", {"exclude": "runtime"}),
            ("partial", {"exclude": "partial"}),
            ("q_listed", {"mtp_quantized": True, "exclude": "checkpoint"}),
            ("runtime_partial", {"exclude": "runtime_partial"}),
        )
    }
)
COMBINED.update(
    {
        f"{short}_mo_fp8_{how}": {
            "family": family,
            "quant": "modelopt_fp8",
            "listed": ("exclude_modules", ["lm_head", *entries]),
        }
        for short, family in EVERY_FAMILY[:3]
        for how, entries in (
            ("decoder_glob", ["model.decoder*", "model.eh_proj", "model.shared_head*"]),
            ("star_layer", ["*layers.2.*"]),
            ("parent", ["model.layers.2"]),
            ("decoder_parent", ["model.decoder"]),
            ("decoder_star", ["model.decoder.*"]),
        )
    }
)
# Quark FP8 (per-tensor, run on SGLang with its capability answered as a GPU's) for every
# family: the lists as Quark exports and SGLang's names write them
COMBINED.update(
    {
        f"{short}_qk_fp8_{variant}": {"family": family, "quant": "quark_fp8", **extra}
        for short, family in EVERY_FAMILY
        for variant, extra in (
            ("bf16", {}),
            ("mtp_fp8", {"mtp_quantized": True}),
            ("excluded", {"exclude": "checkpoint"}),
            ("regex", {"exclude": "regex"}),
            ("glob", {"exclude": "glob"}),
            ("excluded_runtime", {"exclude": "runtime"}),
            ("runtime_regex", {"exclude": "runtime_regex"}),
            ("runtime_partial", {"exclude": "runtime_partial"}),
            ("q_listed", {"mtp_quantized": True, "exclude": "checkpoint"}),
        )
    }
)
COMBINED.update(
    {
        f"{short}_qk_fp8_{how}": {
            "family": family,
            "quant": "quark_fp8",
            "listed": ("exclude", ["lm_head", *entries]),
        }
        for short, family in EVERY_FAMILY[:3]
        for how, entries in (
            ("layer_name", ["model.layers.2"]),
            ("one_expert", ["model.decoder.mlp.experts.0.gate_proj"]),
        )
    }
)
# DeepSeek-style layers under SGLang's names with one module left off: a row-parallel
# `o_proj`, a column-parallel `kv_b_proj`, one shard of the fused `q_a_proj` +
# `kv_a_proj_with_mqa`
COMBINED.update(
    {
        f"{short}_{scheme}_runtime_without_{module}": {
            "family": family,
            "quant": "modelopt_fp8" if scheme == "mo_fp8" else "fp8",
            **({"compressed": True} if scheme == "ct" else {}),
            "exclude": f"runtime_without_{module}",
        }
        for short, family in (("ds", "deepseek_v3"), ("glml", "glm4_moe_lite"))
        for scheme in ("fp8", "ct", "mo_fp8")
        for module in ("o_proj", "kv_b_proj", "kv_a_proj_with_mqa")
    }
)
# ... and GLM-4.5's, one shard of its fused `qkv_proj` left off
COMBINED.update(
    {
        f"glm_{scheme}_runtime_partial": {
            "family": "glm4_moe",
            "quant": "fp8",
            **({"compressed": True} if scheme == "ct" else {}),
            "exclude": "runtime_partial",
        }
        for scheme in ("fp8", "ct")
    }
)
TARGETS.update({name: kw for name, kw in COMBINED.items() if name not in TARGETS})
# Each tensor of an MTP layer left out, one at a time (a routed expert's aside: the oracle
# tracks whole parameters, and one expert is a slice of the fused MoE one), per family
_OWN = ("eh_proj", "embed_tokens", "enorm", "hnorm", "shared_head.head", "shared_head.norm")
_NORMS = ("input_layernorm", "post_attention_layernorm")
_ROUTER = ("mlp.gate", "mlp.gate.e_score_correction_bias")
_MLA_MODULES = ("kv_a_layernorm", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "q_a_layernorm")
_MLA = tuple(f"self_attn.{m}" for m in (*_MLA_MODULES, "q_a_proj", "q_b_proj"))
_GQA = tuple(f"self_attn.{m}_proj" for m in "qkvo")
_PROJ = ("down_proj", "gate_proj", "up_proj")
_SHARED = tuple(f"mlp.shared_experts.{p}" for p in _PROJ)
_QWEN_OWN = ("fc", "norm", "pre_fc_norm_embedding", "pre_fc_norm_hidden")
_QWEN_ATTN = (*_GQA, "self_attn.k_norm", "self_attn.q_norm")
_QWEN_MOE = (
    "mlp.gate",
    "mlp.shared_expert_gate",
    *(f"mlp.shared_expert.{p}" for p in _PROJ),
)
_DENSE = tuple(f"mlp.{p}" for p in _PROJ)
_MIMO_OWN = ("final_layernorm", "hidden_layernorm", "input_proj", "token_layernorm")
_BIASES = tuple(f"self_attn.{m}_proj.bias" for m in "qkv")
EVERY_TENSOR = {
    "ds": (*_OWN, *_NORMS, *_ROUTER, *_MLA, *_SHARED),
    "glm": (*_OWN, *_NORMS, *_ROUTER, *_GQA, *_SHARED),
    "glml": (*_OWN, *_NORMS, *_ROUTER, *_MLA, *_SHARED),
    "qn": (*_QWEN_OWN, *_NORMS, *_QWEN_ATTN, *_QWEN_MOE),
    "q35": (*_QWEN_OWN, *_NORMS, *_QWEN_ATTN, *_QWEN_MOE),
    "q35d": (*_QWEN_OWN, *_NORMS, *_QWEN_ATTN, *_DENSE),
    "mimo": (*_MIMO_OWN, *_NORMS, *_GQA, *_DENSE, *_BIASES),
}
FAMILY_OF = dict(EVERY_FAMILY)
BASE_KW = {short: {"family": family} for short, family in EVERY_FAMILY}
BASE_KW["qn"] = {"family": "qwen3_next", "depth": None}


def _tensor(item: str) -> str:
    return item if item.endswith(("bias", "e_score_correction_bias")) else item + ".weight"


def _tag(item: str) -> str:
    return item.replace(".", "_")


TARGETS.update(
    {
        f"{short}_lacks_{_tag(item)}": {**BASE_KW[short], "drop": (_tensor(item),)}
        for short, items in EVERY_TENSOR.items()
        for item in items
    }
)
# ... the first MTP layer under other prefixes (Qwen's own `mtp.*` modules keep theirs)
TARGETS.update(
    {
        f"{short}_under_{_tag(prefix.rstrip('.'))}": {**BASE_KW[short], "rename": prefix}
        for short in EVERY_TENSOR
        for prefix in ("model.mtp.layers.0.", "model.mtp.0.", "model.nextn.0.", "mtp_layers.0.")
    }
)
# ... one tensor under another name an exporter might give it
RETAGGED = {
    "ds": (
        ("enorm", "embed_norm"),
        ("shared_head.head", "lm_head"),
        ("shared_head.norm", "norm"),
        ("eh_proj", "fc"),
    ),
    "glm": (("hnorm", "hidden_norm"), ("shared_head.norm", "final_layernorm")),
    "glml": (("eh_proj", "e_proj"),),
    "qn": (("fc", "eh_proj"), ("pre_fc_norm_embedding", "enorm")),
    "q35": (("norm", "final_norm"),),
    "q35d": (("fc", "input_proj"),),
    "mimo": (("input_proj", "eh_proj"), ("final_layernorm", "norm")),
}
TARGETS.update(
    {
        f"{short}_{_tag(old)}_as_{_tag(new)}": {
            **BASE_KW[short],
            "retag": ((f"{old}.weight", f"{new}.weight"),),
        }
        for short, pairs in RETAGGED.items()
        for old, new in pairs
    }
)
# ... and an MTP layer stored FP8 (block, and compressed-tensors per channel) like the
# backbone with one module's scale left out, or one module's weight
_KOQ = ("self_attn.k_proj", "self_attn.o_proj", "self_attn.q_proj")
_SCALED = {
    "ds": (*_MLA[1:4], *_MLA[5:], *_SHARED[:2], "mlp.experts.0.up_proj"),
    "glml": (*_MLA[1:4], *_MLA[5:], *_SHARED[:2], "mlp.experts.0.up_proj"),
    "glm": (*_KOQ, *_SHARED[:2], "mlp.experts.0.up_proj"),
    "qn": (*_KOQ, *_QWEN_MOE[2:4], "mlp.experts.0.up_proj"),
    "q35": (*_KOQ, *_QWEN_MOE[2:4], "mlp.experts.0.up_proj"),
    "q35d": (*_KOQ, *_DENSE[:2]),
    "mimo": (*_KOQ, *_DENSE[:2]),
}
TARGETS.update(
    {
        f"{short}_{scheme}_lacks_{_tag(module)}_scale": {
            **BASE_KW[short],
            "quant": "fp8",
            "mtp_quantized": True,
            **({"compressed": True} if scheme == "ct" else {}),
            "drop_quantized": (f"{module}.weight_scale" + ("" if scheme == "ct" else "_inv"),),
        }
        for short, modules in _SCALED.items()
        for module in modules
        for scheme in ("fp8", "ct")
        if scheme == "fp8" or short in ("ds", "glm", "q35d")
    }
)
# ... and the other schemes' MTP layers stored quantized with one quantization tensor left
# out: ModelOpt's and Quark's static `input_scale` and `weight_scale`, GPTQ's and AWQ's
# `scales` and zero points (GPTQ's go unused: symmetric)
_OTHER_SCHEMES = (
    ("ds", "modelopt_fp8", "self_attn.o_proj", "input_scale"),
    ("ds", "modelopt_fp8", "self_attn.o_proj", "weight_scale"),
    ("glm", "modelopt_fp8", "self_attn.q_proj", "input_scale"),
    ("glm", "quark_fp8", "self_attn.k_proj", "weight_scale"),
    ("glm", "quark_fp8", "self_attn.o_proj", "input_scale"),
    ("mimo", "modelopt_fp8", "self_attn.o_proj", "input_scale"),
    ("ds", "gptq_int4", "self_attn.o_proj", "scales"),
    ("ds", "gptq_int4", "self_attn.o_proj", "qzeros"),
    ("glm", "gptq_int4", "self_attn.q_proj", "qzeros"),
    ("mimo", "gptq_int4", "self_attn.o_proj", "qzeros"),
    ("mimo", "gptq_int4", "self_attn.o_proj", "scales"),
    ("ds", "awq_int4", "self_attn.o_proj", "qzeros"),
    ("glm", "awq_int4", "self_attn.q_proj", "scales"),
    ("q35d", "awq_int4", "self_attn.q_proj", "qzeros"),
    ("q35d", "gptq_int4", "self_attn.q_proj", "qzeros"),
)
TARGETS.update(
    {
        f"{short}_{quant}_lacks_{_tag(module)}_{part}": {
            **BASE_KW[short],
            "quant": quant,
            "mtp_quantized": True,
            "drop_quantized": (f"{module}.{part}",),
            **({"g_idx": False} if quant == "gptq_int4" else {}),
        }
        for short, quant, module, part in _OTHER_SCHEMES
    }
)
TARGETS.update(
    {
        f"{short}_fp8_lacks_{_tag(modules[2])}_weight": {
            **BASE_KW[short],
            "quant": "fp8",
            "mtp_quantized": True,
            "drop_quantized": (f"{modules[2]}.weight",),
        }
        for short, modules in _SCALED.items()
    }
)
# One tensor of a shipped MTP layer stored outside it (`moved`): under three other
# prefixes, unquantized and in an FP8 target whose MTP layer its checkpoint names exclude
_MOVED_ITEMS = {
    "ds": ("input_layernorm", "self_attn.q_a_proj", "eh_proj"),
    "glml": ("input_layernorm", "self_attn.q_a_proj", "eh_proj"),
    "glm": ("input_layernorm", "self_attn.q_proj", "eh_proj"),
    "qn": ("input_layernorm", "self_attn.q_proj", "fc"),
    "q35": ("input_layernorm", "self_attn.q_proj", "fc"),
    "q35d": ("input_layernorm", "self_attn.q_proj", "fc"),
    "mimo": ("input_layernorm", "self_attn.q_proj", "input_proj"),
}
_MOVED_TO = {"model.mtp.layers.0.": "mml", "mtp_layers.0.": "ml", "model.nextn.0.": "nx"}
FP8_EXCLUDED = {"quant": "fp8", "exclude": "checkpoint"}


def _mtp_name(short: str, item: str) -> str:
    """The checkpoint name of `item` of the first MTP layer of the tiny target `short`."""
    if short in ("qn", "q35", "q35d"):
        return ("mtp." if item == "fc" else "mtp.layers.0.") + item + ".weight"
    return ("model.mtp_layers.0." if short == "mimo" else "model.layers.2.") + item + ".weight"


TARGETS.update(
    {
        f"{short}{'_fp8x' if fp8 else ''}_{_tag(item)}_to_{tag}": {
            **BASE_KW[short],
            **(FP8_EXCLUDED if fp8 else {}),
            "moved": ((_mtp_name(short, item), prefix + item + ".weight"),),
        }
        for short, items in _MOVED_ITEMS.items()
        for item in items
        for prefix, tag in _MOVED_TO.items()
        for fp8 in (False, True)
        if fp8 or tag == "mml"
    }
)
# ... and names an exporter might give one of them (SGLang's Qwen3-Next loader renames `mtp` to
# `model` in any name that holds it; vLLM's Qwen loaders look up any name under `mtp.`)
_NORM, _Q = "mtp.layers.0.input_layernorm.weight", "mtp.layers.0.self_attn.q_proj.weight"
_MOVED_AS = {
    "qn_moved_norm": ("qn", False, _NORM, "model.mtp.layers.0.input_layernorm.weight"),
    "qn_fp8x_moved_q": ("qn", True, _Q, "mtp.layer.0.self_attn.q_proj.weight"),
    "qn_fp8x_moved_fc": ("qn", True, "mtp.fc.weight", "mtp_fc.weight"),
    "qn_fp8x_moved_bias": ("qn", True, _Q, "model.mtp.layers.0.self_attn.q_proj.bias"),
    "qn_moved_expert": (
        "qn",
        False,
        "mtp.layers.0.mlp.experts.0.down_proj.weight",
        "model.mtp.layers.0.mlp.experts.0.down_proj.weight",
    ),
    "q35_fp8x_moved_q": ("q35", True, _Q, "mtp.layer.0.self_attn.q_proj.weight"),
    "q35_moved_norm_model": ("q35", False, _NORM, "model.mtp.layers.0.input_layernorm.weight"),
    "mimo_moved_tn": (
        "mimo",
        False,
        "model.mtp_layers.0.token_layernorm.weight",
        "model.mtp.token_layernorm.weight",
    ),
    "mimo_fp8x_moved_q": (
        "mimo",
        True,
        "model.mtp_layers.0.self_attn.q_proj.weight",
        "model.mtp_layer.0.self_attn.q_proj.weight",
    ),
    "mimo_fp8x_moved_tn": (
        "mimo",
        True,
        "model.mtp_layers.0.token_layernorm.weight",
        "model.mtp.token_layernorm.weight",
    ),
    "ds_fp8x_moved_eh": ("ds", True, "model.layers.2.eh_proj.weight", "model.mtp.eh_proj.weight"),
    "glm_fp8x_moved_enorm": (
        "glm",
        True,
        "model.layers.2.enorm.weight",
        "model.layers.2.mtp.enorm.weight",
    ),
}
TARGETS.update(
    {
        name: {**BASE_KW[short], **(FP8_EXCLUDED if fp8 else {}), "moved": ((old, new),)}
        for name, (short, fp8, old, new) in _MOVED_AS.items()
    }
)
# Schemes SGLang builds no target of on a CPU
CUDA_ONLY_ON_SGLANG: tuple[str, ...] = ()
# vLLM's CPU wheel has no int4 kernel: GPTQ and AWQ targets run with the kernel choice forced.
WNA16 = Path(__file__).with_name("mtp_oracle_wna16.py")
# SGLang chooses its Marlin int4 path by the GPU's compute capability: answered as on a GPU.
SGLANG_WNA16 = Path(__file__).with_name("mtp_oracle_sglang_wna16.py")
# ... and its compressed-tensors schemes by the GPU's compute capability: answered the same way.
SGLANG_CT = Path(__file__).with_name("mtp_oracle_sglang_ct.py")
# ... and Qwen3-Next's delta-net norm asks for the current CUDA device: answered with the CPU.
SGLANG_QWEN3_NEXT = Path(__file__).with_name("mtp_oracle_sglang_qwen3_next.py")
# ... and its ModelOpt FP8 methods requantize with a CUDA op after loading: skipped.
SGLANG_MODELOPT = Path(__file__).with_name("mtp_oracle_sglang_modelopt.py")
# vLLM's ModelOpt and Quark FP8 methods requantize with a CUDA op after loading: skipped.
VLLM_FP8_STATIC = Path(__file__).with_name("mtp_oracle_vllm_fp8_static.py")
# ... and SGLang's Quark config asks CUDA for the capability, its schemes repack after loading.
SGLANG_QUARK = Path(__file__).with_name("mtp_oracle_sglang_quark.py")


@dataclass(frozen=True)
class Launch:
    """One launch: vLLM's method and token count, or SGLang's algorithm and steps."""

    method: str | None = None
    tokens: int | None = 1
    self_draft: bool = False
    extra: tuple[str, ...] = field(default_factory=tuple)
    # the target's config class ships with it (MiMo): the launch trusts its code
    trust_remote_code: bool = False

    def oracle_args(self, target: Path) -> list[str]:
        args = ["--method", self.method] if self.method else []
        if self.trust_remote_code:
            args.append("--trust-remote-code")
        if self.tokens is not None:
            args += ["--num-speculative-tokens", str(self.tokens)]
        if self.self_draft:
            args += ["--draft", str(target)]
        return args + (["--extra", *self.extra] if self.extra else [])

    def serve_args(self, release: str, target: Path) -> str:
        if release.startswith("sglang"):
            line = f"python -m sglang.launch_server --model-path {target}"
            line += f" --speculative-algorithm {self.method or 'NEXTN'}"
            if self.tokens is not None:
                k = self.tokens
                line += f" --speculative-num-steps {k} --speculative-eagle-topk 1"
                line += f" --speculative-num-draft-tokens {k + 1}"
            if self.self_draft:
                line += f" --speculative-draft-model-path {target}"
            if self.trust_remote_code:
                line += " --trust-remote-code"
            return line + "".join(f" {e}" for e in self.extra)
        keys = [f'"method": "{self.method or "mtp"}"']
        if self.self_draft:
            keys.append(f'"model": "{target}"')
        if self.tokens is not None:
            keys.append(f'"num_speculative_tokens": {self.tokens}')
        trust = " --trust-remote-code" if self.trust_remote_code else ""
        return f"vllm serve {target}{trust} --speculative-config '{{{', '.join(keys)}}}'"


K1 = Launch()
MIMO_K1 = Launch(trust_remote_code=True)
QUANTIZED = [n for n, kw in TARGETS.items() if kw.get("quant")]


def _runs() -> dict[str, dict[str, tuple[str, Launch]]]:
    vllm: dict[str, tuple[str, Launch]] = {}
    sglang: dict[str, tuple[str, Launch]] = {}
    for name in TARGETS:
        k1 = MIMO_K1 if name.startswith("mimo") else K1
        vllm[f"{name}_k1"] = (name, k1)
        # SGLang's ModelOpt and Quark targets need CUDA; Qwen3-Next's GPTQ and AWQ stop in the
        # backbone's delta-net (`in_proj_ba`, a packed-weight loader reading `.weight`)
        packed_qn = name.startswith("qn_") and any(m in name for m in ("_gptq_", "_awq_"))
        cuda_only = packed_qn or any(m in name for m in CUDA_ONLY_ON_SGLANG)
        if not cuda_only:
            sglang[f"{name}_k1"] = (name, k1)
    mimo = partial(Launch, trust_remote_code=True)
    vllm["mimo_k2"] = ("mimo", mimo(tokens=2))
    vllm["mimo_k3"] = ("mimo", mimo(tokens=3))
    vllm["mimo_nok"] = ("mimo", mimo(tokens=None))
    vllm["mimo_self_k1"] = ("mimo", mimo(self_draft=True))
    vllm["mimo_eagle3_k1"] = ("mimo", mimo("eagle3"))
    vllm["mimo_no_remote_k1"] = ("mimo", K1)
    vllm["mimo_mimo_mtp_k1"] = ("mimo", mimo("mimo_mtp"))
    vllm["mimo_deepseek_mtp_k1"] = ("mimo", mimo("deepseek_mtp"))
    vllm["mimo_eagle_k1"] = ("mimo", mimo("eagle"))
    vllm["ds_mimo_mtp_k1"] = ("ds", Launch("mimo_mtp"))
    vllm["ds_qwen3_next_mtp_k1"] = ("ds", Launch("qwen3_next_mtp"))
    vllm["q35_deepseek_mtp_k1"] = ("q35", Launch("deepseek_mtp"))
    vllm["mimo_fp8_bf16_k2"] = ("mimo_fp8_bf16", mimo(tokens=2))
    vllm["mimo_dropped_k2"] = ("mimo_dropped", mimo(tokens=2))
    vllm["mimo_depth2_k2"] = ("mimo_depth2", mimo(tokens=2))
    vllm["mimo_depth2_k3"] = ("mimo_depth2", mimo(tokens=3))
    vllm["mimo_depth2_ship1_k2"] = ("mimo_depth2_ship1", mimo(tokens=2))
    sglang["mimo_k3"] = ("mimo", mimo(tokens=3))
    sglang["mimo_nok"] = ("mimo", mimo(tokens=None))
    sglang["mimo_self_k1"] = ("mimo", mimo(self_draft=True))
    sglang["mimo_eagle_k1"] = ("mimo", mimo("EAGLE"))
    sglang["mimo_eagle3_k1"] = ("mimo", mimo("EAGLE3"))
    sglang["mimo_no_remote_k1"] = ("mimo", K1)
    for name in ("ds", "glm", "qn"):
        vllm[f"{name}_k2"] = (name, Launch(tokens=2))
        vllm[f"{name}_k3"] = (name, Launch(tokens=3))
        vllm[f"{name}_nok"] = (name, Launch(tokens=None))
        vllm[f"{name}_self_k1"] = (name, Launch(self_draft=True))
    for name in ("q35",):
        vllm[f"{name}_k2"] = (name, Launch(tokens=2))
        vllm[f"{name}_k3"] = (name, Launch(tokens=3))
        vllm[f"{name}_nok"] = (name, Launch(tokens=None))
        vllm[f"{name}_self_k1"] = (name, Launch(self_draft=True))
    vllm["q35_qwen3_5_mtp_k1"] = ("q35", Launch("qwen3_5_mtp"))
    vllm["q35_eagle3_k2"] = ("q35", Launch("eagle3", 2))
    vllm["q35_depth2_k2"] = ("q35_depth2", Launch(tokens=2))
    vllm["q35_depth2_k3"] = ("q35_depth2", Launch(tokens=3))
    vllm["q35_depth2_ship1_k2"] = ("q35_depth2_ship1", Launch(tokens=2))
    vllm["glml_k2"] = ("glml", Launch(tokens=2))
    vllm["glml_nok"] = ("glml", Launch(tokens=None))
    sglang["glml_nok"] = ("glml", Launch(tokens=None))
    sglang["q35_nok"] = ("q35", Launch(tokens=None))
    sglang["q35_k3"] = ("q35", Launch(tokens=3))
    sglang["q35_self_k1"] = ("q35", Launch(self_draft=True))
    sglang["q35_eagle_k1"] = ("q35", Launch("EAGLE"))
    sglang["q35_eagle3_k1"] = ("q35", Launch("EAGLE3"))
    sglang["qn_nok"] = ("qn", Launch(tokens=None))
    sglang["qn_k3"] = ("qn", Launch(tokens=3))
    sglang["qn_eagle3_k1"] = ("qn", Launch("EAGLE3"))
    vllm["ds_deepseek_mtp_k1"] = ("ds", Launch("deepseek_mtp"))
    vllm["glm_glm4_moe_mtp_k2"] = ("glm", Launch("glm4_moe_mtp", 2))
    vllm["glm_deepseek_mtp_k1"] = ("glm", Launch("deepseek_mtp"))
    vllm["qn_qwen3_next_mtp_k1"] = ("qn", Launch("qwen3_next_mtp"))
    vllm["ds_eagle3_k2"] = ("ds", Launch("eagle3", 2))
    vllm["glm_eagle_k1"] = ("glm", Launch("eagle"))
    vllm["ds_eagle3_self_k1"] = ("ds", Launch("eagle3", self_draft=True))
    vllm["ds_depth2_k2"] = ("ds_depth2", Launch(tokens=2))
    vllm["ds_depth2_k3"] = ("ds_depth2", Launch(tokens=3))
    vllm["glm_depth2_k4"] = ("glm_depth2", Launch(tokens=4))
    vllm["ds_depth2_ship1_k2"] = ("ds_depth2_ship1", Launch(tokens=2))
    vllm["ds_fp8_bf16_k2"] = ("ds_fp8_bf16", Launch(tokens=2))
    sglang["ds_nok"] = ("ds", Launch(tokens=None))
    sglang["glm_k3"] = ("glm", Launch(tokens=3))
    sglang["ds_self_k1"] = ("ds", Launch(self_draft=True))
    sglang["ds_eagle_k1"] = ("ds", Launch("EAGLE"))
    sglang["ds_eagle_self_k1"] = ("ds", Launch("EAGLE", self_draft=True))
    sglang["glm_eagle_k2"] = ("glm", Launch("EAGLE", 2))
    sglang["ds_eagle3_k1"] = ("ds", Launch("EAGLE3"))
    sglang["glm_eagle3_self_k1"] = ("glm", Launch("EAGLE3", self_draft=True))
    sglang["ds_fp8_bf16_unquant"] = (
        "ds_fp8_bf16",
        Launch(extra=("--speculative-draft-model-quantization", "unquant")),
    )
    # SGLang's own step flags, as users write them (no `tokens`: the flags are the extra)
    steps = partial(Launch, tokens=None)
    sglang["ds_topk2"] = ("ds", steps(extra=_sglang_steps(2, 2, 4)))
    sglang["glm_topk4"] = ("glm", steps(extra=_sglang_steps(3, 4, 8)))
    sglang["ds_draft_only"] = ("ds", steps(extra=("--speculative-num-draft-tokens", "4")))
    sglang["glm_steps_only"] = ("glm", steps(extra=("--speculative-num-steps", "3")))
    sglang["ds_draft_tokens_1"] = ("ds", steps(extra=_sglang_steps(1, 1, 1)))
    sglang["q35_topk2"] = ("q35", steps(extra=_sglang_steps(2, 2, 4)))
    sglang["mimo_steps2"] = ("mimo", steps(trust_remote_code=True, extra=_sglang_steps(2, 1, 3)))
    sglang["ds_online_fp8"] = ("ds", Launch(extra=("--quantization", "fp8")))
    sglang["ds_fp8_bf16_draft_fp8"] = (
        "ds_fp8_bf16",
        Launch(extra=("--speculative-draft-model-quantization", "fp8")),
    )
    sglang["ds_fp16"] = ("ds", Launch(extra=("--dtype", "float16")))
    sglang["glm_draft_unquant"] = (
        "glm",
        Launch(extra=("--speculative-draft-model-quantization", "unquant")),
    )
    # launches other than one token on the combined targets
    vllm["glml_fp8_excluded_k3"] = ("glml_fp8_excluded", Launch(tokens=3))
    vllm["q35d_ct_excluded_k2"] = ("q35d_ct_excluded", Launch(tokens=2))
    vllm["mimo_fp8_excluded_k2"] = ("mimo_fp8_excluded", mimo(tokens=2))
    vllm["glml_fp8_depth2_k2"] = ("glml_fp8_depth2", Launch(tokens=2))
    vllm["glm_ct_depth2_k4"] = ("glm_ct_depth2", Launch(tokens=4))
    vllm["qn_fp8_depth2_k3"] = ("qn_fp8_depth2", Launch(tokens=3))
    vllm["glml_ct_excluded_eagle3"] = ("glml_ct_excluded", Launch("eagle3", 2))
    sglang["glml_fp8_excluded_eagle"] = ("glml_fp8_excluded", Launch("EAGLE"))
    sglang["q35d_ct_excluded_nok"] = ("q35d_ct_excluded", Launch(tokens=None))
    sglang["glm_fp8_excluded_topk2"] = ("glm_fp8_excluded", steps(extra=_sglang_steps(2, 2, 4)))
    sglang["mimo_ct_excluded_k3"] = ("mimo_ct_excluded", mimo(tokens=3))
    vllm["ds_k0"] = ("ds", Launch(tokens=0))
    vllm["ds_method_upper"] = ("ds", Launch("MTP"))
    vllm["glm_k5"] = ("glm", Launch(tokens=5))
    vllm["q35_k4"] = ("q35", Launch(tokens=4))
    _crossed_runs(vllm, sglang)
    _depth_runs(vllm, sglang)
    return {VLLM: vllm, SGLANG: sglang}


# Depth 0 and an absent depth key on every family (and depth 0 in an FP8 target whose MTP layer
# is excluded), under one and two tokens, and SGLang's `EAGLE`
DEPTH_KINDS = {"depth0": {"depth": 0}, "depth_absent": {"depth": None}}
TARGETS.update(
    {
        f"{short}_{kind}": {**BASE_KW[short], **kw}
        for short, _family in EVERY_FAMILY
        for kind, kw in DEPTH_KINDS.items()
        if f"{short}_{kind}" not in TARGETS
    }
)
TARGETS.update(
    {
        f"{short}_fp8x_depth0": {**BASE_KW[short], **FP8_EXCLUDED, "depth": 0}
        for short, _family in EVERY_FAMILY
    }
)


def _depth_runs(vllm: dict[str, tuple[str, Launch]], sglang: dict[str, tuple[str, Launch]]) -> None:
    for short, _family in EVERY_FAMILY:
        trust = short == "mimo"
        for kind in DEPTH_KINDS:
            name = f"{short}_{kind}"
            for k in (1, 2):
                for runs in (vllm, sglang):
                    runs.setdefault(
                        f"{name}_k{k}", (name, Launch(tokens=k, trust_remote_code=trust))
                    )
            sglang.setdefault(f"{name}_eagle", (name, Launch("EAGLE", trust_remote_code=trust)))
        name = f"{short}_fp8x_depth0"
        for runs in (vllm, sglang):
            runs.setdefault(f"{name}_k1", (name, Launch(trust_remote_code=trust)))


# Launch variants on the damaged and quantized targets: each family's target of each kind
CROSSED_KINDS = (
    "dropped",
    "depth0",
    "depth_absent",
    "depth2",
    "depth2_ship1",
    "depth1_ship2",
    "fp8_bf16",
    "ct_bf16",
    "fp8_excluded",
    "fp8_mtp_fp8",
    "no_head",
    "renamed_block",
    "ct_excluded",
    "mo_fp8_bf16",
)
CROSSED = [
    f"{short}_{kind}"
    for short in ("ds", "glm", "qn", "q35", "glml", "mimo")
    for kind in CROSSED_KINDS
    if f"{short}_{kind}" in TARGETS
]
# ... and the quantized targets of depth 2
DEPTH2_QUANTIZED = [
    name
    for name in TARGETS
    if name.endswith(("_depth2", "_depth2_bf16_excluded")) and ("_fp8_" in name or "_ct_" in name)
]


def _crossed_runs(
    vllm: dict[str, tuple[str, Launch]], sglang: dict[str, tuple[str, Launch]]
) -> None:
    """Add the runs of `CROSSED` and `DEPTH2_QUANTIZED` (a run already there is kept)."""
    for name in CROSSED:
        k = partial(Launch, trust_remote_code=name.startswith("mimo"))
        whole = "depth" in name or "dropped" in name
        for run, launch in {
            "k2": k(tokens=2),
            "k3": k(tokens=3),
            "eagle3": k("eagle3", 2),
            "self": k(self_draft=True),
            **({"nok": k(tokens=None)} if whole else {}),
        }.items():
            vllm.setdefault(f"{name}_{run}", (name, launch))
        if f"{name}_k1" not in sglang:
            continue
        for run, launch in {
            "EAGLE3": k("EAGLE3"),
            "topk2": k(tokens=None, extra=_sglang_steps(2, 2, 4)),
            "sgself": k(self_draft=True),
            **({"nok": k(tokens=None), "k3": k(tokens=3)} if whole else {}),
        }.items():
            sglang.setdefault(f"{name}_{run}", (name, launch))
    for name in DEPTH2_QUANTIZED:
        k = partial(Launch, trust_remote_code=name.startswith("mimo"))
        vllm.setdefault(f"{name}_k3", (name, k(tokens=3)))
        vllm.setdefault(f"{name}_nok", (name, k(tokens=None)))
        if f"{name}_k1" in sglang:
            sglang.setdefault(f"{name}_k3", (name, k(tokens=3)))
            sglang.setdefault(f"{name}_nok", (name, k(tokens=None)))
            sglang.setdefault(f"{name}_EAGLE3", (name, k("EAGLE3")))


def _sglang_steps(steps: int, topk: int, draft_tokens: int) -> tuple[str, ...]:
    return (
        "--speculative-num-steps",
        str(steps),
        "--speculative-eagle-topk",
        str(topk),
        "--speculative-num-draft-tokens",
        str(draft_tokens),
    )


# The runs made first (the 2-core machine allows ~35 vLLM and ~22 SGLang runs an hour); the
# rest of `RUNS` follows in table order.
FIRST: dict[str, list[str]] = {
    VLLM: [
        "ds_k1",
        "glm_k1",
        "qn_k1",
        "ds_dropped_k1",
        "ds_fp8_bf16_k1",
        "ds_ct_bf16_k1",
        "ds_eagle3_k2",
        "glm_dropped_k1",
        "ds_no_eh_k1",
        "glm_no_enorm_k1",
        "qn_no_fc_k1",
        "ds_renamed_block_k1",
        "glm_renamed_mtp_k1",
        "ds_fp8_mtp_fp8_k1",
        "ds_ct_mtp_fp8_k1",
        "ds_fp8_excluded_k1",
        "ds_ct_excluded_k1",
        "glm_fp8_bf16_k1",
        "glm_ct_bf16_k1",
        "ds_fp8_excluded_runtime_k1",
        "glm_fp8_excluded_k1",
        "ds_k3",
        "glm_nok",
        "qn_k2",
        "ds_deepseek_mtp_k1",
        "glm_glm4_moe_mtp_k2",
        "qn_qwen3_next_mtp_k1",
        "glm_eagle_k1",
        "ds_depth0_k1",
        "ds_depth_absent_k1",
        "ds_depth2_ship1_k1",
        "ds_depth2_k3",
        "glm_depth2_k4",
        "ds_no_head_k1",
        "ds_no_o_proj_k1",
        "glm_no_post_norm_k1",
        "qn_dropped_k1",
        "ds_self_k1",
    ],
    SGLANG: [
        "ds_k1",
        "glm_k1",
        "ds_dropped_k1",
        "ds_fp8_bf16_k1",
        "ds_eagle_k1",
        "ds_eagle3_k1",
        "ds_no_eh_k1",
        "glm_no_enorm_k1",
        "ds_renamed_block_k1",
        "ds_fp8_mtp_fp8_k1",
        "ds_fp8_excluded_runtime_k1",
        "glm_fp8_bf16_k1",
        "ds_ct_bf16_k1",
        "ds_eagle_self_k1",
        "glm_eagle3_self_k1",
        "ds_nok",
        "glm_k3",
        "ds_depth0_k1",
        "ds_depth2_k1",
        "ds_no_head_k1",
        "glm_fp8_excluded_runtime_k1",
        "ds_ct_mtp_fp8_k1",
    ],
}
RUNS = {
    release: {
        **{run: runs[run] for run in FIRST[release]},
        **{run: value for run, value in runs.items() if run not in FIRST[release]},
    }
    for release, runs in _runs().items()
}


# Runs whose outcome the oracle cannot see, with what the engine was seen to do instead: it
# builds the target with dummy weights, and vLLM's own target loader stops on an MTP layer
# shipped beyond the declared depth (run with the target's real weights: a copy of the
# oracle whose target is built with `load_format="safetensors"`). Listed apart, not counted.
ORACLE_BLIND = {
    (VLLM, f"{name}_k1"): "incompatible: the target's loader stops on model.layers.3 "
    "(KeyError 'layers.3.eh_proj.weight' / no module 'layers.3'), run with real target weights"
    for name in ("ds_depth1_ship2", "glm_depth1_ship2", "glml_depth1_ship2")
}
ORACLE_BLIND.update(
    {
        (VLLM, run): ORACLE_BLIND[VLLM, f"{name}_k1"]
        for run, (name, _launch) in RUNS[VLLM].items()
        if name in ("ds_depth1_ship2", "glm_depth1_ship2", "glml_depth1_ship2")
    }
)


# ... and vLLM's own loader for the target stops on a name outside the MTP layers it cannot
# place (a tensor moved out of its layer: run with the target's real weights, every family);
# the dummy-weight oracle sees only the MTP loader, which passes it over (or, unquantized,
# the load check, which leaves some modules out).
def _stray_for_target(moved: object) -> str | None:
    for _old, new in moved if isinstance(moved, tuple) else ():
        if not new.startswith(("mtp.", "model.layers.2.", "model.mtp_layers.")):
            return None if new.endswith(".bias") else str(new)
    return None


ORACLE_BLIND.update(
    {
        (VLLM, run): f"incompatible: vLLM's loader for the target stops on `{stray}` (KeyError / "
        "no module), run with the target's real weights"
        for run, (name, _launch) in RUNS[VLLM].items()
        if (stray := _stray_for_target(TARGETS[name].get("moved"))) is not None
    }
)
# ... and GLM-4.7-Flash's own loader concatenates the backbone's per-tensor ModelOpt / Quark
# FP8 scales of `q_a_proj` and `kv_a_proj_with_mqa`, which stops the target's load before the
# MTP layer's: every such target is refused (draftfit: DF542 on the backbone); the runs the
# dummy-weight oracle labels otherwise
ORACLE_BLIND.update(
    {
        (SGLANG, f"glml_{name}_k1"): "incompatible: the target's own load stops at "
        "sglang/srt/models/glm4_moe_lite.py:1030 (`zero-dimensional tensor (at position 0) "
        "cannot be concatenated`), run with real target weights"
        for name in (
            "mo_fp8_excluded",
            "mo_fp8_excluded_runtime",
            "mo_fp8_partial",
            "mo_fp8_runtime_partial",
            "mo_fp8_decoder_glob",
            "mo_fp8_decoder_parent",
            "mo_fp8_decoder_star",
            "mo_fp8_runtime_without_o_proj",
            "mo_fp8_runtime_without_kv_a_proj_with_mqa",
            "qk_fp8_excluded_runtime",
            "qk_fp8_runtime_regex",
        )
    }
)

# ... and one routed expert's scale left out: the expert's slice of the fused MoE scale keeps its
# initial value (1.0: vllm/model_executor/layers/quantization/fp8.py:614-627@v0.34.0), finite:
# the tokens routed to that expert are drafted wrong, the others not (draftfit: degraded, a
# warning). The vLLM oracle, tracking whole parameters, reports it loaded (`compatible`); the
# SGLang one labels any partly loaded parameter `drafts-garbage`.
ORACLE_BLIND.update(
    {
        (release, f"{short}_{scheme}_lacks_mlp_experts_0_up_proj_scale_k1"): "one expert's "
        "slice of the fused MoE scale is never written: the oracle's label is per parameter"
        for release in (VLLM, SGLANG)
        for short in ("ds", "glm", "glml", "qn", "q35")
        for scheme in ("fp8", "ct")
    }
)


def build(root: Path) -> None:
    for name, kw in TARGETS.items():
        args = dict(kw)
        family = args.pop("family")
        if not (root / name / "config.json").exists():
            mtp_target(root / name, family, engine_ready=True, **args)


def run_oracle(root: Path, release: str, python: str, names: list[str]) -> None:
    out = root / "oracle" / release
    out.mkdir(parents=True, exist_ok=True)
    for run, (name, launch) in RUNS[release].items():
        if (names and run not in names) or (out / f"{run}.json").exists():
            continue
        target = root / name
        args = launch.oracle_args(target)
        quant = TARGETS[name].get("quant")
        oracle = [str(ORACLE)]
        if release.startswith("vllm") and quant in ("gptq_int4", "awq_int4"):
            oracle = [str(WNA16), str(ORACLE)]
        elif quant in ("gptq_int4", "awq_int4"):
            oracle = [str(SGLANG_WNA16), str(ORACLE)]
        elif release.startswith("sglang"):
            if TARGETS[name].get("compressed"):
                oracle = [str(SGLANG_CT), *oracle]
            elif quant == "modelopt_fp8":
                oracle = [str(SGLANG_MODELOPT), *oracle]
            elif quant == "quark_fp8":
                oracle = [str(SGLANG_QUARK), *oracle]
            if TARGETS[name]["family"] == "qwen3_next":
                oracle = [str(SGLANG_QWEN3_NEXT), *oracle]
        elif release.startswith("vllm") and quant:
            args.append("--cpu-fp8")
            if quant in ("modelopt_fp8", "quark_fp8"):
                oracle = [str(VLLM_FP8_STATIC), *oracle]
        log = ["--log", str(out / f"{run}.log")]
        cmd = ["nice", "-n", "10", python, *oracle, str(target), *log, *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        (out / f"{run}.json").write_text(proc.stdout)
        print(f"{release} {run}: {_label(out / f'{run}.json')[0]}", flush=True)


# The shards SGLang loads into a merged module (`qkv_proj`, `gate_up_proj`).
MERGED_SHARDS = frozenset({"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"})


def sglang_marlin_benign(data: dict[str, Any]) -> None:
    """Read an SGLang GPTQ / AWQ report (`mtp_oracle_sglang_wna16.py`) against what SGLang
    does after loading, which the CPU run skips: the Marlin step
    (hardware_backend/gpu/quantization/gptq_kernels.py:141-168@v0.5.23) replaces a `g_idx`
    left unfilled by an empty one where `desc_act` is false and never reads a symmetric
    config's zero points; DeepSeek's loader loads `kv_a_proj_with_mqa` concatenated with
    `q_a_proj` (deepseek_weight_loader.py:438-490@v0.5.23), which the oracle credits to
    `q_a_proj` only; an AWQ shard of a merged module (`gate_proj` of `gate_up_proj`) loads
    its packed `qweight` / `qzeros` through the merged loader, which the oracle does not
    credit to the shard: where every parameter was written in full, only that shard can
    have written its part. Those entries move to `benign` and a run left with nothing else
    is `compatible`."""
    try:
        config = json.loads((Path(str(data.get("target"))) / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return
    quant = config.get("quantization_config") or {}
    gptq = quant.get("quant_method") == "gptq"
    awq = quant.get("quant_method") == "awq"
    unloaded = [str(n) for n in data.get("unloaded_params") or []]
    unused = [str(n) for n in data.get("unused_tensors") or []]
    fused_loaded = not any("fused_qkv_a_proj_with_mqa" in n for n in unloaded)

    def harmless_param(name: str) -> bool:
        if gptq and quant.get("sym") is True and name.endswith(".qzeros"):
            return True  # a symmetric config's zero points: never read
        return gptq and quant.get("desc_act") is False and "g_idx" in name.rsplit(".", 1)[-1]

    written = not unloaded and not data.get("partially_written_params")

    def harmless_tensor(name: str) -> bool:
        if gptq and quant.get("sym") is True and name.endswith(".qzeros"):
            return True
        module, _, part = name.rpartition(".")
        if (
            awq
            and written
            and part in ("qweight", "qzeros")
            and module.rsplit(".", 1)[-1] in MERGED_SHARDS
        ):
            return True
        mate = name.replace(".kv_a_proj_with_mqa.", ".q_a_proj.")
        return fused_loaded and mate != name and mate not in unused

    benign = [n for n in unloaded if harmless_param(n)] + [n for n in unused if harmless_tensor(n)]
    data["unloaded_params"] = [n for n in unloaded if not harmless_param(n)]
    data["unused_tensors"] = [n for n in unused if not harmless_tensor(n)]
    data["benign"] = benign
    loaded_all = not data["unloaded_params"] and not data["unused_tensors"]
    if benign and data.get("verdict") == "drafts-garbage" and loaded_all:
        data["verdict"] = "compatible"
        data["verdict_reason"] = f"loaded ({len(benign)} entries left to the Marlin step)"


def sglang_modelopt_benign(data: dict[str, Any]) -> None:
    """Read an SGLang ModelOpt FP8 or Quark report (`mtp_oracle_sglang_modelopt.py`,
    `mtp_oracle_sglang_quark.py`) against what
    SGLang does after loading, which the oracle does not run: the NextN class builds its own
    `lm_head` with the target's quantization under the name `model.shared_head.head`, which
    an `lm_head` entry does not exclude, and the draft worker then shares the target's head
    weight with it (eagle_worker_v2.py:370-378@v0.5.23); with the target's head unquantized
    the logits take the plain product and never read the draft head's scales
    (logits_processor.py:150-197,1156-1158@v0.5.23). Those two parameters, and a dtype
    mismatch on a head weight the target's then replaced (MiMo loads the checkpoint's head
    into its FP8 head first), move to `benign` (where the target's list holds `lm_head` and
    the launch is no EAGLE-3 one), and a run left with nothing else is `compatible`."""
    root = Path(str(data.get("target")))
    try:
        if (root / "hf_quant_config.json").exists():
            quant = json.loads((root / "hf_quant_config.json").read_text())
            listed = (quant.get("quantization") or {}).get("exclude_modules", [])
        else:  # Quark
            config = json.loads((root / "config.json").read_text())
            listed = (config.get("quantization_config") or {}).get("exclude", [])
    except (OSError, json.JSONDecodeError):
        return
    if "lm_head" not in listed:
        return
    if "EAGLE3" in " ".join(str(a) for a in data.get("argv") or []):
        return
    head = {"lm_head.weight_scale", "lm_head.input_scale"}
    unloaded = [str(n) for n in data.get("unloaded_params") or []]
    benign = [n for n in unloaded if n in head]
    data["unloaded_params"] = [n for n in unloaded if n not in head]
    shared = set(data.get("shared_from_target") or [])
    mismatches = data.get("dtype_mismatches") or []
    replaced = [m for m in mismatches if m.get("param") in shared]
    data["dtype_mismatches"] = [m for m in mismatches if m not in replaced]
    benign += [f"{m.get('param')} (replaced by the target's)" for m in replaced]
    data["benign"] = [*data.get("benign", []), *benign]
    loaded_all = not data["unloaded_params"] and not data.get("unused_tensors")
    clean = not data.get("dtype_mismatches") and not data.get("partially_written_params")
    if benign and data.get("verdict") == "drafts-garbage" and loaded_all and clean:
        data["verdict"] = "compatible"
        data["verdict_reason"] = f"loaded ({len(data['benign'])} entries the engine does not read)"


# The attention's KV-cache scales the engine defaults when no tensor sets them (the oracle's
# own `ENGINE_DEFAULTED`: they never count towards its verdict).
ENGINE_DEFAULTED = re.compile(r"\.(k|v|q|prob)_(scale|zero_point)$")


# vLLM's name of a stacked shard's parameter in the oracle's report (`qkv_proj.qzeros.q`).
SHARD_SUFFIX = re.compile(r"\.(q|k|v|\d+)$")


def vllm_marlin_zp_benign(data: dict[str, Any]) -> None:
    """Read a vLLM GPTQ report (`mtp_oracle_wna16.py`) against what its Marlin kernel does
    after loading: it is configured without zero points
    (quantization/auto_gptq.py:362@v0.34.0) and replaces the `qzeros` parameter with an empty
    one (kernels/linear/mixed_precision/marlin.py:149-152@v0.34.0), so zero points left
    unloaded are never read. Those entries move to `benign`; a run left with nothing else is
    `compatible`."""
    try:
        config = json.loads((Path(str(data.get("target"))) / "config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return
    if (config.get("quantization_config") or {}).get("quant_method") != "gptq":
        return
    unloaded = [str(n) for n in data.get("unloaded_params") or []]
    benign = [n for n in unloaded if SHARD_SUFFIX.sub("", n).endswith(".qzeros")]
    if not benign:
        return
    data["unloaded_params"] = [n for n in unloaded if n not in benign]
    data["benign"] = [*(data.get("benign") or []), *benign]
    left = [n for n in data["unloaded_params"] if not ENGINE_DEFAULTED.search(n)]
    clean = not left and not data.get("unused_tensors") and not data.get("dtype_mismatches")
    if data.get("verdict") == "drafts-garbage" and clean:
        data["verdict"] = "compatible"
        data["verdict_reason"] = f"loaded ({len(benign)} zero points Marlin does not read)"


def vllm_head_benign(data: dict[str, Any]) -> None:
    """Read a vLLM report against the head the MTP layer is given after loading: vLLM 0.34.0
    installs the target's `lm_head` module in place of each layer's `shared_head.head`
    (v1/worker/gpu/spec_decode/eagle/utils.py:145-160@v0.34.0), so a dtype mismatch while the
    layer's own head was loaded (ModelOpt builds it FP8), and that head's scales left unset,
    are not what drafts. Those entries move to `benign`, and a run left with nothing else is
    `compatible`."""
    shared = {str(n) for n in data.get("shared_from_verifier") or []}
    modules = {n.rsplit(".", 1)[0] for n in shared}
    mismatches = data.get("dtype_mismatches") or []
    replaced = [m for m in mismatches if m.get("param") in shared]
    if not replaced:
        return
    data["dtype_mismatches"] = [m for m in mismatches if m not in replaced]
    # the replaced module's own scales, which nothing reads once it is gone
    gone = [n for n in data.get("unloaded_params") or [] if n.rsplit(".", 1)[0] in modules]
    data["unloaded_params"] = [n for n in data.get("unloaded_params") or [] if n not in gone]
    data["benign"] = [f"{m.get('param')} (replaced by the target's)" for m in replaced] + gone
    unloaded = [n for n in data["unloaded_params"] if not ENGINE_DEFAULTED.search(n)]
    clean = not unloaded and not data.get("unused_tensors")
    clean = clean and not data["dtype_mismatches"]  # the oracle's own label reads no more
    if data.get("verdict") == "drafts-garbage" and clean:
        data["verdict"] = "compatible"
        data["verdict_reason"] = "loaded (the head replaced by the target's after loading)"


def _label(path: Path) -> tuple[str, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return "oracle-error", "no JSON"
    if "/sglang" in str(path) and data.get("engine") == "sglang":
        sglang_marlin_benign(data)
        sglang_modelopt_benign(data)
    if "/vllm" in str(path) and data.get("engine") == "vllm":
        vllm_head_benign(data)
        vllm_marlin_zp_benign(data)
    verdict, reason = str(data.get("verdict")), str(data.get("verdict_reason", ""))
    if verdict == "incompatible" and any(s in str(data.get("error")) for s in PLATFORM_STOPS):
        return "oracle-error", "platform stop: " + str(data.get("error"))[:120]
    return verdict, reason


def draftfit_verdict(release: str, target: Path, launch: Launch) -> tuple[str, str]:
    cmd = [sys.executable, "-m", "draftfit", "check", str(target), "--engine", release]
    cmd += ["--serve-args", launch.serve_args(release, target), "--format", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return f"exit-{proc.returncode}", proc.stderr.strip()[:100]
    verdict = str(report["engines"][0]["verdict"])
    codes = ",".join(sorted({f["code"] for f in report.get("findings", [])})) or "-"
    return verdict, codes


def compare(root: Path, releases: list[str]) -> int:
    totals, skipped = [], []
    for release in releases or list(RUNS):
        agree = counted = false_compatible = 0
        for run, (name, launch) in RUNS[release].items():
            path = root / "oracle" / release / f"{run}.json"
            if not path.exists():
                continue
            expected, reason = _label(path)
            if (release, run) in ORACLE_BLIND:
                got, codes = draftfit_verdict(release, root / name, launch)
                skipped.append(
                    f"{release} {run}: oracle {expected}, draftfit {got} ({codes}); engine "
                    f"seen: {ORACLE_BLIND[release, run]}"
                )
                continue
            if expected == "oracle-error":
                skipped.append(f"{release} {run}: {reason}")
                continue
            got, codes = draftfit_verdict(release, root / name, launch)
            counted += 1
            agree += got == expected
            false_compatible += got == C and expected != C
            mark = "ok  " if got == expected else "DIFF"
            print(f"{mark} {release:15} {run:28} engine {expected:15} draftfit {got:15} {codes}")
            if got != expected:
                print(f"      engine: {reason[:160]}")
        if counted:
            totals.append(
                f"{release}: {agree}/{counted} agree ({100 * agree / counted:.1f}%), "
                f"{false_compatible} false compatible"
            )
    print("\n" + "\n".join(totals))
    if skipped:
        print(
            "\nnot counted (the oracle could not run them, or cannot see the outcome):\n"
            + "\n".join(skipped)
        )
    return 0


def random_runs(
    seed: int, count: int
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, tuple[str, Launch]]]]:
    """`count` targets drawn from `seed`, each with one vLLM and one SGLang launch."""
    import random

    rng = random.Random(seed)
    targets: dict[str, dict[str, Any]] = {}
    vllm: dict[str, tuple[str, Launch]] = {}
    sglang: dict[str, tuple[str, Launch]] = {}
    for n in range(count):
        short, _family = rng.choice(EVERY_FAMILY)
        kw = dict(BASE_KW[short])
        tag = [short]
        r = rng.random()
        if r < 0.15:
            kw["depth"], kw["ship"] = 2, rng.choice([2, 2, 1])
            tag.append(f"d2s{kw['ship']}")
        elif r < 0.22:
            kw["depth"] = 0
            tag.append("d0")
        elif r < 0.28 and short != "qn":
            kw["depth"] = None
            tag.append("dnone")
        elif r < 0.33:
            kw["ship"] = 0
            tag.append("s0")
        r = rng.random()
        if r < 0.25 and kw.get("ship", 1):
            item = rng.choice(EVERY_TENSOR[short])
            kw["drop"] = (_tensor(item),)
            tag.append("no-" + _tag(item))
        elif r < 0.33 and kw.get("ship", 1):
            item = rng.choice(_MOVED_ITEMS[short])
            prefix = rng.choice(list(_MOVED_TO))
            kw["moved"] = ((_mtp_name(short, item), prefix + item + ".weight"),)
            tag.append(f"mv-{_tag(item)}-{_MOVED_TO[prefix]}")
        elif r < 0.38 and short not in ("qn", "q35", "q35d"):
            kw["rename"] = rng.choice(["model.mtp.layers.0.", "model.nextn.0.", "mtp_layers.0."])
            tag.append("rn")
        if rng.random() < 0.45:
            scheme = rng.choice(["fp8", "fp8", "ct", "modelopt_fp8"])
            kw["quant"] = "fp8" if scheme == "ct" else scheme
            if scheme == "ct":
                kw["compressed"] = True
            kw["mtp_quantized"] = rng.random() < 0.4
            exclude = rng.choice([None, "checkpoint", "checkpoint", "runtime", "partial"])
            if exclude:
                kw["exclude"] = exclude
            tag.append(f"{scheme}-{'q' if kw['mtp_quantized'] else 'b'}-{exclude or 'none'}")
        name = f"r{n:03d}_" + "_".join(tag)
        targets[name] = kw
        trust = short == "mimo"
        methods = [None, "deepseek_mtp", "eagle3", "eagle", "mtp", "glm4_moe_mtp"]
        methods += ["qwen3_next_mtp", "mimo_mtp", "MTP", "qwen3_5_mtp"]
        method = rng.choices(methods, [5, 1, 1, 0.5, 1, 0.5, 0.5, 0.5, 0.3, 0.5])[0]
        tokens = rng.choice([1, 1, 2, 2, 3, 4, 5, None, None])
        own = rng.random() < 0.3
        vllm[f"{name}_v"] = (name, Launch(method, tokens, own, trust_remote_code=trust))
        algorithm = rng.choices([None, "EAGLE", "EAGLE3", "MTP", "NEXTN"], [5, 2, 1, 1, 1])[0]
        if rng.random() < 0.2:
            steps, topk = rng.choice([(2, 2), (3, 1), (1, 1), (3, 4)])
            draft = steps * topk + 1 if topk > 1 else steps + 1
            flags = _sglang_steps(steps, topk, draft)
            launch = Launch(algorithm, None, trust_remote_code=trust, extra=flags)
        else:
            extra = rng.choice(
                [
                    (),
                    (),
                    (),
                    ("--speculative-draft-model-quantization", "unquant"),
                    ("--quantization", "fp8"),
                    ("--speculative-draft-model-quantization", "fp8"),
                ]
            )
            tokens = rng.choice([1, 1, 2, 3, None])
            own = rng.random() < 0.2
            launch = Launch(algorithm, tokens, own, extra, trust_remote_code=trust)
        sglang[f"{name}_s"] = (name, launch)
    return targets, {VLLM: vllm, SGLANG: sglang}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--random", metavar="SEED:N", help="a random sweep instead (see above)")
    parser.add_argument("command", choices=["build", "oracle", "compare", "list"])
    parser.add_argument("root", type=Path)
    parser.add_argument("rest", nargs="*")
    ns = parser.parse_args(argv)
    if ns.random:
        global TARGETS, RUNS
        seed, _, count = ns.random.partition(":")
        TARGETS, RUNS = random_runs(int(seed), int(count or 100))
        # the oracle passes its method `mtp` (any case) to SGLang as NEXTN; SGLang's own parser
        # refuses `--speculative-algorithm MTP` (launch_oracle: `Unknown speculative algorithm
        # name: MTP`)
        ORACLE_BLIND.update(
            {
                (SGLANG, run): "incompatible: SGLang's parser refuses the algorithm `MTP`, "
                "which the oracle runs as NEXTN"
                for run, (_name, launch) in RUNS[SGLANG].items()
                if (launch.method or "").upper() == "MTP"
            }
        )
    if ns.command == "build":
        build(ns.root)
    elif ns.command == "oracle":
        run_oracle(ns.root, ns.rest[0], ns.rest[1], ns.rest[2:])
    elif ns.command == "list":
        for release, runs in RUNS.items():
            print(release, len(runs))
    else:
        return compare(ns.root, ns.rest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
