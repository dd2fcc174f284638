"""The MTP step for a quantized MTP layer a release cannot build or load for its family
(DF542), whatever its exclusion list says about other modules: the release's
`mtp_quant_build_refused` names, per scheme and family, the defect it has, and this step
finds the modules of the MTP layer that meet it under the release's own exclusion rule.

Two defects are modelled, both of SGLang's GPTQ Marlin path (run on a CPU):

- `shared-experts-weight`: GLM-4.5's MoE block reads its shared experts' plain `weight`
  after building them, which a GPTQ layer does not have: refused at build wherever the
  shared experts' `gate_up_proj` is built GPTQ.
- `fused-qkv-a`: a DeepSeek-style layer (with a `q_lora_rank`) loads `q_a_proj` and
  `kv_a_proj_with_mqa` concatenated along the first dimension, the output of an unpacked
  weight but the packed input of a GPTQ `qweight`: refused at load wherever both are stored
  and built GPTQ.
"""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.mtp import MtpLayer, MtpTarget
from draftfit.engines.name_patterns import NameList
from draftfit.engines.procedure.mtp_exclusions import (
    AWQ_LISTED,
    DYNAMIC_RULES,
    engine_name,
    excluded,
    own_prefix,
    unquantized_under,
    unsafe_entries,
)
from draftfit.engines.procedure.mtp_part import (
    known_value,
    mtp_finding,
    mtp_inputs,
    mtp_view,
    not_read,
)
from draftfit.engines.procedure.mtp_quantization import (
    config_refusal,
    exclusion_rule,
    method_judged,
)
from draftfit.engines.procedure.state import BuildState
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.MTP_QUANT_BUILD_REFUSED,)
EMITS_STAGE = "MTP procedure: a quantized MTP layer the release cannot build or load"

FACT = "mtp_quant_build_refused"
# The most (backbone MoE layer, exclusion entry) pairs matched one by one (released models
# have a few hundred layers and a few entries; a config beyond it is not judged).
MAX_MATCHES = 200_000
SHARED_EXPERTS = "shared-experts-weight"
FUSED_QKV_A = "fused-qkv-a"
# The checkpoint modules each defect concerns, by their names under the MTP layer's prefix.
MODULES = {
    SHARED_EXPERTS: ("mlp.shared_experts.gate_proj", "mlp.shared_experts.up_proj"),
    FUSED_QKV_A: ("self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa"),
}


def quantized_layer_built(state: BuildState) -> bool | None:
    """The quantized MTP layer can be built and loaded by this release for its family: no
    module of it meets a defect `mtp_quant_build_refused` names (DF542)."""
    target = mtp_inputs(state).target
    kind = _defect(state, target)
    if kind is None:
        return None
    rule = exclusion_rule(state)
    naming = known_value(state, "mtp_exclusion_names")
    if rule is None or not isinstance(naming, str):
        return None  # the quantization step says it was not read
    entries = target.quant.dynamic if rule in DYNAMIC_RULES else target.quant.exclusions
    if (
        unsafe_entries(entries, rule)
        or config_refusal(state, target, rule) is not None
        or not method_judged(state)
    ):
        return None  # the quantization step says why it judged nothing
    names = NameList(list(entries), "exclusions")
    for index in mtp_view(state).layers_built or ():
        layer = target.layers.get(index)
        if layer is None:
            continue
        met = _modules_met(kind, target, layer, index, naming, rule, entries, names)
        if met:
            _report(state, layer.prefix, kind, met)
            return None
    if kind == SHARED_EXPERTS:
        _backbone_shared_experts(state, target, rule, entries, names)
    return None


def _backbone_shared_experts(
    state: BuildState, target: MtpTarget, rule: str, entries: tuple[str, ...], names: NameList
) -> None:
    """The same defect in the backbone's MoE layers (built before the MTP layer): the first
    one whose shared experts the release builds quantized. Its MoE layers run from
    `first_k_dense_replace` to the last; without that key only the last is known to be one,
    and the others are reported as not judged where the last is left unquantized."""
    count = target.num_hidden_layers
    if count is None or count == 0 or MODULES[SHARED_EXPERTS][0] not in target.backbone_modules:
        return
    first = target.first_moe_layer
    indexes = (
        range(first, count) if first is not None and first < count else range(count - 1, count)
    )
    if len(indexes) * max(1, len(entries)) > MAX_MATCHES:
        not_read(
            state,
            f"the config declares {len(indexes)} MoE layers and {len(entries)} exclusion entries: "
            f"whether {state.title} builds each layer's shared experts quantized was not judged",
        )
        return
    for index in indexes:
        name = f"model.layers.{index}.mlp.shared_experts.gate_up_proj"
        if not excluded(name, entries, names, rule):
            _report(state, f"model.layers.{index}.", SHARED_EXPERTS, [name], backbone=True)
            return
    if first is None:
        not_read(
            state,
            f"whether {state.title} builds the shared experts of the backbone's other MoE "
            "layers quantized depends on `first_k_dense_replace`, which the config does not give",
        )


