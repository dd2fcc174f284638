"""SGLang's launch part: the `python -m sglang.launch_server` flags and environment
variables draftfit reads.

Flag names as SGLang declares them: sglang/srt/server_args.py:2827-2837@v0.5.7
(`--tensor-parallel-size`/`--tp-size`, `--pipeline-parallel-size`/`--pp-size`) and
sglang/srt/arg_groups/fields/*.py@v0.5.23 (the same names as fields, `--attention-backend`,
`--kv-cache-dtype`, `--quantization`, `--speculative-*`, `--model-path`/`--model` for the
target, `--trust-remote-code`). Its parser takes unambiguous
prefixes (argparse's default), so `--tp` is `--tp-size`; `--pp` is ambiguous there
(`--pp-max-micro-batch-size`) and SGLang refuses it, so it is not read.

SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN, assigned before the command, lets the draft run
beyond its config's context (sglang/srt/configs/model_config.py, read with
`get_bool_env_var`: `1`/`true` is on; `draft_context_shorter_than_target` in the engine data
says what each release does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.engines.launch_part import EngineLaunch, eagle_method
from draftfit.serve.reading import (
    ATTENTION_BACKEND,
    EAGER,
    INT,
    INT_FROM_ZERO,
    KV_CACHE_DTYPE,
    PIPELINE_PARALLEL,
    QUANTIZATION,
    TENSOR_PARALLEL,
    FlagTarget,
)

if TYPE_CHECKING:
    from draftfit.engines.profile import Profile
    from draftfit.serve.settings import ServeSettings

FLAGS: dict[str, FlagTarget] = {
    "--tensor-parallel-size": TENSOR_PARALLEL,
    "--tp-size": TENSOR_PARALLEL,
    "--tp": TENSOR_PARALLEL,
    "--pipeline-parallel-size": PIPELINE_PARALLEL,
    "--pp-size": PIPELINE_PARALLEL,
    "--kv-cache-dtype": KV_CACHE_DTYPE,
    "--speculative-draft-kv-cache-dtype": FlagTarget("draft_kv_cache_dtype"),
    "--attention-backend": ATTENTION_BACKEND,
    "--speculative-draft-attention-backend": FlagTarget("draft_attention_backend"),
    "--disable-cuda-graph": EAGER,
    "--quantization": QUANTIZATION,
    "--speculative-draft-model-quantization": FlagTarget("draft_quantization"),
    "--speculative-algorithm": FlagTarget("method"),
    "--speculative-draft-model-path": FlagTarget("draft_model"),
    "--speculative-draft-model": FlagTarget("draft_model"),
    "--speculative-num-steps": FlagTarget("speculative_num_steps", INT_FROM_ZERO),
    "--speculative-eagle-topk": FlagTarget("speculative_eagle_topk", INT_FROM_ZERO),
    "--speculative-num-draft-tokens": FlagTarget("speculative_num_draft_tokens", INT),
    "--context-length": FlagTarget("context_length", INT),
    "--speculative-draft-window-size": FlagTarget("draft_window_size", INT),
    "--trust-remote-code": FlagTarget("trust_remote_code", "on-when-true"),
}


# Environment variables assigned before the command that draftfit reads.
ENV_VARS: dict[str, FlagTarget] = {
    "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": FlagTarget("allow_longer_context", "on-when-true"),
}


class SglangLaunch(EngineLaunch):
    """`python -m sglang.launch_server` (or `sglang serve`)."""

    engine = "sglang"
    commands = (("-m", "sglang.launch_server"), ("sglang", "serve"))
    shown_command = "python -m sglang.launch_server"
    flags = FLAGS
    booleans = frozenset(
        {"--disable-cuda-graph", "--trust-remote-code", "--disable-flashinfer-autotune"}
    )
    known = frozenset(
        {
            "--model-path",
            "--model",
            "--revision",
            "--speculative-draft-model-revision",
            "--served-model-name",
        }
    )
    hint_flags = frozenset(
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
    )
    model_flags = frozenset({"--model-path", "--model"})
    env_vars = ENV_VARS
    abbreviations = True
    full_launch_from_command = True
    tuning = frozenset(
        {"--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens"}
    )

    def selected_method(self, settings: ServeSettings, profile: Profile) -> str | None:
        """`--speculative-algorithm` as the release reads it, in any case: its own names
        (`algorithm_names`), of which some are aliases (`NEXTN` runs the EAGLE worker)."""
        named = (settings.method or "").strip().upper()
        for item in profile.value("algorithm_names") or []:
            if item and str(item[0]).upper() == named:
                return str(item[1])
        return eagle_method(settings.method)


LAUNCH = SglangLaunch()
