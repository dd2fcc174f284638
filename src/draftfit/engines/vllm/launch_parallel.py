"""What a vLLM release does with the launch's parallel layout and attention backend
(DF550-DF553): a draft tensor-parallel size apart from the target's, aux states captured
before the last pipeline stage, and an MLA-only backend forced on a standard-attention
draft. Run by :func:`draftfit.engines.vllm.launch_checks.check_settings`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.engines.launch_checks import located
from draftfit.engines.launch_context import pipeline_stages
from draftfit.engines.serve import first_release_where
from draftfit.engines.view import Event

if TYPE_CHECKING:
    from draftfit.engines.procedure.state import BuildState
    from draftfit.serve.settings import ServeSettings

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.PIPELINE_PARALLEL_AUX_STATES,
    rule_ids.DRAFT_TENSOR_PARALLEL_IGNORED,
    rule_ids.DRAFT_TENSOR_PARALLEL_REFUSED,
    rule_ids.DRAFT_MLA_ATTENTION_BACKEND,
)
EMITS_STAGE = "engine launch checks: vLLM's, of the parallel layout and attention backend"


def draft_tensor_parallel(state: BuildState, s: ServeSettings) -> None:
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


def pipeline_parallel(state: BuildState, s: ServeSettings) -> None:
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


def _forced_backend(state: BuildState, s: ServeSettings) -> tuple[str, str, str] | None:
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


def mla_backend(state: BuildState, s: ServeSettings) -> None:
    """vLLM: a standard-attention draft next to an MLA target whose launch forces an
    MLA-only backend gets that backend too, where the runner builds the draft with the
    launch's backend, and the backend refuses the draft's layers at start-up."""
    forced = _forced_backend(state, s)
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
