"""A factory for tiny *real* draft checkpoints in every producer's convention.

Everything is written with draftfit's own safetensors writer (cross-checked against the
`safetensors` library in test_safetensors.py). Dims are tiny (hidden 64) so a checkpoint is
a few hundred KB; `d2t`/`t2d` hold real, consistent values; float weights are zeros except
norms, which get a non-trivial value (so "untrained norm" scans stay quiet unless asked).

Defaults mirror a SpecForge EAGLE-3 draft for a tiny Llama target: hidden 64, 4 heads, 2 KV
heads, head_dim 16, intermediate 128, vocab 256, draft vocab 64, target with 8 layers.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from draftfit.checkpoint.dtypes import byte_size
from draftfit.checkpoint.safetensors import TensorToWrite, write_safetensors
from draftfit.draft.synth import vocab_maps

H, HEADS, KV_HEADS, HEAD_DIM, INTER, VOCAB, DRAFT_VOCAB = 64, 4, 2, 16, 128, 256, 64
TARGET_LAYERS = 8


@dataclass
class Tensor:
    dtype: str
    shape: tuple[int, ...]
    data: bytes | None = None


@dataclass
class Draft:
    """A config plus tensors, edited by tests before being written."""

    config: dict[str, Any]
    tensors: dict[str, Tensor] = field(default_factory=dict)

    def rename(self, old: str, new: str) -> Draft:
        self.tensors[new] = self.tensors.pop(old)
        return self

    def drop(self, *names: str) -> Draft:
        for name in names:
            del self.tensors[name]
        return self

    def reshape(self, name: str, shape: tuple[int, ...]) -> Draft:
        self.tensors[name] = Tensor(self.tensors[name].dtype, shape)
        return self

    def add(
        self, name: str, dtype: str, shape: tuple[int, ...], data: bytes | None = None
    ) -> Draft:
        self.tensors[name] = Tensor(dtype, shape, data)
        return self

    def prefix_all(self, prefix: str) -> Draft:
        self.tensors = {prefix + k: v for k, v in self.tensors.items()}
        return self

    def write(self, path: Path, shards: int = 1, fmt: str = "safetensors") -> Path:
        return write_checkpoint(path, self.config, self.tensors, shards=shards, fmt=fmt)


def norm_bytes(n: int, value: float = 0.5) -> bytes:
    return bf16_bytes(np.full(n, value, dtype=np.float32))


def bf16_bytes(values: np.ndarray) -> bytes:
    as_u32 = np.asarray(values, dtype=np.float32).view(np.uint32)
    return (as_u32 >> 16).astype("<u2").tobytes()


def eagle3_layer_tensors(
    prefix: str,
    hidden: int = H,
    heads: int = HEADS,
    kv: int = KV_HEADS,
    head_dim: int = HEAD_DIM,
    inter: int = INTER,
    first: bool = True,
    qwen3: bool = False,
) -> dict[str, Tensor]:
    width = 2 * hidden if first else hidden
    t = {
        f"{prefix}self_attn.q_proj.weight": Tensor("BF16", (heads * head_dim, width)),
        f"{prefix}self_attn.k_proj.weight": Tensor("BF16", (kv * head_dim, width)),
        f"{prefix}self_attn.v_proj.weight": Tensor("BF16", (kv * head_dim, width)),
        f"{prefix}self_attn.o_proj.weight": Tensor("BF16", (hidden, heads * head_dim)),
        f"{prefix}mlp.gate_proj.weight": Tensor("BF16", (inter, hidden)),
        f"{prefix}mlp.up_proj.weight": Tensor("BF16", (inter, hidden)),
        f"{prefix}mlp.down_proj.weight": Tensor("BF16", (hidden, inter)),
        f"{prefix}input_layernorm.weight": Tensor("BF16", (hidden,), norm_bytes(hidden)),
        f"{prefix}post_attention_layernorm.weight": Tensor("BF16", (hidden,), norm_bytes(hidden)),
    }
    if first:
        t[f"{prefix}hidden_norm.weight"] = Tensor("BF16", (hidden,), norm_bytes(hidden))
    if qwen3:
        t[f"{prefix}self_attn.q_norm.weight"] = Tensor("BF16", (head_dim,), norm_bytes(head_dim))
        t[f"{prefix}self_attn.k_norm.weight"] = Tensor("BF16", (head_dim,), norm_bytes(head_dim))
    return t


def eagle3_tensors(
    naming: str = "midlayer",
    hidden: int = H,
    heads: int = HEADS,
    kv: int = KV_HEADS,
    head_dim: int = HEAD_DIM,
    inter: int = INTER,
    vocab: int = VOCAB,
    draft_vocab: int = DRAFT_VOCAB,
    n_aux: int = 3,
    target_hidden: int | None = None,
    layers: int = 1,
    t2d: bool = True,
    d2t: bool = True,
    embed: bool = False,
    qwen3: bool = False,
) -> dict[str, Tensor]:
    """Tensors of an EAGLE-3 draft. `naming`: `midlayer` (SpecForge/EAGLE) or `layers`."""
    t_hidden = target_hidden or hidden
    tensors: dict[str, Tensor] = {}
    for k in range(layers):
        prefix = (
            ("midlayer." if layers == 1 else f"midlayer.{k}.")
            if naming == "midlayer"
            else f"layers.{k}."
        )
        tensors.update(
            eagle3_layer_tensors(
                prefix, hidden, heads, kv, head_dim, inter, first=(k == 0), qwen3=qwen3
            )
        )
    tensors["fc.weight"] = Tensor("BF16", (hidden, n_aux * t_hidden))
    tensors["norm.weight"] = Tensor("BF16", (hidden,), norm_bytes(hidden))
    tensors["lm_head.weight"] = Tensor("BF16", (draft_vocab, hidden))
    if draft_vocab != vocab:
        d2t_bytes, t2d_bytes = vocab_maps(vocab, draft_vocab)
        if d2t:
            tensors["d2t"] = Tensor("I64", (draft_vocab,), d2t_bytes)
        if t2d:
            tensors["t2d"] = Tensor("BOOL", (vocab,), t2d_bytes)
    if embed:
        tensors["embed_tokens.weight"] = Tensor("BF16", (vocab, hidden))
    return tensors


def llama_layer_config(
    hidden: int = H,
    heads: int = HEADS,
    kv: int = KV_HEADS,
    head_dim: int | None = HEAD_DIM,
    inter: int = INTER,
    vocab: int = VOCAB,
    layers: int = 1,
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "intermediate_size": inter,
        "num_hidden_layers": layers,
        "vocab_size": vocab,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 2048,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
    }
    if head_dim is not None:
        config["head_dim"] = head_dim
    return config


# ------------------------------------------------------------------ dialects


def specforge(nested_aux: list[int] | None = None, **kw: Any) -> Draft:
    """SpecForge / SGLang: LlamaForCausalLMEagle3, midlayer.*, d2t+t2d, nested output-of ids."""
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        **llama_layer_config(),
        "draft_vocab_size": DRAFT_VOCAB,
        "torch_dtype": "bfloat16",
    }
    if nested_aux is not None:
        config["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": nested_aux}
    return Draft(config, eagle3_tensors(**kw))


def fp8_scale_bytes(rows: int, value: float = 0.01) -> bytes:
    """Per-channel FP8 scales, [rows, 1] float32 (what llm-compressor stores)."""
    return np.full(rows, value, dtype="<f4").tobytes()


def _quantizable_weights(draft: Draft, ignore: list[str]) -> list[tuple[str, str]]:
    """(tensor name, module) of every linear weight a quantization recipe converts: `*_proj`,
    `fc` and `lm_head`, less the `ignore`d modules (bare or `model.`-prefixed)."""
    found = []
    for name in list(draft.tensors):
        if not name.endswith(".weight"):
            continue
        module = name.removesuffix(".weight")
        linear = module.endswith("_proj") or module in ("fc", "lm_head")
        if linear and module not in ignore and "model." + module not in ignore:
            found.append((name, module))
    return found


def quantize_fp8(
    draft: Draft,
    ignore: list[str] | None = None,
    static_input: bool = False,
    targets: list[str] | None = None,
) -> Draft:
    """Turn a draft into a compressed-tensors FP8 draft, as llm-compressor writes one:
    every linear weight (`*_proj`, `fc`; `lm_head` unless ignored) stored as F8_E4M3 with a
    per-channel float32 `weight_scale` [rows, 1] (and a scalar `input_scale` for static
    activations), and a `quantization_config` in config.json. `targets` defaults to
    `["Linear"]`; a quantized lm_head is named there (`["Linear", "lm_head"]`) for engines to
    quantize it."""
    ignore = ["lm_head"] if ignore is None else ignore
    for name, module in _quantizable_weights(draft, ignore):
        t = draft.tensors[name]
        draft.tensors[name] = Tensor("F8_E4M3", t.shape)
        # A distinct scale per layer, so a loader that swaps them can be told apart.
        value = 0.01 + 0.001 * (sum(map(ord, module)) % 97)
        draft.tensors[module + ".weight_scale"] = Tensor(
            "F32", (t.shape[0], 1), fp8_scale_bytes(t.shape[0], value)
        )
        if static_input:
            draft.tensors[module + ".input_scale"] = Tensor(
                "F32", (1,), np.full(1, 0.5, dtype="<f4").tobytes()
            )
    draft.config["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "quantization_status": "compressed",
        "config_groups": {
            "group_0": {
                "targets": targets or ["Linear"],
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
                    "strategy": "tensor",
                    "symmetric": True,
                    "dynamic": not static_input,
                },
            }
        },
        "ignore": ignore,
    }
    return draft


def quantize_packed(
    draft: Draft,
    num_bits: int = 4,
    ignore: list[str] | None = None,
    targets: list[str] | None = None,
    group_size: int = 32,
) -> Draft:
    """Turn a draft into a compressed-tensors pack-quantized (weight-only int4 / int8,
    W4A16 / W8A16) draft, as llm-compressor writes one: every linear weight stored as
    `weight_packed` (int32 words of 32/num_bits values, [rows, cols*num_bits/32]) with a
    grouped bf16 `weight_scale` [rows, cols/group_size] and the int64 `weight_shape`, and no
    `weight`. `ignore` defaults to `["lm_head"]`, `targets` to `["Linear"]` (name lm_head
    there, `["Linear", "lm_head"]`, for engines to quantize it)."""
    ignore = ["lm_head"] if ignore is None else ignore
    for name, module in _quantizable_weights(draft, ignore):
        rows, cols = draft.tensors.pop(name).shape
        draft.tensors[module + ".weight_packed"] = Tensor("I32", (rows, cols * num_bits // 32))
        draft.tensors[module + ".weight_scale"] = Tensor("BF16", (rows, cols // group_size))
        draft.tensors[module + ".weight_shape"] = Tensor(
            "I64", (2,), np.array([rows, cols], dtype="<i8").tobytes()
        )
    draft.config["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "quantization_status": "compressed",
        "config_groups": {
            "group_0": {
                "targets": targets or ["Linear"],
                "weights": {
                    "num_bits": num_bits,
                    "type": "int",
                    "strategy": "group",
                    "group_size": group_size,
                    "symmetric": True,
                    "dynamic": False,
                },
                "input_activations": None,
            }
        },
        "ignore": ignore,
    }
    return draft


def eagle_official(**kw: Any) -> Draft:
    """Official EAGLE-3 (SafeAILab): plain LlamaForCausalLM config, midlayer.*, no aux ids."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **llama_layer_config(),
        "draft_vocab_size": DRAFT_VOCAB,
        "torch_dtype": "float16",
    }
    return Draft(config, eagle3_tensors(**kw))


