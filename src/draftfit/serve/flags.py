"""Each engine's launch flags and config keys that :mod:`draftfit.serve.input` reads.

Flag names and aliases as the engines' argument parsers declare them:

- vLLM (`vllm serve`): vllm/engine/arg_utils.py@v0.34.0 (`--tensor-parallel-size`/`-tp`
  :1224, `--pipeline-parallel-size`/`-pp` :1186-1187, `--kv-cache-dtype` :1416,
  `--enforce-eager` :1007, `--quantization`/`-q` :999, `--attention-backend` :1129,
  `--speculative-config`/`-sc` :1897); its parser turns underscores in a flag name into
  dashes (vllm/utils/argparse_utils.py:373-392@v0.34.0), so `--tensor_parallel_size` is the
  same flag. `--speculative-config` keys: vllm/config/speculative.py@v0.34.0 (`method`,
  `model`, `num_speculative_tokens`, `draft_tensor_parallel_size` :481, `quantization` :494,
  `attention_backend` :503, `kv_cache_dtype` :507).
- SGLang (`python -m sglang.launch_server`): sglang/srt/server_args.py:2827-2837@v0.5.7
  (`--tensor-parallel-size`/`--tp-size`, `--pipeline-parallel-size`/`--pp-size`) and
  sglang/srt/arg_groups/fields/*.py@v0.5.23 (the same names as fields, `--attention-backend`,
  `--kv-cache-dtype`, `--quantization`, `--speculative-*`). Its parser takes unambiguous
  prefixes (argparse's default), so `--tp` is `--tp-size`; `--pp` is ambiguous there
  (`--pp-max-micro-batch-size`) and SGLang refuses it, so it is not read.
- TensorRT-LLM (`trtllm-serve`): the click options of tensorrt_llm/commands/serve.py, read
  on TensorRT-LLM's main branch (commit 00209af1; no release tree is readable here):
  `--tensor_parallel_size`/`--tp_size`, `--pipeline_parallel_size`/`--pp_size`,
  `--extra_llm_api_options`/`--config` (a YAML file of LLM API arguments that overwrites the
  flags: `update_llm_args_with_extra_dict`), `--trust_remote_code` (a flag). click takes no
  abbreviations, so only these spellings are read. The YAML's `speculative_config` keys are
  those of `EagleDecodingConfig` / `DecodingBaseConfig` in tensorrt_llm/llmapi/llm_args.py
  (main, commit fcd3f316): `decoding_type`, `max_draft_len`, `speculative_model_dir` (alias
  of `speculative_model`; `pytorch_weights_path` in 0.21, `pytorch_eagle_weights_path` in
  0.19-0.20, per the engine data's `draft_path_key`), `eagle3_one_model`,
  `eagle3_layers_to_capture`.
- Environment variables assigned before the command: `VLLM_ATTENTION_BACKEND` and
  `VLLM_USE_V2_MODEL_RUNNER` for vLLM, `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN` for
  SGLang (:data:`ENGINE_ENV_VARS`); any other is listed as not read.
"""

from __future__ import annotations

from draftfit.records import frozen


@frozen
class FlagTarget:
    """Where a flag's value goes: a :class:`~draftfit.serve.settings.ServeSettings` field and
    how to read it (`int`, `str`, `off-when-true` for a flag that turns CUDA graphs off,
    `json` for vLLM's speculative config)."""

    field: str
    kind: str = "str"


_INT = "int"
_TP = FlagTarget("tensor_parallel_size", _INT)
_PP = FlagTarget("pipeline_parallel_size", _INT)
_KV = FlagTarget("kv_cache_dtype")
_QUANT = FlagTarget("quantization")
_ATTN = FlagTarget("attention_backend")
_EAGER = FlagTarget("cuda_graphs", "off-when-true")
_SPECULATIVE_CONFIG = FlagTarget("speculative_config", "json")

