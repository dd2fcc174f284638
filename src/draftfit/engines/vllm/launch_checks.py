"""What a vLLM release does with the launch's serving settings (DF550-DF559).

Run by vLLM's launch step when settings were given for vLLM (:func:`check_settings`, in the
order the checks run). Here: the target's option, the speculative config's keys, the draft
it serves and its token count. The parallel layout and the attention backend (DF550-DF553)
are judged in :mod:`draftfit.engines.vllm.launch_parallel`; the checks every engine shares
are in :mod:`draftfit.engines.launch_checks`, :mod:`draftfit.engines.launch_paths` and
:mod:`draftfit.engines.launch_context`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.engines.launch_checks import (
    Spelling,
    launch_flags,
    located,
    method_known,
    parser_checks,
    quantization_names,
    release_launch,
    unreadable_values,
    value_after_switch,
)
from draftfit.engines.launch_context import context_over_target
from draftfit.engines.launch_paths import (
    draft_is_checked,
    draft_path_is_folder,
    launch_paths,
    remote_code_trusted,
)
from draftfit.engines.vllm.launch import LAUNCH
from draftfit.engines.vllm.launch_parallel import (
    draft_tensor_parallel,
    mla_backend,
    pipeline_parallel,
)
from draftfit.escape import clip
from draftfit.rule_ids import Consequence

if TYPE_CHECKING:
    from draftfit.engines.procedure.state import BuildState
    from draftfit.serve.settings import ServeSettings

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.SERVE_SETTING_INVALID,)
EMITS_STAGE = "engine launch checks: vLLM's, of the method, the draft and its config"

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
    draft_tensor_parallel(state, s)
    pipeline_parallel(state, s)
    mla_backend(state, s)


def check_mtp_settings(state: BuildState, s: ServeSettings) -> None:
    """Emit the events of an MTP launch's line at the state's vLLM version: what the parser
    makes of it, a speculative-config key the release has no field for, a token count below
    1 (the MTP procedure judges the rest of the launch)."""
    parser_checks(state, s, SPELLING)
    _speculative_config_keys(state, s)
    _token_count_positive(state, s)


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