def modelopt(aux: list[int] | None = None, naming: str = "layers", **kw: Any) -> Draft:
    """ModelOpt export: LlamaForCausalLMEagle3, eagle_config with ModelOpt keys, no t2d."""
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        **llama_layer_config(),
        "draft_vocab_size": DRAFT_VOCAB,
        "torch_dtype": "bfloat16",
        "eagle_config": {
            "eagle_aux_hidden_state_layer_ids": aux if aux is not None else [1, 3, 4],
            "use_aux_hidden_state": True,
            "use_input_layernorm_in_first_layer": True,
            "use_last_layernorm": True,
            "use_mtp_layernorm": False,
            "next_layer_regular": True,
        },
    }
    return Draft(config, eagle3_tensors(naming=naming, t2d=False, **kw))


def speculators(
    aux: list[int] | None = None,
    variant: str = "trained",
    head_dim: int | None = HEAD_DIM,
    norm_before_residual: bool | None = True,
    **kw: Any,
) -> Draft:
    """speculators: Eagle3DraftModel (trained) or Eagle3Speculator (converted), layers.0.*."""
    layer = {"model_type": "llama", **llama_layer_config(head_dim=head_dim)}
    config: dict[str, Any] = {
        "architectures": ["Eagle3DraftModel" if variant == "trained" else "Eagle3Speculator"],
        "auto_map": {"": "config.Eagle3SpeculatorConfig"},
        "draft_vocab_size": DRAFT_VOCAB,
        "speculators_model_type": "eagle3",
        "speculators_version": "0.7.0",
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [
                {
                    "proposal_type": "greedy",
                    "speculative_tokens": 3,
                    "verifier_accept_k": 1,
                    "accept_tolerance": 0.0,
                }
            ],
            "verifier": {
                "name_or_path": "meta-llama/Llama-3.1-8B-Instruct",
                "architectures": ["LlamaForCausalLM"],
            },
        },
        "target_hidden_size": None,
        "transformer_layer_config": layer,
        "dtype": "bfloat16",
    }
    if norm_before_residual is not None:
        config["norm_before_residual"] = norm_before_residual
    if aux is not None:
        config["eagle_aux_hidden_state_layer_ids"] = aux
    kw.setdefault("embed", variant == "trained")
    return Draft(config, eagle3_tensors(naming="layers", **kw))


