"""The serving settings of one launch, normalized across engines.

`draftfit check --serve-config` (a vLLM `--speculative-config` JSON, or a mapping of vLLM
engine arguments) and `--serve-args` (a `vllm serve` / `python -m sglang.launch_server` /
`trtllm-serve` command) both come down to one :class:`ServeSettings`: the engine the launch
is for and the settings that decide how the draft is run next to the target. Every field is
None when the launch does not give it, so rules can tell "not given" (the engine's default)
from a value. The parsing lives in :mod:`draftfit.engines.launch`; rules read these fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.records import field, fields, frozen

if TYPE_CHECKING:
    from typing import Any

# The flag that gives settings, for messages about what is missing.
SETTINGS_FLAGS = "--serve-config or --serve-args"
# Why a rule that judges the launch's settings did not run.
SERVE_SKIP_REASON = f"needs {SETTINGS_FLAGS}"


@frozen
class ServeSettings:
    """What one launch says about serving the draft (None: not given, engine default).

    Attributes:
        engine: the engine the launch is for (`vllm`, `sglang`, `trtllm`).
        given_by: how the settings were given (`--serve-config` or `--serve-args`).
        tensor_parallel_size: the target's tensor-parallel size.
        pipeline_parallel_size: the target's pipeline-parallel size.
        draft_tensor_parallel_size: vLLM `speculative_config.draft_tensor_parallel_size`.
        kv_cache_dtype: the target's KV-cache dtype (`--kv-cache-dtype`).
        draft_kv_cache_dtype: a KV-cache dtype given for the draft alone.
        attention_backend: the target's attention backend (`--attention-backend`).
        attention_backend_env: `VLLM_ATTENTION_BACKEND` set before a vLLM command
            (`VLLM_ATTENTION_BACKEND=FLASHMLA vllm serve ...`), the older releases' way of
            forcing the backend.
        use_v2_model_runner: `VLLM_USE_V2_MODEL_RUNNER` set before a vLLM command (True:
            `1`), which picks vLLM's model runner in the releases that read it.
        allow_longer_context: `SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN` set before an
            SGLang command (whether SGLang may run the target and the draft at a longer
            context than their configs'), or `VLLM_ALLOW_LONG_MAX_MODEL_LEN` before a vLLM
            one (whether `--max-model-len` may exceed the target's length).
        context_length: the server's context length (the draft's too): SGLang
            `--context-length`, vLLM `--max-model-len` (-1: fitted to memory).
        draft_window_size: SGLang `--speculative-draft-window-size`, the sliding window
            given to the draft.
        draft_attention_backend: the draft's attention backend (vLLM
            `speculative_config.attention_backend`, SGLang
            `--speculative-draft-attention-backend`).
        cuda_graphs: False with `--enforce-eager` / `--disable-cuda-graph`.
        method: the speculative method as the launch names it (`eagle3`, `EAGLE3`).
        draft_model: the draft the launch names.
        num_speculative_tokens: vLLM `num_speculative_tokens`.
        speculative_num_steps: SGLang `--speculative-num-steps`.
        speculative_eagle_topk: SGLang `--speculative-eagle-topk`.
        speculative_num_draft_tokens: SGLang `--speculative-num-draft-tokens`.
        quantization: `--quantization` for the target.
        draft_quantization: the draft's own quantization setting (vLLM
            `speculative_config.quantization`, SGLang `--speculative-draft-model-quantization`).
        layers_to_capture: TensorRT-LLM `speculative_config.eagle3_layers_to_capture`, the
            target layers the launch captures for the draft, as written (output-of
            counting; -1 is the final hidden state).
        one_model: TensorRT-LLM `speculative_config.eagle3_one_model` (False: the
            two-model path, a separate draft model).
        max_draft_len: TensorRT-LLM `speculative_config.max_draft_len`.
        target_model: the target the launch names (vLLM: `vllm serve`'s first word, or
            `--model`, or `model` in a `--config` file; SGLang: `--model-path`), as written.
        trust_remote_code: True when the launch passes `--trust-remote-code` (or sets it in
            a settings file), False for vLLM's `--no-trust-remote-code`; None when it says
            nothing (the engine's default: the config's own code is not run).
        draft_path_key: the TensorRT-LLM `speculative_config` key that names the draft
            (`speculative_model`, `speculative_model_dir`, `pytorch_weights_path`,
            `pytorch_eagle_weights_path`), as written; releases read different keys.
        ignored_flags: flags, keys and environment variables draftfit does not read, in
            the order given.
        accepted_flags: the flags of `ignored_flags` that the parser of every checked
            release of the engine takes (its grammar was read): accepted, not judged. The
            checker moves them here; a flag a release refuses is a finding instead.
        refused_flags: the flags of `ignored_flags` that the parser of some checked release
            of the engine refuses (unknown, or an abbreviation of more than one flag): each
            is a DF559 finding for that release. The checker moves them here.
        unreadable_values: the flags of a `--serve-args` launch whose value the engine's
            parser cannot convert (not valid JSON, not an integer, missing), each as
            `FLAG: why`: the parser stops the launch there, a DF559 finding per release.
        config_file_mappings: the settings a `vllm serve --config FILE` launch writes in its
            file as nested mappings (`speculative_config`), which some releases cannot read.
        flags_written: every flag of a `--serve-args` launch as its engine's parser sees it
            (vLLM: underscores as dashes; no value), in the order given, so that each
            release's own flag list can judge them (unknown, ambiguous abbreviations).
        spec_keys_written: the speculative config's keys as written (vLLM
            `--speculative-config`, TensorRT-LLM `speculative_config`).
        full_launch: whether the settings are a whole launch (a `vllm serve` or SGLang
            command, or vLLM engine arguments), so that a setting it leaves out takes the
            engine's default (target tensor parallelism 1); False for a speculative config
            alone or a bare list of flags.
        words: the launch command as a shell splits it (`--serve-args`; empty otherwise),
            which a serve recipe edits; not part of the JSON form.
    """

    engine: str
    given_by: str
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    draft_tensor_parallel_size: int | None = None
    kv_cache_dtype: str | None = None
    draft_kv_cache_dtype: str | None = None
    attention_backend: str | None = None
    attention_backend_env: str | None = None
    use_v2_model_runner: bool | None = None
    allow_longer_context: bool | None = None
    context_length: int | None = None
    draft_window_size: int | None = None
    draft_attention_backend: str | None = None
    cuda_graphs: bool | None = None
    method: str | None = None
    draft_model: str | None = None
    num_speculative_tokens: int | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    quantization: str | None = None
    draft_quantization: str | None = None
    layers_to_capture: tuple[int, ...] | None = None
    one_model: bool | None = None
    max_draft_len: int | None = None
    target_model: str | None = None
    trust_remote_code: bool | None = None
    draft_path_key: str | None = None
    ignored_flags: tuple[str, ...] = ()
    accepted_flags: tuple[str, ...] = ()
    refused_flags: tuple[str, ...] = ()
    unreadable_values: tuple[str, ...] = ()
    config_file_mappings: tuple[str, ...] = ()
    flags_written: tuple[str, ...] = ()
    spec_keys_written: tuple[str, ...] = ()
    full_launch: bool = False
    words: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def given(self) -> dict[str, Any]:
        """The settings the launch gives (engine, how, and each field not None)."""
        out: dict[str, Any] = {}
        for item in fields(self):
            if item.name in _NOT_SETTINGS:
                continue
            value = getattr(self, item.name)
            if value is not None:
                out[item.name] = value
        return out

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: every field, None where not given."""
        out: dict[str, Any] = {
            item.name: getattr(self, item.name)
            for item in fields(self)
            if item.name not in _LAUNCH_WORDS
        }
        out["ignored_flags"] = list(self.ignored_flags)
        out["accepted_flags"] = list(self.accepted_flags)
        out["refused_flags"] = list(self.refused_flags)
        out["unreadable_values"] = list(self.unreadable_values)
        if self.layers_to_capture is not None:
            out["layers_to_capture"] = list(self.layers_to_capture)
        return out

    def summary(self) -> str:
        """One line for the text report: `sglang (--serve-args): tensor_parallel_size=8, ...`."""
        given = ", ".join(f"{k}={_word(v)}" for k, v in self.given().items())
        line = f"{self.engine} ({self.given_by}): {given or 'nothing draftfit reads'}"
        if self.accepted_flags:
            line += f"; accepted, not judged: {', '.join(self.accepted_flags)}"
        if self.refused_flags:
            line += f"; refused by the engine's parser: {', '.join(self.refused_flags)}"
        if self.unreadable_values:
            line += f"; values the engine's parser cannot read: {'; '.join(self.unreadable_values)}"
        if self.ignored_flags:
            line += f"; not read: {', '.join(self.ignored_flags)}"
        return line

    def eagle_method(self) -> str | None:
        """`eagle3` or `eagle` when a vLLM or SGLang launch names one of those methods (vLLM
        `method`, SGLang `--speculative-algorithm`; any spelling case), else None (no
        method named, another kind: `draft_model`, `NEXTN`, `ngram`, ...; or TensorRT-LLM,
        whose `decoding_type: Eagle` also serves EAGLE-3 drafts)."""
        if self.engine not in ("vllm", "sglang"):
            return None
        name = (self.method or "").strip().lower()
        return name if name in ("eagle3", "eagle") else None

    def leaves_method_to_engine(self) -> bool:
        """Whether this vLLM launch names a draft (or a token count) but no method: the
        release then resolves the method itself (from the draft path), and that is what is
        checked. SGLang and TensorRT-LLM take the method from a flag or key of their own."""
        if self.engine != "vllm" or self.method is not None:
            return False
        return self.draft_model is not None or self.num_speculative_tokens is not None

    def for_engine(self, engine: str) -> ServeSettings | None:
        """These settings when they are for `engine`, else None (another engine's launch)."""
        return self if self.engine == engine else None


def dashed_flag(word: str) -> str:
    """A flag as a parser that reads `_` in a flag name as `-` sees it (vLLM's): underscores
    in a `--` name become dashes; a `.key` after the name stays as written."""
    if not word.startswith("--"):
        return word
    name, dot, rest = word[2:].partition(".")
    return "--" + name.replace("_", "-") + dot + rest


# Fields that record the launch's own words for the per-release checks (not in the JSON).
_LAUNCH_WORDS = frozenset(
    {"flags_written", "spec_keys_written", "full_launch", "words", "config_file_mappings"}
)
# Fields that describe the launch, not a setting it gives.
_NOT_SETTINGS = frozenset(
    {
        "engine",
        "given_by",
        "ignored_flags",
        "accepted_flags",
        "refused_flags",
        "unreadable_values",
        "config_file_mappings",
        "flags_written",
        "spec_keys_written",
        "full_launch",
        "words",
    }
)


def _word(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return str(value)
