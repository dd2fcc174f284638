"""vLLM's config route and draft class: a speculators config is converted (its
`transformer_layer_config` becomes the draft layer's config), a legacy EAGLE config's
`model` object is read, `architectures[0]` is rewritten to an EAGLE name and looked up in
the registry (vllm/model_executor/models/registry.py), and the draft layer must be one
vLLM can build."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.draft.description import EAGLE, EAGLE3
from draftfit.draft.dialects import NEMO_AUTOMODEL, is_eagle4_architecture, non_eagle_kind
from draftfit.engines.procedure.classes import settle_class
from draftfit.engines.procedure.dimensions import require_dims
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.profile import Profile
from draftfit.location import config_at

if TYPE_CHECKING:
    from typing import Any

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.INVALID_SPECULATORS_CONFIG,
    rule_ids.METHOD_MISMATCH,
    rule_ids.MISSING_ARCHITECTURES,
    rule_ids.MISSING_CONFIG_FIELD,
    rule_ids.SPECULATORS_CONFIG_WITH_MODEL_TYPE,
    rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
    rule_ids.UNSUPPORTED_ACTIVATION,
    rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
    rule_ids.UNSUPPORTED_LAYER_MODEL_TYPE,
    rule_ids.UNSUPPORTED_SPECULATORS_TYPE,
)
EMITS_STAGE = "engine procedure: vLLM's route and class resolution"

# How an EAGLE-4 draft is served: only through the eagle-harness plugin (its documentation:
# eagle-hq/EAGLE-4 docs/architecture.md), never by renaming its architecture.
EAGLE4_SERVING = (
    "install the eagle-harness plugin and serve with "
    '`--speculative-config \'{"method": "eagle_harness", ...}\'` (an EAGLE-4 draft is not an '
    "EAGLE-3 draft: renaming its architecture does not make vLLM load it)"
)

# Draft classes by the shape logic they share (vllm/model_executor/models/registry.py
# maps every name below to one of these modules at v0.34.0).
LLAMA_EAGLE3 = "llama_eagle3"
QWEN3_EAGLE3 = "qwen3_eagle3"
DEEPSEEK_EAGLE3 = "deepseek_eagle3"
LLAMA_EAGLE = "llama_eagle"
OTHER = "other"

CLASS_FAMILY = {
    "Eagle3LlamaForCausalLM": LLAMA_EAGLE3,
    "LlamaForCausalLMEagle3": LLAMA_EAGLE3,
    "Eagle3Qwen2_5vlForCausalLM": LLAMA_EAGLE3,
    "Eagle3Qwen3vlForCausalLM": LLAMA_EAGLE3,
    "Eagle3MiniMaxM2ForCausalLM": LLAMA_EAGLE3,
    "Eagle3Qwen3ForCausalLM": QWEN3_EAGLE3,
    "Eagle3DeepseekV2ForCausalLM": DEEPSEEK_EAGLE3,
    "Eagle3DeepseekV3ForCausalLM": DEEPSEEK_EAGLE3,
    "EagleLlamaForCausalLM": LLAMA_EAGLE,
}


def resolve_class(state: BuildState) -> bool:
    """Step: route the config (filling `state.visible`) and resolve the registered draft
    class; stop after a refusal."""
    arch = _route_and_arch(state)
    if arch is not None and not _registered(state, arch):
        arch = None
    return settle_class(state, arch, _family)


def _family(state: BuildState, arch: str) -> str:
    return CLASS_FAMILY.get(arch, OTHER)


def _route_and_arch(state: BuildState) -> str | None:
    cfg = state.config
    is_speculators = "speculators_config" in cfg or "speculators_model_type" in cfg
    if is_speculators and "model_type" in cfg:
        state.refuse(
            rule_ids.SPECULATORS_CONFIG_WITH_MODEL_TYPE,
            f"the config has speculators keys and a top-level `model_type` "
            f"(`{cfg.get('model_type')}`): vLLM parses it as a plain HF config and never "
            "converts `transformer_layer_config`",
            config_at("/model_type"),
            ("speculators_format",),
            fix="remove the top-level `model_type` key",
        )
        return None
    if is_speculators:
        return _speculators_route(state)
    if cfg.get("model_type") == "eagle" and isinstance(cfg.get("model"), dict):
        state.route = "legacy-eagle"
        state.visible = dict(cfg["model"])
        for key, value in cfg.items():
            if key != "model":
                state.visible.setdefault(key, value)
    else:
        state.visible = dict(cfg)
    return _rewrite_architecture(state)


def _speculators_route(state: BuildState) -> str | None:
    cfg = state.config
    p = state.profile
    state.route = "speculators"
    if not state.value("speculators_format"):
        state.refuse(
            rule_ids.SPECULATORS_FORMAT_UNSUPPORTED,
            f"{p.title} cannot read speculators-format configs (no top-level "
            "`model_type`; the format is understood from vLLM 0.10.1)",
            config_at("/speculators_model_type"),
            ("speculators_format",),
            fix="convert the draft to a plain config (`draftfit convert --to vllm`) or use "
            "vLLM >= 0.10.1",
        )
        return None
    kind = cfg.get("speculators_model_type")
    allowed = state.value("speculators_types") or []
    if kind not in allowed:
        state.refuse(
            rule_ids.UNSUPPORTED_SPECULATORS_TYPE,
            f"`speculators_model_type` is `{kind}`; {p.title} accepts "
            + ", ".join(f"`{k}`" for k in allowed),
            config_at("/speculators_model_type"),
            ("speculators_types",),
            fix="rewrite it as a plain EAGLE-1 config (architectures `EagleLlamaForCausalLM`)"
            if kind == "eagle"
            else f"serve it with a {p.data.title} release that accepts `{kind}` "
            "(`draftfit engines` lists the releases read), or with the method made for it",
        )
        return None
    other = non_eagle_kind(cfg)
    if other is not None and kind not in ("eagle3", "eagle"):
        name, what = other
        state.refuse(
            rule_ids.METHOD_MISMATCH,
            f"the checkpoint is a {name} draft ({what}), not an EAGLE draft: "
            + (
                f"{p.title} refuses it under method `{state.method}`, since the draft "
                f"declares method `{kind}`"
                if state.value("speculators_method_checked")
                else f"{p.title} builds its own `{kind}` draft class for it, which "
                f"method `{state.method}` does not drive"
            ),
            config_at("/speculators_model_type"),
            ("speculators_types", "speculators_method_checked"),
            fix=f'serve it with "method": "{kind}" (draftfit checks EAGLE drafts only)',
        )
        return None
    problem = _speculators_structure_problem(cfg, p)
    if problem:
        pointer, message = problem
        state.event(
            rule_ids.INVALID_SPECULATORS_CONFIG,
            message + ": `vllm serve <draft>` (which reads the verifier and speculative "
            "tokens from it) refuses the checkpoint; --speculative-config is unaffected",
            config_at(pointer),
            ("speculators_structure",),
            fix="write the speculators structure the `speculators` library writes",
        )
    layer = cfg.get("transformer_layer_config")
    if not isinstance(layer, dict):
        state.refuse(
            rule_ids.MISSING_CONFIG_FIELD,
            "`transformer_layer_config` is "
            + ("missing" if layer is None else "not an object")
            + ": vLLM builds the draft layer from it",
            config_at("/transformer_layer_config"),
            ("speculators_structure",),
            fix="write the draft decoder's config under `transformer_layer_config`",
        )
        return None
    state.visible = dict(layer)
    copied = state.value("speculators_copied_fields") or []
    for name in copied:
        if name == "norm_before_residual":
            default = state.value("speculators_norm_before_residual_default")
            state.visible[name] = cfg.get(name, default)
            if name not in cfg:
                state.view.capture.norm_before_residual_default = bool(default)
        elif name in ("target_hidden_size", "eagle_aux_hidden_state_layer_ids"):
            if cfg.get(name):
                state.visible[name] = cfg[name]
        elif name in cfg:
            state.visible[name] = cfg[name]
    arch_map: dict[str, str] = state.value("speculators_architecture") or {}
    layer_type = layer.get("model_type") or "llama"
    arch = arch_map.get("*") or arch_map.get(layer_type)
    if arch is None:
        state.refuse(
            rule_ids.UNSUPPORTED_LAYER_MODEL_TYPE,
            f"`transformer_layer_config.model_type` is `{layer_type}`; {p.title} builds "
            "EAGLE-3 speculators only for " + ", ".join(f"`{k}`" for k in arch_map),
            config_at("/transformer_layer_config/model_type"),
            ("speculators_architecture",),
            fix="train the draft with a llama (or qwen3) decoder layer",
        )
        return None
    state.visible["architectures"] = [arch]
    return arch


def _rewrite_key(state: BuildState) -> str:
    return "eagle3_arch_rewrite" if state.method == EAGLE3 else "eagle_arch_rewrite"


def _rewrite_architecture(state: BuildState) -> str | None:
    arch_list = state.visible.get("architectures")
    key = _rewrite_key(state)
    rewrite = state.value(key)
    if rewrite == "forced":
        forced = "Eagle3LlamaForCausalLM" if state.method == EAGLE3 else "EagleLlamaForCausalLM"
        state.view.resolution.architecture_rewrite = f"forced to {forced}"
        return forced
    if not (isinstance(arch_list, list) and arch_list and isinstance(arch_list[0], str)):
        pointer = "/model/architectures" if state.route == "legacy-eagle" else "/architectures"
        state.refuse(
            rule_ids.MISSING_ARCHITECTURES,
            "`architectures` is missing or empty: vLLM's EAGLE config wrapper iterates it "
            "and fails",
            config_at(pointer),
            (key,),
            fix='set "architectures": ["LlamaForCausalLMEagle3"] (EAGLE-3) or '
            '["LlamaForCausalLM"] (EAGLE-1)',
        )
        return None
    arch = arch_list[0]
    prefix = "Eagle3" if state.method == EAGLE3 else "Eagle"
    keep = arch.startswith(prefix) or (
        rewrite == "prefix-unless-starts-or-ends" and arch.endswith(prefix)
    )
    resolved = arch if keep else prefix + arch
    if resolved != arch:
        state.view.resolution.architecture_rewrite = f"{arch} -> {resolved}"
    return resolved


def _registered(state: BuildState, arch: str) -> bool:
    key = "eagle3_draft_architectures" if state.method == EAGLE3 else "eagle_draft_architectures"
    registered = state.value(key) or []
    if arch in registered:
        return True
    written = state.visible.get("architectures")
    written0 = written[0] if isinstance(written, list) and written else arch
    how = f"`{written0}` becomes `{arch}`" if written0 != arch else f"`{arch}`"
    pointer = "/model/architectures/0" if state.route == "legacy-eagle" else "/architectures/0"
    suggestion = _suggest_architecture(state.method, registered)
    fix = f'set "architectures": ["{suggestion}"]' if suggestion else None
    if is_eagle4_architecture(written0):
        fix = EAGLE4_SERVING
    elif fix and state.draft.dialect.name == NEMO_AUTOMODEL:
        if any(raw.startswith("model.") for raw in state.checkpoint.tensors):
            fix += " and strip the `model.` prefix from the tensor names"
    elif non_eagle_kind(state.config) is not None:
        fix = "this is not an EAGLE draft: serve it with the method made for it"
    state.refuse(
        rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
        f"{how}, which {state.profile.title} does not register for method `{state.method}` "
        f"(registered: {', '.join(sorted(registered)) or 'none'})",
        config_at(pointer),
        (key, _rewrite_key(state)),
        fix=fix,
    )
    return False


def layer_buildable(state: BuildState) -> bool:
    """Step: refuse (and stop) when vLLM cannot build the draft layer: an activation its
    draft MLP lacks, an MTP `model_type`, or a missing dimension."""
    pointer = state.draft.layer_config_pointer
    act = state.visible.get("hidden_act", "silu")
    if act != "silu":
        state.refuse(
            rule_ids.UNSUPPORTED_ACTIVATION,
            f"`hidden_act` is `{act}`: vLLM's draft MLP supports only `silu` and fails "
            "while building the draft",
            config_at(f"{pointer}/hidden_act"),
            ("draft_activation",),
            fix='train the draft with "hidden_act": "silu"',
        )
        return False
    model_type = state.visible.get("model_type")
    if model_type in (state.value("mtp_model_types") or []):
        state.refuse(
            rule_ids.UNSUPPORTED_DRAFT_ARCHITECTURE,
            f"the draft's `model_type` is `{model_type}`: vLLM rewrites such drafts to its MTP "
            "model (`DeepSeekMTPModel`), and `Eagle3DeepSeekMTPModel` is not registered",
            config_at(f"{pointer}/model_type"),
            ("mtp_model_types",),
            fix='use "model_type": "kimi_k2" or "deepseek_v2" for an MLA EAGLE-3 draft',
        )
        return False
    return require_dims(
        state,
        pointer,
        ("eagle3_draft_architectures" if state.method == EAGLE3 else "eagle_draft_architectures",),
    )


def _speculators_structure_problem(cfg: Mapping[str, Any], p: Profile) -> tuple[str, str] | None:
    sc = cfg.get("speculators_config")
    if not isinstance(sc, dict):
        return "/speculators_config", "`speculators_config` is missing or not an object"
    methods = sc.get("proposal_methods")
    if not isinstance(methods, list) or not methods:
        return (
            "/speculators_config/proposal_methods",
            "`speculators_config.proposal_methods` is missing or empty",
        )
    if not isinstance(methods[0], dict) or "speculative_tokens" not in methods[0]:
        return (
            "/speculators_config/proposal_methods/0",
            "the first proposal method has no `speculative_tokens`",
        )
    verifier = sc.get("verifier")
    if not isinstance(verifier, dict) or "name_or_path" not in verifier:
        return (
            "/speculators_config/verifier",
            "`speculators_config.verifier.name_or_path` is missing",
        )
    return None


def _suggest_architecture(method: str | None, registered: list[str]) -> str | None:
    for preferred in ("LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "EagleLlamaForCausalLM"):
        if preferred in registered:
            if method == EAGLE and "Eagle3" in preferred:
                continue
            if method == EAGLE3 and "Eagle3" not in preferred:
                continue
            return preferred
    return None