def records_verifier(
    draft: Draft, name_or_path: str | None, architectures: list[str] | None = None
) -> Draft:
    """A speculators `draft` that records `name_or_path` (and `architectures`) as the
    verifier it was trained for, in `speculators_config.verifier`."""
    verifier = draft.config["speculators_config"]["verifier"]
    verifier["name_or_path"] = name_or_path
    if architectures is not None:
        verifier["architectures"] = architectures
    return draft


def with_sliding_window(draft: Draft, window: int = 2048) -> Draft:
    """`draft` trained with a sliding window, as speculators 0.7 and later do by default:
    `layer_types: ["sliding_attention"]` and `sliding_window`, in `transformer_layer_config`
    for a speculators config, at the top otherwise."""
    layer = draft.config.get("transformer_layer_config")
    target = layer if isinstance(layer, dict) else draft.config
    target["layer_types"] = ["sliding_attention"]
    target["sliding_window"] = window
    return draft


def speculators_sliding(window: int = 2048, **kw: Any) -> Draft:
    """A speculators EAGLE-3 draft (`speculators_version` 0.9.0) with a sliding window."""
    draft = with_sliding_window(speculators(aux=[2, 4, 5], **kw), window)
    draft.config["speculators_version"] = "0.9.0"
    return draft


def speculators_non_eagle(kind: str = "xpress", architecture: str = "XPressSpeculator") -> Draft:
    """A speculators 0.9 draft of a non-EAGLE algorithm (`xpress`, `dflash`, `dflash2`,
    `dspark`): the speculators structure with its own `speculators_model_type` and the
    refiner-head tensors XPress writes (`token_embed`, `down_h`, `in_proj`, `readout`)."""
    draft = speculators()
    draft.config["speculators_model_type"] = kind
    draft.config["architectures"] = [architecture]
    draft.config["speculators_config"]["algorithm"] = kind
    draft.config["auto_map"] = {"": f"config.{architecture}Config"}
    if kind in ("dflash", "dflash2", "xpress"):
        # The fields vLLM's DFlash adaptor requires (speculators/models/dflash/config.py).
        draft.config.update({"aux_hidden_state_layer_ids": [2, 4, 5], "mask_token_id": 0})
    if kind == "xpress":
        draft.config.update({"xpress_rank": 256, "xpress_mlp_ratio": 2, "num_jacobi_passes": 6})
        draft.tensors = {
            "token_embed.weight": Tensor("BF16", (VOCAB, H)),
            "down_h.weight": Tensor("BF16", (H, 3 * H)),
            "in_proj.weight": Tensor("BF16", (H, 2 * H)),
            "readout.weight": Tensor("BF16", (VOCAB, H)),
        }
    return draft


