"""vLLM next to the target: a rotated or quantized target, whether the target class can
return aux hidden states (SupportsEagle3), the widths, a draft context shorter than the
target's, and the KV cache geometry (:mod:`.kv`)."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.description import EAGLE3
from draftfit.draft.target_rotation import DESCRIPTION_FILE, ROTATION_FILE, Rotation
from draftfit.engines.procedure.classes import ever_listed
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.procedure.target import (
    embedding_borrowed,
    target_rotation,
    target_width_checks,
)
from draftfit.engines.vllm.kv import kv_geometry_events
from draftfit.engines.vllm.quantization import first_release, target_quantization
from draftfit.engines.vllm.route import LLAMA_EAGLE
from draftfit.location import config_at, target_config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.DRAFT_CONTEXT_SHORTER_THAN_TARGET,
    rule_ids.TARGET_CAPABILITY_UNKNOWN,
    rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
)
EMITS_STAGE = "engine procedure: vLLM's target checks"


def target_checks(state: BuildState) -> None:
    """Step: what vLLM does with this draft next to the target."""
    t = state.target
    if t is None:
        return
    title = state.profile.title
    pointer = state.draft.layer_config_pointer
    target_rotation(state, _rotation_advice)
    target_quantization(state, t)
    if state.method == EAGLE3:
        _target_capable(state)
    target_width_checks(
        state, eagle1=state.family == LLAMA_EAGLE, embedding_shared=embedding_borrowed(state)
    )
    max_pos = state.vint("max_position_embeddings")
    t_max = t._int("max_position_embeddings")
    serve = state.serve
    asked = serve.context_length if serve is not None else None
    if asked is not None and max_pos and 0 < asked <= max_pos:
        t_max = None  # `--max-model-len` keeps prompts within the draft's positions
    if max_pos and t_max and max_pos < t_max and not state.value("max_position_raised"):
        state.event(
            rule_ids.DRAFT_CONTEXT_SHORTER_THAN_TARGET,
            f"the draft's max_position_embeddings is {max_pos}, the target's {t_max}: "
            f"{title} sizes the draft's rotary cache from the draft config, so prompts "
            f"longer than {max_pos} tokens draft garbage or fail",
            config_at(f"{pointer}/max_position_embeddings"),
            ("max_position_raised",),
            fix=f"set max_position_embeddings to {t_max} (or cap --max-model-len)",
        )
    if state.family not in state.traits.mla_families:
        for event in kv_geometry_events(state.profile, state.visible, t, pointer):
            state.view.add(event)


def _rotation_advice(
    state: BuildState, compensated: str, rotation: Rotation
) -> tuple[str, str] | None:
    """vLLM serves ModelSlim checkpoints only through the vllm-ascend plugin, whose
    releases from v0.16.0rc1 on anti-rotate an EAGLE-3 draft on load when the target's
    description names the rotation file."""
    title = state.profile.title
    plugin = first_release(state, "draft_rotation_compensated", "ascend-plugin")
    trained = "use a draft trained on the rotated target"
    if compensated == "ascend-plugin":
        if state.method == EAGLE3 and rotation.rotation_map is not None:
            return None
        if state.method != EAGLE3:
            return (
                f"the vllm-ascend release for {title} anti-rotates EAGLE-3 drafts "
                "only, so for this EAGLE-1 draft it, like upstream vLLM,",
                f"use an EAGLE-3 draft, or {trained}",
            )
        return (
            f"the vllm-ascend release for {title} anti-rotates the draft only when "
            f"`{DESCRIPTION_FILE}` names the rotation file "
            "(`optional.quarot.rotation_map.global_rotation`); it does not here, so the "
            "plugin, like upstream vLLM,",
            "re-export the target with msModelSlim's QuaRot `export_extra_info: true` (it "
            f"writes `{ROTATION_FILE}` and names it), or {trained}",
        )
    fix = trained
    if plugin is not None and state.method == EAGLE3:
        fix = (
            f"serve with vLLM {plugin} or later and the vllm-ascend release of the same "
            "number, which anti-rotates the draft's `fc` (and a borrowed embedding) on load"
            + (
                ""
                if rotation.rotation_map is not None
                else " once the target is re-exported with msModelSlim's QuaRot "
                f"`export_extra_info: true` (it writes `{ROTATION_FILE}` and names it)"
            )
            + f"; or {trained}"
        )
    return (f"{title} (upstream, and the vllm-ascend release of the same number)", fix)


def _target_capable(state: BuildState) -> None:
    t = state.target
    assert t is not None
    title = state.profile.title
    if state.value("verifier_allow_list_enforced"):
        allowed = state.value("verifier_allow_list") or []
        model_type = t.model_type or ""
        if not any(sub in model_type for sub in allowed):
            state.refuse(
                rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
                f"the target's model_type `{model_type}` contains none of "
                + ", ".join(f"`{a}`" for a in allowed)
                + f": {title} refuses EAGLE-3 for it",
                target_config_at(t.pointer("model_type")),
                ("verifier_allow_list", "verifier_allow_list_enforced"),
                fix="use a vLLM version that supports this target family",
            )
            return
    arch = t.architecture
    if arch is None:
        return
    classes = state.value("verifier_eagle3_classes") or []
    if arch in classes:
        return
    unknown_before = state.value("verifier_eagle3_unknown_before") or []
    known_no = arch in (state.value("verifier_not_eagle3_classes") or [])
    if arch in unknown_before or (not known_no and not ever_listed(state, arch)):
        state.event(
            rule_ids.TARGET_CAPABILITY_UNKNOWN,
            f"draftfit has no record of whether `{arch}` implements vLLM's EAGLE-3 "
            f"interface in {title}"
            + (" (it does from a later release on)" if arch in unknown_before else ""),
            target_config_at("/architectures/0"),
            ("verifier_eagle3_classes", "verifier_eagle3_unknown_before"),
            fix="check the target's model class in this vLLM release for SupportsEagle3",
        )
        return
    state.refuse(
        rule_ids.TARGET_NOT_EAGLE3_CAPABLE,
        f"the target class `{arch}` does not implement vLLM's EAGLE-3 interface "
        f"(SupportsEagle3) in {title}, so it cannot return aux hidden states",
        target_config_at("/architectures/0"),
        ("verifier_eagle3_classes",) + (("verifier_not_eagle3_classes",) if known_no else ()),
        fix="use a vLLM version whose target class supports EAGLE-3, or EAGLE-1",
    )