def _defect(state: BuildState, target: MtpTarget) -> str | None:
    """The defect the release's data names for the target's scheme and family, or None."""
    if not target.quantized or target.family is None:
        return None
    table = known_value(state, FACT)
    scheme = target.quant.scheme or target.quant.method or ""
    by_family = table.get(scheme) if isinstance(table, dict) else None
    kind = by_family.get(target.family.name) if isinstance(by_family, dict) else None
    return kind if kind in MODULES else None


def _modules_met(
    kind: str,
    target: MtpTarget,
    layer: MtpLayer,
    index: int,
    naming: str,
    rule: str,
    entries: tuple[str, ...],
    names: NameList,
) -> list[str]:
    """The modules of `layer` that meet defect `kind`: the shared experts' projections the
    release builds quantized; or `q_a_proj` and `kv_a_proj_with_mqa` where both are stored
    quantized and built so (none where the layer lacks one of them)."""
    present = [m for m in MODULES[kind] if m in layer.modules()]
    if kind == FUSED_QKV_A:  # concatenated as stored, whatever they are built as
        stored = [m for m in present if layer.stored_quantized(m) is True]
        return [layer.prefix + m for m in stored] if len(stored) == len(MODULES[kind]) else []
    built: list[str] = []
    for module in present:
        name = engine_name(
            layer, module, naming, own_prefix(target, index, module), target.num_hidden_layers
        )
        if not unquantized_under(rule, target, layer, index, module, name, entries, names):
            built.append(layer.prefix + module)
    return built


def _report(
    state: BuildState, prefix: str, kind: str, modules: list[str], backbone: bool = False
) -> None:
    target = mtp_inputs(state).target
    scheme = target.quant.scheme or target.quant.method or ""
    family = target.family.title if target.family is not None else "the target"
    shown = ", ".join(f"`{m}`" for m in modules)
    prefix = prefix.rstrip(".")
    key = "modules_to_not_convert" if exclusion_rule(state) == AWQ_LISTED else "dynamic"
    whose = f"the backbone layer {prefix}" if backbone else f"the MTP layer {prefix}"
    if kind == SHARED_EXPERTS:
        what = (
            f"{state.title} builds {family}'s MoE block with the shared experts of {whose} "
            f"({shown}) {scheme.upper()}-quantized and then reads their plain `weight`, which a "
            "packed layer does not have: the build is refused at start-up (`AttributeError: "
            "... has no attribute 'weight'`), for every MoE layer built so"
        )
        fix = (
            f"leave the shared experts unquantized: a `-:` key of `{key}` matching their "
            "runtime names (`model.decoder.mlp.shared_experts.`, and each backbone layer's), "
            "stored BF16; or serve the target with a release that builds them (`draftfit "
            "matrix`)"
        )
    else:
        what = (
            f"{state.title} loads the MTP layer {prefix}'s {shown}, stored {scheme.upper()}, by "
            "concatenating their packed tensors along the first dimension (an unpacked "
            "weight's output, a packed `qweight`'s input): their shapes refuse it at load "
            "(`RuntimeError: Sizes of tensors must match`), and the backbone's layers stored "
            "so the same way"
        )
        fix = (
            "store `q_a_proj` and `kv_a_proj_with_mqa` unquantized (BF16) and leave them so "
            f"with a `-:` key of `{key}`, in every layer; or serve the target with a release "
            "that loads them (`draftfit matrix`)"
        )
    mtp_finding(
        state,
        rule_ids.MTP_QUANT_BUILD_REFUSED,
        what,
        location=Location(target.quant.source, "/quantization_config/dynamic")
        if backbone
        else Location(tensor=modules[0]),
        keys=(FACT, "mtp_exclusion_match"),
        fix=fix,
        consequence=Consequence.REFUSES_TO_START,
    )


__all__ = ["quantized_layer_built"]