def dflash_draft(architecture: str = "DFlashForCausalLM") -> Draft:
    """A DFlash drafter with a plain HF config (z-lab / TensorRT-LLM layout): block-diffusion
    drafting from the target's hidden states, not an EAGLE draft."""
    config = {
        "architectures": [architecture],
        "model_type": "qwen3",
        **llama_layer_config(),
        "block_size": 16,
        "dflash_config": {"target_layer_ids": [1, 3, 5], "mask_token_id": 0},
        "torch_dtype": "bfloat16",
    }
    tensors = eagle3_layer_tensors("layers.0.", first=False)
    tensors["fc.weight"] = Tensor("BF16", (H, 3 * H))
    tensors["hidden_norm.weight"] = Tensor("BF16", (H,), norm_bytes(H))
    tensors["norm.weight"] = Tensor("BF16", (H,), norm_bytes(H))
    return Draft(config, tensors)


def nemo_automodel(**kw: Any) -> Draft:
    """NeMo Automodel EAGLE-3 export: `LlamaEagle3DraftModel`, the target's text config with
    one layer, `model.`-prefixed decoder/fc/norm names (lm_head bare), d2t/t2d, no aux ids."""
    config = {
        "architectures": ["LlamaEagle3DraftModel"],
        "model_type": "llama",
        **llama_layer_config(),
        "draft_vocab_size": DRAFT_VOCAB,
        "target_hidden_size": H,
        "tie_word_embeddings": False,
        "attn_implementation": "sdpa",
        "fc_norm": False,
        "norm_output": False,
        "parallel_drafting": False,
        "torch_dtype": "bfloat16",
    }
    tensors = eagle3_tensors(naming="layers", embed=True, **kw)
    named = {
        (k if k in ("lm_head.weight", "d2t", "t2d") else "model." + k): v
        for k, v in tensors.items()
    }
    return Draft(config, named)


