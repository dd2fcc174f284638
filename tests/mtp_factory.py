"""Tiny real target checkpoints that carry MTP (NextN) layers, one factory per family.

Written with draftfit's own safetensors writer (zeros unless `fill` gives values: the MTP
checks read headers only, the value checks read the bytes), in
the shapes of `dev/make_mtp_targets.py` (whose targets the engine oracle ran) at a smaller
width. Each target can be sharded with an index whose MTP layer sits in a shard of its own,
as the real releases are, so that a test can tell which headers were read.

Variants (keyword arguments): `depth` (the declared `num_nextn_predict_layers`; None leaves
the key out), `ship` (how many MTP layers are written), `drop` (sub-names left out of every
MTP layer, e.g. `eh_proj.weight`), `rename` (a prefix that replaces the MTP layer's),
`retag` (pairs of sub-names: a tensor of every MTP layer stored under another name),
`quant` ("fp8": an FP8 block-quantized backbone; or a scheme of `SCHEMES`: ModelOpt FP8 /
NVFP4 with `hf_quant_config.json`, Quark FP8 / MXFP4 / NVFP4, GPTQ int4, AutoAWQ int4),
`mtp_quantized` (the MTP layer quantized like the backbone), `exclude` (the exclusion
list: "checkpoint", "runtime" (SGLang's names; "runtime_regex": one `re:` pattern of them,
"runtime_expert0": the fused experts by expert 0's projections; "runtime_partial": one shard
of a fused module left off; "runtime_without_<module>": that module left off), "partial"
(one module left off), and for the
other schemes "glob" as their
exporters write one (AWQ: the layer's prefix),
"regex" for Quark's `re:` and GPTQ's `-:` `dynamic` key; GPTQ's "runtime": the `-:` keys
of SGLang's runtime names), `compressed` (a
compressed-tensors FP8 config instead of `quant_method: fp8`), `g_idx` (False: a GPTQ MTP
layer stored without its `g_idx` tensors), `drop_quantized` (sub-names left out of every MTP
layer after it is quantized: a scale, e.g. `self_attn.o_proj.weight_scale_inv`), `listed`
(`(key, entries)`: the quantization config's exclusion list `key` replaced by `entries`, as
another exporter writes it; ModelOpt's `exclude_modules` in `hf_quant_config.json`),
`moved` (pairs of full names: an MTP tensor stored under a name outside its layer),
`layers` (the backbone's decoder layers, :data:`LAYERS` unless given; the MTP layers follow
them), `fill` (the bytes of each tensor, by name, dtype and shape; None writes zeros:
:func:`trained` gives every tensor values of its own, as a trained checkpoint has),
`engine_ready` (the oracle's width, the router tensors and config keys an engine needs to
build the layers on a CPU: `dev/mtp_corpus.py` runs the engines' own code on these).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from draftfit.checkpoint.safetensors import TensorToWrite, write_safetensors

LAYERS = 2
BLOCK = 128
Tensors = dict[str, tuple[str, tuple[int, ...]]]
# The bytes of a tensor from its name, dtype and shape (None: zeros).
Fill = Callable[[str, str, tuple[int, ...]], "bytes | None"]


@dataclass(frozen=True)
class Dims:
    """The widths of a tiny target. `TINY` is what the rule tests read (headers only);
    `ENGINE` is the oracle's width (`dev/make_mtp_targets.py`): wide enough for an engine to
    build the layers on a CPU, and for a 128x128 FP8 block to fit the projections."""

    h: int
    vocab: int
    inter: int
    moe_inter: int
    experts: int
    heads: int
    q_lora: int
    kv_lora: int
    rope: int
    nope: int
    v_dim: int
    kv_heads: int
    head_dim: int
    # the key head width of a gated delta-net layer (Qwen3-Next, Qwen3.5)
    lin_k_dim: int = 32


TINY = Dims(32, 64, 64, 32, 2, 2, 32, 32, 8, 16, 16, 1, 16)
ENGINE = Dims(128, 256, 256, 128, 4, 4, 128, 128, 16, 32, 32, 2, 32)
# FP8 block targets: SGLang refuses a projection whose output (each part of a fused one) is
# not a multiple of the block
ENGINE_FP8 = Dims(128, 256, 256, 128, 4, 4, 128, 128, 16, 32, 32, 4, 32, lin_k_dim=64)
# The families whose attention is DeepSeek-V3's multi-head latent attention
MLA = ("deepseek_v3", "glm4_moe_lite")
# The families whose MTP block is `mtp.*` (a Qwen3-Next-style decoder layer each)
QWEN = ("qwen3_next", "qwen3_5")
# A dense Qwen3.5 / 3.6 target (Qwen3.6-27B): the `qwen3_5` family without experts.
QWEN3_5_DENSE = "qwen3_5_dense"
# MiMo-7B: a dense Qwen2-style model (biased q/k/v), its MTP layers `model.mtp_layers.{i}.*`
# with their own norms and `input_proj`; its config class ships with the checkpoint
MIMO = "mimo"
MIMO_OWN = ("token_layernorm", "hidden_layernorm", "input_proj", "final_layernorm")
MIMO_CONFIG_CODE = (
    "from transformers import Qwen2Config\n\n\n"
    "class MiMoConfig(Qwen2Config):\n"
    '    model_type = "mimo"\n\n'
    "    def __init__(self, num_nextn_predict_layers=0, **kwargs):\n"
    "        self.num_nextn_predict_layers = num_nextn_predict_layers\n"
    "        super().__init__(**kwargs)\n"
)
# Qwen3-Next's gated delta-net layer (engine-ready targets only)
LIN_K_HEADS, LIN_V_HEADS, LIN_V_DIM, CONV = 2, 4, 32, 4
# DeepSeek-V3's own `rope_scaling` (YaRN): SGLang's CPU rotary embedding builds no other one
DEEPSEEK_YARN: dict[str, Any] = {
    "type": "yarn",
    "factor": 40,
    "original_max_position_embeddings": 4096,
    "beta_fast": 32,
    "beta_slow": 1,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
}


def _mla(p: str, d: Dims) -> Tensors:
    return {
        f"{p}self_attn.q_a_proj.weight": ("BF16", (d.q_lora, d.h)),
        f"{p}self_attn.q_a_layernorm.weight": ("BF16", (d.q_lora,)),
        f"{p}self_attn.q_b_proj.weight": ("BF16", (d.heads * (d.nope + d.rope), d.q_lora)),
        f"{p}self_attn.kv_a_proj_with_mqa.weight": ("BF16", (d.kv_lora + d.rope, d.h)),
        f"{p}self_attn.kv_a_layernorm.weight": ("BF16", (d.kv_lora,)),
        f"{p}self_attn.kv_b_proj.weight": ("BF16", (d.heads * (d.nope + d.v_dim), d.kv_lora)),
        f"{p}self_attn.o_proj.weight": ("BF16", (d.h, d.heads * d.v_dim)),
    }


def _gqa(p: str, d: Dims, gated: bool = False) -> Tensors:
    t: Tensors = {
        f"{p}self_attn.q_proj.weight": ("BF16", (d.heads * d.head_dim * (2 if gated else 1), d.h)),
        f"{p}self_attn.k_proj.weight": ("BF16", (d.kv_heads * d.head_dim, d.h)),
        f"{p}self_attn.v_proj.weight": ("BF16", (d.kv_heads * d.head_dim, d.h)),
        f"{p}self_attn.o_proj.weight": ("BF16", (d.h, d.heads * d.head_dim)),
    }
    if gated:
        t[f"{p}self_attn.q_norm.weight"] = ("BF16", (d.head_dim,))
        t[f"{p}self_attn.k_norm.weight"] = ("BF16", (d.head_dim,))
    return t


def _moe(p: str, d: Dims, family: str, engine_ready: bool) -> Tensors:
    t: Tensors = {f"{p}mlp.gate.weight": ("BF16", (d.experts, d.h))}
    if engine_ready and family not in QWEN:
        t[f"{p}mlp.gate.e_score_correction_bias"] = ("F32", (d.experts,))
    for e in range(d.experts):
        t[f"{p}mlp.experts.{e}.gate_proj.weight"] = ("BF16", (d.moe_inter, d.h))
        t[f"{p}mlp.experts.{e}.up_proj.weight"] = ("BF16", (d.moe_inter, d.h))
        t[f"{p}mlp.experts.{e}.down_proj.weight"] = ("BF16", (d.h, d.moe_inter))
    shared = "shared_expert" if engine_ready and family in QWEN else "shared_experts"
    t[f"{p}mlp.{shared}.gate_proj.weight"] = ("BF16", (d.moe_inter, d.h))
    t[f"{p}mlp.{shared}.up_proj.weight"] = ("BF16", (d.moe_inter, d.h))
    t[f"{p}mlp.{shared}.down_proj.weight"] = ("BF16", (d.h, d.moe_inter))
    if shared == "shared_expert":
        t[f"{p}mlp.shared_expert_gate.weight"] = ("BF16", (1, d.h))
    return t


def _dense(p: str, d: Dims) -> Tensors:
    """A Qwen2-style dense layer's attention biases and MLP (MiMo)."""
    t: Tensors = {
        f"{p}self_attn.q_proj.bias": ("BF16", (d.heads * d.head_dim,)),
        f"{p}self_attn.k_proj.bias": ("BF16", (d.kv_heads * d.head_dim,)),
        f"{p}self_attn.v_proj.bias": ("BF16", (d.kv_heads * d.head_dim,)),
        f"{p}mlp.gate_proj.weight": ("BF16", (d.inter, d.h)),
        f"{p}mlp.up_proj.weight": ("BF16", (d.inter, d.h)),
        f"{p}mlp.down_proj.weight": ("BF16", (d.h, d.inter)),
    }
    return t


