"""SGLang next to the target: a target quantization it would give the draft, a rotated
target, whether the target class captures aux hidden states, the widths, and a draft
context shorter than the target's (refused, or raised silently, as the launch's settings
decide)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.description import EAGLE3
from draftfit.draft.target import Target
from draftfit.draft.target_rotation import Rotation
from draftfit.engines.draft_quant import ONLINE_QUANTIZATION, read_draft_quant
from draftfit.engines.procedure.classes import ever_listed
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.procedure.target import (
    embedding_borrowed,
    target_rotation,
    target_width_checks,
)
from draftfit.engines.sglang.classes import LLAMA_EAGLE
from draftfit.location import config_at, target_config_at
from draftfit.rule_ids import Consequence

if TYPE_CHECKING:
    from typing import Any

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.DRAFT_CONTEXT_REFUSED,
    rule_ids.DRAFT_CONTEXT_SHORTER_THAN_TARGET,
    rule_ids.DRAFT_INHERITS_TARGET_QUANTIZATION,
    rule_ids.TARGET_CAPABILITY_UNKNOWN,
    rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
)
EMITS_STAGE = "engine procedure: SGLang's target checks"


def _context_under_launch(state: BuildState, rule: Any, max_pos: int) -> Any:
    """What this version does with a draft context shorter than the target's under the
    launch's settings: None when the launch runs it correctly (`--context-length` within
    the draft's positions; SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 where it also
    raises the draft's rotary cache), 'overwritten-silently' where the variable lets it
    run with its short rotary cache, 'error-unless-env' where it is refused (the
    variable set to false where it defaults to true), else `rule` unchanged."""
    serve = state.serve
    if serve is None:
        return rule
    if serve.context_length is not None and serve.context_length <= max_pos:
        return None
    allowed = serve.allow_longer_context
    if allowed is None:
        return rule
    if rule == "error-unless-env-then-raised" and allowed:
        return None
    if rule == "error-unless-env" and allowed:
        return "overwritten-silently"
    if rule == "overwritten-silently" and not allowed:
        return "error-unless-env"
    return rule


def target_checks(state: BuildState) -> None:
    """Step: what SGLang does with this draft next to the target."""
    t = state.target
    if t is None:
        return
    title = state.profile.title
    _inherited_quantization(state, t)
    target_rotation(state, _rotation_advice)
    if state.method == EAGLE3:
        _target_capable(state)
    target_width_checks(
        state, eagle1=state.family == LLAMA_EAGLE, embedding_shared=embedding_borrowed(state)
    )
    max_pos = state.vint("max_position_embeddings")
    t_max = t._int("max_position_embeddings")
    if not (max_pos and t_max and max_pos < t_max):
        return
    rule = state.value("draft_context_shorter_than_target")
    rule = _context_under_launch(state, rule, max_pos)
    if rule is None:
        return
    where = config_at("/max_position_embeddings")
    keys = ("draft_context_shorter_than_target",)
    fix = f"set the draft's max_position_embeddings to {t_max}, or cap --context-length"
    if rule == "overwritten-silently":
        state.event(
            rule_ids.DRAFT_CONTEXT_SHORTER_THAN_TARGET,
            f"the draft's max_position_embeddings is {max_pos}, the target's {t_max}: "
            f"{title} raises the draft's context to the target's with only a warning "
            "(SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaults to true) but keeps its "
            f"rotary cache at {max_pos} positions, so longer prompts draft garbage or hit "
            "illegal memory accesses",
            where,
            keys,
            fix=fix,
        )
        return
    state.refuse(
        rule_ids.DRAFT_CONTEXT_REFUSED,
        f"the draft's max_position_embeddings is {max_pos}, the target's {t_max}: "
        f"{title} builds the draft with the target's context length and raises "
        "ValueError unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        + (
            ", which does not enlarge the draft's rotary cache in this version (long "
            "prompts then fail with illegal memory accesses)"
            if rule == "error-unless-env"
            else ""
        ),
        where,
        keys,
        fix=fix,
    )


def _target_capable(state: BuildState) -> None:
    t = state.target
    assert t is not None
    title = state.profile.title
    arch = t.architecture
    if arch is None:
        return
    broken = state.value("verifier_eagle3_broken") or []
    if arch in broken:
        state.refuse(
            rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
            f"`{arch}` has SGLang's capture hook in {title}, but its forward does "
            "not capture aux hidden states: the first EAGLE-3 step fails",
            target_config_at("/architectures/0"),
            ("verifier_eagle3_broken",),
            fix="use SGLang 0.5.22 or later for this target",
            # it starts: the missing states are found when the draft first reads them
            consequence=Consequence.FAILS_AT_FIRST_REQUEST,
        )
        return
    if arch in (state.value("verifier_eagle3_classes") or []):
        return
    if not ever_listed(state, arch):
        state.event(
            rule_ids.TARGET_CAPABILITY_UNKNOWN,
            f"draftfit has no record of `{arch}` implementing SGLang's EAGLE-3 capture "
            f"(set_eagle3_layers_to_capture) in any release",
            target_config_at("/architectures/0"),
            ("verifier_eagle3_classes",),
            fix="check the target's model class for set_eagle3_layers_to_capture",
        )
        return
    failure = (
        "ValueError: Model ... does not implement set_eagle3_layers_to_capture"
        if state.value("target_without_capture") == "value-error"
        else "an AttributeError on set_eagle3_layers_to_capture"
    )
    state.refuse(
        rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
        f"the target class `{arch}` cannot capture aux hidden states in {title}: "
        f"start-up fails with {failure}",
        target_config_at("/architectures/0"),
        ("verifier_eagle3_classes", "target_without_capture"),
        fix="use an SGLang version whose target class supports EAGLE-3",
    )


def _rotation_advice(
    state: BuildState, compensated: str, rotation: Rotation
) -> tuple[str, str] | None:
    """SGLang reads a ModelSlim target's description to serve it, but no release
    draftfit has read anti-rotates the draft (sgl-project/sglang#30524 is open)."""
    if compensated != "none":  # pragma: no cover - no other value in the data
        return None
    return (
        state.profile.title,
        "use a draft trained on the rotated target, or serve with vLLM 0.16.0 or later "
        "and its vllm-ascend release"
        + (
            ""
            if rotation.rotation_map is not None
            else " after re-exporting the target with msModelSlim's QuaRot "
            "`export_extra_info: true`"
        )
        + ", which anti-rotates an EAGLE-3 draft's `fc` on load",
    )


def _inherited_quantization(state: BuildState, t: Target) -> None:
    """A quantized target next to an unquantized draft: SGLang gives the draft the
    target's `--quantization`, which an unquantized draft cannot satisfy (methods that
    quantize online, such as `fp8`, can). Only for a launch draftfit was not shown."""
    if not state.value("draft_quantization_inherited") or state.serve is not None:
        return  # with the launch's settings, DF554 says whether it happens
    if read_draft_quant(state.config) is not None:
        return
    method = t.quantization_method
    if method is None or method.lower() in ONLINE_QUANTIZATION:
        return
    opt_out = bool(state.value("draft_quantization_opt_out"))
    state.event(
        rule_ids.DRAFT_INHERITS_TARGET_QUANTIZATION,
        f"the target is quantized (`{method}`) and the draft is not: if the launch passes "
        f"`--quantization {method}`, {state.profile.title} builds the draft with it too and "
        f"start-up fails looking for the draft's `{method}` config",
        target_config_at("/quantization_config/quant_method"),
        ("draft_quantization_inherited", "draft_quantization_opt_out"),
        fix="leave `--quantization` out (SGLang reads the target's method from its "
        "config.json)"
        + (", or pass `--speculative-draft-model-quantization unquant`" if opt_out else ""),
    )