def eagle4(**kw: Any) -> Draft:
    """An EAGLE-4 draft (eagle-harness): `LlamaForCausalLMEagle4`, an EAGLE-3.1 Llama layer
    plus the two factors of a low-rank candidate head."""
    config = {
        "architectures": ["LlamaForCausalLMEagle4"],
        "model_type": "llama",
        **llama_layer_config(),
        "draft_vocab_size": DRAFT_VOCAB,
        "torch_dtype": "bfloat16",
    }
    tensors = eagle3_tensors(naming="layers", **kw)
    tensors["candidate_head.u.weight"] = Tensor("BF16", (16, H))
    tensors["candidate_head.v.weight"] = Tensor("BF16", (DRAFT_VOCAB, 16))
    return Draft(config, tensors)


def mla_draft(aux: list[int] | None = None, q_lora: int | None = 48) -> Draft:
    """NVIDIA ModelOpt's Kimi-K2 style MLA draft: Eagle3DeepseekV2ForCausalLM, kimi_k2."""
    kvr, dn, dr, dv = 32, 16, 8, 16
    config = {
        "architectures": ["Eagle3DeepseekV2ForCausalLM"],
        "model_type": "kimi_k2",
        **llama_layer_config(head_dim=None),
        "draft_vocab_size": DRAFT_VOCAB,
        "q_lora_rank": q_lora,
        "kv_lora_rank": kvr,
        "qk_nope_head_dim": dn,
        "qk_rope_head_dim": dr,
        "v_head_dim": dv,
        "torch_dtype": "bfloat16",
        "eagle_config": {
            "eagle_aux_hidden_state_layer_ids": aux if aux is not None else [1, 3, 4],
            "use_aux_hidden_state": True,
            "use_input_layernorm_in_first_layer": True,
            "use_last_layernorm": True,
            "use_mtp_layernorm": False,
        },
    }
    qr = q_lora or 48
    p = "midlayer.self_attn."
    tensors = {
        p + "q_a_proj.weight": Tensor("BF16", (qr, 2 * H)),
        p + "q_a_layernorm.weight": Tensor("BF16", (qr,), norm_bytes(qr)),
        p + "q_b_proj.weight": Tensor("BF16", (HEADS * (dn + dr), qr)),
        p + "kv_a_proj_with_mqa.weight": Tensor("BF16", (kvr + dr, 2 * H)),
        p + "kv_a_layernorm.weight": Tensor("BF16", (kvr,), norm_bytes(kvr)),
        p + "kv_b_proj.weight": Tensor("BF16", (HEADS * (dn + dv), kvr)),
        p + "o_proj.weight": Tensor("BF16", (H, HEADS * dv)),
        "midlayer.mlp.gate_proj.weight": Tensor("BF16", (INTER, H)),
        "midlayer.mlp.up_proj.weight": Tensor("BF16", (INTER, H)),
        "midlayer.mlp.down_proj.weight": Tensor("BF16", (H, INTER)),
    }
    for norm in ("input_layernorm", "post_attention_layernorm", "hidden_norm"):
        tensors[f"midlayer.{norm}.weight"] = Tensor("BF16", (H,), norm_bytes(H))
    rest = eagle3_tensors(t2d=False)
    for name in ("fc.weight", "norm.weight", "lm_head.weight", "d2t"):
        tensors[name] = rest[name]
    return Draft(config, tensors)


