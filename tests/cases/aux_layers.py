"""Rule cases — DF3xx: the auxiliary hidden-state layer ids."""

from __future__ import annotations

from tests import factory as f
from tests.cases.base import case, no_target, with_target
from tests.factory import Draft

case("nested-aux-not-read", {"DF301"}, {"DF302"}, verdict="drafts-garbage", oracle="01")(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("nested-aux-not-read-no-target", {"DF301"}, {"DF302", "DF303"})(
    no_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("nested-aux-read-unshifted-by-mrv1-0.22", {"DF301"}, {"DF302"}, engines=("vllm==0.22.0",))(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("nested-aux-mrv2-0.24-llama", {"DF301"}, engines=("vllm==0.24.0",))(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("top-level-aux-read", set(), {"DF301", "DF302"}, verdict="compatible", oracle="02")(
    with_target(f.speculators(aux=[1, 3, 6]))
)
case("aux-ignored-before-0.11.1", {"DF301"}, engines=("vllm==0.11.0",))(
    with_target(f.speculators(aux=[1, 3, 6]))
)
case("nested-aux-default-matches", {"DF302"}, {"DF301"}, verdict="compatible")(
    with_target(f.modelopt(aux=[1, 3, 4]))
)
case("aux-id-out-of-range", {"DF303"}, verdict="incompatible", oracle="06")(
    with_target(f.speculators(aux=[1, 3, 9]))
)
case("aux-id-zero-and-last", set(), {"DF303"}, verdict="compatible", oracle="06b")(
    with_target(f.speculators(aux=[0, 3, 8]))
)
case("aux-id-zero-0.17", {"DF303"}, engines=("vllm==0.17.0",))(
    with_target(f.speculators(aux=[0, 3, 7]))
)
case("four-top-level-ids", {"DF304"}, {"DF203"}, verdict="incompatible", oracle="05b")(
    with_target(f.speculators(aux=[1, 3, 5, 6], n_aux=4))
)


def _four_with_count() -> Draft:
    draft = f.speculators(aux=[1, 3, 5, 6], n_aux=4)
    draft.config["transformer_layer_config"]["num_aux_hidden_states"] = 4
    return draft


case("four-ids-with-count", set(), {"DF304", "DF305"}, verdict="compatible", oracle="05c")(
    with_target(_four_with_count())
)
case("four-nested-ids", {"DF305"}, {"DF304"}, verdict="incompatible", oracle="05")(
    with_target(f.specforge(nested_aux=[0, 2, 4, 5], n_aux=4))
)
case("duplicate-aux-ids", {"DF305", "DF306"}, verdict="incompatible", oracle="07")(
    with_target(f.speculators(aux=[2, 2, 5]))
)


def _both_aux(top: list[int], nested: list[int]) -> Draft:
    draft = f.specforge(nested_aux=nested)
    draft.config["eagle_aux_hidden_state_layer_ids"] = top
    return draft


case("aux-places-disagree", {"DF307"}, {"DF308"})(with_target(_both_aux([2, 4, 5], [0, 2, 5])))
case("aux-places-agree", set(), {"DF307", "DF308", "DF301"}, verdict="compatible")(
    with_target(_both_aux([2, 4, 7], [1, 3, 6]))
)
case("aux-copied-without-shift", {"DF308"}, verdict="degraded")(
    with_target(_both_aux([1, 3, 6], [1, 3, 6]))
)
