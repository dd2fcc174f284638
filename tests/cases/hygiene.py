"""Rule cases — DF9xx: hygiene (dtypes, placeholder values, local paths)."""

from __future__ import annotations

from tests import factory as f
from tests.cases.base import case, with_target
from tests.cases.config import _arch
from tests.factory import Draft


def _ones_norms() -> Draft:
    draft = f.speculators(aux=[2, 4, 5], variant="converted")
    for name in ("input_layernorm", "post_attention_layernorm", "hidden_norm"):
        draft.add(f"layers.0.{name}.weight", "BF16", (f.H,), f.norm_bytes(f.H, 1.0))
    return draft


case("untrained-layer", {"DF901"}, verdict="degraded")(with_target(_ones_norms()))


def _f32() -> Draft:
    draft = f.specforge()
    draft.config["torch_dtype"] = "float32"
    for name, tensor in list(draft.tensors.items()):
        if tensor.dtype == "BF16":
            draft.tensors[name] = f.Tensor("F32", tensor.shape)
    return draft


case("float32-weights", {"DF902"}, {"DF903"})(with_target(_f32()))
case("config-dtype-mismatch", {"DF903"}, {"DF902"})(with_target(f.eagle_official()))


def _local_verifier() -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["speculators_config"]["verifier"]["name_or_path"] = "/home/me/models/llama"
    return draft


case("local-verifier-path", {"DF904"}, verdict="compatible")(with_target(_local_verifier()))
case("hub-verifier-path", set(), {"DF904"})(with_target(f.speculators(aux=[2, 4, 5])))
case("unknown-convention", {"DF905"}, {"DF113"}, method="eagle3")(
    with_target(_arch(["MyEagle3Head"]))
)