def _decoder(p: str, d: Dims, family: str, engine_ready: bool, dense: bool = False) -> Tensors:
    t: Tensors = {
        f"{p}input_layernorm.weight": ("BF16", (d.h,)),
        f"{p}post_attention_layernorm.weight": ("BF16", (d.h,)),
    }
    if dense:  # a dense Qwen3.5 / 3.6 (Qwen3.6-27B): gated attention, a plain MLP, no biases
        t.update(_gqa(p, d, gated=engine_ready))
        t.update({k: v for k, v in _dense(p, d).items() if not k.endswith(".bias")})
        return t
    if family == MIMO:
        t.update(_gqa(p, d))
        t.update(_dense(p, d))
        return t
    if family in MLA:
        t.update(_mla(p, d))
    else:
        t.update(_gqa(p, d, gated=engine_ready and family in QWEN))
    t.update(_moe(p, d, family, engine_ready))
    return t


def _linear_attention(p: str, d: Dims, family: str = "qwen3_next", dense: bool = False) -> Tensors:
    """Qwen3-Next's (or Qwen3.5's, its projections split) gated delta-net layer (its first
    backbone layer, engine-ready only)."""
    key_dim, value_dim = LIN_K_HEADS * d.lin_k_dim, LIN_V_HEADS * LIN_V_DIM
    t = {k: v for k, v in _decoder(p, d, family, True, dense).items() if ".self_attn." not in k}
    if family == "qwen3_5":
        t.update(
            {
                f"{p}linear_attn.in_proj_qkv.weight": ("BF16", (2 * key_dim + value_dim, d.h)),
                f"{p}linear_attn.in_proj_z.weight": ("BF16", (value_dim, d.h)),
                f"{p}linear_attn.in_proj_b.weight": ("BF16", (LIN_V_HEADS, d.h)),
                f"{p}linear_attn.in_proj_a.weight": ("BF16", (LIN_V_HEADS, d.h)),
            }
        )
    else:
        t.update(
            {
                f"{p}linear_attn.in_proj_qkvz.weight": ("BF16", (2 * key_dim + 2 * value_dim, d.h)),
                f"{p}linear_attn.in_proj_ba.weight": ("BF16", (2 * LIN_V_HEADS, d.h)),
            }
        )
    t.update(
        {
            f"{p}linear_attn.conv1d.weight": ("BF16", (2 * key_dim + value_dim, 1, CONV)),
            f"{p}linear_attn.dt_bias": ("BF16", (LIN_V_HEADS,)),
            f"{p}linear_attn.A_log": ("F32", (LIN_V_HEADS,)),
            f"{p}linear_attn.norm.weight": ("F32", (LIN_V_DIM,)),
            f"{p}linear_attn.out_proj.weight": ("BF16", (d.h, value_dim)),
        }
    )
    return t