VLLM_FLAGS: dict[str, FlagTarget] = {
    "--tensor-parallel-size": _TP,
    "-tp": _TP,
    "--pipeline-parallel-size": _PP,
    "-pp": _PP,
    "--kv-cache-dtype": _KV,
    "--enforce-eager": _EAGER,
    "--quantization": _QUANT,
    "-q": _QUANT,
    "--attention-backend": _ATTN,
    "--speculative-config": _SPECULATIVE_CONFIG,
    "-sc": _SPECULATIVE_CONFIG,
}

SGLANG_FLAGS: dict[str, FlagTarget] = {
    "--tensor-parallel-size": _TP,
    "--tp-size": _TP,
    "--tp": _TP,
    "--pipeline-parallel-size": _PP,
    "--pp-size": _PP,
    "--kv-cache-dtype": _KV,
    "--speculative-draft-kv-cache-dtype": FlagTarget("draft_kv_cache_dtype"),
    "--attention-backend": _ATTN,
    "--speculative-draft-attention-backend": FlagTarget("draft_attention_backend"),
    "--disable-cuda-graph": _EAGER,
    "--quantization": _QUANT,
    "--speculative-draft-model-quantization": FlagTarget("draft_quantization"),
    "--speculative-algorithm": FlagTarget("method"),
    "--speculative-draft-model-path": FlagTarget("draft_model"),
    "--speculative-draft-model": FlagTarget("draft_model"),
    "--speculative-num-steps": FlagTarget("speculative_num_steps", _INT),
    "--speculative-eagle-topk": FlagTarget("speculative_eagle_topk", _INT),
    "--speculative-num-draft-tokens": FlagTarget("speculative_num_draft_tokens", _INT),
    "--context-length": FlagTarget("context_length", _INT),
    "--speculative-draft-window-size": FlagTarget("draft_window_size", _INT),
}

# `trtllm-serve --extra_llm_api_options FILE`: the YAML file of LLM API arguments.
TRTLLM_OPTIONS = FlagTarget("extra_llm_api_options", "yaml-file")

TRTLLM_FLAGS: dict[str, FlagTarget] = {
    "--tensor_parallel_size": _TP,
    "--tp_size": _TP,
    "--pipeline_parallel_size": _PP,
    "--pp_size": _PP,
    "--extra_llm_api_options": TRTLLM_OPTIONS,
    "--config": TRTLLM_OPTIONS,
}

ENGINE_FLAGS: dict[str, dict[str, FlagTarget]] = {
    "vllm": VLLM_FLAGS,
    "sglang": SGLANG_FLAGS,
    "trtllm": TRTLLM_FLAGS,
}

# Environment variables set before the command (`VAR=value vllm serve ...`) that draftfit
# reads, per engine. VLLM_ATTENTION_BACKEND forces the attention backend where the release
# reads it (vllm/envs.py:324-325@v0.8.0; vllm/config/attention.py:93@v0.14.0; no longer
# read from 0.16.0: `attention_backend_setting` in the engine data says which release does).
# VLLM_USE_V2_MODEL_RUNNER picks the model runner (vllm/envs.py@v0.18.0: `bool(int(...))`;
# `runner_default` in the engine data says which releases read it).
# SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN lets the draft run beyond its config's context
# (sglang/srt/configs/model_config.py, read with `get_bool_env_var`: `1`/`true` is on;
# `draft_context_shorter_than_target` in the engine data says what each release does).
ENGINE_ENV_VARS: dict[str, dict[str, FlagTarget]] = {
    "vllm": {
        "VLLM_ATTENTION_BACKEND": FlagTarget("attention_backend_env"),
        "VLLM_USE_V2_MODEL_RUNNER": FlagTarget("use_v2_model_runner", "on-when-true"),
    },
    "sglang": {
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": FlagTarget(
            "allow_longer_context", "on-when-true"
        ),
    },
    "trtllm": {},
}

# Flags that take no value (a store_true), per engine; every other flag takes one.
BOOLEAN_FLAGS: dict[str, frozenset[str]] = {
    "vllm": frozenset({"--enforce-eager", "--trust-remote-code"}),
    "sglang": frozenset(
        {"--disable-cuda-graph", "--trust-remote-code", "--disable-flashinfer-autotune"}
    ),
    "trtllm": frozenset(
        {
            "--trust_remote_code",
            "--enable_chunked_prefill",
            "--fail_fast_on_attention_window_too_large",
        }
    ),
}

