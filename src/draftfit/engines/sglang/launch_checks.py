"""What an SGLang release does with the launch's serving settings (DF550-DF559).

Run by SGLang's launch step when settings were given for SGLang; the checks every engine
shares are in :mod:`draftfit.engines.launch_checks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.engines.draft_quant import ONLINE_QUANTIZATION, read_draft_quant
from draftfit.engines.launch_checks import (
    Spelling,
    launch_flags,
    located,
    method_known,
    parser_checks,
    quantization_names,
    unreadable_values,
    value_after_switch,
)
from draftfit.engines.launch_context import (
    context_over_target,
    pipeline_stages,
)
from draftfit.engines.launch_paths import (
    draft_is_checked,
    draft_path_is_folder,
    launch_paths,
    remote_code_trusted,
)
from draftfit.engines.serve import first_release_where
from draftfit.engines.view import Event
from draftfit.rule_ids import Consequence

if TYPE_CHECKING:
    from draftfit.engines.procedure.state import BuildState
    from draftfit.engines.profile import Profile
    from draftfit.serve.settings import ServeSettings

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.PIPELINE_PARALLEL_AUX_STATES,
    rule_ids.DRAFT_MLA_ATTENTION_BACKEND,
    rule_ids.DRAFT_QUANTIZATION_FLAG_INHERITED,
    rule_ids.SERVE_SETTING_INVALID,
)
EMITS_STAGE = "engine launch checks: SGLang's"

SPELLING = Spelling(
    prog="sglang serve",
    command=("-m", "sglang.launch_server"),
    flag_hints={"--tensor-parallel": "`--tp-size`"},
    method_flag="--speculative-algorithm",
    method_pointer="/speculative-algorithm",
    method_facts=("algorithm_names",),
)


def check_settings(state: BuildState, s: ServeSettings) -> None:
    """Emit the events for `s` at the state's SGLang version."""
    launch_flags(state, s, SPELLING)
    unreadable_values(state, s, SPELLING)
    context_over_target(state, s, "context_length_over_target", "--context-length")
    value_after_switch(state, s, SPELLING)
    names = _algorithm_names(state.profile)
    method_known(state, s, SPELLING, names, _algorithm_names)
    _launch_serves_draft(state, s)
    _step_flags(state, s)
    _no_draft_steps(state, s)
    quantization_names(state, s)
    draft_path_is_folder(state, s, SPELLING)
    launch_paths(state, s, SPELLING, "--model-path")
    remote_code_trusted(state, s, "--trust-remote-code")
    _sglang_pipeline_parallel(state, s)
    _mla_backend(state, s)
    _sglang_quantization_flag(state, s)


def check_mtp_settings(state: BuildState, s: ServeSettings) -> None:
    """Emit the events of an MTP (NEXTN) launch's line at the state's SGLang version: what
    the parser makes of it, some of the three step flags without the others (the MTP
    procedure judges the rest of the launch)."""
    parser_checks(state, s, SPELLING)
    _step_flags(state, s)


def _algorithm_names(profile: Profile) -> list[str]:
    """The `--speculative-algorithm` names a release's parser accepts."""
    return [str(item[0]) for item in profile.value("algorithm_names") or [] if item]


# Written, it lets the release choose the steps itself whatever else is written (0.5.18+).
ADAPTIVE = "--speculative-adaptive"
STEP_FLAGS = (
    "--speculative-num-steps",
    "--speculative-eagle-topk",
    "--speculative-num-draft-tokens",
)