def eagle1(bias: bool = False, hidden: int = H) -> Draft:
    """Official EAGLE-1/2: LlamaForCausalLM, fc [H, 2H], layers.0.* without input_layernorm."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **llama_layer_config(hidden=hidden),
        "torch_dtype": "float16",
    }
    if not bias:
        config["bias"] = False
    tensors = eagle3_layer_tensors("layers.0.", hidden=hidden, first=False)
    for k in (
        "layers.0.self_attn.q_proj.weight",
        "layers.0.self_attn.k_proj.weight",
        "layers.0.self_attn.v_proj.weight",
    ):
        tensors[k] = Tensor("BF16", (tensors[k].shape[0], hidden))
    del tensors["layers.0.input_layernorm.weight"]
    tensors["fc.weight"] = Tensor("BF16", (hidden, 2 * hidden))
    if bias:
        tensors["fc.bias"] = Tensor("BF16", (hidden,))
    tensors["embed_tokens.weight"] = Tensor("BF16", (VOCAB, hidden))
    return Draft(config, tensors)


def llama_target(
    path: Path, hidden: int = H, layers: int = TARGET_LAYERS, vocab: int = VOCAB, **extra: Any
) -> Path:
    """A Llama target directory holding only config.json."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "intermediate_size": INTER,
        "vocab_size": vocab,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
        **extra,
    }
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config, indent=2))
    return path


def kimi_mla_target(path: Path, **extra: Any) -> Path:
    """A tiny DeepSeek-V3 / Kimi-K2-shaped target config (MLA: `kv_lora_rank`)."""
    mla: dict[str, Any] = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "kimi_k2",
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "n_routed_experts": 8,
    }
    return llama_target(path, **{**mla, **extra})


KIMI_K25_CODE = {
    "AutoConfig": "configuration_kimi_k25.KimiK25Config",
    "AutoModel": "modeling_kimi_k25.KimiK25ForConditionalGeneration",
    "AutoModelForCausalLM": "modeling_kimi_k25.KimiK25ForConditionalGeneration",
}
KIMI_K2_CODE = {
    "AutoConfig": "configuration_deepseek.DeepseekV3Config",
    "AutoModel": "modeling_deepseek.DeepseekV3Model",
    "AutoModelForCausalLM": "modeling_deepseek.DeepseekV3ForCausalLM",
}


def kimi_k25_target(path: Path, text_model_type: str = "kimi_k2", own_code: bool = True) -> Path:
    """A tiny Kimi-K2.5-shaped target config: multimodal (`KimiK25ForConditionalGeneration`,
    model_type `kimi_k25`), its MLA language model in `text_config` (model_type `kimi_k2`
    as on the Hub, or `deepseek_v3`), and, as on the Hub, `auto_map` naming the config code of
    its own (`configuration_kimi_k25.KimiK25Config`; the text config's
    `configuration_deepseek.DeepseekV3Config`) unless `own_code` is False."""
    kimi_mla_target(path)
    text = json.loads((path / "config.json").read_text())
    text["model_type"] = text_model_type
    config: dict[str, Any] = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": text,
    }
    if own_code:
        text["auto_map"] = dict(KIMI_K2_CODE)
        config["auto_map"] = dict(KIMI_K25_CODE)
    (path / "config.json").write_text(json.dumps(config, indent=2))
    return path


def hadamard(n: int) -> np.ndarray:
    """An n x n orthonormal Hadamard matrix (n a power of two): a real rotation, the kind
    QuaRot uses for its global rotation `Q`."""
    q = np.ones((1, 1), dtype=np.float32)
    while q.shape[0] < n:
        q = np.block([[q, q], [q, -q]])
    return (q / np.sqrt(n)).astype(np.float32)


