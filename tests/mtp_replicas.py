"""Full-size sparse replicas of public MTP targets: real config values, real tensor names,
dtypes and shapes in real safetensors headers, holes instead of weight bytes.

Written with draftfit's own sparse writer (:mod:`draftfit.draft.synth`): a 671B DeepSeek-V3
in 163 shards costs a few MB of disk. Every tensor of the model is written (a full reader
sees no damage), and the index lists every tensor with its shard.

Sources of the dimensions (nothing here is guessed):

* DeepSeek-V3 (671B, FP8): the DeepSeek-V3 config as released (`hidden_size` 7168,
  `num_hidden_layers` 61, `first_k_dense_replace` 3, `intermediate_size` 18432,
  `moe_intermediate_size` 2048, `n_routed_experts` 256, `n_shared_experts` 1,
  `num_attention_heads` 128, `q_lora_rank` 1536, `kv_lora_rank` 512, `qk_nope_head_dim` 128,
  `qk_rope_head_dim` 64, `v_head_dim` 128, `vocab_size` 129280, `num_nextn_predict_layers` 1;
  dev/mtp-design.md §3 and the DeepSeek-R1 config, which shares them), and
  `README_WEIGHTS.md@0b39205` of deepseek-ai/DeepSeek-V3 (the MTP layer is `model.layers.61`:
  `enorm`, `hnorm`, `eh_proj`, `shared_head`, `embed_tokens` and a decoder layer like the
  others; FP8 `e4m3` with 128×128 block scales in `weight_scale_inv`, `quantization_config`
  as written there). The release has 163 shards named `model-00001-of-000163.safetensors`
  (six digits in the count). **The shard layout is not the release's** (its index was not
  read): the tensors are cut in model order into 163 shards of about equal bytes, as
  `save_pretrained` fills shards, which puts the MTP layer (and the head) in the last four
  shards, as in the release, whose last shard holds layer 61's norms, `shared_head` and
  `embed_tokens` (a public conversion log of DeepSeek-R1's `model-00163-of-000163`).
* GLM-4.5 / GLM-4.6 (355B, BF16): dev/mtp-design.md §3 (`num_hidden_layers` 92,
  `num_nextn_predict_layers` 1, `hidden_size` 5120, `vocab_size` 151552, 96 heads, 8 KV
  heads, `head_dim` 128, 160 experts, `moe_intermediate_size` 1536, `first_k_dense_replace`
  3) and the GLM-4.5-355B-A32B training arguments of the slime project
  (`scripts/models/glm4.5-355B-A32B.sh@ffec534` of zyzshishui/slime: dense FFN 12288, one
  shared expert of 1536, QKV bias, QK layer norm, untied head). The router weight is written
  BF16 and its correction bias F32 (as DeepSeek-V3's; GLM's own dtypes were not read: the
  MTP checks do not look at them). **The shard layout is not the release's**: the tensors
  are cut in model order into shards of about 5 GB (`save_pretrained`'s default size).

* Qwen3.6-27B (dense, multimodal, BF16): its `config.json` as released, printed with the
  module tree Transformers builds from it in a public model report (a `Qwen3_5Model` dump:
  `hidden_size` 5120, `intermediate_size` 17408, 64 decoder layers in `layer_types`, every
  fourth full attention: 24 heads gated (`q_proj` 12288 rows), 4 KV heads, `head_dim` 256;
  gated delta-net `in_proj_qkv` 10240, `in_proj_z` 6144, `in_proj_b` / `in_proj_a` 48,
  `conv1d` 10240 × 1 × 4, `out_proj` from 6144; `vocab_size` 248320, untied head; a
  27-block vision tower of width 1152 and its merger to 5120; `mtp_num_hidden_layers` 1 in
  `text_config`). Tensor names are the module paths of that tree under
  `Qwen3_5ForConditionalGeneration` (`model.language_model.*`, `model.visual.*`,
  `lm_head`), as `save_pretrained` writes them; the MTP block is the 15 `mtp.*` tensors
  ModelOpt#2427 counts for the same architecture (`fc`, three norms, one full-attention
  decoder layer). Every tensor is written BF16 (the config's `dtype`; the release's dtypes of
  `A_log` and `dt_bias` were not read: the MTP checks do not look at them). **The shard
  layout is not the release's**: shards of about 5 GB in model order, the MTP block last.

Not replicated, for want of a read source of their dimensions (guessing them is not
allowed): Qwen3.8-27B FP8 itself (ModelOpt#2427: its config was not found; the failure, an
FP8 export that keeps `mtp_num_hidden_layers` but ships none of the 15 `mtp.*` tensors, is
replicated on Qwen3.6-27B, the same architecture) and GLM-5.3-Flash NVFP4 without layer 45
(ModelOpt#2312).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from draftfit.checkpoint.safetensors import TensorToWrite
from draftfit.draft.synth import shard_name, split_by_bytes, write_shards

Table = list[tuple[str, str, tuple[int, ...]]]
BLOCK = 128
DEEPSEEK_V3_SHARDS = 163
SHARD_BYTES = 5 * 10**9

DEEPSEEK_V3_CONFIG: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "n_group": 8,
    "topk_group": 4,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "num_nextn_predict_layers": 1,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [BLOCK, BLOCK],
    },
}

GLM4_MOE_CONFIG: dict[str, Any] = {
    "architectures": ["Glm4MoeForCausalLM"],
    "model_type": "glm4_moe",
    "hidden_size": 5120,
    "intermediate_size": 12288,
    "moe_intermediate_size": 1536,
    "num_hidden_layers": 92,
    "first_k_dense_replace": 3,
    "n_routed_experts": 160,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "attention_bias": True,
    "use_qk_norm": True,
    "vocab_size": 151552,
    "num_nextn_predict_layers": 1,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}

# Qwen3.6-27B's text config as released (the vision tower's widths follow it below).
QWEN3_6_27B_TEXT: dict[str, Any] = {
    "attention_bias": False,
    "attn_output_gate": True,
    "dtype": "bfloat16",
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_act": "silu",
    "hidden_size": 5120,
    "intermediate_size": 17408,
    "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"]
    * 16,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 48,
    "linear_value_head_dim": 128,
    "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144,
    "model_type": "qwen3_5_text",
    "mtp_num_hidden_layers": 1,
    "mtp_use_dedicated_embeddings": False,
    "num_attention_heads": 24,
    "num_hidden_layers": 64,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_parameters": {
        "mrope_interleaved": True,
        "mrope_section": [11, 11, 10],
        "partial_rotary_factor": 0.25,
        "rope_theta": 10000000,
        "rope_type": "default",
    },
    "tie_word_embeddings": False,
    "vocab_size": 248320,
}
QWEN3_6_27B_CONFIG: dict[str, Any] = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "text_config": QWEN3_6_27B_TEXT,
    "tie_word_embeddings": False,
    "vision_config": {
        "depth": 27,
        "hidden_size": 1152,
        "intermediate_size": 4304,
        "model_type": "qwen3_5_vision",
        "num_heads": 16,
        "num_position_embeddings": 2304,
        "out_hidden_size": 5120,
        "patch_size": 16,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    },
}

# The MTP layer's own modules beside its decoder layer (dev/mtp-design.md §1).
MTP_HEAD = ("shared_head.head.weight", "embed_tokens.weight")


def _linear(table: Table, name: str, rows: int, cols: int, fp8: bool) -> None:
    """A linear weight, FP8 with its 128×128 block scale or BF16."""
    if not fp8:
        table.append((f"{name}.weight", "BF16", (rows, cols)))
        return
    table.append((f"{name}.weight", "F8_E4M3", (rows, cols)))
    table.append((f"{name}.weight_scale_inv", "F32", (-(-rows // BLOCK), -(-cols // BLOCK))))


def _mlp(table: Table, p: str, c: dict[str, Any], layer: int, fp8: bool) -> None:
    h = c["hidden_size"]
    if layer < c["first_k_dense_replace"]:
        inter = c["intermediate_size"]
        _linear(table, p + "mlp.gate_proj", inter, h, fp8)
        _linear(table, p + "mlp.up_proj", inter, h, fp8)
        _linear(table, p + "mlp.down_proj", h, inter, fp8)
        return
    experts, inter = c["n_routed_experts"], c["moe_intermediate_size"]
    table.append((p + "mlp.gate.weight", "BF16", (experts, h)))
    table.append((p + "mlp.gate.e_score_correction_bias", "F32", (experts,)))
    for e in range(experts):
        _linear(table, p + f"mlp.experts.{e}.gate_proj", inter, h, fp8)
        _linear(table, p + f"mlp.experts.{e}.up_proj", inter, h, fp8)
        _linear(table, p + f"mlp.experts.{e}.down_proj", h, inter, fp8)
    shared = inter * c["n_shared_experts"]
    _linear(table, p + "mlp.shared_experts.gate_proj", shared, h, fp8)
    _linear(table, p + "mlp.shared_experts.up_proj", shared, h, fp8)
    _linear(table, p + "mlp.shared_experts.down_proj", h, shared, fp8)


def _mla(table: Table, p: str, c: dict[str, Any], fp8: bool) -> None:
    """DeepSeek-V3's multi-head latent attention."""
    h, heads = c["hidden_size"], c["num_attention_heads"]
    q_lora, kv_lora = c["q_lora_rank"], c["kv_lora_rank"]
    nope, rope, v = c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    table.append((p + "self_attn.q_a_layernorm.weight", "BF16", (q_lora,)))
    table.append((p + "self_attn.kv_a_layernorm.weight", "BF16", (kv_lora,)))
    _linear(table, p + "self_attn.q_a_proj", q_lora, h, fp8)
    _linear(table, p + "self_attn.q_b_proj", heads * (nope + rope), q_lora, fp8)
    _linear(table, p + "self_attn.kv_a_proj_with_mqa", kv_lora + rope, h, fp8)
    _linear(table, p + "self_attn.kv_b_proj", heads * (nope + v), kv_lora, fp8)
    _linear(table, p + "self_attn.o_proj", h, heads * v, fp8)