def _step_flags(state: BuildState, s: ServeSettings) -> None:
    """Some of the three step flags of an EAGLE-family launch: the release chooses the
    steps, top-k and draft tokens itself only when none of them is written, and its server
    arguments stop start-up when top-k or the draft tokens come without the steps (an
    assertion) or the steps without top-k (top-k is compared with an integer):
    `step_flags_partial`. The same for an MTP launch (NEXTN) and an EAGLE draft's."""
    if s.method is None or s.method.upper() not in ("EAGLE", "EAGLE3", "NEXTN"):
        return
    fact = state.profile.fact("step_flags_partial")
    if not fact.known or not isinstance(fact.value, dict):
        return
    steps, topk, tokens = (
        s.speculative_num_steps,
        s.speculative_eagle_topk,
        s.speculative_num_draft_tokens,
    )
    written = ", ".join(
        f"`{flag}`"
        for flag, value in zip(STEP_FLAGS, (steps, topk, tokens), strict=True)
        if value is not None
    )
    if steps is None and (topk is not None or tokens is not None):
        if fact.value.get("steps_absent") != "refused" or ADAPTIVE in s.flags_written:
            return
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"the launch writes {written} but not `--speculative-num-steps`: {state.title} "
            "chooses the three itself only when none is written, and its server arguments "
            "assert it (`AssertionError` at start-up)",
            located(s, "/speculative-num-steps"),
            ("step_flags_partial",),
            fix="write all three (`--speculative-num-steps 3 --speculative-eagle-topk 1 "
            "--speculative-num-draft-tokens 4`), or none for the release's own choice",
        )
    elif steps is not None and topk is None and fact.value.get("topk_absent") == "refused":
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            f"the launch writes {written} but not `--speculative-eagle-topk`: {state.title}'s "
            "server arguments compare the absent top-k with an integer and stop start-up "
            "(`TypeError: '>' not supported between instances of 'NoneType' and 'int'`)",
            located(s, "/speculative-eagle-topk"),
            ("step_flags_partial",),
            fix="add `--speculative-eagle-topk 1` (and `--speculative-num-draft-tokens "
            f"{steps + 1}`), or leave the three step flags out for the release's own choice",
        )


def _no_draft_steps(state: BuildState, s: ServeSettings) -> None:
    """`--speculative-num-steps 0`: SGLang's parser and server arguments take it with
    `--speculative-eagle-topk` (0.5.23, confirmed by running them; without it,
    :func:`_step_flags`), but a draft that takes no step proposes nothing, so the
    speculative launch gains nothing over serving the target alone."""
    if s.speculative_num_steps != 0:
        return
    state.event(
        rule_ids.SERVE_SETTING_INVALID,
        f"`--speculative-num-steps` is 0: {state.title} takes it, but the draft then takes no "
        "step and proposes no token, so the launch is no faster than the target alone (what "
        "the EAGLE worker does with 0 steps was not run)",
        located(s, "/speculative-num-steps"),
        (),
        fix="set `--speculative-num-steps` to the steps the draft was trained for (e.g. 3), "
        "or leave the three step flags out for SGLang's own choice",
        consequence=Consequence.DEGRADES,
    )


def _launch_serves_draft(state: BuildState, s: ServeSettings) -> None:
    """A whole launch that does not serve the checked draft (no speculative algorithm, no
    draft path, another folder)."""
    if not s.full_launch:
        return
    if s.method is None:
        state.refuse(
            rule_ids.SERVE_SETTING_INVALID,
            "the launch has no `--speculative-algorithm`: SGLang loads no draft and serves "
            "the target alone, so the checked draft is not what runs",
            located(s, "/speculative-algorithm"),
            (),
            fix="add `--speculative-algorithm EAGLE3` (or `EAGLE`) and "
            "`--speculative-draft-model-path DRAFT`",
            consequence=Consequence.DRAFT_NOT_SERVED,
        )
        return
    draft_is_checked(
        state,
        s,
        "--speculative-draft-model-path",
        "/speculative-draft-model-path",
        # sglang/srt/arg_groups/speculative_hook.py (_handle_eagle_family): the target's
        # path stands in for the draft's for DeepSeek-family targets (their MTP layers);
        # for the others the draft worker gets no path and start-up fails.
        "SGLang loads the target's own weights as the draft (DeepSeek-family targets, "
        "whose MTP layers it runs) or, for other targets, fails at start-up without a draft",
        Consequence.DRAFT_NOT_SERVED,
    )


