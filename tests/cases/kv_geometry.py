"""Rule cases — DF530-DF532: KV-cache geometry of draft and target."""

from __future__ import annotations

from pathlib import Path

from tests import factory as f
from tests.cases.base import Builder, case, with_target
from tests.factory import Draft

# A Qwen3-32B-like target in miniature: explicit head_dim 128 (hidden/heads would give 32),
# one KV head; and AngelSlim-like drafts trained with head_dim 80.
_QWEN3_32B_LIKE = {"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 128}


def _geometry_draft(
    head_dim: int | None, kv: int = 1, arch: str = "LlamaForCausalLM", hidden: int = f.H
) -> Draft:
    """An EAGLE-3 draft whose attention has 2 heads and `kv` KV heads of `head_dim` (None:
    not declared, so hidden_size // 2)."""
    heads = 2
    config = {
        "architectures": [arch],
        "model_type": "llama",
        **f.llama_layer_config(hidden=hidden, heads=heads, kv=kv, head_dim=head_dim),
        "draft_vocab_size": f.DRAFT_VOCAB,
        "torch_dtype": "bfloat16",
    }
    size = head_dim or hidden // heads
    return Draft(config, f.eagle3_tensors(hidden=hidden, heads=heads, kv=kv, head_dim=size))


def _gemma2_eagle1() -> Builder:
    """An EAGLE-1 head trained on a Gemma-2-like target (head_dim 256) whose config has no
    head_dim: 576 / 2 heads derives 288."""

    def build(tmp: Path) -> tuple[Path, Path | None]:
        hidden = 576
        config = {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            **f.llama_layer_config(hidden=hidden, heads=2, kv=1, head_dim=None),
            "torch_dtype": "bfloat16",
            "bias": False,
        }
        tensors = f.eagle3_layer_tensors(
            "layers.0.", hidden=hidden, heads=2, kv=1, head_dim=288, first=False
        )
        del tensors["layers.0.input_layernorm.weight"]
        tensors["fc.weight"] = f.Tensor("BF16", (hidden, 2 * hidden))
        tensors["embed_tokens.weight"] = f.Tensor("BF16", (f.VOCAB, hidden))
        target = f.llama_target(
            tmp / "target",
            hidden=hidden,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=256,
            architectures=["Gemma2ForCausalLM"],
            model_type="gemma2",
        )
        return Draft(config, tensors).write(tmp / "draft"), target

    return build


_KV = {"DF530", "DF531", "DF532"}
case("kv-head-dim-80-vllm-0.9.1", {"DF530", "DF531"}, engines=("vllm==0.9.1",))(
    with_target(_geometry_draft(80), **_QWEN3_32B_LIKE)
)
case(
    "kv-head-dim-80-vllm-0.10.2",
    {"DF530", "DF532"},
    {"DF531"},
    engines=("vllm==0.10.2",),
    verdict="incompatible",
)(with_target(_geometry_draft(80), **_QWEN3_32B_LIKE))
case(
    "kv-head-dim-80-vllm-0.11.0", {"DF532", "DF533"}, {"DF530", "DF531"}, engines=("vllm==0.11.0",)
)(with_target(_geometry_draft(80), **_QWEN3_32B_LIKE))
case(
    "kv-head-dim-80-vllm-0.11.1",
    {"DF533"},
    _KV,
    engines=("vllm==0.11.1",),
    verdict="degraded",
)(with_target(_geometry_draft(80), **_QWEN3_32B_LIKE))
case("kv-head-dim-80-vllm-0.34", set(), _KV | {"DF533"}, verdict="compatible")(
    with_target(_geometry_draft(80), **_QWEN3_32B_LIKE)
)
case("kv-head-dim-80-sglang", set(), _KV, engines=("sglang==0.5.23", "sglang==0.4.4"))(
    with_target(_geometry_draft(80, arch="LlamaForCausalLMEagle3"), **_QWEN3_32B_LIKE)
)
case(
    "kv-same-geometry-vllm-0.9.1",
    set(),
    _KV | {"DF533"},
    engines=("vllm==0.9.1", "vllm==0.10.2", "vllm==0.11.1"),
)(with_target(_geometry_draft(128), **_QWEN3_32B_LIKE))
case(
    "kv-heads-differ-vllm-0.10.2", {"DF530"}, {"DF531", "DF532", "DF533"}, engines=("vllm==0.10.2",)
)(with_target(_geometry_draft(128, kv=2), **_QWEN3_32B_LIKE))
case("kv-heads-differ-vllm-0.28", {"DF533"}, _KV, engines=("vllm==0.28.0",))(
    with_target(_geometry_draft(128, kv=2), **_QWEN3_32B_LIKE)
)
case("kv-heads-differ-vllm-0.29", set(), _KV | {"DF533"}, engines=("vllm==0.29.0",))(
    with_target(_geometry_draft(128, kv=2), **_QWEN3_32B_LIKE)
)
case("kv-derived-head-size-vllm-0.10.2", {"DF530"}, engines=("vllm==0.10.2",))(
    with_target(_geometry_draft(None), **_QWEN3_32B_LIKE)
)
case("kv-gemma2-eagle1-288-vllm-0.9.1", {"DF530", "DF531"}, engines=("vllm==0.9.1",))(
    _gemma2_eagle1()
)
case("kv-gemma2-eagle1-288-vllm-0.11.1", set(), _KV, engines=("vllm==0.11.1",))(_gemma2_eagle1())
case("kv-mla-target-vllm-0.10.2", set(), _KV | {"DF533"}, engines=("vllm==0.10.2", "vllm==0.11.1"))(
    with_target(_geometry_draft(80), kv_lora_rank=512, qk_rope_head_dim=64)
)
# A target whose own head size FlashAttention refuses (the miniature default, 16) is served
# by another backend; the draft's is then not compared.
case("kv-target-head-size-unsupported-vllm-0.9.1", set(), {"DF531"}, engines=("vllm==0.9.1",))(
    with_target(f.specforge())
)
