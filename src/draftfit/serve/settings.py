"""The serving settings of one launch, normalized across engines.

`draftfit check --serve-config` (an engine's settings file or its speculative config) and
`--serve-args` (a launch command) both come down to one :class:`ServeSettings`: the engine
the launch is for and the settings that decide how the draft is run next to the target.
Every field is None when the launch does not give it, so rules can tell "not given" (the
engine's default) from a value. Which flag, key or environment variable gives each field is
each engine's knowledge (its launch part, :meth:`draftfit.engines.interface.Engine.launch`,
which also judges the launch at each release); rules read these fields.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.records import field, fields, frozen

if TYPE_CHECKING:
    from typing import Any

# The flag that gives settings, for messages about what is missing.
SETTINGS_FLAGS = "--serve-config or --serve-args"


@frozen
class ServeSettings:
    """What one launch says about serving the draft (None: not given, engine default).

    Which flag, key or environment variable of each engine gives a field is in that
    engine's launch part (`engines/<engine>/launch.py`).

    Attributes:
        engine: the name of the engine the launch is for.
        given_by: how the settings were given (`--serve-config` or `--serve-args`).
        tensor_parallel_size: the target's tensor-parallel size.
        pipeline_parallel_size: the target's pipeline-parallel size.
        draft_tensor_parallel_size: a tensor-parallel size given for the draft alone.
        kv_cache_dtype: the target's KV-cache dtype.
        draft_kv_cache_dtype: a KV-cache dtype given for the draft alone.
        attention_backend: the target's attention backend.
        attention_backend_env: an attention backend forced by an environment variable set
            before the command (the older releases' way of forcing it).
        use_v2_model_runner: an environment variable set before the command that picks the
            engine's newer model runner in the releases that read it (True: on).
        allow_longer_context: an environment variable set before the command that lets the
            server run at a longer context than the target's (and the draft's) config
            says.
        context_length: the server's context length (the draft's too; -1: fitted to
            memory).
        draft_window_size: the sliding window given to the draft.
        draft_attention_backend: the draft's own attention backend.
        cuda_graphs: False when the launch turns CUDA graphs off.
        method: the speculative method as the launch names it (any case, as written).
        draft_model: the draft the launch names.
        num_speculative_tokens: the number of speculative tokens (a speculative config's).
        speculative_num_steps: the draft's steps per round.
        speculative_eagle_topk: the draft's top-k branching per step.
        speculative_num_draft_tokens: the draft tokens verified per round.
        quantization: the target's quantization setting.
        draft_quantization: the draft's own quantization setting.
        layers_to_capture: the target layers the launch captures for the draft, as written
            (output-of counting; -1 is the final hidden state).
        one_model: whether the draft runs inside the target's model (False: a separate
            draft model).
        max_draft_len: the longest draft the launch allows.
        mtp_layers: the MTP layers the launch asks to build (TensorRT-LLM
            `num_nextn_predict_layers`).
        mtp_vanilla: whether the launch asks for every MTP layer in turn rather than one
            layer reused (TensorRT-LLM `use_mtp_vanilla`).
        mtp_eagle_one_model: whether one-layer MTP runs in the target's engine (TensorRT-LLM
            `mtp_eagle_one_model`).
        target_model: the target the launch names (a positional word, a flag, or a key
            of a settings file), as written.
        trust_remote_code: True when the launch passes its trust-remote-code flag (or sets
            it in a settings file), False where it turns it off explicitly; None when it
            says nothing (the engine's default: the config's own code is not run).
        draft_path_key: the speculative-config key that names the draft, as written, where
            an engine's releases read different keys.
        ignored_flags: flags, keys and environment variables draftfit does not read, in
            the order given.
        accepted_flags: the flags of `ignored_flags` that the parser of every checked
            release of the engine takes (its grammar was read): accepted, not judged. The
            engine's launch part decides it (:class:`draftfit.engines.launch_judgement.
            JudgedLaunch`); a flag a release refuses is a finding instead.
        refused_flags: the flags of `ignored_flags` that the parser of some checked release
            of the engine refuses (unknown, or an abbreviation of more than one flag): each
            is a DF559 finding for that release. Decided with `accepted_flags`.
        unreadable_values: the flags of a `--serve-args` launch whose value the engine's
            parser cannot convert (not valid JSON, not an integer, missing), each as
            `FLAG: why`: the parser stops the launch there, a DF559 finding per release.
        config_file_mappings: the settings a launch's file of engine arguments writes as
            nested mappings, which some releases cannot read.
        flags_written: every flag of a `--serve-args` launch as its engine's parser sees it
            (no value), in the order given, so that each release's own flag list can judge
            them (unknown, ambiguous abbreviations).
        spec_keys_written: the speculative config's keys as written.
        full_launch: whether the settings are a whole launch (a launch command, or a
            mapping of engine arguments), so that a setting it leaves out takes the
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
    mtp_layers: int | None = None
    mtp_vanilla: bool | None = None
    mtp_eagle_one_model: bool | None = None
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
        """One line for the text report: `ENGINE (--serve-args): tensor_parallel_size=8,
        ...`."""
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

    def for_engine(self, engine: str) -> ServeSettings | None:
        """These settings when they are for `engine`, else None (another engine's launch)."""
        return self if self.engine == engine else None


def dashed_flag(word: str) -> str:
    """A flag as a parser that reads `_` in a flag name as `-` sees it: underscores in a
    `--` name become dashes; a `.key` after the name stays as written."""
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
