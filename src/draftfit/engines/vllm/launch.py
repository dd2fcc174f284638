"""vLLM's launch part: the `vllm serve` flags, `--speculative-config` keys, `vllm serve
--config FILE` engine arguments and environment variables draftfit reads.

Flag names and aliases as vLLM's argument parser declares them:
vllm/engine/arg_utils.py@v0.34.0 (`--tensor-parallel-size`/`-tp` :1224,
`--pipeline-parallel-size`/`-pp` :1186-1187, `--kv-cache-dtype` :1416, `--enforce-eager`
:1007, `--quantization`/`-q` :999, `--attention-backend` :1129, `--speculative-config`/`-sc`
:1897, `--max-model-len` :998, read by `human_readable_int_or_auto`,
vllm/utils/argparse_utils.py:77@v0.34.0); its parser turns underscores in a flag name into dashes
(vllm/utils/argparse_utils.py:373-392@v0.34.0), so `--tensor_parallel_size` is the same flag.
`--trust-remote-code` (:982, with `--no-trust-remote-code` from its BooleanOptionalAction;
vllm/engine/arg_utils.py:510@v0.10.2) and the target: `vllm serve`'s positional `model_tag`
(vllm/entrypoints/common/cli_args.py:440@v0.34.0; vllm/entrypoints/openai/cli_args.py:237@v0.10.2)
or `--model` (vllm/engine/arg_utils.py:976@v0.34.0), which `launch_checks` judges per release.
`--speculative-config` keys: vllm/config/speculative.py@v0.34.0 (`method`, `model`,
`num_speculative_tokens`, `draft_tensor_parallel_size` :481, `quantization` :494,
`attention_backend` :503, `kv_cache_dtype` :507).

`--serve-config` takes vLLM's `--speculative-config` JSON alone, or a mapping of vLLM engine
arguments (as `vllm serve --config file.yaml` takes them: dashes or underscores,
`speculative_config` nested or as a JSON string). vLLM's settings are the fallback of a
`--serve-config` mapping no other engine claims.

Environment variables assigned before the command: VLLM_ATTENTION_BACKEND forces the
attention backend where the release reads it (vllm/envs.py:324-325@v0.8.0;
vllm/config/attention.py:93@v0.14.0; no longer read from 0.16.0: `attention_backend_setting`
in the engine data says which release does). VLLM_USE_V2_MODEL_RUNNER picks the model
runner (vllm/envs.py@v0.18.0: `bool(int(...))`; `runner_default` in the engine data says
which releases read it). VLLM_ALLOW_LONG_MAX_MODEL_LEN (`1` or `true`,
vllm/envs.py:1177-1180@v0.34.0) lets `--max-model-len` exceed the target's own length.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit.engines.launch_part import EngineLaunch, eagle_method
from draftfit.errors import UsageError
from draftfit.escape import clip
from draftfit.records import replace
from draftfit.serve.reading import (
    ANY_INT,
    ATTENTION_BACKEND,
    EAGER,
    ENV_ONE_OR_TRUE,
    HUMAN_INT,
    INT,
    KV_CACHE_DTYPE,
    PIPELINE_PARALLEL,
    QUANTIZATION,
    TENSOR_PARALLEL,
    FlagTarget,
    json_object,
    key_name,
    load_file,
    read_value,
)
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.profile import Profile

SPECULATIVE_CONFIG = "--speculative-config"
_SPECULATIVE = FlagTarget("speculative_config", "json")
_MAX_MODEL_LEN = FlagTarget("context_length", HUMAN_INT)
_TRUST_REMOTE_CODE = FlagTarget("trust_remote_code", "on-when-true")
_NO_TRUST_REMOTE_CODE = FlagTarget("trust_remote_code", "off-when-true")

FLAGS: dict[str, FlagTarget] = {
    "--tensor-parallel-size": TENSOR_PARALLEL,
    "-tp": TENSOR_PARALLEL,
    "--pipeline-parallel-size": PIPELINE_PARALLEL,
    "-pp": PIPELINE_PARALLEL,
    "--kv-cache-dtype": KV_CACHE_DTYPE,
    "--enforce-eager": EAGER,
    "--quantization": QUANTIZATION,
    "-q": QUANTIZATION,
    "--attention-backend": ATTENTION_BACKEND,
    SPECULATIVE_CONFIG: _SPECULATIVE,
    "-sc": _SPECULATIVE,
    "--max-model-len": _MAX_MODEL_LEN,
    "--trust-remote-code": _TRUST_REMOTE_CODE,
    "--no-trust-remote-code": _NO_TRUST_REMOTE_CODE,
}

# vLLM engine arguments (`vllm serve --config file.yaml`, underscores) draftfit reads.
ARG_KEYS: dict[str, FlagTarget] = {
    "tensor_parallel_size": TENSOR_PARALLEL,
    "pipeline_parallel_size": PIPELINE_PARALLEL,
    "kv_cache_dtype": KV_CACHE_DTYPE,
    "enforce_eager": EAGER,
    "quantization": QUANTIZATION,
    "attention_backend": ATTENTION_BACKEND,
    "max_model_len": _MAX_MODEL_LEN,
    "trust_remote_code": _TRUST_REMOTE_CODE,
}

# `--speculative-config` keys draftfit reads.
SPEC_CONFIG_KEYS: dict[str, FlagTarget] = {
    "method": FlagTarget("method"),
    "model": FlagTarget("draft_model"),
    "num_speculative_tokens": FlagTarget("num_speculative_tokens", ANY_INT),
    "draft_tensor_parallel_size": FlagTarget("draft_tensor_parallel_size", INT),
    "quantization": FlagTarget("draft_quantization"),
    "attention_backend": FlagTarget("draft_attention_backend"),
    "kv_cache_dtype": FlagTarget("draft_kv_cache_dtype"),
}


# Environment variables assigned before the command that draftfit reads.
ENV_VARS: dict[str, FlagTarget] = {
    "VLLM_ATTENTION_BACKEND": FlagTarget("attention_backend_env"),
    "VLLM_USE_V2_MODEL_RUNNER": FlagTarget("use_v2_model_runner", "on-when-true"),
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN": FlagTarget("allow_longer_context", ENV_ONE_OR_TRUE),
}


class VllmLaunch(EngineLaunch):
    """`vllm serve` (or `python -m vllm.entrypoints.openai.api_server`)."""

    engine = "vllm"
    commands = (("vllm", "serve"), ("-m", "vllm.entrypoints.openai.api_server"))
    shown_command = "vllm serve"
    flags = FLAGS
    booleans = frozenset({"--enforce-eager", "--trust-remote-code", "--no-trust-remote-code"})
    known = frozenset({"--model", "--revision", "--served-model-name"})
    model_flags = frozenset({"--model"})
    model_positional = True
    hint_flags = frozenset({SPECULATIVE_CONFIG, "-sc", "-tp", "--enforce-eager"})
    env_vars = ENV_VARS
    dashes_underscores = True
    abbreviations = True
    dotted_keys = True
    full_launch_from_command = True
    json_flag = SPECULATIVE_CONFIG
    json_keys = SPEC_CONFIG_KEYS
    config_file_flag = "--config"
    tuning = frozenset({"num_speculative_tokens"})
    speculative_fields = frozenset(target.field for target in SPEC_CONFIG_KEYS.values())

    def selected_method(self, settings: ServeSettings, profile: Profile) -> str | None:
        """`speculative_config.method` when it is `eagle3` or `eagle` (any case: a case the
        release refuses is a finding of its own), else None."""
        return eagle_method(settings.method)

    def method_left_to_engine(self, settings: ServeSettings) -> bool:
        """A speculative config that names a draft (or a token count) but no method: the
        release resolves the method itself, from the draft path."""
        if settings.method is not None:
            return False
        return settings.draft_model is not None or settings.num_speculative_tokens is not None

    def config_score(self, data: Mapping[str, Any]) -> int:
        return 1  # the fallback: a mapping no other engine claims is read as vLLM's

    def read_config(self, data: Mapping[str, Any], given_by: str) -> ServeSettings:
        keys = {key_name(k) for k in data}
        # Keys both forms have (quantization, attention_backend, kv_cache_dtype, and
        # max_model_len, which draftfit reads in engine arguments only) decide nothing.
        shared = (set(ARG_KEYS) & set(SPEC_CONFIG_KEYS)) | {"max_model_len"}
        if "speculative_config" in keys or keys & (set(ARG_KEYS) - shared):
            return self.engine_args(data, given_by)
        if keys & (set(SPEC_CONFIG_KEYS) - shared):
            return self.speculative_config(data, given_by, "", [])
        return self.engine_args(data, given_by)

    def engine_args(self, data: Mapping[str, Any], given_by: str) -> ServeSettings:
        """The settings of a mapping of engine arguments (`vllm serve --config` YAML)."""
        values: dict[str, Any] = {}
        ignored: list[str] = []
        speculative: Mapping[str, Any] | None = None
        for raw_key, value in data.items():
            key = key_name(raw_key)
            if key == "model" and isinstance(value, str):
                values["target_model"] = value  # `vllm serve --config` names the target
                continue
            if key == "speculative_config":
                speculative = (
                    json_object(value, f"{given_by}: speculative_config")
                    if isinstance(value, str)
                    else value
                )
                if not isinstance(speculative, Mapping):
                    raise UsageError(f"{given_by}: speculative_config must be a mapping")
                continue
            target = ARG_KEYS.get(key)
            if target is None:
                ignored.append(str(raw_key))
                continue
            values[target.field] = read_value(target, value, f"{given_by}: {raw_key}")
        settings = ServeSettings(
            self.engine, given_by, **values, ignored_flags=tuple(ignored), full_launch=True
        )
        if speculative is None:
            return settings
        return self.speculative_config(speculative, given_by, "speculative_config", [], settings)

    def speculative_config(
        self,
        data: Mapping[str, Any],
        given_by: str,
        what: str,
        ignored: list[str],
        base: ServeSettings | None = None,
    ) -> ServeSettings:
        """`base` with the `--speculative-config` object `data` read (`what` names it in
        the keys listed as not read)."""
        values: dict[str, Any] = {}
        start = base or ServeSettings(self.engine, given_by)
        keys = start.spec_keys_written + tuple(str(k) for k in data)
        for raw_key, value in data.items():
            target = SPEC_CONFIG_KEYS.get(key_name(raw_key))
            if target is None:
                ignored.append(f"{what}.{raw_key}" if what else str(raw_key))
                continue
            values[target.field] = read_value(target, value, f"{what or given_by}.{raw_key}")
        return replace(
            start,
            **values,
            ignored_flags=start.ignored_flags + tuple(ignored),
            spec_keys_written=keys,
        )

    def with_json(self, data: Mapping[str, Any], settings: ServeSettings) -> ServeSettings:
        return self.speculative_config(data, "--serve-args", SPECULATIVE_CONFIG, [], settings)

    def with_config_file(
        self, settings: ServeSettings, name: str, json_given: bool
    ) -> ServeSettings:
        """`settings` of a `vllm serve … --config FILE` launch completed by the file's engine
        arguments (YAML, read as `--serve-config` reads them). The command line wins: vLLM
        puts the file's arguments before the command line's, so a flag given on both takes
        the command line's value, and a `--speculative-config` on the command line replaces
        the file's whole speculative config."""
        what = f"--serve-args: --config {clip(name)}"
        data = load_file(name, what, "the path is read from the current directory")
        from_file = self.engine_args(data, "--serve-args --config")
        replaced = json_given or any(
            flag.startswith(SPECULATIVE_CONFIG + ".") for flag in settings.flags_written
        )
        merged = {
            field: value
            for field, value in from_file.given().items()
            if getattr(settings, field) is None
            and not (replaced and field in self.speculative_fields)
        }
        spec_keys = () if replaced else from_file.spec_keys_written
        # Each of the file's values is parsed, even one the command line gives again.
        mappings = tuple(
            key_name(key)
            for key, value in data.items()
            if key_name(key) == "speculative_config" and isinstance(value, Mapping)
        )
        return replace(
            settings,
            ignored_flags=settings.ignored_flags + from_file.ignored_flags,
            spec_keys_written=settings.spec_keys_written + spec_keys,
            config_file_mappings=mappings,
            **merged,
        )


LAUNCH = VllmLaunch()
