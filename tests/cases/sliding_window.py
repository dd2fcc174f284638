"""Rule cases — DF130: a draft with a sliding attention window."""

from __future__ import annotations

from tests import factory as f
from tests.cases.base import case, with_target
from tests.factory import Draft


def _qwen3_sliding() -> Draft:
    draft = f.speculators_sliding()
    draft.config["transformer_layer_config"]["model_type"] = "qwen3"
    for norm in ("q_norm", "k_norm"):
        name = f"layers.0.self_attn.{norm}.weight"
        draft.add(name, "BF16", (f.HEAD_DIM,), f.norm_bytes(f.HEAD_DIM))
    return draft


case("sliding-window-qwen3-0.25", {"DF130"}, engines=("vllm==0.25.0",))(
    with_target(_qwen3_sliding())
)
case("sliding-window-qwen3-0.26", set(), {"DF130"}, engines=("vllm==0.26.0",))(
    with_target(_qwen3_sliding())
)
case("sliding-window-llama-0.10.1", {"DF130"}, engines=("vllm==0.10.1",))(
    with_target(f.speculators_sliding())
)
case("sliding-window-llama-0.10.2", set(), {"DF130"}, engines=("vllm==0.10.2",))(
    with_target(f.speculators_sliding())
)
case("sliding-window-0.34", set(), {"DF130"}, verdict="compatible")(
    with_target(f.speculators_sliding())
)
case("sliding-window-sglang", {"DF130"}, engines=("sglang==0.5.23",))(
    with_target(f.with_sliding_window(f.specforge()))
)
case("sliding-window-trtllm", {"DF130"}, engines=("trtllm==1.2.0",))(
    with_target(f.with_sliding_window(f.specforge()))
)
case("no-sliding-window-sglang", set(), {"DF130"}, engines=("sglang==0.5.23",))(
    with_target(f.specforge())
)
case("no-sliding-window-trtllm", set(), {"DF130"}, engines=("trtllm==1.2.0",))(
    with_target(f.specforge())
)
case("sliding-layer-types-without-window", set(), {"DF130"}, engines=("trtllm==1.2.0",))(
    with_target(f.with_sliding_window(f.specforge(), window=0))
)
