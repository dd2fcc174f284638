"""Rule cases — DF1xx: the draft's config (architectures, method, fields engines read)."""

from __future__ import annotations

from tests import factory as f
from tests.cases.base import case, with_target
from tests.factory import Draft


def _arch(arch: list[str] | None) -> Draft:
    draft = f.specforge()
    if arch is None:
        del draft.config["architectures"]
    else:
        draft.config["architectures"] = arch
    return draft


case("plain-config-eagle3draftmodel", {"DF101"}, {"DF102"}, verdict="incompatible", oracle="15c")(
    with_target(_arch(["Eagle3DraftModel"]))
)
case("llamaforcausallmeagle3-before-0.10.2", {"DF101"}, engines=("vllm==0.10.1",))(
    with_target(f.specforge(nested_aux=None))
)
case("llamaforcausallmeagle3-on-0.10.2", set(), {"DF101"}, engines=("vllm==0.10.2",))(
    with_target(f.specforge())
)
case("official-llamaforcausallm", set(), {"DF101", "DF107"}, verdict="compatible", oracle="15")(
    with_target(_arch(["LlamaForCausalLM"]))
)
case("qwen3-draft-before-0.24", {"DF101"}, engines=("vllm==0.22.0",))(
    with_target(_arch(["Qwen3ForCausalLM"]))
)
case("no-architectures", {"DF102"}, {"DF101"}, verdict="incompatible", oracle="15d")(
    with_target(_arch(None))
)


def _speculators_type(kind: str) -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["speculators_model_type"] = kind
    return draft


case("speculators-type-eagle", {"DF103"}, {"DF105"}, verdict="incompatible")(
    with_target(_speculators_type("eagle"))
)


def _no_proposals() -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["speculators_config"]["proposal_methods"] = []
    return draft


case("speculators-no-proposal-methods", {"DF104"}, {"DF103"}, verdict="compatible")(
    with_target(_no_proposals())
)
case("speculators-before-0.10.1", {"DF105"}, {"DF103"}, engines=("vllm==0.10.0",))(
    with_target(f.speculators(aux=[2, 4, 5]))
)


def _layer_type(kind: str) -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["transformer_layer_config"]["model_type"] = kind
    return draft


case("speculators-mistral-layer", {"DF106"}, {"DF101"}, verdict="incompatible")(
    with_target(_layer_type("mistral"))
)
case("speculators-mistral-layer-0.22", set(), {"DF106"}, engines=("vllm==0.22.0",))(
    with_target(_layer_type("mistral"))
)
case("eagle3-served-as-eagle", {"DF107"}, method="eagle", verdict="incompatible", oracle="19g")(
    with_target(f.specforge())
)
case("dir-name-without-method", {"DF108"}, verdict="compatible")(
    with_target(f.specforge(), name="mydraft")
)
case(
    "dir-name-auto-method",
    {"DF114"},
    {"DF107", "DF108"},
    method="auto",
    verdict="drafts-garbage",
    oracle="20",
)(with_target(f.specforge(), name="mydraft"))
case("dir-name-auto-method-0.14", {"DF107"}, {"DF114"}, method="auto", engines=("vllm==0.14.0",))(
    with_target(f.specforge(), name="mydraft")
)
case(
    "dir-name-auto-eagle3",
    set(),
    {"DF108", "DF107"},
    method="auto",
    verdict="compatible",
    oracle="20b",
)(with_target(f.specforge(), name="my-eagle3-draft"))
case("eagle3-dir-name-old-vllm", {"DF107"}, method="auto", engines=("vllm==0.10.1",))(
    with_target(f.specforge(), name="EAGLE3-tiny")
)
case("eagle3-before-0.8.5", {"DF109"}, engines=("vllm==0.8.4",))(with_target(f.specforge()))


def _no_draft_vocab() -> Draft:
    draft = f.specforge()
    del draft.config["draft_vocab_size"]
    draft.drop("d2t", "t2d").reshape("lm_head.weight", (f.VOCAB, f.H))
    return draft


case("missing-draft-vocab-size-0.10.2", {"DF110"}, engines=("vllm==0.10.2",))(
    with_target(_no_draft_vocab())
)
case("missing-draft-vocab-size-0.34", set(), {"DF110"}, verdict="compatible", oracle="08b")(
    with_target(_no_draft_vocab())
)


def _speculators_model_type() -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["model_type"] = "llama"
    return draft


case("speculators-with-model-type", {"DF111"}, {"DF103"}, verdict="incompatible")(
    with_target(_speculators_model_type())
)


def _no_layer_config() -> Draft:
    draft = f.speculators(aux=[2, 4, 5])
    del draft.config["transformer_layer_config"]
    return draft


case("speculators-no-layer-config", {"DF112"}, verdict="incompatible")(
    with_target(_no_layer_config())
)


def _null_target_hidden() -> Draft:
    draft = f.specforge()
    draft.config["target_hidden_size"] = None
    return draft


case("plain-null-target-hidden-size", {"DF112"}, verdict="incompatible")(
    with_target(_null_target_hidden())
)


def _unknown_method() -> Draft:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        **f.llama_layer_config(),
    }
    return Draft(config, f.eagle3_layer_tensors("layers.0.", first=False))


case("method-unknown", {"DF113"}, verdict="incompatible")(with_target(_unknown_method()))
case("method-unknown-explicit", set(), {"DF113"}, method="eagle3")(with_target(_unknown_method()))


def _retyped(draft: Draft, pointer: str, value: object) -> Draft:
    """`draft` with the config value at `pointer` (e.g. `/transformer_layer_config/x`) set."""
    *parents, key = pointer.strip("/").split("/")
    node = draft.config
    for part in parents:
        node = node[part]
    node[key] = value
    return draft


case("hidden-size-string", {"DF118"}, {"DF119"}, verdict="incompatible")(
    with_target(
        _retyped(f.speculators(aux=[2, 4, 5]), "/transformer_layer_config/hidden_size", "64")
    )
)
case("aux-ids-number", {"DF118"}, verdict="incompatible")(
    with_target(_retyped(f.speculators(), "/eagle_aux_hidden_state_layer_ids", 3))
)
case("hidden-size-float", {"DF118"}, verdict="incompatible")(
    with_target(_retyped(f.specforge(), "/hidden_size", 64.0))
)
case("flag-as-string", {"DF119"}, {"DF118"}, verdict="drafts-garbage")(
    with_target(_retyped(f.speculators(aux=[2, 4, 5]), "/norm_before_residual", "false"))
)
case("aux-ids-null", set(), {"DF118", "DF119"}, verdict="compatible")(
    with_target(_retyped(f.speculators(aux=[2, 4, 5]), "/eagle_aux_hidden_state_layer_ids", None))
)
case("target-layers-string", {"DF118"}, verdict="incompatible")(
    with_target(f.specforge(), num_hidden_layers="8")
)
