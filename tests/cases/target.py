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


# DF507: the verifier a draft records next to what is known of the target. The targets are
# named the ways users have them: a Hugging Face cache folder, a `--local-dir` download, a
# plain folder; the drafts record what their producers write.


def _kimi_k25_target(path: Path) -> Path:
    """A tiny Kimi-K2.5-shaped target: multimodal, its language model under `text_config`
    (the Kimi-K2 shapes)."""
    f.kimi_mla_target(path)
    text_config = json.loads((path / "config.json").read_text())
    multimodal = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": text_config,
    }
    (path / "config.json").write_text(json.dumps(multimodal, indent=2))
    return path


def _speculators_for(name: str | None, archs: list[str], version: str = "0.7.0") -> Draft:
    """A speculators draft (trained with `version`) recording `name` and `archs` as its
    verifier; `norm_before_residual: false`, so that every engine can serve it."""
    draft = f.records_verifier(f.speculators(norm_before_residual=False), name, archs)
    draft.config["speculators_version"] = version
    return draft


def _k2_draft_next_to_k25(tmp: Path) -> tuple[Path, Path | None]:
    """The demo's draft, at small scale: speculators 0.5.0 training recorded the local path
    of Kimi-K2-Instruct; the target is a folder named after Kimi-K2.5."""
    draft = _speculators_for("/root/models/Kimi-K2-Instruct", ["DeepseekV3ForCausalLM"], "0.5.0")
    return draft.write(tmp / "draft"), _kimi_k25_target(tmp / "Kimi-K2.5")


case("verifier-kimi-k2-draft-on-k2.5", {"DF507"}, verdict="drafts-garbage")(_k2_draft_next_to_k25)


def _qwen_draft_on_cached_llama(tmp: Path) -> tuple[Path, Path | None]:
    """A draft trained for Qwen3-8B next to Llama-3.1-8B-Instruct from the Hub cache."""
    from tests.hub_layouts import cache_snapshot

    draft = _speculators_for("Qwen/Qwen3-8B", ["Qwen3ForCausalLM"])
    plain = f.llama_target(tmp / "plain")
    target = cache_snapshot(plain, tmp / "hub", "meta-llama/Llama-3.1-8B-Instruct")
    return draft.write(tmp / "draft"), target


case("verifier-qwen-draft-on-cached-llama", {"DF507"}, verdict="drafts-garbage")(
    _qwen_draft_on_cached_llama
)
case(
    "verifier-declared-for-target",
    {"DF507"},
    verdict="compatible",
    draft_is_for_target=True,
)(_qwen_draft_on_cached_llama)


def _base_draft_on_instruct_download(tmp: Path) -> tuple[Path, Path | None]:
    """A draft trained for the base model next to the instruct model (`--local-dir`)."""
    from tests.hub_layouts import local_dir_download

    draft = _speculators_for("meta-llama/Llama-3.1-8B", ["LlamaForCausalLM"])
    plain = f.llama_target(tmp / "plain")
    target = local_dir_download(plain, tmp / "Llama-3.1-8B-Instruct")
    return draft.write(tmp / "draft"), target


case("verifier-base-draft-on-instruct", {"DF507"}, verdict="drafts-garbage")(
    _base_draft_on_instruct_download
)


def _k2_draft_on_0905(tmp: Path) -> tuple[Path, Path | None]:
    """A draft for Kimi-K2-Instruct next to its dated revision Kimi-K2-Instruct-0905."""
    from tests.hub_layouts import cache_snapshot

    draft = _speculators_for("moonshotai/Kimi-K2-Instruct", ["DeepseekV3ForCausalLM"])
    plain = f.kimi_mla_target(tmp / "plain")
    target = cache_snapshot(plain, tmp / "hub", "moonshotai/Kimi-K2-Instruct-0905")
    return draft.write(tmp / "draft"), target


case("verifier-dated-revision", {"DF507"}, verdict="degraded")(_k2_draft_on_0905)