def _sglang_pipeline_parallel(state: BuildState, s: ServeSettings) -> None:
    """SGLang refuses pipeline parallelism with EAGLE3 in its server-argument checks."""
    pp = pipeline_stages(state, s)
    if pp is None or state.value("pp_with_eagle3") != "refused":
        return
    gpus = pp * (s.tensor_parallel_size or 1)
    state.refuse(
        rule_ids.PIPELINE_PARALLEL_AUX_STATES,
        f"--pp-size {pp} with EAGLE3: {state.title} refuses pipeline parallelism with this "
        "speculative algorithm while it checks the server arguments (an assertion), so "
        "the server does not start",
        located(s, "/pipeline_parallel_size"),
        ("pp_with_eagle3",),
        fix=f"serve with --pp-size 1 (spread the GPUs with --tp-size {gpus} instead)",
    )


def _mla_backend(state: BuildState, s: ServeSettings) -> None:
    """SGLang: an MHA draft next to an MLA target inherits the target's attention backend;
    an MLA-only backend then refuses the draft at start-up."""
    backend = s.attention_backend
    if (
        backend is None
        or state.target is None
        or not state.target.is_mla
        or s.draft_attention_backend is not None
    ):
        return
    if state.family in state.traits.mla_families:
        return  # an MLA draft runs on MLA backends
    if backend not in (state.value("mla_only_attention_backends") or []):
        return
    if state.value("draft_attention_backend_default") != "target":
        return
    has_setting = bool(state.value("draft_attention_backend_flag"))
    error = f"`ValueError: {backend} backend can only be used with MLA models.`"
    arrives = first_release_where(
        state.profile, lambda later: bool(later.value("draft_attention_backend_flag"))
    )
    fix = (
        "add `--speculative-draft-attention-backend` with a backend for standard "
        "attention (e.g. `fa3`, `flashinfer` or, on Blackwell, `trtllm_mha`), or serve an "
        "MLA draft (`Eagle3DeepseekV2ForCausalLM`)"
        if has_setting
        else f"{state.title} has no draft attention backend setting "
        f"(`--speculative-draft-attention-backend` arrives in SGLang {arrives}): choose a "
        "--attention-backend that runs both MLA and standard attention (e.g. "
        "`flashinfer`), upgrade, or serve an MLA draft"
    )
    citations = state.profile.item_sources(
        "mla_only_attention_backends", backend
    ) + state.citations("draft_attention_backend_default", "draft_attention_backend_flag")
    state.view.refuse(
        Event(
            rule_ids.DRAFT_MLA_ATTENTION_BACKEND,
            f"the target is MLA (`kv_lora_rank`) and the draft uses standard attention; with "
            f"--attention-backend {backend} and no draft backend of its own, {state.title} runs "
            f"the draft on {backend} too, which fails at start-up: {error}",
            located(s, "/attention_backend"),
            citations,
            fix,
        )
    )


def _sglang_quantization_flag(state: BuildState, s: ServeSettings) -> None:
    """SGLang: `--quantization METHOD` builds the draft with METHOD too; an unquantized draft
    then fails at start-up (unless `--speculative-draft-model-quantization unquant`)."""
    flag = s.quantization
    if flag is None or flag.lower() in ONLINE_QUANTIZATION or state.target is None:
        return
    if (
        not state.value("draft_quantization_inherited")
        or read_draft_quant(state.config) is not None
    ):
        return
    opt_out = bool(state.value("draft_quantization_opt_out"))
    if opt_out and s.draft_quantization is not None:
        return  # the draft has its own setting (`unquant` keeps it as stored)
    method = state.target.quantization_method
    state.refuse(
        rule_ids.DRAFT_QUANTIZATION_FLAG_INHERITED,
        f"the launch passes --quantization {flag} and the draft is not quantized: "
        f"{state.title} builds the draft with `{flag}` too and start-up fails looking for the "
        f"draft's `{flag}` config",
        located(s, "/quantization"),
        ("draft_quantization_inherited", "draft_quantization_opt_out"),
        fix="pass `--speculative-draft-model-quantization unquant`"
        + (
            f", or leave --quantization out (SGLang reads `{method}` from the target's config)"
            if method is not None
            else ", or leave --quantization out"
        )
        if opt_out
        else f"leave --quantization out ({state.title} has no draft quantization setting"
        + (f"; SGLang reads `{method}` from the target's config)" if method else ")"),
    )
