"""What a vLLM release does with the launch's serving settings (DF550-DF559).

Run by vLLM's launch step when settings were given for vLLM; the checks every engine
shares are in :mod:`draftfit.engines.launch_checks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.engines.launch_checks import (
    Spelling,
    context_over_target,
    draft_is_checked,
    draft_path_is_folder,
    launch_flags,
    launch_paths,
    located,
    method_known,
    pipeline_stages,
    quantization_names,
    release_launch,
    remote_code_trusted,
    unreadable_values,
    value_after_switch,
)
from draftfit.engines.serve import first_release_where
from draftfit.engines.view import Event
from draftfit.engines.vllm.launch import LAUNCH
from draftfit.escape import clip
from draftfit.rule_ids import Consequence

if TYPE_CHECKING:
    from draftfit.engines.procedure.state import BuildState
    from draftfit.serve.settings import ServeSettings

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.PIPELINE_PARALLEL_AUX_STATES,
    rule_ids.DRAFT_TENSOR_PARALLEL_IGNORED,
    rule_ids.DRAFT_TENSOR_PARALLEL_REFUSED,
    rule_ids.DRAFT_MLA_ATTENTION_BACKEND,
    rule_ids.SERVE_SETTING_INVALID,
)
EMITS_STAGE = "engine launch checks: vLLM's"

SPELLING = Spelling(
    prog="vllm serve",
    command=("vllm", "serve"),
    model_positional=True,
    dotted=LAUNCH.dotted_keys,
    flag_hints={
        "--tp": "`-tp` / `--tensor-parallel-size`",
        "--pp": "`-pp` / `--pipeline-parallel-size`",
        "--tp-size": "`-tp` / `--tensor-parallel-size`",
        "--speculative-model": "`--speculative-config '{\"model\": DRAFT, ...}'`",
        "--num-speculative-tokens": (
            "`--speculative-config '{\"num_speculative_tokens\": N, ...}'`"
        ),
        "--speculative-draft-tensor-parallel-size": (
            "`--speculative-config '{\"draft_tensor_parallel_size\": N, ...}'`"
        ),
    },
    method_flag="method",
    method_pointer="/speculative_config/method",
    method_facts=("eagle3_supported", "eagle_supported"),
    method_exact_case=True,
    draft_key="model",
)


def check_settings(state: BuildState, s: ServeSettings) -> None:
    """Emit the events for `s` at the state's vLLM version."""
    launch_flags(state, s, SPELLING)
    unreadable_values(state, s, SPELLING)
    context_over_target(state, s, "max_model_len_over_target", "--max-model-len")
    _config_file_mappings(state, s)
    value_after_switch(state, s, SPELLING)
    _speculative_config_keys(state, s)
    supported = (("eagle3", "eagle3_supported"), ("eagle", "eagle_supported"))
    method_known(
        state,
        s,
        SPELLING,
        [name for name, fact in supported if state.value(fact)],
        lambda later: [name for name, fact in supported if later.value(fact)],
    )
    _launch_serves_draft(state, s)
    _token_count_given(state, s)
    _token_count_positive(state, s)
    quantization_names(state, s)
    draft_path_is_folder(state, s, SPELLING)
    _model_option(state, s)
    launch_paths(state, s, SPELLING, TARGET_FLAG)
    remote_code_trusted(state, s, "--trust-remote-code")
    _vllm_draft_tp(state, s)
    _vllm_pipeline_parallel(state, s)
    _vllm_mla_backend(state, s)


# How a finding names the setting that gives `vllm serve` its target.
TARGET_FLAG = "model"
# The option some releases refuse in place of `vllm serve`'s positional target.
MODEL_OPTION = "--model"


