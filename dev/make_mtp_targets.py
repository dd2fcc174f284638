"""Write tiny MTP (NextN) target checkpoints for the engine oracle (`mtp_oracle.py`).

    PYTHONPATH=src python dev/make_mtp_targets.py [--deepseek-yarn] OUT_DIR [CASE ...]

--deepseek-yarn gives the DeepSeek-V3 cases DeepSeek-V3's YaRN `rope_scaling` (needed by
SGLang's CPU rotary embedding; the vLLM runs were made without it).

Each case is a directory with a `config.json` and one `model.safetensors` written by
draftfit's own safetensors writer (zeros except norms; no torch). The targets are tiny
(hidden 128, 2 decoder layers, 4 routed experts) so that the oracle can build the target with
dummy weights and the MTP draft class on a CPU. Cases (see `CASES`):

  ds_v3              DeepSeek-V3 style: `num_nextn_predict_layers: 1`, MTP at `model.layers.2.*`
                     (enorm, hnorm, eh_proj, shared_head.{norm,head}, embed_tokens + a MoE
                     decoder layer), all BF16.
  ds_v3_nextn2       the same with two MTP layers (`model.layers.2.*`, `model.layers.3.*`).
  ds_v3_depth0       `num_nextn_predict_layers: 0`, MTP tensors still present.
  ds_v3_depth_absent no `num_nextn_predict_layers` key, MTP tensors still present.
  ds_v3_no_mtp       `num_nextn_predict_layers: 1` but no `model.layers.2.*` tensor at all
                     (an export that dropped the MTP block).
  ds_v3_missing_eh   MTP layer without `eh_proj.weight`.
  ds_v3_fp8          FP8 block-quantized backbone (`quant_method: fp8`, 128x128 blocks, every
                     decoder Linear float8_e4m3fn + `weight_scale_inv`); the MTP layer is BF16
                     and nothing excludes it (the amd/GLM-4.7-MXFP4 / vllm#37667 shape).
  ds_v3_fp8_mtp_fp8  the same, but the MTP layer quantized like the backbone (the official
                     DeepSeek-V3 FP8 release's shape): the good quantized case.
  ds_v3_fp8_excluded the BF16 MTP layer of ds_v3_fp8, excluded through
                     `modules_to_not_convert` (the fix a checkpoint can carry).
  ds_v3_fp8_excluded_partial  the same list without `kv_a_proj_with_mqa` (vLLM fuses it with
                     `q_a_proj`, so only one of the two shards is excluded).
  ds_v3_fp8_excluded_runtime_names  the BF16 MTP layer excluded under SGLang's runtime names
                     (`model.decoder.*`, `model.eh_proj`, `model.decoder.mlp.experts`).
  glm45              GLM-4.5 style (`Glm4MoeForCausalLM`), MTP at `model.layers.2.*`.
  glm45_depth_absent / glm45_depth0   glm45 without the depth key / with 0.
  glm46_no_head      GLM-4.5 style without the MTP layer's `shared_head.head` and
                     `embed_tokens` (the GLM-4.6 BF16 release's shape, vllm#25993).
  qwen3_next         Qwen3-Next style (`Qwen3NextForCausalLM`): `mtp.fc`, `mtp.pre_fc_norm_*`,
                     `mtp.layers.0.*` (full attention + MoE), `mtp.norm`; the config carries
                     no MTP depth key (as the released Qwen3-Next configs).
  qwen3_next_nextn1  the same with `num_nextn_predict_layers: 1` in the config.

Only the tensors an MTP loader reads need to be real; the backbone layers are written too
(so that the loader sees and skips them as it would in a real checkpoint).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from draftfit.checkpoint.safetensors import TensorToWrite, write_safetensors

H, VOCAB, INTER, MOE_INTER, EXPERTS, LAYERS = 128, 256, 256, 128, 4, 2
HEADS = 4
# DeepSeek MLA dims
Q_LORA, KV_LORA, ROPE, NOPE, V_DIM = 128, 128, 16, 32, 32
# GLM / Qwen GQA dims
KV_HEADS, HEAD_DIM = 2, 32
FP8_BLOCK = 128

Tensors = dict[str, tuple[str, tuple[int, ...]]]


def _bf16_ones(n: int) -> bytes:
    return (np.full(n, 1.0, dtype=np.float32).view(np.uint32) >> 16).astype("<u2").tobytes()


def _write(path: Path, config: dict[str, Any], tensors: Tensors) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    items = []
    for name, (dtype, shape) in tensors.items():
        data = None
        if dtype == "BF16" and len(shape) == 1 and "norm" in name:
            data = _bf16_ones(shape[0])
        items.append(TensorToWrite(name, dtype, shape, data))
    write_safetensors(path / "model.safetensors", items)
    return path


# ------------------------------------------------------------------ DeepSeek-V3 / GLM


def _mla_attention(p: str) -> Tensors:
    return {
        f"{p}self_attn.q_a_proj.weight": ("BF16", (Q_LORA, H)),
        f"{p}self_attn.q_a_layernorm.weight": ("BF16", (Q_LORA,)),
        f"{p}self_attn.q_b_proj.weight": ("BF16", (HEADS * (NOPE + ROPE), Q_LORA)),
        f"{p}self_attn.kv_a_proj_with_mqa.weight": ("BF16", (KV_LORA + ROPE, H)),
        f"{p}self_attn.kv_a_layernorm.weight": ("BF16", (KV_LORA,)),
        f"{p}self_attn.kv_b_proj.weight": ("BF16", (HEADS * (NOPE + V_DIM), KV_LORA)),
        f"{p}self_attn.o_proj.weight": ("BF16", (H, HEADS * V_DIM)),
    }


def _gqa_attention(p: str) -> Tensors:
    return {
        f"{p}self_attn.q_proj.weight": ("BF16", (HEADS * HEAD_DIM, H)),
        f"{p}self_attn.q_proj.bias": ("BF16", (HEADS * HEAD_DIM,)),
        f"{p}self_attn.k_proj.weight": ("BF16", (KV_HEADS * HEAD_DIM, H)),
        f"{p}self_attn.k_proj.bias": ("BF16", (KV_HEADS * HEAD_DIM,)),
        f"{p}self_attn.v_proj.weight": ("BF16", (KV_HEADS * HEAD_DIM, H)),
        f"{p}self_attn.v_proj.bias": ("BF16", (KV_HEADS * HEAD_DIM,)),
        f"{p}self_attn.o_proj.weight": ("BF16", (H, HEADS * HEAD_DIM)),
    }


def _mlp(p: str, moe: bool) -> Tensors:
    t: Tensors = {}
    if not moe:
        t[f"{p}mlp.gate_proj.weight"] = ("BF16", (INTER, H))
        t[f"{p}mlp.up_proj.weight"] = ("BF16", (INTER, H))
        t[f"{p}mlp.down_proj.weight"] = ("BF16", (H, INTER))
        return t
    t[f"{p}mlp.gate.weight"] = ("BF16", (EXPERTS, H))
    t[f"{p}mlp.gate.e_score_correction_bias"] = ("F32", (EXPERTS,))
    for e in range(EXPERTS):
        t[f"{p}mlp.experts.{e}.gate_proj.weight"] = ("BF16", (MOE_INTER, H))
        t[f"{p}mlp.experts.{e}.up_proj.weight"] = ("BF16", (MOE_INTER, H))
        t[f"{p}mlp.experts.{e}.down_proj.weight"] = ("BF16", (H, MOE_INTER))
    t[f"{p}mlp.shared_experts.gate_proj.weight"] = ("BF16", (MOE_INTER, H))
    t[f"{p}mlp.shared_experts.up_proj.weight"] = ("BF16", (MOE_INTER, H))
    t[f"{p}mlp.shared_experts.down_proj.weight"] = ("BF16", (H, MOE_INTER))
    return t


def _decoder_layer(p: str, moe: bool, mla: bool) -> Tensors:
    t: Tensors = {
        f"{p}input_layernorm.weight": ("BF16", (H,)),
        f"{p}post_attention_layernorm.weight": ("BF16", (H,)),
    }
    t.update(_mla_attention(p) if mla else _gqa_attention(p))
    t.update(_mlp(p, moe))
    return t


def _nextn_layer(index: int, mla: bool) -> Tensors:
    p = f"model.layers.{index}."
    t: Tensors = {
        f"{p}enorm.weight": ("BF16", (H,)),
        f"{p}hnorm.weight": ("BF16", (H,)),
        f"{p}eh_proj.weight": ("BF16", (H, 2 * H)),
        f"{p}shared_head.norm.weight": ("BF16", (H,)),
        f"{p}shared_head.head.weight": ("BF16", (VOCAB, H)),
        f"{p}embed_tokens.weight": ("BF16", (VOCAB, H)),
    }
    t.update(_decoder_layer(p, moe=True, mla=mla))
    return t


def _backbone(mla: bool) -> Tensors:
    t: Tensors = {
        "model.embed_tokens.weight": ("BF16", (VOCAB, H)),
        "model.norm.weight": ("BF16", (H,)),
        "lm_head.weight": ("BF16", (VOCAB, H)),
    }
    for i in range(LAYERS):
        t.update(_decoder_layer(f"model.layers.{i}.", moe=i >= 1, mla=mla))
    return t


# DeepSeek-V3's own `rope_scaling` (YaRN). Written only with --deepseek-yarn: SGLang's CPU
# rotary embedding for DeepSeek supports deepseek_yarn only, vLLM builds either.
DEEPSEEK_YARN: dict[str, Any] = {
    "type": "yarn",
    "factor": 40,
    "original_max_position_embeddings": 4096,
    "beta_fast": 32,
    "beta_slow": 1,
    "mscale": 1.0,
    "mscale_all_dim": 1.0,
}
OPTIONS: dict[str, bool] = {"deepseek_yarn": False}


def _ds_config(**extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "vocab_size": VOCAB,
        "hidden_size": H,
        "intermediate_size": INTER,
        "moe_intermediate_size": MOE_INTER,
        "num_hidden_layers": LAYERS,
        "num_nextn_predict_layers": 1,
        "num_attention_heads": HEADS,
        "num_key_value_heads": HEADS,
        "n_shared_experts": 1,
        "n_routed_experts": EXPERTS,
        "routed_scaling_factor": 2.5,
        "kv_lora_rank": KV_LORA,
        "q_lora_rank": Q_LORA,
        "qk_rope_head_dim": ROPE,
        "v_head_dim": V_DIM,
        "qk_nope_head_dim": NOPE,
        "topk_method": "noaux_tc",
        "scoring_func": "sigmoid",
        "n_group": 1,
        "topk_group": 1,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": 1,
        "moe_layer_freq": 1,
        "norm_topk_prob": True,
        "hidden_act": "silu",
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 0,
        "eos_token_id": 1,
    }
    if OPTIONS["deepseek_yarn"]:
        cfg["rope_scaling"] = DEEPSEEK_YARN
    cfg.update(extra)
    return {k: v for k, v in cfg.items() if v is not None}


def _glm_config(**extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["Glm4MoeForCausalLM"],
        "model_type": "glm4_moe",
        "vocab_size": VOCAB,
        "hidden_size": H,
        "intermediate_size": INTER,
        "moe_intermediate_size": MOE_INTER,
        "num_hidden_layers": LAYERS,
        "num_nextn_predict_layers": 1,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "partial_rotary_factor": 0.5,
        "attention_bias": True,
        "use_qk_norm": False,
        "n_shared_experts": 1,
        "n_routed_experts": EXPERTS,
        "routed_scaling_factor": 2.5,
        "n_group": 1,
        "topk_group": 1,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": 1,
        "norm_topk_prob": True,
        "hidden_act": "silu",
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "pad_token_id": 0,
        "eos_token_id": [1],
    }
    cfg.update(extra)
    return {k: v for k, v in cfg.items() if v is not None}


def _ds(mtp_layers: int = 1) -> Tensors:
    t = _backbone(mla=True)
    for i in range(mtp_layers):
        t.update(_nextn_layer(LAYERS + i, mla=True))
    return t


def _is_quantizable(name: str) -> bool:
    """The Linear weights an FP8-block checkpoint stores as float8: the decoder projections;
    not the router, norms, embeddings, heads, nor the MTP layer's eh_proj (BF16: the engines
    build it as a plain Linear)."""
    return (
        name.endswith(("_proj.weight", "_proj_with_mqa.weight"))
        and ".mlp.gate." not in name
        and "eh_proj" not in name
        and "shared_head" not in name
    )


def _fp8(t: Tensors, skip_prefix: str | None) -> Tensors:
    out: Tensors = {}
    for name, (dtype, shape) in t.items():
        if _is_quantizable(name) and not (skip_prefix and name.startswith(skip_prefix)):
            rows, cols = shape
            out[name] = ("F8_E4M3", shape)
            out[name[: -len("weight")] + "weight_scale_inv"] = (
                "F32",
                (-(-rows // FP8_BLOCK), -(-cols // FP8_BLOCK)),
            )
        else:
            out[name] = (dtype, shape)
    return out


FP8_QCONFIG: dict[str, Any] = {
    "quant_method": "fp8",
    "fmt": "e4m3",
    "activation_scheme": "dynamic",
    "weight_block_size": [FP8_BLOCK, FP8_BLOCK],
}


def _mtp_module_names(index: int) -> list[str]:
    """The MTP layer's Linear module names (what an exclusion list would name)."""
    return sorted(
        n[: -len(".weight")]
        for n in _nextn_layer(index, mla=True)
        if n.endswith(("_proj.weight", "_proj_with_mqa.weight")) and ".mlp.gate." not in n
    )