def _nextn(p: str, d: Dims, family: str, engine_ready: bool) -> Tensors:
    t: Tensors = {
        f"{p}enorm.weight": ("BF16", (d.h,)),
        f"{p}hnorm.weight": ("BF16", (d.h,)),
        f"{p}eh_proj.weight": ("BF16", (d.h, 2 * d.h)),
        f"{p}shared_head.norm.weight": ("BF16", (d.h,)),
        f"{p}shared_head.head.weight": ("BF16", (d.vocab, d.h)),
        f"{p}embed_tokens.weight": ("BF16", (d.vocab, d.h)),
    }
    t.update(_decoder(p, d, family, engine_ready))
    return t


def _backbone(
    d: Dims, family: str, engine_ready: bool, dense: bool = False, layers: int = LAYERS
) -> Tensors:
    # a Qwen3.5 target is multimodal: its language model under `model.language_model.`
    lm = "model.language_model." if family == "qwen3_5" else "model."
    t: Tensors = {
        f"{lm}embed_tokens.weight": ("BF16", (d.vocab, d.h)),
        f"{lm}norm.weight": ("BF16", (d.h,)),
        "lm_head.weight": ("BF16", (d.vocab, d.h)),
    }
    if family == "qwen3_5":
        t["model.visual.merger.linear_fc2.weight"] = ("BF16", (d.h, d.h))
    for i in range(layers):
        p = f"{lm}layers.{i}."
        if engine_ready and family in QWEN and i == 0:
            t.update(_linear_attention(p, d, family, dense))
        else:
            t.update(_decoder(p, d, family, engine_ready, dense))
    return t


def _quantizable(name: str) -> bool:
    return (
        name.endswith(("_proj.weight", "_proj_with_mqa.weight"))
        and "eh_proj" not in name
        and "input_proj" not in name
        and "shared_head" not in name
    )