def _model_option(state: BuildState, s: ServeSettings) -> None:
    """vLLM: the target given to `vllm serve` with `--model` (fact `serve_model_option`):
    refused while the arguments are parsed where the release refuses the option, and where
    it moves the option's value to the positional place, refused when the launch names a
    positional target too (two positional words)."""
    mode = state.value("serve_model_option")
    words = list(s.words)
    starts = [i + 2 for i in range(len(words) - 1) if words[i : i + 2] == ["vllm", "serve"]]
    if mode is None or not starts:
        return
    rest = words[starts[0] :]
    exact = MODEL_OPTION in rest
    inline = any(w.startswith(MODEL_OPTION + "=") for w in rest)
    where = located(s, "/" + TARGET_FLAG)
    fix = "name the target as `vllm serve`'s first word: `vllm serve TARGET ...`"
    if mode == "refused" and exact:
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"`{MODEL_OPTION}`: {state.title}'s `vllm serve` refuses the option while it parses "
            'the arguments (ValueError: "With `vllm serve`, you should provide the model as a '
            'positional argument or in a config file instead of via the `--model` option.") '
            "and the server does not start",
            where,
            ("serve_model_option",),
            fix=fix,
        )
        return
    if mode != "moved" or not (exact or inline):
        return
    positional = _positional_words(state, rest)
    if not positional:
        return
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"the launch names the target twice, as `vllm serve`'s first word "
        f"(`{clip(positional[0])}`) and with `{MODEL_OPTION}`: {state.title} moves the "
        f"option's value to the positional place, so the other is an extra argument and its "
        f"parser refuses the launch (`vllm serve: error: unrecognized arguments: ...`)",
        where,
        ("serve_model_option",),
        fix=f"give the target once (leave `{MODEL_OPTION}` out): `vllm serve TARGET ...`",
    )


def _positional_words(state: BuildState, rest: list[str]) -> list[str]:
    """The positional words of `vllm serve`'s arguments `rest` (the target, and any stray
    word), read with the release's grammar: a flag that takes a value takes the next word;
    `--model`'s value is not positional. Empty where the release's grammar was not read."""
    grammar = release_launch(state).grammar
    if grammar is None:
        return []
    found: list[str] = []
    index = 0
    while index < len(rest):
        word = rest[index]
        index += 1
        if not word.startswith("-") or word == "-":
            found.append(word)
            continue
        if "=" in word:
            continue
        meant = grammar.meaning(SPELLING.flag(word))
        if len(meant) == 1 and meant[0] in grammar.switches:
            continue
        index += 1  # its value (an unknown flag is a finding of its own)
    return found


def _speculative_config_keys(state: BuildState, s: ServeSettings) -> None:
    """vLLM: a `--speculative-config` key the release's SpeculativeConfig has no field for
    (refused while the config is built)."""
    if not s.spec_keys_written:
        return
    fact = state.profile.fact("speculative_config_keys")
    known = [str(k) for k in fact.value or []]
    if not known:
        return  # this release's keys were not read
    for key in dict.fromkeys(s.spec_keys_written):
        if key.replace("-", "_") in known:
            continue
        import difflib  # only when a name is unknown

        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        if key.replace("-", "_") in ("num_spec_tokens", "num_tokens", "spec_tokens"):
            close = ["num_speculative_tokens"]
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"`--speculative-config` key `{clip(key)}`: {state.title}'s SpeculativeConfig has "
            "no such field and refuses the launch while it builds the config (an unexpected "
            "keyword argument)",
            located(s, "/speculative_config/" + clip(key)),
            (),  # no field of that name: the release's fields are the data's items
            fix=f"did you mean `{close[0]}`?" if close else f"leave `{clip(key)}` out",
        )


def _launch_serves_draft(state: BuildState, s: ServeSettings) -> None:
    """A whole launch that does not serve the checked draft (no speculative config, no
    draft path, another folder)."""
    if not s.full_launch:
        return
    speculative = s.method is not None or s.num_speculative_tokens is not None
    if not speculative and s.draft_model is None:
        # No speculative config: vLLM serves the target alone. A speculative flag of another
        # spelling (`--speculative-model` of releases before 0.8.3) is judged by the
        # release's grammar instead, not taken for a launch without a draft.
        if not any(_SPECULATIVE_WORD in flag for flag in s.flags_written):
            state.refuse(
                rule_ids.SERVE_SETTING_INVALID,
                "the launch has no `--speculative-config`: vLLM loads no draft and serves the "
                "target alone, so the checked draft is not what runs",
                located(s, "/speculative_config"),
                (),
                fix='add `--speculative-config \'{"method": "eagle3", "model": DRAFT, '
                '"num_speculative_tokens": 3}\'` (the method of the checked draft)',
                consequence=Consequence.DRAFT_NOT_SERVED,
            )
        return
    draft_is_checked(
        state,
        s,
        "model",
        "/speculative_config/model",
        "vLLM refuses a speculative config without a draft for EAGLE methods "
        "(ValueError at start-up)",
    )


