"""Rule cases — DF6xx: norm flags and norm tensors."""

from __future__ import annotations

from tests import factory as f
from tests.cases.base import case, with_target
from tests.factory import Draft


def _norm_before_fc() -> Draft:
    draft = f.specforge()
    draft.config["norm_before_fc"] = True
    return draft.add("input_norm.weight", "BF16", (192,), f.norm_bytes(192))


case("norm-before-fc-0.17", {"DF601"}, engines=("vllm==0.17.0",))(with_target(_norm_before_fc()))
case("norm-before-fc-0.34", set(), {"DF601", "DF206", "DF207"}, verdict="compatible")(
    with_target(_norm_before_fc())
)


def _input_norm_without_flag() -> Draft:
    return f.specforge().add("input_norm.weight", "BF16", (192,), f.norm_bytes(192))


case("input-norm-without-flag", {"DF207"}, {"DF201"}, verdict="drafts-garbage", oracle="18b")(
    with_target(_input_norm_without_flag())
)


def _norm_flag_without_tensor() -> Draft:
    draft = f.specforge()
    draft.config["norm_before_fc"] = True
    return draft


case("norm-before-fc-without-tensor", {"DF206"}, verdict="drafts-garbage", oracle="18")(
    with_target(_norm_flag_without_tensor())
)
case("norm-before-residual-unwritten", {"DF602"})(
    with_target(f.speculators(aux=[2, 4, 5], norm_before_residual=None))
)
case("norm-before-residual-written", set(), {"DF602"})(
    with_target(f.speculators(aux=[2, 4, 5], norm_before_residual=False))
)


def _specforge_norm_output() -> Draft:
    draft = f.specforge()
    draft.config["norm_output"] = True
    return draft


case("specforge-norm-output", {"DF603"})(with_target(_specforge_norm_output()))
case("speculators-norm-output", set(), {"DF603"})(with_target(f.speculators(aux=[2, 4, 5])))