def _fp8(t: Tensors, keep: str | None, scale: str = "block") -> Tensors:
    """Every decoder projection float8 with its scale, except names under `keep`: a 128x128
    block scale (`weight_scale_inv`, `quant_method: fp8`) or a per-channel one
    (`weight_scale`, compressed-tensors' FP8 channel scheme)."""
    out: Tensors = {}
    for name, (dtype, shape) in t.items():
        if _quantizable(name) and not (keep and name.startswith(keep)):
            out[name] = ("F8_E4M3", shape)
            rows, cols = shape
            if scale == "channel":
                out[name[: -len("weight")] + "weight_scale"] = ("F32", (rows, 1))
            else:
                out[name[: -len("weight")] + "weight_scale_inv"] = (
                    "F32",
                    (-(-rows // BLOCK), -(-cols // BLOCK)),
                )
        else:
            out[name] = (dtype, shape)
    return out


# Quantization schemes beyond FP8 block (`quant=`): how each stores a quantized projection,
# as the exporters write them (ModelOpt per-tensor FP8 and NVFP4 with 16-wide FP8 group scales;
# Quark's OCP MXFP4 with 32-wide E8M0 scales and NVFP4; GPTQ int4 packed along the input).
SCHEMES = (
    "fp8",
    "modelopt_fp8",
    "modelopt_nvfp4",
    "quark_fp8",
    "quark_mxfp4",
    "quark_nvfp4",
    "gptq_int4",
    "awq_int4",
)
GPTQ_GROUP = 32


def _scheme_tensors(name: str, shape: tuple[int, ...], scheme: str) -> Tensors:
    """The tensors a quantized projection `name` (`....weight`, BF16 `shape`) is stored as."""
    base = name[: -len("weight")]
    rows, cols = shape
    if scheme in ("modelopt_fp8", "quark_fp8"):
        return {
            name: ("F8_E4M3", shape),
            base + "weight_scale": ("F32", ()),
            base + "input_scale": ("F32", ()),
        }
    if scheme in ("modelopt_nvfp4", "quark_nvfp4"):
        return {
            name: ("U8", (rows, cols // 2)),
            base + "weight_scale": ("F8_E4M3", (rows, cols // 16)),
            base + "weight_scale_2": ("F32", ()),
            base + "input_scale": ("F32", ()),
        }
    if scheme == "quark_mxfp4":
        return {name: ("U8", (rows, cols // 2)), base + "weight_scale": ("U8", (rows, cols // 32))}
    if scheme == "awq_int4":  # AutoAWQ GEMM: packed along the output
        return {
            base + "qweight": ("I32", (cols, rows // 8)),
            base + "qzeros": ("I32", (cols // GPTQ_GROUP, rows // 8)),
            base + "scales": ("F16", (cols // GPTQ_GROUP, rows)),
        }
    if scheme == "gptq_int4":
        return {
            base + "qweight": ("I32", (cols // 8, rows)),
            base + "qzeros": ("I32", (cols // GPTQ_GROUP, rows // 8)),
            base + "scales": ("F16", (cols // GPTQ_GROUP, rows)),
            base + "g_idx": ("I32", (cols,)),
        }
    raise ValueError(scheme)


def _quantize(t: Tensors, scheme: str) -> Tensors:
    """Every decoder projection stored quantized under `scheme` (not `eh_proj`, the head)."""
    out: Tensors = {}
    for name, (dtype, shape) in t.items():
        if _quantizable(name):
            out.update(_scheme_tensors(name, shape, scheme))
        else:
            out[name] = (dtype, shape)
    return out


def _scheme_exclusions(mtp: Tensors, prefix: str, how: str, scheme: str) -> list[str]:
    """The exclusion entries that leave the MTP layer at `prefix` unquantized, written as each
    scheme's exporter writes them: `checkpoint` (every module by its checkpoint name),
    `glob` (ModelOpt's `model.layers.{L}*`, Quark's `*layers.{L}.*`), `regex` (`re:` for
    Quark, GPTQ's `-:` negative `dynamic` key; for AWQ, whose entries are substrings of a
    module's name, `glob` is the layer's prefix, `model.layers.{L}.`)."""
    if how == "glob" and scheme == "awq_int4":
        return [prefix]
    if how == "glob":
        return (
            [prefix.rstrip(".") + "*"]
            if scheme.startswith("modelopt")
            else ["*" + prefix.removeprefix("model.") + "*"]
        )
    if how == "regex":
        pattern = re.escape(prefix) + ".*"
        return ["-:" + pattern] if scheme == "gptq_int4" else ["re:" + pattern]
    if how == "runtime" and scheme == "gptq_int4":
        # SGLang's runtime names: DeepSeek's NextN class builds its decoder layer under
        # `model.decoder`, MiMo's under no prefix; an `mtp.*` block keeps its names
        if prefix.startswith("mtp."):
            return ["-:" + re.escape(prefix) + ".*"]
        if prefix.startswith("model.mtp_layers."):
            return [r"-:self_attn\..*", r"-:mlp\..*"]
        return [r"-:model\.decoder\..*"]
    return _exclusions(mtp, prefix, how)


def _scheme_config(
    scheme: str, excluded: list[str]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(config.json's `quantization_config`, `hf_quant_config.json`) for `scheme`."""
    if scheme.startswith("modelopt"):
        algo = "FP8" if scheme == "modelopt_fp8" else "NVFP4"
        quantization: dict[str, Any] = {
            "quant_algo": algo,
            "kv_cache_quant_algo": None,
            "exclude_modules": ["lm_head", *excluded],
        }
        if algo == "NVFP4":
            quantization["group_size"] = 16
        return None, {
            "producer": {"name": "modelopt", "version": "0.29.0"},
            "quantization": quantization,
        }
    if scheme == "awq_int4":
        return {
            "quant_method": "awq",
            "bits": 4,
            "group_size": GPTQ_GROUP,
            "zero_point": True,
            "version": "gemm",
            **({"modules_to_not_convert": excluded} if excluded else {}),
        }, None
    if scheme == "gptq_int4":
        return {
            "quant_method": "gptq",
            "bits": 4,
            "group_size": GPTQ_GROUP,
            "desc_act": False,
            "sym": True,
            "dynamic": {key: {} for key in excluded},
        }, None
    if scheme == "quark_fp8":
        weight: Any = {
            "dtype": "fp8_e4m3",
            "qscheme": "per_tensor",
            "is_dynamic": False,
            "symmetric": True,
        }
        inputs: Any = {
            "dtype": "fp8_e4m3",
            "qscheme": "per_tensor",
            "is_dynamic": False,
            "symmetric": True,
        }
    elif scheme == "quark_mxfp4":
        group = {"qscheme": "per_group", "group_size": 32, "ch_axis": -1, "scale_format": "e8m0"}
        weight = {"dtype": "fp4", "is_dynamic": False, **group}
        inputs = {"dtype": "fp4", "is_dynamic": True, **group}
    else:
        fp4 = {"dtype": "fp4", "qscheme": "per_group", "group_size": 16, "ch_axis": -1}
        fp8 = {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False}
        weight = [{**fp4, "is_dynamic": False}, fp8]
        inputs = [{**fp4, "is_dynamic": True}, fp8]
    return {
        "quant_method": "quark",
        "export": {"kv_cache_group": [], "pack_method": "reorder"},
        "global_quant_config": {
            "weight": weight,
            "input_tensors": inputs,
            "output_tensors": None,
            "bias": None,
        },
        "layer_quant_config": {},
        "layer_type_quant_config": {},
        "exclude": ["lm_head", *excluded],
    }, None


def _exclusions(mtp: Tensors, prefix: str, how: str) -> list[str]:
    modules = sorted(n[: -len(".weight")] for n in mtp if _quantizable(n))
    if how == "partial":  # one module left off: MLA's joined projection, else `o_proj`
        left = "kv_a_proj_with_mqa" if any("kv_a_proj_with_mqa" in m for m in modules) else "o_proj"
        return [m for m in modules if left not in m]
    if how == "checkpoint":
        return modules
    if how == "layer_index":  # under the decoder-layer index the MTP layer would have
        return [f"model.layers.{LAYERS}." + m[len(prefix) :] for m in modules]
    if how == "runtime_regex":  # one `re:` pattern of SGLang's runtime names of the layer
        if prefix.startswith("model.mtp_layers."):
            return [r"re:self_attn\..*", r"re:mlp\..*"]
        return [r"re:model\.decoder\..*"]
    if how.startswith("runtime_without_"):  # SGLang's names, one module left off
        left = how.removeprefix("runtime_without_")
        return [m for m in _exclusions(mtp, prefix, "runtime") if not m.endswith("." + left)]
    if how == "runtime_partial":  # SGLang's names, one shard of a fused module left off
        runtime = _exclusions(mtp, prefix, "runtime")
        left = "kv_a_proj_with_mqa" if any("kv_a_proj_with_mqa" in m for m in runtime) else "k_proj"
        return [m for m in runtime if not m.endswith("." + left)]
    if how == "runtime_expert0":  # SGLang's names, the experts by expert 0's projections
        runtime = _exclusions(mtp, prefix, "runtime")
        experts = "model.decoder.mlp.experts"
        if experts not in runtime:
            return runtime
        shown = [f"{experts}.0.{p}" for p in ("gate_proj", "up_proj", "down_proj")]
        return sorted([n for n in runtime if n != experts] + shown)
    out = set()
    for name in modules:
        rest = name[len(prefix) :]
        if rest.startswith("mlp.experts."):
            out.add("model.decoder.mlp.experts")
        else:
            out.add("model.decoder." + rest)
    return sorted(out)


def _engine_keys(family: str, d: Dims, layers: int = LAYERS) -> dict[str, Any]:
    """The config keys an engine needs to build the layers (router, rope, norms)."""
    common: dict[str, Any] = {
        "num_experts_per_tok": 2,
        "norm_topk_prob": True,
        "hidden_act": "silu",
        "max_position_embeddings": 2048,
        "rope_theta": 10000,
        "tie_word_embeddings": False,
        "bos_token_id": 0,
        "eos_token_id": 1,
    }
    if family in QWEN:
        # the gated delta-net and MoE keys both families' configs carry
        qwen = {
            **common,
            "layer_types": ["linear_attention", "full_attention"],
            "full_attention_interval": 2,
            "num_key_value_heads": d.kv_heads,
            "head_dim": d.head_dim,
            "linear_conv_kernel_dim": CONV,
            "linear_key_head_dim": d.lin_k_dim,
            "linear_value_head_dim": LIN_V_DIM,
            "linear_num_key_heads": LIN_K_HEADS,
            "linear_num_value_heads": LIN_V_HEADS,
            "num_experts": d.experts,
            "shared_expert_intermediate_size": d.moe_inter,
            "rms_norm_eps": 1e-6,
        }
        if family == "qwen3_5":  # its rope in `rope_parameters`, as Transformers 5 writes it
            rope = {"rope_type": "default", "rope_theta": 10000, "partial_rotary_factor": 0.25}
            return {**qwen, "rope_parameters": rope}
        return {
            **qwen,
            "partial_rotary_factor": 0.25,
            "decoder_sparse_step": 1,
            "mlp_only_layers": [],
        }
    moe = {
        "n_shared_experts": 1,
        "routed_scaling_factor": 2.5,
        "n_group": 1,
        "topk_group": 1,
        "first_k_dense_replace": 0,
        "rms_norm_eps": 1e-6,
    }
    if family == MIMO:
        return {**common, "rms_norm_eps": 1e-6}
    if family == "glm4_moe_lite":
        return {
            **common,
            **moe,
            "num_key_value_heads": d.heads,
            "mlp_layer_types": ["sparse"] * layers,
            "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        }
    if family == "deepseek_v3":
        return {
            **common,
            **moe,
            "num_key_value_heads": d.heads,
            "topk_method": "noaux_tc",
            "scoring_func": "sigmoid",
            "moe_layer_freq": 1,
            "rope_scaling": DEEPSEEK_YARN,
        }
    return {**common, **moe, "partial_rotary_factor": 0.5, "attention_bias": False}


def _config(
    family: str,
    depth: int | None,
    d: Dims,
    engine_ready: bool,
    dense: bool = False,
    layers: int = LAYERS,
    **extra: Any,
) -> dict[str, Any]:
    common: dict[str, Any] = {
        "vocab_size": d.vocab,
        "hidden_size": d.h,
        "intermediate_size": d.inter,
        "moe_intermediate_size": d.moe_inter,
        "num_hidden_layers": layers,
        "num_attention_heads": d.heads,
        "n_routed_experts": d.experts,
        "torch_dtype": "bfloat16",
    }
    if family in MLA:
        common.update(
            architectures=[
                "DeepseekV3ForCausalLM" if family == "deepseek_v3" else "Glm4MoeLiteForCausalLM"
            ],
            model_type=family,
            q_lora_rank=d.q_lora,
            kv_lora_rank=d.kv_lora,
            qk_rope_head_dim=d.rope,
            qk_nope_head_dim=d.nope,
            v_head_dim=d.v_dim,
        )
    elif family == MIMO:
        for moe_key in ("moe_intermediate_size", "n_routed_experts"):
            common.pop(moe_key)
        common.update(
            architectures=["MiMoForCausalLM"],
            model_type=MIMO,
            num_key_value_heads=d.kv_heads,
            auto_map={"AutoConfig": "configuration_mimo.MiMoConfig"},
        )
    elif family == "glm4_moe":
        common.update(
            architectures=["Glm4MoeForCausalLM"],
            model_type="glm4_moe",
            num_key_value_heads=d.kv_heads,
            head_dim=d.head_dim,
        )
    elif family == "qwen3_5":
        kind = "qwen3_5" if dense else "qwen3_5_moe"
        common.update(model_type=f"{kind}_text", num_key_value_heads=d.kv_heads)
        common.pop("n_routed_experts")
        if dense:
            common.pop("moe_intermediate_size")
        else:
            common["num_experts"] = d.experts
        if engine_ready:
            common.update(_engine_keys(family, d, layers))
            if dense:
                for key in [k for k in common if "expert" in k]:
                    common.pop(key)
        if depth is not None:
            common["mtp_num_hidden_layers"] = depth
        # multimodal: the language model's keys in `text_config`, the quantization at the top
        return {
            "architectures": [
                "Qwen3_5ForConditionalGeneration" if dense else "Qwen3_5MoeForConditionalGeneration"
            ],
            "model_type": kind,
            "text_config": common,
            "vision_config": {
                "depth": 1,
                "hidden_size": 32,
                "num_heads": 2,
                "out_hidden_size": d.h,
            },
            "tie_word_embeddings": False,
            **extra,
        }
    else:
        common.update(architectures=["Qwen3NextForCausalLM"], model_type="qwen3_next")
    if engine_ready:
        common.update(_engine_keys(family, d, layers))
    if depth is not None:
        common["num_nextn_predict_layers"] = depth
    common.update(extra)
    return common


def _compressed_config(excluded: list[str]) -> dict[str, Any]:
    """compressed-tensors FP8: per-channel static weights, dynamic per-token activations."""
    return {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "quantization_status": "compressed",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {
                    "num_bits": 8,
                    "type": "float",
                    "strategy": "channel",
                    "symmetric": True,
                    "dynamic": False,
                },
                "input_activations": {
                    "num_bits": 8,
                    "type": "float",
                    "strategy": "token",
                    "symmetric": True,
                    "dynamic": True,
                },
            }
        },
        "ignore": ["lm_head", *excluded],
    }


def mtp_target(
    path: Path,
    family: str = "deepseek_v3",
    *,
    depth: int | None = 1,
    ship: int = 1,
    drop: tuple[str, ...] = (),
    rename: str | None = None,
    retag: tuple[tuple[str, str], ...] = (),
    quant: str | None = None,
    mtp_quantized: bool = False,
    exclude: str | None = None,
    compressed: bool = False,
    sharded: bool = True,
    fill: Fill | None = None,
    engine_ready: bool = False,
    g_idx: bool = True,
    drop_quantized: tuple[str, ...] = (),
    listed: tuple[str, list[str]] | None = None,
    moved: tuple[tuple[str, str], ...] = (),
    layers: int = LAYERS,
) -> Path:
    """Write a tiny target of `family` (`deepseek_v3`, `glm4_moe`, `glm4_moe_lite`: GLM-4.7-Flash,
    DeepSeek-V3's layers, `qwen3_next`, `qwen3_5`: a multimodal Qwen3.5-MoE, its keys in
    `text_config`; `qwen3_5_dense`: a dense one; `mimo`: MiMo-7B, its config class in the
    checkpoint's own `configuration_mimo.py`) with its MTP layers at `path` (see the module
    docstring for the variants). `engine_ready` writes it at the oracle's width with the
    config keys and router tensors a real release carries, so that an engine can build and
    load it on a CPU."""
    d = (ENGINE_FP8 if quant else ENGINE) if engine_ready else TINY
    dense = family == QWEN3_5_DENSE
    family = "qwen3_5" if dense else family
    backbone = _backbone(d, family, engine_ready, dense, layers)
    mtp: Tensors = {}
    for i in range(ship):
        if family == MIMO:
            p = f"model.mtp_layers.{i}."
            mtp.update(_decoder(p, d, family, engine_ready))
            for own in MIMO_OWN:
                shape = (d.h, 2 * d.h) if own == "input_proj" else (d.h,)
                mtp[f"{p}{own}.weight"] = ("BF16", shape)
        elif family in QWEN:
            p = f"mtp.layers.{i}."
            mtp.update(_decoder(p, d, family, engine_ready, dense))
            if i == 0:
                for own in ("fc", "pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
                    shape = (d.h, 2 * d.h) if own == "fc" else (d.h,)
                    mtp[f"mtp.{own}.weight"] = ("BF16", shape)
        else:
            mtp.update(_nextn(f"model.layers.{layers + i}.", d, family, engine_ready))
    mtp = {n: v for n, v in mtp.items() if not any(n.endswith("." + x) for x in drop)}
    for old, new in retag:  # one tensor under another name of the same layer
        mtp = {(n[: -len(old)] + new if n.endswith("." + old) else n): v for n, v in mtp.items()}
    prefix = "model.mtp_layers.0." if family == MIMO else f"model.layers.{layers}."
    if rename is not None:
        # the first MTP layer's prefix (Qwen's own `mtp.*` modules keep theirs)
        first = "mtp.layers.0." if family in QWEN else prefix
        mtp = {n.replace(first, rename, 1): v for n, v in mtp.items()}
    extra: dict[str, Any] = {}
    quant_file: dict[str, Any] | None = None
    if quant is not None and quant != "fp8":
        backbone = _quantize(backbone, quant)
        how = exclude
        # Qwen's MTP block, its own modules and its layers, sits under `mtp.`
        where = "mtp." if family in QWEN and how in ("glob", "regex") else prefix
        excluded = _scheme_exclusions(mtp, where, how, quant) if how is not None else []
        if mtp_quantized:
            mtp = _quantize(mtp, quant)
            if not g_idx:  # an export that leaves GPTQ's activation order out of the MTP layer
                mtp = {n: v for n, v in mtp.items() if not n.endswith(".g_idx")}
        config_part, quant_file = _scheme_config(quant, excluded)
        if config_part is not None:
            extra["quantization_config"] = config_part
    elif quant == "fp8":
        scale = "channel" if compressed and engine_ready else "block"
        backbone = _fp8(backbone, None, scale)
        excluded = _exclusions(mtp, prefix, exclude) if exclude is not None else []
        if mtp_quantized:
            mtp = _fp8(mtp, None, scale)
        if compressed and engine_ready:
            extra["quantization_config"] = _compressed_config(excluded)
        elif compressed:
            extra["quantization_config"] = {
                "quant_method": "compressed-tensors",
                "format": "float-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8}}},
                "ignore": ["lm_head", *excluded],
            }
        else:
            # a Qwen3.5 export leaves its delta-net's few-row `in_proj_b` / `in_proj_a` in BF16
            # and says so (SGLang builds no FP8 block layer of fewer rows than a block), and a
            # Qwen3-Next one its `in_proj_qkvz` / `in_proj_ba`
            small = (
                [f"model.language_model.layers.0.linear_attn.in_proj_{x}" for x in "ba"]
                if family == "qwen3_5" and engine_ready
                # Qwen3-Next's export leaves its delta-net's input projections in BF16 too
                else [f"model.layers.0.linear_attn.in_proj_{x}" for x in ("qkvz", "ba")]
                if family == "qwen3_next" and engine_ready
                else []
            )
            not_converted = [*small, *excluded]
            extra["quantization_config"] = {
                "quant_method": "fp8",
                "fmt": "e4m3",
                "activation_scheme": "dynamic",
                "weight_block_size": [BLOCK, BLOCK],
                **(
                    {"modules_to_not_convert": not_converted}
                    if exclude is not None or small
                    else {}
                ),
            }
    if listed is not None:  # the exclusion list `key` as another exporter writes it
        key, entries = listed
        if key == "exclude_modules" and quant_file is not None:  # ModelOpt's own file
            quant_file["quantization"][key] = list(entries)
        else:
            extra["quantization_config"][key] = list(entries)
    # an MTP tensor the exporter left out after quantizing (a scale: `o_proj.weight_scale_inv`)
    mtp = {n: v for n, v in mtp.items() if not any(n.endswith("." + x) for x in drop_quantized)}
    for old, new in moved:  # one MTP tensor stored under a name outside its layer
        mtp[new] = mtp.pop(old)
    path.mkdir(parents=True, exist_ok=True)
    config = _config(family, depth, d, engine_ready, dense, layers, **extra)
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    if family == MIMO:
        (path / "configuration_mimo.py").write_text(MIMO_CONFIG_CODE)
    if quant_file is not None:
        (path / "hf_quant_config.json").write_text(json.dumps(quant_file, indent=2) + "\n")
    if not sharded:
        _write(path / "model.safetensors", {**backbone, **mtp}, fill)
        return path
    shards = {"model-00001-of-00002.safetensors": backbone}
    if mtp:
        shards["model-00002-of-00002.safetensors"] = mtp
    index: dict[str, str] = {}
    for shard, tensors in shards.items():
        _write(path / shard, tensors, fill)
        index.update((name, shard) for name in tensors)
    (path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": index}, indent=1) + "\n"
    )
    return path


def _write(path: Path, tensors: Tensors, fill: Fill | None = None) -> None:
    write_safetensors(
        path,
        [
            TensorToWrite(n, d, s, fill(n, d, s) if fill is not None else None)
            for n, (d, s) in tensors.items()
        ],
    )


def values(dtype: str, array: Any) -> bytes:
    """The stored bytes of float `array` in `dtype` (BF16 rounded to nearest even, F32, or
    F8_E4M3 as the nearest of its codes)."""
    data = np.asarray(array, dtype=np.float32)
    if dtype == "F32":
        return data.astype("<f4").tobytes()
    if dtype == "BF16":
        bits = data.view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return rounded.astype("<u2").tobytes()
    if dtype == "F8_E4M3":
        from draftfit.values.decode import decode

        table = decode(bytes(range(256)), "F8_E4M3")
        codes = np.flatnonzero(np.isfinite(table))
        nearest = np.abs(data.reshape(-1, 1) - table[codes].reshape(1, -1)).argmin(axis=1)
        return codes[nearest].astype(np.uint8).tobytes()
    raise ValueError(dtype)


def trained(name: str, dtype: str, shape: tuple[int, ...]) -> bytes:
    """Values of their own for each tensor `name`, as training leaves them: norms near 1.0
    (near 0.0 for the zero-centred norms of Qwen3-Next), projections heavy-tailed around 0
    with rows that differ, FP8 weights spread over their range and block scales positive."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if name.endswith(("weight_scale_inv", "weight_scale")):
        return values(dtype, rng.uniform(1e-4, 1e-3, shape))
    if dtype == "F8_E4M3":
        return values(dtype, rng.laplace(0, 60, shape).clip(-448, 448))
    if len(shape) == 1 and "norm" in name:
        centre = 0.0 if name.startswith("mtp.") or "qwen" in name else 1.0
        return values(dtype, centre + rng.normal(0, 0.05, shape))
    row_shift = rng.normal(0, 0.003, (shape[0],) + (1,) * (len(shape) - 1))
    return values(dtype, rng.laplace(0, 0.03, shape) + row_shift)


NEXTN_CLASSES = {"deepseek_v3": "DeepseekV3ForCausalLMNextN", "glm4_moe": "Glm4MoeForCausalLMNextN"}


def nextn_export(
    target: Path,
    out: Path,
    *,
    architecture: str | None = None,
    keep_shared: bool = False,
    drop: tuple[str, ...] = (),
    layer: int = 0,
    config: dict[str, Any] | None = None,
    fill: Fill | None = None,
) -> Path:
    """A stand-alone NextN export of the MTP target at `target`, written at `out` as SGLang's
    `scripts/export_deepseek_nextn.py` writes one: the target's config with
    `num_hidden_layers` 1 and the NextN class as its architecture, the tensors of its MTP
    layer `model.layers.{L}.*` renamed to `model.layers.0.*` in one shard with an index,
    `embed_tokens` and `shared_head.head` left out (the engine takes the target's).

    Variants: `architecture` (another class name), `keep_shared` (keep `embed_tokens` and
    `shared_head.head`, as older exports did), `drop` (sub-names left out), `layer` (the
    layer index the tensors are stored under: not 0 is an export that kept the target's
    numbering), `config` (keys written over the exported config: another hidden size, an
    export made from another target). Tensors are zeros unless `fill` gives values."""
    source = json.loads((target / "config.json").read_text())
    first = f"model.layers.{source['num_hidden_layers']}."
    index_path = target / "model.safetensors.index.json"
    if index_path.exists():
        shards = sorted(set(json.loads(index_path.read_text())["weight_map"].values()))
    else:
        shards = ["model.safetensors"]
    tensors: Tensors = {}
    for shard in shards:
        raw = (target / shard).read_bytes()
        size = int.from_bytes(raw[:8], "little")
        for name, info in json.loads(raw[8 : 8 + size]).items():
            if not name.startswith(first):
                continue
            rest = name[len(first) :]
            shared = rest.startswith(("embed_tokens.", "shared_head.head."))
            if (shared and not keep_shared) or any(("." + rest).endswith("." + x) for x in drop):
                continue
            tensors[f"model.layers.{layer}.{rest}"] = (info["dtype"], tuple(info["shape"]))
    family = source.get("model_type", "deepseek_v3")
    exported = {
        **source,
        "num_hidden_layers": 1,
        "architectures": [architecture or NEXTN_CLASSES.get(family, "DeepseekV3ForCausalLMNextN")],
        **(config or {}),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(exported, indent=2, sort_keys=True) + "\n")
    shard = "nextn_layer_parameters.safetensors"
    _write(out / shard, tensors, fill)
    weight_map = {name: shard for name in tensors}
    (out / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": weight_map}, indent=4) + "\n"
    )
    return out


__all__ = [
    "ENGINE",
    "ENGINE_FP8",
    "TINY",
    "Dims",
    "Fill",
    "mtp_target",
    "nextn_export",
    "trained",
    "values",
]