# Part of every vLLM flag that configures speculative decoding, in any release's spelling.
_SPECULATIVE_WORD = "speculative"


def _token_count_given(state: BuildState, s: ServeSettings) -> None:
    """vLLM: a speculative config that names a draft but no `num_speculative_tokens`, for a
    draft whose config has no `n_predict` to take it from: refused while the config is
    built."""
    if state.value("num_speculative_tokens_required") != "unless-n-predict":
        return
    if s.draft_model is None or s.num_speculative_tokens is not None:
        return
    config = state.checkpoint.config or {}
    if config.get("n_predict") is not None:
        return
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"the speculative config names a draft but no `num_speculative_tokens`, and the "
        f"draft's config has no `n_predict` to take it from: {state.title} raises ValueError "
        "while it builds the speculative config and does not start",
        located(s, "/speculative_config/num_speculative_tokens"),
        ("num_speculative_tokens_required",),
        fix='add `"num_speculative_tokens": 3` (or the count the draft was trained for)',
    )


def _config_file_mappings(state: BuildState, s: ServeSettings) -> None:
    """vLLM: a `--config` file's `speculative-config` written as a nested mapping is passed
    on as Python's str() of it by the releases that do so, which the flag's JSON parser
    cannot read: the launch is refused while its arguments are parsed."""
    if "speculative_config" not in s.config_file_mappings:
        return
    if state.value("config_file_mappings") != "python-str":
        return
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"the `--config` file writes `speculative-config` as a nested mapping: {state.title} "
        "passes it on as Python's str() of the mapping, which `--speculative-config` cannot "
        "read as JSON, so its argument parser refuses the launch and the server does not "
        "start",
        located(s, "/speculative_config"),
        ("config_file_mappings",),
        fix="write it in the file as one JSON string: `speculative-config: "
        '\'{"model": "...", "method": "eagle3", "num_speculative_tokens": 3}\'`, or pass '
        "`--speculative-config` on the command line",
    )


def _token_count_positive(state: BuildState, s: ServeSettings) -> None:
    """vLLM: a `num_speculative_tokens` below 1 is refused while the speculative config is
    built, where that check was read; elsewhere the launch proposes no draft tokens at all,
    so either way the checked draft does not run."""
    count = s.num_speculative_tokens
    if count is None or count >= 1:
        return
    where = located(s, "/speculative_config/num_speculative_tokens")
    fix = 'set `"num_speculative_tokens"` to the count the draft was trained for (e.g. 3)'
    if state.value("num_speculative_tokens_positive") is True:
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f'`num_speculative_tokens` is {count}: {state.title} raises ValueError ("Expected '
            'num_speculative_tokens to be greater than zero") while it builds the '
            "speculative config and does not start",
            where,
            ("num_speculative_tokens_positive",),
            fix=fix,
        )
        return
    state.refuse(
        rule_ids.SERVE_SETTING_INVALID,
        f"`num_speculative_tokens` is {count}: no draft token would be proposed, so the "
        f"checked draft does not run (whether {state.title} refuses the value at start-up, as "
        "the releases draftfit read do, was not read)",
        where,
        (),
        fix=fix,
        consequence=Consequence.DRAFT_NOT_SERVED,
    )