def _sglang_nextn_names(modules: list[str]) -> list[str]:
    """The MTP modules under the names SGLang's NextN class gives them (`model.eh_proj`,
    `model.decoder.*`, the fused experts as `model.decoder.mlp.experts`)."""
    prefix = f"model.layers.{LAYERS}."
    out = set()
    for name in modules:
        rest = name[len(prefix) :]
        if rest == "eh_proj":
            out.add("model.eh_proj")
        elif rest.startswith("mlp.experts."):
            out.add("model.decoder.mlp.experts")
        else:
            out.add("model.decoder." + rest)
    return sorted(out)


# ------------------------------------------------------------------ Qwen3-Next


def _qwen3_next_layer(p: str) -> Tensors:
    t: Tensors = {
        f"{p}input_layernorm.weight": ("BF16", (H,)),
        f"{p}post_attention_layernorm.weight": ("BF16", (H,)),
        # gated attention: q_proj carries the query and its gate
        f"{p}self_attn.q_proj.weight": ("BF16", (HEADS * HEAD_DIM * 2, H)),
        f"{p}self_attn.k_proj.weight": ("BF16", (KV_HEADS * HEAD_DIM, H)),
        f"{p}self_attn.v_proj.weight": ("BF16", (KV_HEADS * HEAD_DIM, H)),
        f"{p}self_attn.o_proj.weight": ("BF16", (H, HEADS * HEAD_DIM)),
        f"{p}self_attn.q_norm.weight": ("BF16", (HEAD_DIM,)),
        f"{p}self_attn.k_norm.weight": ("BF16", (HEAD_DIM,)),
        f"{p}mlp.gate.weight": ("BF16", (EXPERTS, H)),
        f"{p}mlp.shared_expert_gate.weight": ("BF16", (1, H)),
        f"{p}mlp.shared_expert.gate_proj.weight": ("BF16", (MOE_INTER, H)),
        f"{p}mlp.shared_expert.up_proj.weight": ("BF16", (MOE_INTER, H)),
        f"{p}mlp.shared_expert.down_proj.weight": ("BF16", (H, MOE_INTER)),
    }
    for e in range(EXPERTS):
        t[f"{p}mlp.experts.{e}.gate_proj.weight"] = ("BF16", (MOE_INTER, H))
        t[f"{p}mlp.experts.{e}.up_proj.weight"] = ("BF16", (MOE_INTER, H))
        t[f"{p}mlp.experts.{e}.down_proj.weight"] = ("BF16", (H, MOE_INTER))
    return t