def modelslim_target(
    path: Path,
    rotation: str | None = "exported",
    hidden: int = H,
    layers: int = TARGET_LAYERS,
    **extra: Any,
) -> Path:
    """A Llama target as msModelSlim writes a W8A8 export: config.json without a
    `quantization_config` (the saver removes it), and `quant_model_description.json` with one
    entry per weight, `model_quant_type`, `version`, `metadata` and `optional`. The shape is
    the one msmodelslim documents (docs/en/feature_guide/quick_quantization_v1/
    quantization_result.md: "File Structure Example", "Description Fields").

    `rotation`: "exported" = QuaRot with `export_extra_info: true` (the description names
    `optional/quarot.safetensors`, which holds `global_rotation`); "online" = QuaRot with
    online rotations (`metadata.quarot`) and no export; "file-only" = the rotation file
    without the description entry; None = no QuaRot (plain W8A8)."""
    llama_target(path, hidden=hidden, layers=layers, **extra)
    description: dict[str, Any] = {"model_quant_type": "W8A8", "version": "1.0.0"}
    for i in range(layers):
        for proj in (
            "self_attn.q_proj",
            "self_attn.k_proj",
            "self_attn.v_proj",
            "self_attn.o_proj",
            "mlp.gate_proj",
            "mlp.up_proj",
            "mlp.down_proj",
        ):
            description[f"model.layers.{i}.{proj}.weight"] = "W8A8"
        description[f"model.layers.{i}.input_layernorm.weight"] = "FLOAT"
    description["model.embed_tokens.weight"] = "FLOAT"
    description["lm_head.weight"] = "FLOAT"
    description["metadata"] = {}
    description["optional"] = {}
    if rotation == "exported":
        description["optional"] = {
            "quarot": {"rotation_map": {"global_rotation": "optional/quarot.safetensors"}}
        }
    if rotation == "online":
        description["metadata"] = {
            "quarot": {
                "max_tp_size": 4,
                "heads_rotation": {
                    "layers": [f"model.layers.{i}.self_attn.o_proj." for i in range(layers)]
                },
                "kronecker_rotation": {"layers": [f"model.layers.{layers - 1}.mlp.down_proj."]},
            }
        }
    (path / "quant_model_description.json").write_text(json.dumps(description, indent=2))
    if rotation in ("exported", "file-only"):
        (path / "optional").mkdir(exist_ok=True)
        q = hadamard(hidden)
        write_safetensors(
            path / "optional" / "quarot.safetensors",
            [TensorToWrite("global_rotation", "F32", q.shape, q.tobytes())],
        )
    return path


# ------------------------------------------------------------------ writing


def write_checkpoint(
    path: Path,
    config: dict[str, Any] | None,
    tensors: dict[str, Tensor],
    shards: int = 1,
    fmt: str = "safetensors",
) -> Path:
    """Write config.json plus weights (one file, or `shards` files with an index)."""
    path.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (path / "config.json").write_text(json.dumps(config, indent=2))
    items = list(tensors.items())
    if fmt == "bin":
        from tests.torchbin_factory import simple, write_torch_zip

        pairs = [
            simple(n, t.dtype, t.shape, t.data or bytes(byte_size(t.dtype, t.shape) or 0))
            for n, t in items
        ]
        write_torch_zip(path / "pytorch_model.bin", [p[0] for p in pairs], [p[1] for p in pairs])
        return path
    if shards == 1:
        write_safetensors(
            path / "model.safetensors",
            [TensorToWrite(n, t.dtype, t.shape, t.data) for n, t in items],
        )
        return path
    weight_map = {}
    per = -(-len(items) // shards)
    for s in range(shards):
        chunk = items[s * per : (s + 1) * per]
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(
            path / name, [TensorToWrite(n, t.dtype, t.shape, t.data) for n, t in chunk]
        )
        for n, _ in chunk:
            weight_map[n] = name
    (path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}, indent=2)
    )
    return path


def raw_safetensors(path: Path, header: Any, data: bytes = b"", length: int | None = None) -> Path:
    """Write a safetensors file with an arbitrary header (for damage tests)."""
    encoded = header if isinstance(header, bytes) else json.dumps(header).encode()
    prefix = struct.pack("<Q", len(encoded) if length is None else length)
    path.write_bytes(prefix + encoded + data)
    return path


# ------------------------------------------------------------------ real values


def from_bf16(data: bytes) -> np.ndarray:
    """The float32 values of BF16 bytes (what a reader decodes)."""
    return (np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16).view(np.float32)


def weights(kind: str, shape: tuple[int, ...], stream: int, scale: float = 0.03) -> np.ndarray:
    """Float32 values shaped like weights: `trained` (heavy-tailed, zero-ish mean, rows
    differ), `normal` (N(0, scale): HF's initialiser), `uniform` (torch.nn.Linear's
    U(±1/sqrt(fan_in)))."""
    rng = np.random.default_rng(stream)
    if kind == "trained":
        row_shift = rng.normal(0, scale / 10, (shape[0],) + (1,) * (len(shape) - 1))
        return (rng.laplace(0, scale, shape) + row_shift).astype(np.float32)
    if kind == "normal":
        return rng.normal(0, scale, shape).astype(np.float32)
    if kind == "uniform":
        bound = 1.0 / np.sqrt(shape[-1])
        return rng.uniform(-bound, bound, shape).astype(np.float32)
    raise ValueError(kind)