def _vllm_draft_tp(state: BuildState, s: ServeSettings) -> None:
    """vLLM: a draft tensor-parallel size apart from the target's is refused unless it is
    1, and an EAGLE draft runs at the target's size whatever it says."""
    draft_tp, target_tp = s.draft_tensor_parallel_size, s.tensor_parallel_size
    if target_tp is None and s.full_launch:
        target_tp = 1  # a whole launch without -tp runs the target at vLLM's default, 1
    if draft_tp is None or target_tp is None or state.value("draft_tp_choices") is None:
        return  # a speculative config alone does not say the target's size
    if draft_tp == target_tp:
        return
    where = located(s, "/speculative_config/draft_tensor_parallel_size")
    if draft_tp != 1:
        state.refuse(
            rule_ids.DRAFT_TENSOR_PARALLEL_REFUSED,
            f"draft_tensor_parallel_size is {draft_tp} and the target's tensor-parallel size "
            f"{target_tp}: {state.title} accepts only 1 or the target's size and raises "
            "ValueError at start-up",
            where,
            ("draft_tp_choices",),
            fix=f"leave draft_tensor_parallel_size out (the draft then runs at {target_tp})",
        )
        return
    if state.value("draft_tp_eagle_honoured") is False:
        state.event(
            rule_ids.DRAFT_TENSOR_PARALLEL_IGNORED,
            f"draft_tensor_parallel_size is 1 and the target's tensor-parallel size "
            f"{target_tp}: {state.title} builds an EAGLE draft with the target's parallel "
            f"config, so the draft runs sharded {target_tp} ways anyway (memory and speed "
            "as at the target's size, not as configured)",
            where,
            ("draft_tp_eagle_honoured",),
            fix="leave draft_tensor_parallel_size out: this version has no unsharded EAGLE draft",
        )


def _vllm_pipeline_parallel(state: BuildState, s: ServeSettings) -> None:
    """vLLM: aux states captured before the last pipeline stage are dropped (older
    releases) or need a target decoder that carries them (refused otherwise)."""
    pp = pipeline_stages(state, s)
    t = state.target
    if pp is None or t is None:
        return
    mode = state.value("aux_states_over_pp")
    where = located(s, "/pipeline_parallel_size")
    arch = t.architecture or "this target"
    if mode == "model-flag":
        if arch in (state.value("pp_aux_architectures") or []):
            return
        state.refuse(
            rule_ids.PIPELINE_PARALLEL_AUX_STATES,
            f"--pipeline-parallel-size {pp} with EAGLE-3: {state.title} carries aux hidden "
            f"states across pipeline stages only for targets whose decoder declares it, and "
            f"`{arch}` does not: start-up fails (`ValueError: ... does not support eagle3 "
            "with pipeline parallelism`)",
            where,
            ("aux_states_over_pp", "pp_aux_architectures"),
            fix="serve with --pipeline-parallel-size 1 (tensor parallelism instead)",
        )
        return
    if mode != "dropped" or state.view.aux is None or not state.view.aux.used or not t.num_layers:
        return
    n = t.num_layers
    last_start = n - n // pp  # vLLM gives the last stage n // pp layers
    early = [i for i in state.view.aux.used if i <= last_start]
    if not early:
        return
    fixed_in = first_release_where(
        state.profile,
        lambda later: (
            later.value("aux_states_over_pp") == "model-flag"
            and arch in (later.value("pp_aux_architectures") or [])
        ),
    )
    state.refuse(
        rule_ids.PIPELINE_PARALLEL_AUX_STATES,
        f"--pipeline-parallel-size {pp} with EAGLE-3: the last of the {pp} stages holds "
        f"layers {last_start}-{n - 1} of {n}, and aux layers {early} (capture-before "
        f"counting) are captured on an earlier stage; {state.title} passes only the hidden "
        f"states between stages, so the draft gets {len(state.view.aux.used) - len(early)} of "
        f"its {len(state.view.aux.used)} aux states and its fc fails with a shape mismatch",
        where,
        ("aux_states_over_pp",),
        fix="serve with --pipeline-parallel-size 1 (tensor parallelism instead)"
        + (f", or upgrade to vLLM {fixed_in}, which carries them for `{arch}`" if fixed_in else ""),
    )


ENV_BACKEND = "VLLM_ATTENTION_BACKEND"


def _vllm_forced_backend(state: BuildState, s: ServeSettings) -> tuple[str, str, str] | None:
    """The backend the launch forces at this vLLM release: (name as vLLM reads it, how the
    launch gives it, the settings pointer); None when it forces none this release reads."""
    reads = state.value("attention_backend_setting")
    flag, env = s.attention_backend, s.attention_backend_env
    if reads == "flag-or-env" and flag is not None and env is not None:
        return None  # both at once: vLLM refuses the pair itself (mutually exclusive)
    if flag is not None and reads in ("flag", "flag-or-env"):
        return flag.upper(), f"--attention-backend {flag}", "/attention_backend"
    if env is not None and reads in ("env", "flag-or-env"):
        # checked against the backend names as spelled, case and all (from 0.11.1, where
        # the MLA-only names below start: vllm/envs.py:637@v0.11.1, env_with_choices)
        return env, f"{ENV_BACKEND}={env}", "/attention_backend_env"
    return None


