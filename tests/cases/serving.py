"""Rule cases — Serving settings (DF55x): the launch judged with the draft."""

from __future__ import annotations

from pathlib import Path

from tests import factory as f
from tests.cases.base import Builder, case, with_target
from tests.cases.tensors import _AWQ
from tests.factory import Draft

_SGLANG_LAUNCH = (
    "python -m sglang.launch_server --model-path T --tp 8 --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path D"
)
_VLLM_SPEC = '{"method": "eagle3", "model": "D", "num_speculative_tokens": 3%s}'


def _vllm_launch(flags: str, draft_tp: int | None = None) -> str:
    extra = f', "draft_tensor_parallel_size": {draft_tp}' if draft_tp is not None else ""
    return f"vllm serve T {flags} --speculative-config '{_VLLM_SPEC % extra}'"


def _mla_target(draft: Draft) -> Builder:
    """A tiny DeepSeek-V3 / Kimi-K2-shaped target config (MLA: `kv_lora_rank`); a
    speculators draft records that it was trained for Kimi-K2."""
    if "speculators_config" in draft.config:
        f.records_verifier(draft, "moonshotai/Kimi-K2-Instruct", ["DeepseekV3ForCausalLM"])

    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / "draft"), f.kimi_mla_target(tmp / "target")

    return build