def fill(draft: Draft, kind: str = "trained", stream: int = 0, scale: float = 0.03) -> Draft:
    """Give every BF16 matrix of `draft` real values of `kind` (norms keep theirs)."""
    for k, (_name, tensor) in enumerate(sorted(draft.tensors.items())):
        if tensor.dtype == "BF16" and len(tensor.shape) == 2:
            tensor.data = bf16_bytes(weights(kind, tensor.shape, stream * 1000 + k, scale))
    return draft


def values_target(
    path: Path,
    embed: np.ndarray,
    head: np.ndarray | None = None,
    *,
    embed_name: str = "model.embed_tokens.weight",
    head_name: str = "lm_head.weight",
    dtype: str = "BF16",
    extra: dict[str, Tensor] | None = None,
    shards: int = 1,
    **config: Any,
) -> Path:
    """A Llama target with config.json *and* weights: `embed` (and `head`) as given, plus
    one decoder norm, in `dtype` (BF16, F16 or F32)."""
    llama_target(path, hidden=embed.shape[1], vocab=embed.shape[0], **config)

    def encode(values: np.ndarray) -> bytes:
        if dtype == "BF16":
            return bf16_bytes(values)
        return np.asarray(values, dtype={"F16": "<f2", "F32": "<f4"}[dtype]).tobytes()

    tensors = {embed_name: Tensor(dtype, tuple(embed.shape), encode(embed))}
    tensors["model.layers.0.input_layernorm.weight"] = Tensor(
        "BF16", (embed.shape[1],), norm_bytes(embed.shape[1])
    )
    if head is not None:
        tensors[head_name] = Tensor(dtype, tuple(head.shape), encode(head))
    tensors.update(extra or {})
    write_checkpoint(path, None, tensors, shards=shards)
    return path


def kimi_sibling_pair(root: Path) -> tuple[Path, Path, Path]:
    """A draft trained for another target, at small scale (hidden 64, vocabulary 4096) with
    real bytes: a speculators draft that froze "Kimi-K2"'s embedding
    (`embed_requires_grad: false`), the "Kimi-K2" target it was trained for, and the sibling
    "Kimi-K2.5" (same shapes, another embedding, multimodal config with `text_config` and
    `language_model.model.embed_tokens.weight`). Returns (draft, K2, K2.5) under `root`."""
    vocab = 4096
    # it records Kimi-K2-Instruct as its verifier, with the class of the stand-in targets
    trained = records_verifier(
        speculators(aux=[2, 4, 5], vocab=vocab), "moonshotai/Kimi-K2-Instruct", ["LlamaForCausalLM"]
    )
    draft = fill(trained, stream=30)
    draft.config["transformer_layer_config"]["vocab_size"] = vocab
    draft.config["embed_requires_grad"] = False
    draft_path = draft.write(root / "kimi-k2-draft")
    stored = draft.tensors["embed_tokens.weight"]
    assert stored.data is not None  # filled with real values above
    embed = from_bf16(stored.data).reshape(stored.shape)
    k2 = values_target(root / "Kimi-K2", embed, shards=2)
    sibling = embed + weights("trained", (vocab, H), 31, 0.004)
    k25 = values_target(
        root / "Kimi-K2.5",
        sibling,
        embed_name="language_model.model.embed_tokens.weight",
        shards=2,
    )
    text_config = json.loads((k25 / "config.json").read_text())
    multimodal = {"architectures": ["KimiK25ForConditionalGeneration"], "text_config": text_config}
    (k25 / "config.json").write_text(json.dumps(multimodal, indent=2) + "\n")
    return draft_path, k2, k25


def specforge_with_dims(stored: dict[str, Any], **config: int | None) -> Draft:
    """A SpecForge draft whose tensors are made with `stored` (keywords of
    :func:`eagle3_tensors`) and whose config has `config` written over it (None: the key
    removed): a config dimension that may contradict the stored shapes."""
    draft = specforge()
    for key, value in config.items():
        if value is None:
            draft.config.pop(key, None)
        else:
            draft.config[key] = value
    draft.tensors = eagle3_tensors(**stored)
    return draft