def _architecture_only(tmp: Path) -> tuple[Path, Path | None]:
    """Training since speculators 0.7.0 records the verifier's own architectures; the path
    says nothing, the class does."""
    draft = _speculators_for("/model/from_s3", ["Qwen3ForCausalLM"])
    return draft.write(tmp / "draft"), f.llama_target(tmp / "target")


case("verifier-architecture-differs", {"DF507"}, verdict="drafts-garbage")(_architecture_only)


def _nemo_for_llama(tmp: Path) -> tuple[Path, Path | None]:
    """NeMo Automodel copies the target's text config (`_name_or_path`, `model_type`): a
    draft trained for Llama-3.1-8B-Instruct next to Qwen3-8B."""
    draft = f.nemo_automodel()
    draft.config["_name_or_path"] = "meta-llama/Llama-3.1-8B-Instruct"
    target = f.llama_target(
        tmp / "Qwen3-8B", architectures=["Qwen3ForCausalLM"], model_type="qwen3"
    )
    return draft.write(tmp / "draft"), target


case("verifier-nemo-draft-for-llama", {"DF507"})(_nemo_for_llama)


def _angelslim_for_qwen(tmp: Path) -> tuple[Path, Path | None]:
    draft = f.specforge()
    draft.config["architectures"] = ["Eagle3LlamaForCausalLM"]
    draft.config["target_model_type"] = "qwen3"
    return draft.write(tmp / "draft"), f.llama_target(tmp / "target")


case("verifier-angelslim-target-model-type", {"DF507"}, verdict="drafts-garbage")(
    _angelslim_for_qwen
)


def _quantized_copy(tmp: Path) -> tuple[Path, Path | None]:
    """Qwen3-8B-FP8 holds Qwen3-8B's weights, rounded: the same model."""
    from tests.hub_layouts import cache_snapshot

    draft = _speculators_for("Qwen/Qwen3-8B", ["Qwen3ForCausalLM"])
    plain = f.llama_target(tmp / "plain", architectures=["Qwen3ForCausalLM"], model_type="qwen3")
    target = cache_snapshot(plain, tmp / "hub", "Qwen/Qwen3-8B-FP8")
    return draft.write(tmp / "draft"), target


case("verifier-quantized-copy", set(), {"DF507"}, verdict="compatible")(_quantized_copy)


def _renamed(tmp: Path) -> tuple[Path, Path | None]:
    """Meta renamed `Meta-Llama-3.1-8B-Instruct` to `Llama-3.1-8B-Instruct`; another owner's
    copy, named in another case, is still the same model."""
    from tests.hub_layouts import cache_snapshot

    draft = _speculators_for("meta-llama/Meta-Llama-3.1-8B-Instruct", ["LlamaForCausalLM"])
    plain = f.llama_target(tmp / "plain")
    target = cache_snapshot(plain, tmp / "hub", "unsloth/llama-3.1-8b-instruct")
    return draft.write(tmp / "draft"), target


case("verifier-renamed-repository", set(), {"DF507"}, verdict="compatible")(_renamed)


def _says_nothing(tmp: Path) -> tuple[Path, Path | None]:
    """A local path that says nothing (`/model/from_s3`, recorded by training before 0.7.0,
    whose architectures are not the verifier's): nothing is concluded."""
    draft = _speculators_for("/model/from_s3", ["LlamaForCausalLM"], "0.5.0")
    return draft.write(tmp / "draft"), _kimi_k25_target(tmp / "Kimi-K2.5")


case("verifier-path-says-nothing", set(), {"DF507"})(_says_nothing)


def _abbreviated_folder(tmp: Path) -> tuple[Path, Path | None]:
    """A folder called `kimi-k2` may hold Kimi-K2-Instruct: not a mismatch."""
    draft = _speculators_for("moonshotai/Kimi-K2-Instruct", ["DeepseekV3ForCausalLM"])
    return draft.write(tmp / "draft"), f.kimi_mla_target(tmp / "kimi-k2")


case("verifier-abbreviated-folder", set(), {"DF507"}, verdict="compatible")(_abbreviated_folder)