case(
    "serve-sglang-pp-eagle3",
    {"DF550"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
    serve_args=_SGLANG_LAUNCH + " --pp-size 2",
)(with_target(f.specforge()))
case(
    "serve-sglang-one-stage",
    set(),
    {"DF550", "DF553", "DF554"},
    engines=("sglang==0.5.23",),
    verdict="compatible",
    serve_args=_SGLANG_LAUNCH + " --pp-size 1",
)(with_target(f.specforge()))
case(
    "serve-vllm-pp-drops-aux",
    {"DF550"},
    engines=("vllm==0.20.0",),
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(with_target(f.speculators()))
case(
    "serve-vllm-pp-carried-for-llama",
    set(),
    {"DF550", "DF551", "DF552"},
    verdict="compatible",
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(with_target(f.speculators()))
case(
    "serve-vllm-draft-tp-one",
    {"DF551"},
    verdict="compatible",
    serve_args=_vllm_launch("-tp 8", draft_tp=1),
)(with_target(f.speculators()))
case(
    "serve-vllm-draft-tp-two",
    {"DF552"},
    {"DF551"},
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 8", draft_tp=2),
)(with_target(f.speculators()))
case(
    "serve-vllm-unknown-method",
    {"DF559"},
    verdict="incompatible",
    serve_args="vllm serve T -tp 8 --speculative-config "
    '\'{"method": "eagle-3", "model": "D", "num_speculative_tokens": 3}\'',
)(with_target(f.speculators()))
case(
    "serve-vllm-known-method",
    set(),
    {"DF559"},
    verdict="compatible",
    serve_args=_vllm_launch("-tp 8"),
)(with_target(f.speculators()))
case(
    "serve-sglang-mla-backend",
    {"DF553"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
    serve_args=_SGLANG_LAUNCH + " --attention-backend trtllm_mla",
)(_mla_target(f.specforge()))
case(
    "serve-sglang-mla-backend-draft-own",
    set(),
    {"DF553"},
    engines=("sglang==0.5.23",),
    serve_args=_SGLANG_LAUNCH
    + " --attention-backend trtllm_mla --speculative-draft-attention-backend trtllm_mha",
)(_mla_target(f.specforge()))
case(
    "serve-sglang-quantization-flag",
    {"DF554"},
    {"DF515"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
    serve_args=_SGLANG_LAUNCH + " --quantization awq",
)(with_target(f.specforge(), quantization_config=_AWQ))
case(
    "serve-sglang-quantization-opt-out",
    set(),
    {"DF515", "DF554"},
    engines=("sglang==0.5.23",),
    serve_args=_SGLANG_LAUNCH
    + " --quantization awq --speculative-draft-model-quantization unquant",
)(with_target(f.specforge(), quantization_config=_AWQ))

# vLLM before 0.34.0: pipeline stages and a forced MLA-only backend, per release boundary.
case(
    "serve-vllm-pp-v1-runner-until-0.30",
    {"DF550"},
    engines=("vllm==0.29.0",),
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(with_target(f.speculators()))
case(
    "serve-vllm-pp-carried-from-0.30",
    set(),
    {"DF550"},
    engines=("vllm==0.30.0",),
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(with_target(f.speculators()))
case(
    "serve-vllm-pp-refused-from-0.30",
    {"DF550"},
    engines=("vllm==0.30.0",),
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 4 -pp 2"),
)(_mla_target(f.speculators()))
case(
    "serve-vllm-mla-backend-env",
    {"DF553"},
    engines=("vllm==0.12.0",),
    verdict="incompatible",
    serve_args="VLLM_ATTENTION_BACKEND=FLASHMLA " + _vllm_launch("-tp 8"),
)(_mla_target(f.speculators()))
case(
    "serve-vllm-mla-backend-env-not-read",
    set(),
    {"DF553"},
    engines=("vllm==0.16.0",),
    serve_args="VLLM_ATTENTION_BACKEND=FLASHMLA " + _vllm_launch("-tp 8"),
)(_mla_target(f.speculators()))
case(
    "serve-vllm-mla-backend-v1-runner-own-choice",
    set(),
    {"DF553"},
    engines=("vllm==0.21.0",),
    serve_args=_vllm_launch("-tp 8 --attention-backend FLASHMLA"),
)(_mla_target(f.speculators()))
case(
    "serve-vllm-mla-backend-v2-runner",
    {"DF553"},
    engines=("vllm==0.29.0",),
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 8 --attention-backend FLASHMLA"),
)(_mla_target(f.speculators()))


# Configs that name code of their own (`auto_map.AutoConfig`): the launch needs
# --trust-remote-code where the release has no class for the model type.
_CUSTOM_CODE = {"AutoConfig": "configuration_custom.CustomConfig"}


def _kimi_k25(draft: Draft) -> Builder:
    """`draft` trained for Kimi-K2.5 (a speculators draft records it as its verifier), next
    to a Kimi-K2.5 target."""
    if "speculators_config" in draft.config:
        f.records_verifier(draft, "moonshotai/Kimi-K2.5", ["KimiK25ForConditionalGeneration"])

    def build(tmp: Path) -> tuple[Path, Path | None]:
        return draft.write(tmp / "draft"), f.kimi_k25_target(tmp / "target")

    return build


def _custom_draft() -> Draft:
    """A Llama-style EAGLE-3 draft whose config names a model type of its own, with code."""
    draft = f.specforge()
    draft.config.update(model_type="llama_custom", auto_map=dict(_CUSTOM_CODE))
    return draft


case(
    "serve-vllm-kimi-k25-remote-code-untrusted",
    {"DF560"},
    engines=("vllm==0.10.2",),
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 8"),
)(_kimi_k25(f.speculators()))
case(
    "serve-vllm-kimi-k25-read-natively",
    set(),
    {"DF560"},
    verdict="compatible",
    serve_args=_vllm_launch("-tp 8"),
)(_kimi_k25(f.speculators()))
case(
    "serve-vllm-custom-type-trusted",
    set(),
    {"DF560"},
    engines=("vllm==0.10.2",),
    verdict="compatible",
    serve_args=_vllm_launch("-tp 1 --trust-remote-code"),
)(with_target(f.speculators(), model_type="llama_custom", auto_map=dict(_CUSTOM_CODE)))
case(
    "serve-vllm-custom-type-untrusted",
    {"DF560"},
    verdict="incompatible",
    serve_args=_vllm_launch("-tp 1 --no-trust-remote-code"),
)(with_target(f.speculators(), model_type="llama_custom", auto_map=dict(_CUSTOM_CODE)))
case(
    "serve-sglang-kimi-k25-read-natively",
    set(),
    {"DF560"},
    engines=("sglang==0.5.23",),
    serve_args=_SGLANG_LAUNCH,
)(_kimi_k25(f.specforge()))
case(
    "serve-sglang-draft-remote-code-untrusted",
    {"DF560"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
    serve_args=_SGLANG_LAUNCH,
)(with_target(_custom_draft()))
case(
    "serve-sglang-draft-remote-code-trusted",
    set(),
    {"DF560"},
    engines=("sglang==0.5.23",),
    verdict="compatible",
    serve_args=_SGLANG_LAUNCH + " --trust-remote-code",
)(with_target(_custom_draft()))

# The launch's own paths, resolved from the working folder as the engine resolves them.
case(
    "serve-vllm-draft-path-missing",
    {"DF559"},
    verdict="incompatible",
    serve_args="vllm serve T --speculative-config "
    '\'{"method": "eagle3", "model": "./no-such-draft", "num_speculative_tokens": 3}\'',
)(with_target(f.speculators()))
case(
    "serve-sglang-target-path-missing",
    {"DF559"},
    engines=("sglang==0.5.23",),
    verdict="incompatible",
    serve_args=_SGLANG_LAUNCH.replace("--model-path T", "--model-path /no/such/target"),
)(with_target(f.specforge()))
case(
    "serve-vllm-draft-hub-id",
    set(),
    {"DF559"},
    verdict="compatible",
    serve_args="vllm serve org/target --speculative-config "
    '\'{"method": "eagle3", "model": "org/draft", "num_speculative_tokens": 3}\'',
)(with_target(f.speculators()))
case(
    "serve-vllm-model-option-refused",
    {"DF559"},
    engines=("vllm==0.10.2",),
    verdict="incompatible",
    serve_args="vllm serve --model T --speculative-config "
    '\'{"method": "eagle3", "model": "D", "num_speculative_tokens": 3}\'',
)(with_target(f.speculators()))
case(
    "serve-vllm-model-option-moved",
    set(),
    {"DF559"},
    verdict="compatible",
    serve_args="vllm serve --model T --speculative-config "
    '\'{"method": "eagle3", "model": "D", "num_speculative_tokens": 3}\'',
)(with_target(f.speculators()))
case(
    "serve-vllm-model-given-twice",
    {"DF559"},
    verdict="incompatible",
    serve_args="vllm serve T --model T --speculative-config "
    '\'{"method": "eagle3", "model": "D", "num_speculative_tokens": 3}\'',
)(with_target(f.speculators()))


# TensorRT-LLM launches: `trtllm-serve` with an options YAML from tests/data/trtllm-launch.
_TRTLLM_LAUNCH_DATA = Path(__file__).parents[1] / "data" / "trtllm-launch"
_SPEC_CONFIG_CODES = {"DF555", "DF556", "DF557", "DF558"}


def _trtllm_launch(options: str) -> str:
    return f"trtllm-serve T --tp_size 1 --extra_llm_api_options {_TRTLLM_LAUNCH_DATA / options}"


case(
    "serve-trtllm-no-max-draft-len",
    {"DF555"},
    _SPEC_CONFIG_CODES - {"DF555"},
    engines=("trtllm==1.2.0",),
    verdict="incompatible",
    serve_args=_trtllm_launch("no-max-draft-len.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-draft-key-of-a-later-release",
    {"DF556"},
    _SPEC_CONFIG_CODES - {"DF556"},
    engines=("trtllm==1.2.0",),
    verdict="incompatible",
    serve_args=_trtllm_launch("speculative-model-key.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-no-draft",
    {"DF557"},
    _SPEC_CONFIG_CODES - {"DF557"},
    engines=("trtllm==1.2.0",),
    verdict="incompatible",
    serve_args=_trtllm_launch("no-draft.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-eagle3-decoding-type-too-early",
    {"DF558", "DF556"},
    {"DF555", "DF557"},
    engines=("trtllm==1.2.0",),
    verdict="incompatible",
    serve_args=_trtllm_launch("eagle3-speculative-model.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-eagle3-speculative-model-on-1.4",
    set(),
    _SPEC_CONFIG_CODES,
    engines=("trtllm==1.4.0rc0",),
    serve_args=_trtllm_launch("eagle3-speculative-model.yaml"),
)(with_target(f.specforge()))
case(
    "serve-trtllm-release-keys",
    set(),
    _SPEC_CONFIG_CODES,
    engines=("trtllm==1.2.0",),
    serve_args=_trtllm_launch("eagle-speculative-model-dir.yaml"),
)(with_target(f.specforge()))
