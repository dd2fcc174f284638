"""TensorRT-LLM's launch part: the `trtllm-serve` flags and the `--extra_llm_api_options`
YAML keys draftfit reads.

The click options of tensorrt_llm/commands/serve.py, read on TensorRT-LLM's main branch
(commit 00209af1; no release tree is readable here): `--tensor_parallel_size`/`--tp_size`,
`--pipeline_parallel_size`/`--pp_size`, `--extra_llm_api_options`/`--config` (a YAML file of
LLM API arguments that overwrites the flags: `update_llm_args_with_extra_dict`),
`--trust_remote_code` (a flag). click takes no abbreviations, so only these spellings are
read. The YAML's `speculative_config` keys draftfit reads are fields of
`Eagle3DecodingConfig` / `EagleDecodingConfig` / `DecodingBaseConfig` in
tensorrt_llm/llmapi/llm_args.py (versions in a code index, and the signatures of the
documentation built for 1.3.0rc27-1.4.0rc4): `decoding_type`, `max_draft_len`,
`speculative_model` (`speculative_model_dir` 1.0-1.2 and its alias after,
`pytorch_weights_path` in 0.21, `pytorch_eagle_weights_path` in 0.19-0.20, per the engine
data's `draft_path_key`), `eagle3_one_model` (gone by 1.3.0rc27),
`eagle3_layers_to_capture`; and of `MTPDecodingConfig` (`decoding_type: MTP`):
`num_nextn_predict_layers`, `use_mtp_vanilla`, `mtp_eagle_one_model`. Every key of the
speculative config is kept as written (`spec_keys_written`): where a release's documentation
gives its decoding config's whole signature, a key it lacks is judged as that release judges
undeclared keys (:mod:`draftfit.engines.trtllm.launch_checks`).

A `--serve-config` mapping with `speculative_config.decoding_type` (or `decoding_type` alone,
the speculative config by itself) is TensorRT-LLM's: a key neither vLLM nor SGLang has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit.engines.launch_part import EngineLaunch
from draftfit.errors import UsageError
from draftfit.records import replace
from draftfit.serve.reading import (
    INT,
    INT_FROM_ZERO,
    PIPELINE_PARALLEL,
    TENSOR_PARALLEL,
    FlagTarget,
    read_value,
)
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

# `trtllm-serve --extra_llm_api_options FILE`: the YAML file of LLM API arguments.
OPTIONS_FLAG = "--extra_llm_api_options"
_OPTIONS = FlagTarget("extra_llm_api_options", "yaml-file")

FLAGS: dict[str, FlagTarget] = {
    "--tensor_parallel_size": TENSOR_PARALLEL,
    "--tp_size": TENSOR_PARALLEL,
    "--pipeline_parallel_size": PIPELINE_PARALLEL,
    "--pp_size": PIPELINE_PARALLEL,
    OPTIONS_FLAG: _OPTIONS,
    "--config": _OPTIONS,
}

# LLM API arguments (the `--extra_llm_api_options` YAML) draftfit reads; they overwrite the
# flags of the same meaning.
ARG_KEYS: dict[str, FlagTarget] = {
    "tensor_parallel_size": TENSOR_PARALLEL,
    "pipeline_parallel_size": PIPELINE_PARALLEL,
}

# `speculative_config` keys draftfit reads.
SPEC_KEYS: dict[str, FlagTarget] = {
    "decoding_type": FlagTarget("method"),
    "max_draft_len": FlagTarget("max_draft_len", INT),
    "speculative_model": FlagTarget("draft_model"),
    "speculative_model_dir": FlagTarget("draft_model"),
    "pytorch_weights_path": FlagTarget("draft_model"),
    "pytorch_eagle_weights_path": FlagTarget("draft_model"),
    "eagle3_one_model": FlagTarget("one_model", "on-when-true"),
    "eagle3_layers_to_capture": FlagTarget("layers_to_capture", "int-list"),
    # MTPDecodingConfig (`decoding_type: MTP`)
    "num_nextn_predict_layers": FlagTarget("mtp_layers", INT_FROM_ZERO),
    "use_mtp_vanilla": FlagTarget("mtp_vanilla", "on-when-true"),
    "mtp_eagle_one_model": FlagTarget("mtp_eagle_one_model", "on-when-true"),
}


def is_options(data: Mapping[str, Any]) -> bool:
    """Whether `data` is TensorRT-LLM's LLM API options (`speculative_config.decoding_type`),
    or its speculative config alone (`decoding_type`): a key neither vLLM nor SGLang has."""
    speculative = data.get("speculative_config")
    return (isinstance(speculative, Mapping) and "decoding_type" in speculative) or (
        "decoding_type" in data
    )


class TrtllmLaunch(EngineLaunch):
    """`trtllm-serve`."""

    engine = "trtllm"
    commands = (("trtllm-serve",),)
    shown_command = "trtllm-serve"
    flags = FLAGS
    booleans = frozenset(
        {
            "--trust_remote_code",
            "--enable_chunked_prefill",
            "--fail_fast_on_attention_window_too_large",
        }
    )
    # `--backend`: the recipes write `pytorch`, the backend the TensorRT-LLM data describes.
    known = frozenset({"--tokenizer", "--revision", "--trust_remote_code", "--backend"})
    hint_flags = frozenset({"--tp_size", "--pp_size", OPTIONS_FLAG})
    options_file_flag = OPTIONS_FLAG
    speculative_fields = frozenset(target.field for target in SPEC_KEYS.values())

    def config_score(self, data: Mapping[str, Any]) -> int:
        return 2 if is_options(data) else 0  # `decoding_type` beats vLLM's fallback

    def read_config(self, data: Mapping[str, Any], given_by: str) -> ServeSettings:
        return self.with_options(data, ServeSettings(self.engine, given_by), "")

    def with_options(
        self, data: Mapping[str, Any], base: ServeSettings, what: str
    ) -> ServeSettings:
        """`base` with TensorRT-LLM's LLM API options `data` applied (they overwrite the
        flags, as `trtllm-serve` does); `what` names the file in errors ("" for
        --serve-config)."""
        label = what or base.given_by
        values: dict[str, Any] = {}
        ignored: list[str] = []
        speculative: Any = None
        if "decoding_type" in data and "speculative_config" not in data:
            speculative, data = data, {}  # the speculative config alone
        for raw_key, value in data.items():
            key = str(raw_key)
            if key == "speculative_config":
                speculative = value
                continue
            target = ARG_KEYS.get(key)
            if target is None:
                ignored.append(key)
                continue
            values[target.field] = read_value(target, value, f"{label}: {key}")
        if speculative is not None and not isinstance(speculative, Mapping):
            raise UsageError(f"{label}: speculative_config must be a mapping")
        # Every key, read or not: each release's decoding config judges them (launch_checks).
        written = tuple(str(key) for key in speculative or {})
        for raw_key, value in (speculative or {}).items():
            target = SPEC_KEYS.get(str(raw_key))
            if target is None:
                ignored.append(f"speculative_config.{raw_key}")
                continue
            values[target.field] = read_value(
                target, value, f"{label}: speculative_config.{raw_key}"
            )
            if target.field == "draft_model":
                values["draft_path_key"] = str(raw_key)
        return replace(
            base,
            **values,
            ignored_flags=base.ignored_flags + tuple(ignored),
            spec_keys_written=base.spec_keys_written + written,
        )


LAUNCH = TrtllmLaunch()
