"""Rule cases — DF310: the order of the auxiliary layer ids."""

from __future__ import annotations

from tests import factory as f
from tests.cases.base import case, with_target
from tests.cases.config import _arch

case("aux-ids-not-ascending", {"DF310"}, {"DF301", "DF306"}, verdict="drafts-garbage")(
    with_target(f.speculators(aux=[6, 1, 3]))
)
case("aux-ids-not-ascending-vllm-0.16", {"DF310"}, {"DF301"}, engines=("vllm==0.16.0",))(
    with_target(f.speculators(aux=[6, 1, 3]))
)
case("aux-ids-ascending", set(), {"DF310", "DF301"}, verdict="compatible")(
    with_target(f.speculators(aux=[1, 3, 6]))
)
case("aux-ids-not-ascending-other-layers", {"DF301"}, {"DF310"}, engines=("vllm==0.11.0",))(
    with_target(f.speculators(aux=[6, 1, 3]))
)
case(
    "aux-ids-not-ascending-sglang",
    {"DF310"},
    {"DF301"},
    engines=("sglang==0.5.23",),
    verdict="drafts-garbage",
)(with_target(f.specforge(nested_aux=[5, 0, 2])))
case(
    "aux-ids-not-ascending-trtllm",
    {"DF310", "DF302"},
    {"DF301"},
    engines=("trtllm==1.4.0rc0",),
    verdict="drafts-garbage",
)(with_target(f.specforge(nested_aux=[4, 1, 3])))


# No `architectures`: SGLang and TensorRT-LLM's two-model path fail on it too, and the
# checks against the target still run (SGLang's context-length refusal is not hidden).
case(
    "sglang-no-architectures",
    {"DF102", "DF506"},
    {"DF101"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
)(with_target(_arch(None), max_position_embeddings=8192))
case("sglang-empty-architectures", {"DF102"}, {"DF101"}, engines=("sglang==0.5.23",))(
    with_target(_arch([]))
)
case(
    "trtllm-no-architectures-two-model",
    {"DF102"},
    {"DF101"},
    engines=("trtllm==0.20.0",),
    verdict="incompatible",
)(with_target(_arch(None)))
case("trtllm-no-architectures-one-model", set(), {"DF102"}, engines=("trtllm==1.4.0rc0",))(
    with_target(_arch(None))
)
# Before 1.1 the two-model lookup only prefixes "EAGLE3" (no "Eagle3" strip): the SpecForge
# name becomes EAGLE3LlamaForCausalLMEagle3 and is unknown; LlamaForCausalLM resolves.
case(
    "trtllm-0.20-eagle3-suffix-unknown",
    {"DF101"},
    engines=("trtllm==0.20.0",),
    verdict="incompatible",
)(with_target(_arch(["LlamaForCausalLMEagle3"])))
case("trtllm-0.20-llamaforcausallm", set(), {"DF101"}, engines=("trtllm==0.20.0",))(
    with_target(_arch(["LlamaForCausalLM"]))
)
