"""The KV geometry read from a config (declared or derived head_dim, default KV heads, MLA)
and what vLLM's releases make of a draft's geometry next to its target's (DF530-DF533),
on real configs and the engine data."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.target import target_from_config
from draftfit.engines.kv_geometry import KvGeometry, geometry_of
from draftfit.engines.registry import load_engine
from draftfit.engines.vllm.kv import kv_geometry_events

QWEN3_32B = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 5120,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
}
ANGELSLIM_DRAFT = {"hidden_size": 5120, "num_attention_heads": 64, "num_key_value_heads": 8}


def test_declared_head_dim_wins_over_the_derived_one() -> None:
    assert geometry_of(QWEN3_32B) == KvGeometry(8, 128, True)


def test_head_dim_is_derived_and_kv_heads_default_to_the_heads() -> None:
    config = {"hidden_size": 4608, "num_attention_heads": 16}
    geometry = geometry_of(config)
    assert geometry == KvGeometry(16, 288, False)
    assert geometry is not None and "derived" in geometry.describe()


def test_a_null_head_dim_is_derived() -> None:
    assert geometry_of({**ANGELSLIM_DRAFT, "head_dim": None}) == KvGeometry(8, 80, False)


def test_mla_and_incomplete_configs_have_no_geometry() -> None:
    assert geometry_of({**QWEN3_32B, "kv_lora_rank": 512}) is None
    assert geometry_of({"hidden_size": 4096}) is None
    assert geometry_of({"num_attention_heads": 32}) is None


def _codes(version: str, draft: dict[str, object]) -> set[str]:
    profile = load_engine("vllm").resolve(version)
    target = target_from_config(QWEN3_32B, "qwen3-32b")
    return {e.rule.code for e in kv_geometry_events(profile, draft, target, "")}


def test_the_qwen3_32b_case_per_vllm_release() -> None:
    """hidden/heads = 80 next to the target's declared 128 (C-04 and C-02)."""
    assert _codes("0.8.5", ANGELSLIM_DRAFT) == {"DF530", "DF531"}
    assert _codes("0.10.2", ANGELSLIM_DRAFT) == {"DF530", "DF532"}
    assert _codes("0.11.0", ANGELSLIM_DRAFT) == {"DF532", "DF533"}
    assert _codes("0.28.0", ANGELSLIM_DRAFT) == {"DF533"}
    assert _codes("0.34.0", ANGELSLIM_DRAFT) == set()
    assert _codes("0.8.5", {**ANGELSLIM_DRAFT, "head_dim": 128}) == set()


def test_the_page_size_finding_names_the_field_and_the_first_fixed_release() -> None:
    profile = load_engine("vllm").resolve("0.10.2")
    target = target_from_config(QWEN3_32B, "qwen3-32b")
    draft = {**QWEN3_32B, "num_key_value_heads": 4}
    (event,) = kv_geometry_events(profile, draft, target, "/transformer_layer_config")
    assert event.rule is rule_ids.DRAFT_KV_PAGE_SIZE_REFUSED
    assert event.location.pointer == "/transformer_layer_config/num_key_value_heads"
    assert "tensor-parallel size of 8" in event.message
    assert event.fix is not None and event.fix.startswith("use vLLM 0.11.0 or later")


def test_an_mla_target_is_not_compared() -> None:
    profile = load_engine("vllm").resolve("0.10.2")
    target = target_from_config({**QWEN3_32B, "kv_lora_rank": 512}, "mla")
    assert kv_geometry_events(profile, ANGELSLIM_DRAFT, target, "") == []
