"""Tiny real target checkpoints that carry MTP (NextN) layers, one factory per family.

Written with draftfit's own safetensors writer (zeros unless `fill` gives values: the MTP
checks read headers only, the value checks read the bytes), in
the shapes of `dev/make_mtp_targets.py` (whose targets the engine oracle ran) at a smaller
width. Each target can be sharded with an index whose MTP layer sits in a shard of its own,
as the real releases are, so that a test can tell which headers were read.

Variants (keyword arguments): `depth` (the declared `num_nextn_predict_layers`; None leaves
the key out), `ship` (how many MTP layers are written), `drop` (sub-names left out of every
MTP layer, e.g. `eh_proj.weight`), `rename` (a prefix that replaces the MTP layer's),
`quant` ("fp8": an FP8 block-quantized backbone), `mtp_quantized` (the MTP layer quantized
like the backbone), `exclude` (the FP8 exclusion list: "checkpoint", "runtime",
"partial"), `compressed` (a compressed-tensors FP8 config instead of `quant_method: fp8`),
`fill` (the bytes of each tensor, by name, dtype and shape; None writes zeros: :func:`trained`
gives every tensor values of its own, as a trained checkpoint has).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from draftfit.checkpoint.safetensors import TensorToWrite, write_safetensors

H, VOCAB, INTER, MOE_INTER, EXPERTS, LAYERS, HEADS = 32, 64, 64, 32, 2, 2, 2
Q_LORA, KV_LORA, ROPE, NOPE, V_DIM = 32, 32, 8, 16, 16
KV_HEADS, HEAD_DIM = 1, 16
BLOCK = 128
Tensors = dict[str, tuple[str, tuple[int, ...]]]
# The bytes of a tensor from its name, dtype and shape (None: zeros).
Fill = Callable[[str, str, tuple[int, ...]], "bytes | None"]


def _mla(p: str) -> Tensors:
    return {
        f"{p}self_attn.q_a_proj.weight": ("BF16", (Q_LORA, H)),
        f"{p}self_attn.q_a_layernorm.weight": ("BF16", (Q_LORA,)),
        f"{p}self_attn.q_b_proj.weight": ("BF16", (HEADS * (NOPE + ROPE), Q_LORA)),
        f"{p}self_attn.kv_a_proj_with_mqa.weight": ("BF16", (KV_LORA + ROPE, H)),
        f"{p}self_attn.kv_a_layernorm.weight": ("BF16", (KV_LORA,)),
        f"{p}self_attn.kv_b_proj.weight": ("BF16", (HEADS * (NOPE + V_DIM), KV_LORA)),
        f"{p}self_attn.o_proj.weight": ("BF16", (H, HEADS * V_DIM)),
    }


def _gqa(p: str) -> Tensors:
    return {
        f"{p}self_attn.q_proj.weight": ("BF16", (HEADS * HEAD_DIM, H)),
        f"{p}self_attn.k_proj.weight": ("BF16", (KV_HEADS * HEAD_DIM, H)),
        f"{p}self_attn.v_proj.weight": ("BF16", (KV_HEADS * HEAD_DIM, H)),
        f"{p}self_attn.o_proj.weight": ("BF16", (H, HEADS * HEAD_DIM)),
    }


def _moe(p: str) -> Tensors:
    t: Tensors = {f"{p}mlp.gate.weight": ("BF16", (EXPERTS, H))}
    for e in range(EXPERTS):
        t[f"{p}mlp.experts.{e}.gate_proj.weight"] = ("BF16", (MOE_INTER, H))
        t[f"{p}mlp.experts.{e}.up_proj.weight"] = ("BF16", (MOE_INTER, H))
        t[f"{p}mlp.experts.{e}.down_proj.weight"] = ("BF16", (H, MOE_INTER))
    t[f"{p}mlp.shared_experts.gate_proj.weight"] = ("BF16", (MOE_INTER, H))
    t[f"{p}mlp.shared_experts.up_proj.weight"] = ("BF16", (MOE_INTER, H))
    t[f"{p}mlp.shared_experts.down_proj.weight"] = ("BF16", (H, MOE_INTER))
    return t


def _decoder(p: str, mla: bool) -> Tensors:
    t: Tensors = {
        f"{p}input_layernorm.weight": ("BF16", (H,)),
        f"{p}post_attention_layernorm.weight": ("BF16", (H,)),
    }
    t.update(_mla(p) if mla else _gqa(p))
    t.update(_moe(p))
    return t


def _nextn(p: str, mla: bool) -> Tensors:
    t: Tensors = {
        f"{p}enorm.weight": ("BF16", (H,)),
        f"{p}hnorm.weight": ("BF16", (H,)),
        f"{p}eh_proj.weight": ("BF16", (H, 2 * H)),
        f"{p}shared_head.norm.weight": ("BF16", (H,)),
        f"{p}shared_head.head.weight": ("BF16", (VOCAB, H)),
        f"{p}embed_tokens.weight": ("BF16", (VOCAB, H)),
    }
    t.update(_decoder(p, mla))
    return t


def _backbone(mla: bool) -> Tensors:
    t: Tensors = {
        "model.embed_tokens.weight": ("BF16", (VOCAB, H)),
        "model.norm.weight": ("BF16", (H,)),
        "lm_head.weight": ("BF16", (VOCAB, H)),
    }
    for i in range(LAYERS):
        t.update(_decoder(f"model.layers.{i}.", mla))
    return t


def _quantizable(name: str) -> bool:
    return (
        name.endswith(("_proj.weight", "_proj_with_mqa.weight"))
        and "eh_proj" not in name
        and "shared_head" not in name
    )


def _fp8(t: Tensors, keep: str | None) -> Tensors:
    """Every decoder projection float8 with a block scale, except names under `keep`."""
    out: Tensors = {}
    for name, (dtype, shape) in t.items():
        if _quantizable(name) and not (keep and name.startswith(keep)):
            out[name] = ("F8_E4M3", shape)
            rows, cols = shape
            out[name[: -len("weight")] + "weight_scale_inv"] = (
                "F32",
                (-(-rows // BLOCK), -(-cols // BLOCK)),
            )
        else:
            out[name] = (dtype, shape)
    return out


def _exclusions(mtp: Tensors, prefix: str, how: str) -> list[str]:
    modules = sorted(n[: -len(".weight")] for n in mtp if _quantizable(n))
    if how == "partial":
        return [m for m in modules if "kv_a_proj_with_mqa" not in m]
    if how == "checkpoint":
        return modules
    out = set()
    for name in modules:
        rest = name[len(prefix) :]
        if rest.startswith("mlp.experts."):
            out.add("model.decoder.mlp.experts")
        else:
            out.add("model.decoder." + rest)
    return sorted(out)


def _config(family: str, depth: int | None, **extra: Any) -> dict[str, Any]:
    common: dict[str, Any] = {
        "vocab_size": VOCAB,
        "hidden_size": H,
        "intermediate_size": INTER,
        "moe_intermediate_size": MOE_INTER,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "n_routed_experts": EXPERTS,
        "torch_dtype": "bfloat16",
    }
    if family == "deepseek_v3":
        common.update(
            architectures=["DeepseekV3ForCausalLM"],
            model_type="deepseek_v3",
            q_lora_rank=Q_LORA,
            kv_lora_rank=KV_LORA,
            qk_rope_head_dim=ROPE,
            qk_nope_head_dim=NOPE,
            v_head_dim=V_DIM,
        )
    elif family == "glm4_moe":
        common.update(
            architectures=["Glm4MoeForCausalLM"],
            model_type="glm4_moe",
            num_key_value_heads=KV_HEADS,
            head_dim=HEAD_DIM,
        )
    else:
        common.update(architectures=["Qwen3NextForCausalLM"], model_type="qwen3_next")
    if depth is not None:
        common["num_nextn_predict_layers"] = depth
    common.update(extra)
    return common


def mtp_target(
    path: Path,
    family: str = "deepseek_v3",
    *,
    depth: int | None = 1,
    ship: int = 1,
    drop: tuple[str, ...] = (),
    rename: str | None = None,
    quant: str | None = None,
    mtp_quantized: bool = False,
    exclude: str | None = None,
    compressed: bool = False,
    sharded: bool = True,
    fill: Fill | None = None,
) -> Path:
    """Write a tiny target of `family` (`deepseek_v3`, `glm4_moe`, `qwen3_next`) with its MTP
    layers at `path` (see the module docstring for the variants)."""
    mla = family == "deepseek_v3"
    backbone = _backbone(mla)
    mtp: Tensors = {}
    for i in range(ship):
        if family == "qwen3_next":
            p = f"mtp.layers.{i}."
            mtp.update(_decoder(p, mla=False))
            if i == 0:
                for own in ("fc", "pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
                    shape = (H, 2 * H) if own == "fc" else (H,)
                    mtp[f"mtp.{own}.weight"] = ("BF16", shape)
        else:
            mtp.update(_nextn(f"model.layers.{LAYERS + i}.", mla))
    mtp = {n: v for n, v in mtp.items() if not any(n.endswith("." + d) for d in drop)}
    prefix = f"model.layers.{LAYERS}."
    if rename is not None:
        mtp = {n.replace(prefix, rename, 1): v for n, v in mtp.items()}
    extra: dict[str, Any] = {}
    if quant == "fp8":
        backbone = _fp8(backbone, None)
        excluded = _exclusions(mtp, prefix, exclude) if exclude is not None else []
        if mtp_quantized:
            mtp = _fp8(mtp, None)
        if compressed:
            extra["quantization_config"] = {
                "quant_method": "compressed-tensors",
                "format": "float-quantized",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8}}},
                "ignore": ["lm_head", *excluded],
            }
        else:
            extra["quantization_config"] = {
                "quant_method": "fp8",
                "fmt": "e4m3",
                "activation_scheme": "dynamic",
                "weight_block_size": [BLOCK, BLOCK],
                **({"modules_to_not_convert": excluded} if exclude is not None else {}),
            }
    path.mkdir(parents=True, exist_ok=True)
    config = _config(family, depth, **extra)
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
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


__all__ = ["Fill", "mtp_target", "trained", "values"]