LIN_K_HEADS, LIN_V_HEADS, LIN_K_DIM, LIN_V_DIM, CONV = 2, 4, 32, 32, 4


def _qwen3_next_linear_layer(p: str) -> Tensors:
    key_dim, value_dim = LIN_K_HEADS * LIN_K_DIM, LIN_V_HEADS * LIN_V_DIM
    t = {k: v for k, v in _qwen3_next_layer(p).items() if ".self_attn." not in k}
    t.update(
        {
            f"{p}linear_attn.in_proj_qkvz.weight": ("BF16", (2 * key_dim + 2 * value_dim, H)),
            f"{p}linear_attn.in_proj_ba.weight": ("BF16", (2 * LIN_V_HEADS, H)),
            f"{p}linear_attn.conv1d.weight": ("BF16", (2 * key_dim + value_dim, 1, CONV)),
            f"{p}linear_attn.dt_bias": ("BF16", (LIN_V_HEADS,)),
            f"{p}linear_attn.A_log": ("F32", (LIN_V_HEADS,)),
            f"{p}linear_attn.norm.weight": ("F32", (LIN_V_DIM,)),
            f"{p}linear_attn.out_proj.weight": ("BF16", (H, value_dim)),
        }
    )
    return t


def _qwen3_next_config(**extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["Qwen3NextForCausalLM"],
        "model_type": "qwen3_next",
        "vocab_size": VOCAB,
        "hidden_size": H,
        "intermediate_size": INTER,
        "num_hidden_layers": LAYERS,
        "layer_types": ["linear_attention", "full_attention"],
        "full_attention_interval": 2,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "partial_rotary_factor": 0.25,
        "linear_conv_kernel_dim": CONV,
        "linear_key_head_dim": LIN_K_DIM,
        "linear_value_head_dim": LIN_V_DIM,
        "linear_num_key_heads": LIN_K_HEADS,
        "linear_num_value_heads": LIN_V_HEADS,
        "num_experts": EXPERTS,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": MOE_INTER,
        "shared_expert_intermediate_size": MOE_INTER,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "norm_topk_prob": True,
        "hidden_act": "silu",
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 0,
        "eos_token_id": 1,
    }
    cfg.update(extra)
    return cfg