# Flags that name the models (not settings draftfit reads): skipped with their value, not
# listed as ignored.
KNOWN_FLAGS: dict[str, frozenset[str]] = {
    "vllm": frozenset({"--model", "--revision", "--trust-remote-code", "--served-model-name"}),
    "sglang": frozenset(
        {
            "--model-path",
            "--model",
            "--revision",
            "--trust-remote-code",
            "--speculative-draft-model-revision",
            "--served-model-name",
        }
    ),
    # `--backend`: the recipes write `pytorch`, the backend the TensorRT-LLM data describes.
    "trtllm": frozenset({"--tokenizer", "--revision", "--trust_remote_code", "--backend"}),
}

# Launch commands, as the words a shell gives, and their engine.
COMMAND_ENGINES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("vllm", "serve"), "vllm"),
    (("-m", "vllm.entrypoints.openai.api_server"), "vllm"),
    (("-m", "sglang.launch_server"), "sglang"),
    (("sglang", "serve"), "sglang"),
    (("trtllm-serve",), "trtllm"),
)

# Flags that only one engine has: they name the engine of a bare list of flags.
ENGINE_HINT_FLAGS: dict[str, frozenset[str]] = {
    "vllm": frozenset({"--speculative-config", "-sc", "-tp", "--enforce-eager"}),
    "sglang": frozenset(
        {
            "--model-path",
            "--tp-size",
            "--tp",
            "--pp-size",
            "--speculative-algorithm",
            "--speculative-draft-model-path",
            "--speculative-draft-attention-backend",
            "--disable-cuda-graph",
        }
    ),
    "trtllm": frozenset(
        {
            "--tp_size",
            "--pp_size",
            "--extra_llm_api_options",
        }
    ),
}

# vLLM engine arguments (`vllm serve --config file.yaml`, underscores) draftfit reads.
VLLM_ARG_KEYS: dict[str, FlagTarget] = {
    "tensor_parallel_size": _TP,
    "pipeline_parallel_size": _PP,
    "kv_cache_dtype": _KV,
    "enforce_eager": _EAGER,
    "quantization": _QUANT,
    "attention_backend": _ATTN,
}

# `--speculative-config` keys draftfit reads.
SPEC_CONFIG_KEYS: dict[str, FlagTarget] = {
    "method": FlagTarget("method"),
    "model": FlagTarget("draft_model"),
    "num_speculative_tokens": FlagTarget("num_speculative_tokens", _INT),
    "draft_tensor_parallel_size": FlagTarget("draft_tensor_parallel_size", _INT),
    "quantization": FlagTarget("draft_quantization"),
    "attention_backend": FlagTarget("draft_attention_backend"),
    "kv_cache_dtype": FlagTarget("draft_kv_cache_dtype"),
}


# TensorRT-LLM LLM API arguments (the `--extra_llm_api_options` YAML) draftfit reads; they
# overwrite the flags of the same meaning.
TRTLLM_ARG_KEYS: dict[str, FlagTarget] = {
    "tensor_parallel_size": _TP,
    "pipeline_parallel_size": _PP,
}

# TensorRT-LLM `speculative_config` keys draftfit reads.
TRTLLM_SPEC_KEYS: dict[str, FlagTarget] = {
    "decoding_type": FlagTarget("method"),
    "max_draft_len": FlagTarget("max_draft_len", _INT),
    "speculative_model": FlagTarget("draft_model"),
    "speculative_model_dir": FlagTarget("draft_model"),
    "pytorch_weights_path": FlagTarget("draft_model"),
    "pytorch_eagle_weights_path": FlagTarget("draft_model"),
    "eagle3_one_model": FlagTarget("one_model", "on-when-true"),
    "eagle3_layers_to_capture": FlagTarget("layers_to_capture", "int-list"),
}


def vllm_flag(word: str) -> str:
    """A vLLM flag as its parser reads it: underscores in a `--` name become dashes."""
    if not word.startswith("--"):
        return word
    name, dot, rest = word[2:].partition(".")
    return "--" + name.replace("_", "-") + dot + rest
