"""TensorRT-LLM's method and draft class: the user's `speculative_config` selects EAGLE-3
(EAGLE-1/2 drafts are not supported on the PyTorch backend); from 0.21 the one-model path
always builds `Eagle3ForCausalLM`, whatever `architectures` says, while the two-model path
(`eagle3_one_model: false` where the version still has one) looks the class up by name."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.description import EAGLE, EAGLE3
from draftfit.draft.dialects import is_eagle4_architecture
from draftfit.engines.procedure.classes import settle_class
from draftfit.engines.procedure.dimensions import require_dims
from draftfit.engines.procedure.state import CONFIG, BuildState
from draftfit.engines.trtllm.target import target_checks
from draftfit.location import Location, config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.METHOD_UNSUPPORTED,
    rule_ids.MISSING_ARCHITECTURES,
    rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
    rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
)
EMITS_STAGE = "engine procedure: TensorRT-LLM's method and class resolution"

# How an EAGLE-4 draft is served: only through the eagle-harness plugin (its documentation:
# eagle-hq/EAGLE-4 docs/architecture.md), never by renaming its architecture.
EAGLE4_SERVING = (
    "TensorRT-LLM has no EAGLE-4 support; the eagle-harness plugin serves it in vLLM "
    "and SGLang (renaming its architecture does not make it an EAGLE-3 draft)"
)

LLAMA_EAGLE3 = "llama_eagle3"
MLA_EAGLE3 = "mla_eagle3"
TWO_MODEL = "two-model EAGLE-3"
BY_LAUNCH = ", as the launch sets `eagle3_one_model: false`"
ONE_MODEL_FIX = (
    ", or leave `eagle3_one_model` out (the one-model path, the default, builds "
    "Eagle3ForCausalLM whatever `architectures` says)"
)


def method_supported(state: BuildState) -> bool:
    """Step: refuse (and stop) a method this release cannot run."""
    key = "eagle3_supported" if state.method == EAGLE3 else "eagle_supported"
    if state.value(key):
        return True
    state.refuse(
        rule_ids.METHOD_UNSUPPORTED,
        f"{state.profile.title} cannot run "
        + (
            "EAGLE-1/2 draft checkpoints (only EAGLE-3)"
            if state.method == EAGLE
            else "EAGLE-3 drafts"
        ),
        Location(CONFIG),
        (key,),
        fix="use vLLM or SGLang for EAGLE-1 drafts",
    )
    return False


def resolve_class(state: BuildState) -> bool:
    """Step: the config as transformers reads it and the draft class this version builds;
    without one, the target checks still run (they need no class)."""
    arch: str | None = None
    cfg = state.config
    if "speculators_config" in cfg or "speculators_model_type" in cfg:
        state.refuse(
            rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
            f"{state.profile.title} loads the draft config with transformers and does not "
            "understand speculators-format configs",
            config_at("/speculators_model_type"),
            ("speculators_format",),
            fix="rewrite it as a plain config: `draftfit convert DRAFT --to sglang -o OUT` "
            "(the SGLang layout, `midlayer.*`, is also TensorRT-LLM's)",
        )
    else:
        state.visible = dict(cfg)
        arch = _draft_class(state)
    return settle_class(state, arch, _family, target_checks)


def _two_model_by_launch(state: BuildState) -> bool:
    """The launch sets `eagle3_one_model: false` on a version that still honours it."""
    s = state.serve
    return (
        s is not None
        and s.one_model is False
        and state.value("one_model_default") == "one-model-default"
    )


def _draft_class(state: BuildState) -> str | None:
    selection = state.value("draft_class_selection")
    by_launch = _two_model_by_launch(state)
    if selection == "always-eagle3" and not by_launch:
        return "Eagle3ForCausalLM"
    title = state.profile.title
    path = TWO_MODEL + (BY_LAUNCH if by_launch else "")
    also = ONE_MODEL_FIX if by_launch else ""
    archs = state.config.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        state.refuse(
            rule_ids.MISSING_ARCHITECTURES,
            f"`architectures` is missing or empty: {title} ({path}) "
            "looks the draft class up from `architectures[0]` and fails",
            config_at("/architectures"),
            ("one_model_default", "draft_class_selection")
            if by_launch
            else ("missing_architectures",),
            fix=_two_model_fix(state) + also,
        )
        return None
    arch = _two_model_arch(state, archs[0])
    if arch in (state.value("eagle3_draft_architectures") or []):
        return arch
    state.refuse(
        rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
        f"{title} ({path}) looks up `{arch}` with AutoModelForCausalLM "
        "and fails ('Unknown architecture for AutoModelForCausalLM')",
        config_at("/architectures/0"),
        ("draft_class_selection", "two_model_arch_rename", "eagle3_draft_architectures")
        + (("one_model_default",) if by_launch else ()),
        fix=EAGLE4_SERVING if is_eagle4_architecture(archs[0]) else _two_model_fix(state) + also,
    )
    return None


def _two_model_arch(state: BuildState, arch: str) -> str:
    """The name AutoModelForCausalLM looks up: with `draft_vocab_size`, "EAGLE3" + the
    name, after removing "Eagle3" from it only where the version does (fact
    two_model_arch_rename), so `LlamaForCausalLMEagle3` resolves only there."""
    if "draft_vocab_size" not in state.visible:
        return arch
    if state.value("two_model_arch_rename") == "strip-then-prefix":
        arch = arch.replace("Eagle3", "")
    return "EAGLE3" + arch


def _two_model_fix(state: BuildState) -> str:
    """The `architectures` name that resolves to EAGLE3LlamaForCausalLM at this version."""
    name = (
        "LlamaForCausalLMEagle3"
        if state.value("two_model_arch_rename") == "strip-then-prefix"
        else "LlamaForCausalLM"
    )
    return f'set "architectures": ["{name}"] and `draft_vocab_size`'


def _family(state: BuildState, arch: str) -> str:
    """Any class builds MLA layers for a draft with `kv_lora_rank` where the version does."""
    mla = bool(state.visible.get("kv_lora_rank")) and bool(state.value("mla_when_kv_lora_rank"))
    return MLA_EAGLE3 if mla else LLAMA_EAGLE3


def layer_buildable(state: BuildState) -> bool:
    """Step: refuse (and stop) a missing dimension."""
    return require_dims(state, "", ("draft_class_selection",))