def _per_runner(state: BuildState, key: str) -> object:
    """A fact's value for the runner serving this launch (a table gives it per runner; the
    procedure settled the runner, pipeline stages included); None when the value depends on a
    runner draftfit could not settle."""
    value = state.value(key)
    if not isinstance(value, dict):
        return value
    runner = state.view.resolution.runner
    return value.get(runner) if isinstance(runner, str) else None


def _own_backend_from(state: BuildState) -> str | None:
    """The first later release from which every release gives an EAGLE draft its own
    attention backend setting, whichever runner serves it."""
    versions = state.profile.data.versions
    later = versions[versions.index(state.profile.version) + 1 :]
    found: str | None = None
    for version in later:
        if state.profile.data.resolve(version).value("draft_attention_backend_flag") is True:
            found = found or version
        else:
            found = None
    return found


def _vllm_mla_backend(state: BuildState, s: ServeSettings) -> None:
    """vLLM: a standard-attention draft next to an MLA target whose launch forces an
    MLA-only backend gets that backend too, where the runner builds the draft with the
    launch's backend, and the backend refuses the draft's layers at start-up."""
    forced = _vllm_forced_backend(state, s)
    if (
        forced is None
        or state.target is None
        or not state.target.is_mla
        or state.family in state.traits.mla_families
    ):
        return
    named, how, pointer = forced
    if named not in (state.value("mla_only_attention_backends") or []):
        return
    if _per_runner(state, "draft_attention_backend_default") != "target":
        return
    applies = bool(_per_runner(state, "draft_attention_backend_flag"))
    if s.draft_attention_backend is not None and applies:
        return  # the draft has a backend of its own
    if (
        s.draft_attention_backend is not None
        and state.value("draft_attention_backend_flag") is False
    ):
        return  # no such key in this release: its speculative config refuses unknown keys
    runner_dependent = isinstance(state.value("draft_attention_backend_default"), dict)
    shown = how.split("=", 1)[1] if pointer != "/attention_backend" else how.split(" ", 1)[1]
    own = (
        f"`attention_backend` {s.draft_attention_backend} in --speculative-config, which "
        "that runner does not apply to an EAGLE draft"
        if s.draft_attention_backend is not None
        else "no draft backend of its own"
    )
    runner = ""
    runs = f"{state.title} runs"
    if runner_dependent:
        runner = f" {state.view.resolution.runner_reason or state.title}:"
        runs = "it runs"
    error = (
        f"`ValueError: Selected backend AttentionBackendEnum.{named} is not valid for this "
        "configuration.` (its reasons include 'non-MLA not supported')"
    )
    if applies:
        fix = (
            'add `"attention_backend": "FLASH_ATTN"` (or another backend for standard '
            "attention) to --speculative-config, or serve an MLA draft"
        )
    else:
        leave = "--attention-backend" if pointer == "/attention_backend" else ENV_BACKEND
        upgrade = _own_backend_from(state)
        fix = (
            f"leave {leave} out (vLLM then picks a backend per layer: an MLA one for the "
            f"target, a standard one for the draft); {state.title} gives this draft no "
            "attention backend of its own"
            + (
                f" (from vLLM {upgrade}, `attention_backend` in --speculative-config does)"
                if upgrade
                else ""
            )
            + ", or serve an MLA draft"
        )
    citations = state.profile.item_sources("mla_only_attention_backends", named) + state.citations(
        "draft_attention_backend_default",
        "draft_attention_backend_flag",
        "attention_backend_setting",
        *(("runner_default",) if runner_dependent else ()),
    )
    state.view.refuse(
        Event(
            rule_ids.DRAFT_MLA_ATTENTION_BACKEND,
            f"the target is MLA (`kv_lora_rank`) and the draft uses standard attention;"
            f"{runner} with {how} and {own}, {runs} the draft on {shown} too, which fails at "
            f"start-up: {error}",
            located(s, pointer),
            citations,
            fix,
        )
    )
