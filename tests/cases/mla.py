"""Rule cases — MLA drafts (Kimi-K2 style)."""

from __future__ import annotations

from pathlib import Path

from tests import factory as f
from tests.cases.base import Builder, case, with_target
from tests.factory import Draft


def _kimi_target(tmp: Path) -> Path:
    return f.llama_target(
        tmp / "target",
        architectures=["DeepseekV3ForCausalLM"],
        model_type="kimi_k2",
        n_routed_experts=8,
    )


def _mla(draft: Draft) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / "draft"), _kimi_target(tmp)

    return build


case(
    "mla-draft-clean",
    {"DF302"},
    {"DF201", "DF203", "DF205", "DF206", "DF101"},
    verdict="compatible",
    oracle="mla base",
)(_mla(f.mla_draft()))
case("mla-q-lora-null", {"DF112"}, verdict="incompatible", oracle="mla a")(
    _mla(f.mla_draft(q_lora=None))
)


def _mla_model_type(model_type: str) -> Draft:
    draft = f.mla_draft()
    draft.config["model_type"] = model_type
    return draft


case("mla-model-type-deepseek-v3", {"DF101"}, verdict="incompatible", oracle="mla g")(
    _mla(_mla_model_type("deepseek_v3"))
)
case("mla-missing-kv-b", {"DF205"}, {"DF201"}, verdict="drafts-garbage", oracle="mla b")(
    _mla(f.mla_draft().drop("midlayer.self_attn.kv_b_proj.weight"))
)
case("mla-q-b-oversized", {"DF204"}, {"DF203", "DF212"}, verdict="drafts-garbage", oracle="mla c")(
    _mla(f.mla_draft().reshape("midlayer.self_attn.q_b_proj.weight", (f.HEADS * 24 + 8, 48)))
)


def _mla_rank(key: str, value: int) -> Draft:
    draft = f.mla_draft()
    draft.config[key] = value
    return draft


# `kv_lora_rank` written 24 beside tensors trained with 32: kv_a rows (rank + rope), the
# kv_a norm and kv_b's columns all follow it; one finding at the key. kv_b's columns are
# too wide for a loader that narrows only rows: the engine refuses.
case(
    "mla-kv-lora-rank-contradicts-tensors",
    {"DF212"},
    {"DF203", "DF204"},
    verdict="incompatible",
    oracle="mla1",
)(_mla(_mla_rank("kv_lora_rank", 24)))
case(
    "mla-v-head-dim-contradicts-tensors",
    {"DF212"},
    {"DF203", "DF204"},
    verdict="drafts-garbage",
    oracle="mla2",
)(_mla(_mla_rank("v_head_dim", 8)))


def _gelu() -> Draft:
    draft = f.specforge()
    draft.config["hidden_act"] = "gelu"
    return draft


case("gelu-activation", {"DF115"}, verdict="incompatible", oracle="mla g7")(with_target(_gelu()))
