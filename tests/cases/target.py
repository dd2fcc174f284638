"""Rule cases — DF5xx: the draft against its target (verifier)."""

from __future__ import annotations

import json
from pathlib import Path

from tests import factory as f
from tests.cases.base import Builder, case, with_target
from tests.factory import Draft


def _gpt2_target(tmp: Path) -> tuple[Path, Path | None]:
    target = tmp / "target"
    target.mkdir()
    (target / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["GPT2LMHeadModel"],
                "model_type": "gpt2",
                "n_embd": 64,
                "n_layer": 8,
                "vocab_size": 256,
            }
        )
    )
    return f.specforge().write(tmp / "draft"), target


case("target-gpt2", {"DF501"}, verdict="incompatible", oracle="21")(_gpt2_target)


def _kimi_like_target(tmp: Path) -> tuple[Path, Path | None]:
    target = f.llama_target(
        tmp / "target",
        architectures=["DeepseekV3ForCausalLM"],
        model_type="kimi_k2",
        n_routed_experts=8,
    )
    return f.specforge().write(tmp / "draft"), target


case("kimi-target-0.17", {"DF501"}, engines=("vllm==0.17.0",))(_kimi_like_target)
case("kimi-target-0.34", set(), {"DF501"}, verdict="compatible", oracle="21b")(_kimi_like_target)


def _final_layer_draft() -> Draft:
    """Capture-before ids ending at L = 8: the output of the target's last layer."""
    draft = f.specforge()
    draft.config["eagle_aux_hidden_state_layer_ids"] = [2, 4, 8]
    return draft


def _deepseek_target(draft: Draft) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        target = f.llama_target(
            tmp / "target",
            architectures=["DeepseekV3ForCausalLM"],
            model_type="kimi_k2",
            n_routed_experts=8,
        )
        return draft.write(tmp / "draft"), target

    return build


# The deepseek_v2 backbone captures the last layer's output from vLLM 0.25.0 (vllm#46973).
case("deepseek-final-layer-0.24", {"DF303"}, engines=("vllm==0.24.0",), verdict="incompatible")(
    _deepseek_target(_final_layer_draft())
)
case("deepseek-final-layer-0.25", set(), {"DF303"}, engines=("vllm==0.25.0",))(
    _deepseek_target(_final_layer_draft())
)
case("llama-final-layer-0.24", set(), {"DF303"}, engines=("vllm==0.24.0",))(
    with_target(_final_layer_draft())
)


def _layer_zero_draft() -> Draft:
    draft = f.specforge()
    draft.config["eagle_aux_hidden_state_layer_ids"] = [0, 4, 5]
    return draft


case("deepseek-layer-zero", {"DF303"}, verdict="incompatible", oracle="d3")(
    _deepseek_target(_layer_zero_draft())
)
case("llama-layer-zero", set(), {"DF303"})(with_target(_layer_zero_draft()))
case("gemma3-target", {"DF501"}, verdict="incompatible")(
    with_target(f.specforge(), architectures=["Gemma3ForCausalLM"], model_type="gemma3_text")
)
case("target-capability-unknown-0.30", {"DF505"}, {"DF501"}, engines=("vllm==0.30.0",))(
    with_target(f.specforge(), architectures=["TeleChat3ForCausalLM"], model_type="telechat3")
)


def _narrow_draft(target_hidden: int | None = None, embed: bool = False) -> Draft:
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        **f.llama_layer_config(hidden=32, heads=4, kv=2, head_dim=8, inter=64),
        "draft_vocab_size": f.DRAFT_VOCAB,
    }
    if target_hidden:
        config["target_hidden_size"] = target_hidden
    return Draft(
        config,
        f.eagle3_tensors(hidden=32, head_dim=8, inter=64, target_hidden=target_hidden, embed=embed),
    )


case(
    "draft-narrower-than-target", {"DF502", "DF503"}, {"DF203"}, verdict="incompatible", oracle="13"
)(with_target(_narrow_draft()))
case("shared-embedding-too-wide", {"DF503"}, {"DF502"}, verdict="incompatible", oracle="13b")(
    with_target(_narrow_draft(target_hidden=64))
)
case("own-embedding-narrow-draft", set(), {"DF502", "DF503"}, verdict="compatible", oracle="13c")(
    with_target(_narrow_draft(target_hidden=64, embed=True))
)
case("draft-context-short-0.29", {"DF504"}, engines=("vllm==0.29.0",))(
    with_target(f.specforge(), max_position_embeddings=131072)
)
case("draft-context-short-0.34", set(), {"DF504"}, verdict="compatible")(
    with_target(f.specforge(), max_position_embeddings=131072)
)
