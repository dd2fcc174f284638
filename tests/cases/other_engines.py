"""Rule cases — SGLang and TensorRT-LLM."""

from __future__ import annotations

from tests import factory as f
from tests.cases.base import case, with_target
from tests.factory import Draft

# Expected behaviour follows the engines' citations as recorded in engines/sglang/data.toml and
# engines/trtllm/data.toml (see dev/sglang-trtllm-procedure.md).

SG_NEW = {"DF116", "DF209", "DF210", "DF309", "DF506", "DF301"}

case(
    "sglang-specforge-clean",
    set(),
    SG_NEW | {"DF101", "DF105", "DF205", "DF206"},
    engines=("sglang==0.5.23",),
    verdict="compatible",
)(with_target(f.specforge(nested_aux=[1, 3, 6])))
case("sglang-speculators-format", {"DF105"}, engines=("sglang==0.5.23",), verdict="incompatible")(
    with_target(f.speculators())
)
case(
    "sglang-official-llamaforcausallm",
    {"DF101"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
)(with_target(f.eagle_official()))


def _two_layers(naming: str) -> Draft:
    draft = f.specforge()
    draft.config["num_hidden_layers"] = 2
    draft.tensors = f.eagle3_tensors(naming=naming, layers=2)
    return draft


case("sglang-multi-layer-before-0.5.12", {"DF116"}, engines=("sglang==0.5.10",))(
    with_target(_two_layers("layers"))
)
case(
    "sglang-multi-layer-0.5.12",
    set(),
    {"DF116", "DF210", "DF205", "DF201"},
    engines=("sglang==0.5.12",),
)(with_target(_two_layers("layers")))
case(
    "sglang-multi-layer-midlayer-names-0.5.12",
    {"DF210"},
    {"DF116"},
    engines=("sglang==0.5.12",),
    verdict="drafts-garbage",
)(with_target(_two_layers("midlayer")))


def _full_vocab_without_d2t() -> Draft:
    draft = f.specforge()
    draft.config["draft_vocab_size"] = f.VOCAB
    draft.tensors = f.eagle3_tensors(draft_vocab=f.VOCAB)
    return draft


case(
    "sglang-d2t-required-before-0.4.9",
    {"DF209"},
    {"DF401"},
    engines=("sglang==0.4.8",),
    verdict="incompatible",
)(with_target(_full_vocab_without_d2t()))
case("sglang-d2t-optional-0.4.9", set(), {"DF209"}, engines=("sglang==0.4.9",))(
    with_target(_full_vocab_without_d2t())
)
case(
    "sglang-layers-names-before-0.5.12",
    {"DF210"},
    {"DF201"},
    engines=("sglang==0.5.6",),
    verdict="drafts-garbage",
)(with_target(f.modelopt()))
case(
    "sglang-layers-names-before-0.4.9-stacked",
    {"DF201", "DF210"},
    engines=("sglang==0.4.8",),
    verdict="incompatible",
)(with_target(f.modelopt()))
case("sglang-cuda-graph-ids", {"DF309"}, engines=("sglang==0.5.6",), verdict="degraded")(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("sglang-cuda-graph-fixed-0.5.11", set(), {"DF309", "DF301"}, engines=("sglang==0.5.11",))(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case("sglang-aux-ids-before-0.4.9", {"DF301"}, engines=("sglang==0.4.8",))(
    with_target(f.specforge(nested_aux=[1, 3, 6]))
)
case(
    "sglang-draft-context-refused",
    {"DF506"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
)(with_target(f.specforge(), max_position_embeddings=8192))
case(
    "sglang-deepseek-ids-before-0.5.13",
    {"DF301"},
    engines=("sglang==0.5.12",),
)(with_target(f.specforge(nested_aux=[2, 4, 5]), architectures=["DeepseekV3ForCausalLM"]))
case(
    "sglang-deepseek-ids-0.5.13",
    set(),
    {"DF301"},
    engines=("sglang==0.5.13",),
)(with_target(f.specforge(nested_aux=[2, 4, 5]), architectures=["DeepseekV3ForCausalLM"]))
case(
    "sglang-mla-clean",
    set(),
    {"DF101", "DF201", "DF203", "DF205", "DF206", "DF210"},
    engines=("sglang==0.5.23",),
    verdict="compatible",
)(with_target(f.mla_draft()))
case("sglang-mla-before-0.5.12", {"DF101"}, engines=("sglang==0.5.11",), verdict="incompatible")(
    with_target(f.mla_draft())
)

TRT_NEW = {"DF209", "DF210", "DF101", "DF203", "DF205"}

case(
    "trtllm-default-ids-clean",
    set(),
    TRT_NEW | {"DF301"},
    engines=("trtllm==1.4.0rc0",),
    verdict="compatible",
)(with_target(f.specforge()))
case(
    "trtllm-nested-ids-never-read",
    {"DF301"},
    {"DF302"},
    engines=("trtllm==1.4.0rc0",),
    verdict="drafts-garbage",
)(with_target(f.specforge(nested_aux=[1, 3, 6])))
case(
    "trtllm-official-llamaforcausallm",
    set(),
    {"DF101"},
    engines=("trtllm==1.2.0rc2",),
    verdict="compatible",
)(with_target(f.eagle_official()))
case(
    "trtllm-d2t-missing",
    {"DF209"},
    {"DF401"},
    engines=("trtllm==1.4.0rc0",),
    verdict="incompatible",
)(with_target(f.specforge(d2t=False)))
case(
    "trtllm-model-prefix",
    {"DF202"},
    {"DF201", "DF210"},
    engines=("trtllm==1.4.0rc0",),
    verdict="incompatible",
)(with_target(f.specforge().prefix_all("model.")))
case("trtllm-eagle1", {"DF109"}, engines=("trtllm==1.4.0rc0",), verdict="incompatible")(
    with_target(f.eagle1())
)
case(
    "trtllm-layers-names-before-remap",
    {"DF210"},
    engines=("trtllm==1.2.0rc2",),
    verdict="drafts-garbage",
)(with_target(f.modelopt()))


def _tied() -> Draft:
    draft = f.specforge()
    draft.config["tie_word_embeddings"] = True
    return draft


case(
    "sglang-tied-head-reduced-vocab",
    {"DF402"},
    engines=("sglang==0.5.23",),
    verdict="drafts-garbage",
)(with_target(_tied()))
case(
    "sglang-draft-context-silent-before-0.5.1",
    {"DF504"},
    {"DF506"},
    engines=("sglang==0.4.10.post2",),
    verdict="degraded",
)(with_target(f.specforge(), max_position_embeddings=8192))


def _nextn(value: int) -> Draft:
    draft = f.specforge()
    draft.config["num_nextn_predict_layers"] = value
    return draft


case(
    "sglang-nextn-zero-before-0.5.13",
    {"DF117"},
    engines=("sglang==0.5.12",),
    verdict="incompatible",
)(with_target(_nextn(0)))
case("sglang-nextn-zero-0.5.13", set(), {"DF117"}, engines=("sglang==0.5.13",))(
    with_target(_nextn(0))
)
