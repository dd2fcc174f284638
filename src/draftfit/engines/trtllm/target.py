"""TensorRT-LLM next to the target: whether its supported-models matrix lists the target
class for EAGLE-3, and the widths."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.procedure.target import (
    embedding_borrowed,
    target_width_checks,
)
from draftfit.location import target_config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.TARGET_CAPABILITY_UNKNOWN,
    rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
)
EMITS_STAGE = "engine procedure: TensorRT-LLM's target checks"


def target_checks(state: BuildState) -> None:
    """Step: what TensorRT-LLM does with this draft next to the target."""
    t = state.target
    if t is None:
        return
    title = state.profile.title
    arch = t.architecture
    if arch is not None and arch not in (state.value("verifier_eagle3_classes") or []):
        if arch in (state.value("verifier_not_eagle3_classes") or []):
            state.refuse(
                rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
                f"TensorRT-LLM's supported-models matrix marks `{arch}` as not supporting "
                f"EAGLE-3 in {title}",
                target_config_at("/architectures/0"),
                ("verifier_not_eagle3_classes",),
                fix="use another engine for this target",
            )
        else:
            state.event(
                rule_ids.TARGET_CAPABILITY_UNKNOWN,
                f"draftfit has no record of whether `{arch}` captures aux hidden states in "
                f"{title} (its TensorRT-LLM target list comes from documentation)",
                target_config_at("/architectures/0"),
                ("verifier_eagle3_classes",),
                fix="check TensorRT-LLM's supported-models matrix for EAGLE-3",
            )
    target_width_checks(state, eagle1=False, embedding_shared=embedding_borrowed(state))