def _qwen3_next() -> Tensors:
    t: Tensors = {
        "model.embed_tokens.weight": ("BF16", (VOCAB, H)),
        "model.norm.weight": ("BF16", (H,)),
        "lm_head.weight": ("BF16", (VOCAB, H)),
    }
    t.update(_qwen3_next_linear_layer("model.layers.0."))
    t.update(_qwen3_next_layer("model.layers.1."))
    t.update(
        {
            "mtp.fc.weight": ("BF16", (H, 2 * H)),
            "mtp.pre_fc_norm_embedding.weight": ("BF16", (H,)),
            "mtp.pre_fc_norm_hidden.weight": ("BF16", (H,)),
            "mtp.norm.weight": ("BF16", (H,)),
        }
    )
    t.update(_qwen3_next_layer("mtp.layers.0."))
    return t


# ------------------------------------------------------------------ cases


def _without(t: Tensors, *suffixes: str) -> Tensors:
    return {k: v for k, v in t.items() if not k.endswith(suffixes)}


def _glm(mtp_layers: int = 1) -> Tensors:
    t = _backbone(mla=False)
    for i in range(mtp_layers):
        t.update(_nextn_layer(LAYERS + i, mla=False))
    return t


CASES: dict[str, Callable[[], tuple[dict[str, Any], Tensors]]] = {
    "ds_v3": lambda: (_ds_config(), _ds()),
    "ds_v3_nextn2": lambda: (_ds_config(num_nextn_predict_layers=2), _ds(2)),
    "ds_v3_depth0": lambda: (_ds_config(num_nextn_predict_layers=0), _ds()),
    "ds_v3_depth_absent": lambda: (_ds_config(num_nextn_predict_layers=None), _ds()),
    "ds_v3_no_mtp": lambda: (_ds_config(), _ds(0)),
    "ds_v3_missing_eh": lambda: (_ds_config(), _without(_ds(), "layers.2.eh_proj.weight")),
    "ds_v3_fp8": lambda: (
        _ds_config(quantization_config=FP8_QCONFIG),
        _fp8(_ds(), skip_prefix=f"model.layers.{LAYERS}."),
    ),
    "ds_v3_fp8_mtp_fp8": lambda: (
        _ds_config(quantization_config=FP8_QCONFIG),
        _fp8(_ds(), skip_prefix=None),
    ),
    "ds_v3_fp8_excluded": lambda: (
        _ds_config(
            quantization_config={
                **FP8_QCONFIG,
                "modules_to_not_convert": _mtp_module_names(LAYERS),
            }
        ),
        _fp8(_ds(), skip_prefix=f"model.layers.{LAYERS}."),
    ),
    "ds_v3_fp8_excluded_partial": lambda: (
        _ds_config(
            quantization_config={
                **FP8_QCONFIG,
                "modules_to_not_convert": [
                    m for m in _mtp_module_names(LAYERS) if "kv_a_proj_with_mqa" not in m
                ],
            }
        ),
        _fp8(_ds(), skip_prefix=f"model.layers.{LAYERS}."),
    ),
    "ds_v3_fp8_excluded_runtime_names": lambda: (
        _ds_config(
            quantization_config={
                **FP8_QCONFIG,
                "modules_to_not_convert": _sglang_nextn_names(_mtp_module_names(LAYERS)),
            }
        ),
        _fp8(_ds(), skip_prefix=f"model.layers.{LAYERS}."),
    ),
    "glm45": lambda: (_glm_config(), _glm()),
    "glm45_depth_absent": lambda: (_glm_config(num_nextn_predict_layers=None), _glm()),
    "glm45_depth0": lambda: (_glm_config(num_nextn_predict_layers=0), _glm()),
    "glm46_no_head": lambda: (
        _glm_config(),
        _without(_glm(), "layers.2.shared_head.head.weight", "layers.2.embed_tokens.weight"),
    ),
    "qwen3_next": lambda: (_qwen3_next_config(), _qwen3_next()),
    "qwen3_next_nextn1": lambda: (_qwen3_next_config(num_nextn_predict_layers=1), _qwen3_next()),
}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    if "--deepseek-yarn" in argv:
        OPTIONS["deepseek_yarn"] = True
        argv = [a for a in argv if a != "--deepseek-yarn"]
    out = Path(argv[0])
    names = argv[1:] or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    for name in names:
        config, tensors = CASES[name]()
        path = _write(out / name, config, tensors)
        print(f"{path}  ({len(tensors)} tensors)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