def _gqa(table: Table, p: str, c: dict[str, Any], fp8: bool) -> None:
    """GLM-4.5's grouped-query attention, with QKV bias and QK norm."""
    h, d = c["hidden_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * d, c["num_key_value_heads"] * d
    for name, rows in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
        _linear(table, p + f"self_attn.{name}", rows, h, fp8)
        table.append((p + f"self_attn.{name}.bias", "BF16", (rows,)))
    _linear(table, p + "self_attn.o_proj", h, q, fp8)
    table.append((p + "self_attn.q_norm.weight", "BF16", (d,)))
    table.append((p + "self_attn.k_norm.weight", "BF16", (d,)))


Attention = Callable[[Table, str, dict[str, Any], bool], None]


def _decoder(table: Table, c: dict[str, Any], layer: int, attention: Attention, fp8: bool) -> None:
    p = f"model.layers.{layer}."
    h = c["hidden_size"]
    table.append((p + "input_layernorm.weight", "BF16", (h,)))
    table.append((p + "post_attention_layernorm.weight", "BF16", (h,)))
    attention(table, p, c, fp8)
    _mlp(table, p, c, layer, fp8)


def target_table(
    config: dict[str, Any],
    attention: Attention,
    *,
    fp8: bool,
    mtp_fp8: bool,
    drop: tuple[str, ...] = (),
) -> Table:
    """Every tensor of a layer-index MTP target, in model order: the embedding, the decoder
    layers, the final norm and head, then the MTP layers (`num_nextn_predict_layers` of
    them, at least one: a replica whose config declares 0 still ships its MTP layer);
    `drop` leaves those names out of each MTP layer."""
    h, vocab = config["hidden_size"], config["vocab_size"]
    layers = config["num_hidden_layers"]
    table: Table = [("model.embed_tokens.weight", "BF16", (vocab, h))]
    for layer in range(layers):
        _decoder(table, config, layer, attention, fp8)
    table += [("model.norm.weight", "BF16", (h,)), ("lm_head.weight", "BF16", (vocab, h))]
    for layer in range(layers, layers + max(1, config["num_nextn_predict_layers"])):
        p = f"model.layers.{layer}."
        own: Table = [
            (p + "embed_tokens.weight", "BF16", (vocab, h)),
            (p + "enorm.weight", "BF16", (h,)),
            (p + "hnorm.weight", "BF16", (h,)),
            (p + "eh_proj.weight", "BF16", (h, 2 * h)),
        ]
        _decoder(own, config, layer, attention, mtp_fp8)
        own += [
            (p + "shared_head.norm.weight", "BF16", (h,)),
            (p + "shared_head.head.weight", "BF16", (vocab, h)),
        ]
        table += [t for t in own if t[0][len(p) :] not in drop]
    return table


def _write(root: Path, config: dict[str, Any], chunks: list[Table], digits: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    named = [
        (
            shard_name(i, len(chunks), digits),
            [TensorToWrite(n, d, s, None) for n, d, s in chunk],
        )
        for i, chunk in enumerate(chunks)
    ]
    write_shards(root, named)
    return root


def deepseek_v3_fp8(
    root: Path,
    *,
    mtp_fp8: bool = True,
    depth: int = 1,
    backbone_shards: int | None = None,
) -> Path:
    """DeepSeek-V3 as released (FP8, its MTP layer 61 quantized like the backbone, `eh_proj`
    and the MTP head and embedding BF16), in 163 shards; `mtp_fp8=False` stores layer 61
    all BF16 with no exclusion (the vllm#37667 mechanism); `depth` is the declared
    `num_nextn_predict_layers` (0: the layer still ships). With `backbone_shards`, the
    backbone is cut into that many shards and the MTP layer into four of its own (the
    same MTP shards whatever the backbone's count)."""
    config = {**DEEPSEEK_V3_CONFIG, "num_nextn_predict_layers": depth}
    table = target_table(config, _mla, fp8=True, mtp_fp8=mtp_fp8)
    if backbone_shards is None:
        return _write(root, config, split_by_bytes(table, DEEPSEEK_V3_SHARDS), 6)
    first_mtp = next(i for i, t in enumerate(table) if t[0].startswith("model.layers.61."))
    chunks = split_by_bytes(table[:first_mtp], backbone_shards)
    return _write(root, config, chunks + split_by_bytes(table[first_mtp:], 4), 6)


def glm4_moe_bf16(root: Path, *, drop_head: bool = False) -> Path:
    """GLM-4.5 / 4.6 in BF16; `drop_head=True` leaves `shared_head.head` and `embed_tokens`
    out of MTP layer 92, as GLM-4.6's BF16 release did (vllm#25993)."""
    table = target_table(
        GLM4_MOE_CONFIG, _gqa, fp8=False, mtp_fp8=False, drop=MTP_HEAD if drop_head else ()
    )
    total = sum(_bytes(d, s) for _, d, s in table)
    return _write(root, GLM4_MOE_CONFIG, split_by_bytes(table, -(-total // SHARD_BYTES)), 5)


def _qwen3_5_layer(table: Table, p: str, c: dict[str, Any], full: bool) -> None:
    """A Qwen3.5 dense decoder layer: gated full attention or a gated delta-net, then the MLP."""
    h, d, inter = c["hidden_size"], c["head_dim"], c["intermediate_size"]
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
    table.append((p + "input_layernorm.weight", "BF16", (h,)))
    table.append((p + "post_attention_layernorm.weight", "BF16", (h,)))
    if full:
        table.append((p + "self_attn.q_proj.weight", "BF16", (2 * heads * d, h)))
        table.append((p + "self_attn.k_proj.weight", "BF16", (kv * d, h)))
        table.append((p + "self_attn.v_proj.weight", "BF16", (kv * d, h)))
        table.append((p + "self_attn.o_proj.weight", "BF16", (h, heads * d)))
        table.append((p + "self_attn.q_norm.weight", "BF16", (d,)))
        table.append((p + "self_attn.k_norm.weight", "BF16", (d,)))
    else:
        key = c["linear_num_key_heads"] * c["linear_key_head_dim"]
        value = c["linear_num_value_heads"] * c["linear_value_head_dim"]
        value_heads = c["linear_num_value_heads"]
        conv = 2 * key + value
        table.append((p + "linear_attn.in_proj_qkv.weight", "BF16", (conv, h)))
        table.append((p + "linear_attn.in_proj_z.weight", "BF16", (value, h)))
        table.append((p + "linear_attn.in_proj_b.weight", "BF16", (value_heads, h)))
        table.append((p + "linear_attn.in_proj_a.weight", "BF16", (value_heads, h)))
        table.append(
            (p + "linear_attn.conv1d.weight", "BF16", (conv, 1, c["linear_conv_kernel_dim"]))
        )
        table.append((p + "linear_attn.dt_bias", "BF16", (value_heads,)))
        table.append((p + "linear_attn.A_log", "BF16", (value_heads,)))
        table.append((p + "linear_attn.norm.weight", "BF16", (c["linear_value_head_dim"],)))
        table.append((p + "linear_attn.out_proj.weight", "BF16", (h, value)))
    table.append((p + "mlp.gate_proj.weight", "BF16", (inter, h)))
    table.append((p + "mlp.up_proj.weight", "BF16", (inter, h)))
    table.append((p + "mlp.down_proj.weight", "BF16", (h, inter)))


def _vision(table: Table, v: dict[str, Any]) -> None:
    """Qwen3.5's vision tower and its merger (the widths of the module tree)."""
    w, inter, p = v["hidden_size"], v["intermediate_size"], "model.visual."
    patch = (w, 3, v["temporal_patch_size"], v["patch_size"], v["patch_size"])
    table.append((p + "patch_embed.proj.weight", "BF16", patch))
    table.append((p + "patch_embed.proj.bias", "BF16", (w,)))
    table.append((p + "pos_embed.weight", "BF16", (v["num_position_embeddings"], w)))
    for i in range(v["depth"]):
        b = f"{p}blocks.{i}."
        for name, rows, cols in (
            ("attn.qkv", 3 * w, w),
            ("attn.proj", w, w),
            ("mlp.linear_fc1", inter, w),
            ("mlp.linear_fc2", w, inter),
        ):
            table.append((f"{b}{name}.weight", "BF16", (rows, cols)))
            table.append((f"{b}{name}.bias", "BF16", (rows,)))
        for norm in ("norm1", "norm2"):
            table.append((f"{b}{norm}.weight", "BF16", (w,)))
            table.append((f"{b}{norm}.bias", "BF16", (w,)))
    merged = w * v["spatial_merge_size"] ** 2
    table.append((p + "merger.norm.weight", "BF16", (w,)))
    table.append((p + "merger.norm.bias", "BF16", (w,)))
    table.append((p + "merger.linear_fc1.weight", "BF16", (merged, merged)))
    table.append((p + "merger.linear_fc1.bias", "BF16", (merged,)))
    table.append((p + "merger.linear_fc2.weight", "BF16", (v["out_hidden_size"], merged)))
    table.append((p + "merger.linear_fc2.bias", "BF16", (v["out_hidden_size"],)))


def qwen3_6_27b(root: Path, *, mtp: bool = True) -> Path:
    """Qwen3.6-27B in BF16 as released; `mtp=False` ships none of its 15 `mtp.*` tensors
    while the config keeps `mtp_num_hidden_layers` 1 (the export of ModelOpt#2427)."""
    c = QWEN3_6_27B_TEXT
    h, vocab = c["hidden_size"], c["vocab_size"]
    table: Table = [("model.language_model.embed_tokens.weight", "BF16", (vocab, h))]
    _vision(table, QWEN3_6_27B_CONFIG["vision_config"])
    for i, kind in enumerate(c["layer_types"]):
        _qwen3_5_layer(table, f"model.language_model.layers.{i}.", c, kind == "full_attention")
    table += [
        ("model.language_model.norm.weight", "BF16", (h,)),
        ("lm_head.weight", "BF16", (vocab, h)),
    ]
    if mtp:
        table.append(("mtp.fc.weight", "BF16", (h, 2 * h)))
        for norm in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
            table.append((f"mtp.{norm}.weight", "BF16", (h,)))
        _qwen3_5_layer(table, "mtp.layers.0.", c, True)
    total = sum(_bytes(d, s) for _, d, s in table)
    return _write(root, QWEN3_6_27B_CONFIG, split_by_bytes(table, -(-total // SHARD_BYTES)), 5)


def _bytes(dtype: str, shape: tuple[int, ...]) -> int:
    from draftfit.checkpoint.dtypes import byte_size

    return byte_size(dtype, shape) or 0


def mtp_shards(root: Path) -> set[str]:
    """The shards the index maps a tensor of an MTP layer to (layer index ≥ the config's
    `num_hidden_layers`)."""
    config = json.loads((root / "config.json").read_text())
    layers = config["num_hidden_layers"]
    index = json.loads((root / "model.safetensors.index.json").read_text())["weight_map"]
    return {
        shard
        for name, shard in index.items()
        if name.startswith("model.layers.") and int(name.split(".")[2]) >= layers
    }


__all__ = [
    "DEEPSEEK_V3_CONFIG",
    "DEEPSEEK_V3_SHARDS",
    "GLM4_MOE_CONFIG",
    "deepseek_v3_fp8",
    "glm4_moe_bf16",
    "mtp_shards",
    "qwen3_6_27b",
    "target_table",
]
