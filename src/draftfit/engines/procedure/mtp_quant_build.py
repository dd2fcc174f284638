"""The MTP step for a quantized MTP layer a release cannot build or load for its family
(DF542), whatever its exclusion list says about other modules: the release's
`mtp_quant_build_refused` names, per scheme and family, the defect it has, and this step
finds the modules of the MTP layer that meet it under the release's own exclusion rule.

Three defects are modelled, all of SGLang (run on a CPU):

- `shared-experts-weight` (GPTQ Marlin): GLM-4.5's MoE block reads its shared experts'
  plain `weight` after building them, which a GPTQ layer does not have: refused at build
  wherever the shared experts' `gate_up_proj` is built GPTQ.
- `fused-qkv-a` (GPTQ Marlin; GLM-4.7-Flash's AWQ too): a DeepSeek-style layer (with a
  `q_lora_rank`) loads `q_a_proj` and `kv_a_proj_with_mqa` concatenated along the first
  dimension, the output of an unpacked weight but the packed input of a `qweight`: refused
  at load wherever both are stored packed, whatever they are built as.
- `shared-experts-mixed` (compressed-tensors): DeepSeek's and GLM-4.5's MoE blocks compare
  the block sizes of their shared experts' `gate_up_proj` and `down_proj` quantization
  configs when the first is FP8: refused at build where `gate_up_proj` is built quantized
  and `down_proj` not.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from draftfit import rule_ids
from draftfit.draft.mtp import MtpLayer, MtpTarget
from draftfit.engines.name_patterns import NameList
from draftfit.engines.procedure.mtp_exclusions import (
    AWQ_LISTED,
    engine_name,
    excluded,
    exclusion_naming,
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
from draftfit.engines.procedure.mtp_quant_method import (
    config_refusal,
    exclusion_rule,
    fused_names,
    matched_entries,
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
SHARED_MIXED = "shared-experts-mixed"
FUSED_QKV_A_SCALAR = "fused-qkv-a-scalar"
# The checkpoint modules each defect concerns, by their names under the MTP layer's prefix.
SHARED_GATE_UP = ("mlp.shared_experts.gate_proj", "mlp.shared_experts.up_proj")
SHARED_DOWN = "mlp.shared_experts.down_proj"
MODULES = {
    SHARED_EXPERTS: SHARED_GATE_UP,
    FUSED_QKV_A: ("self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa"),
    SHARED_MIXED: (*SHARED_GATE_UP, SHARED_DOWN),
    FUSED_QKV_A_SCALAR: ("self_attn.q_a_proj", "self_attn.kv_a_proj_with_mqa"),
}


def quantized_layer_built(state: BuildState) -> bool | None:
    """The quantized MTP layer can be built and loaded by this release for its family: no
    module of it meets a defect `mtp_quant_build_refused` names (DF542)."""
    target = mtp_inputs(state).target
    kind = _defect(state, target)
    if kind is None:
        return None
    rule = exclusion_rule(state)
    naming = exclusion_naming(state.profile, target)
    if rule is None or not isinstance(naming, str):
        return None  # the quantization step says it was not read
    entries = matched_entries(state, target, rule)
    if (
        unsafe_entries(entries, rule)
        or config_refusal(state, target, rule) is not None
        or not method_judged(state)
    ):
        return None  # the quantization step says why it judged nothing
    names = NameList(list(entries), "exclusions")
    by_name = fused_names(state, target, rule)
    if by_name is None:
        return None
    for index in mtp_view(state).layers_built or ():
        layer = target.layers.get(index)
        if layer is None:
            continue
        built = partial(
            _built_quantized, target, layer, index, naming, rule, entries, names, by_name
        )
        met = _modules_met(kind, layer, built)
        if met:
            _report(state, rule, layer.prefix, kind, met)
            return None
    if kind == SHARED_EXPERTS:
        _backbone_shared_experts(state, target, rule, entries, names)
    if kind == FUSED_QKV_A_SCALAR and set(MODULES[kind]) <= target.backbone_scaled:
        # the target's own load concatenates its layers' per-tensor scales the same way
        # (run with the target's real weights): the index names them
        last = (target.num_hidden_layers or 1) - 1
        shown = [f"model.layers.{last}.{m}" for m in MODULES[kind]]
        _report(state, rule, f"model.layers.{last}.", kind, shown, backbone=True)
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
            _report(state, rule, f"model.layers.{index}.", SHARED_EXPERTS, [name], backbone=True)
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


def _built_quantized(
    target: MtpTarget,
    layer: MtpLayer,
    index: int,
    naming: str,
    rule: str,
    entries: tuple[str, ...],
    names: NameList,
    by_name: frozenset[str],
    module: str,
) -> bool:
    """Whether the release builds `module` of `layer` with the target's quantization."""
    name = engine_name(
        layer, module, naming, target.own_prefix_of(index, module), target.num_hidden_layers
    )
    return not unquantized_under(rule, target, layer, index, module, name, entries, names, by_name)


def _modules_met(kind: str, layer: MtpLayer, built: Callable[[str], bool]) -> list[str]:
    """The modules of `layer` that meet defect `kind` (`built`: whether the release builds a
    module quantized): the shared experts' projections built quantized; `q_a_proj` and
    `kv_a_proj_with_mqa` where both are stored quantized (concatenated as stored, whatever
    they are built as); the shared experts' `gate_up_proj` built quantized beside a
    `down_proj` built unquantized."""
    present = [m for m in MODULES[kind] if m in layer.modules()]
    if kind in (FUSED_QKV_A, FUSED_QKV_A_SCALAR):  # both, as stored
        stored = [m for m in present if _stored_so(kind, layer, m)]
        return [layer.prefix + m for m in stored] if len(stored) == len(MODULES[kind]) else []
    if kind == SHARED_MIXED:
        gate_up = [m for m in present if m in SHARED_GATE_UP and built(m)]
        down_left = SHARED_DOWN in present and not built(SHARED_DOWN)
        return [layer.prefix + m for m in (*gate_up, SHARED_DOWN)] if gate_up and down_left else []
    return [layer.prefix + m for m in present if built(m)]


def _stored_so(kind: str, layer: MtpLayer, module: str) -> bool:
    """Whether `module` of `layer` is stored as defect `kind` needs: quantized, or (for the
    scalar one) with a tensor of no dimension (a per-tensor scale)."""
    if kind != FUSED_QKV_A_SCALAR:
        return layer.stored_quantized(module) is True
    return any(
        (info := layer.tensors.get(f"{module}.{part}")) is not None and info.shape == ()
        for part in layer.parts(module)
    )


def _report(
    state: BuildState, rule: str, prefix: str, kind: str, modules: list[str], backbone: bool = False
) -> None:
    target = mtp_inputs(state).target
    scheme = target.quant.scheme or target.quant.method or ""
    family = target.family.title if target.family is not None else "the target"
    shown = ", ".join(f"`{m}`" for m in modules)
    prefix = prefix.rstrip(".")
    key = "modules_to_not_convert" if rule == AWQ_LISTED else "dynamic"
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
    elif kind == SHARED_MIXED:
        what = (
            f"{state.title} builds the shared experts of {whose} with `gate_up_proj` quantized "
            f"(`{scheme}`) and `down_proj` unquantized ({shown}), and its MoE block then reads "
            "the block size of both quantization configs, which an unquantized layer does not "
            "have: the build is refused at start-up (`AttributeError: 'UnquantizedLinearMethod' "
            "object has no attribute 'quant_config'`)"
        )
        fix = (
            "list the shared experts' fused `gate_up_proj` by that name (or a `re:` pattern of "
            f"the whole MTP layer, as the fix of {rule_ids.MTP_QUANT_UNCOVERED.code} gives) so "
            "that all three are left "
            "unquantized, or take `down_proj` out of the list so that all three are quantized"
        )
    elif kind == FUSED_QKV_A_SCALAR:
        what = (
            f"{state.title} loads {whose}'s {shown} by concatenating each pair of their tensors, "
            f"the per-tensor scales of `{scheme}` too, which do not concatenate into the fused "
            "module's one scale: the load is refused (`RuntimeError: zero-dimensional tensor (at "
            "position 0) cannot be concatenated`), in every layer stored so"
            + (" (the target's own load stops before the MTP layer's)" if backbone else "")
        )
        fix = (
            "store `q_a_proj` and `kv_a_proj_with_mqa` unquantized (BF16) in every layer and "
            "list them in the exclusion list; or serve the target with a release that loads "
            "them (`draftfit matrix`)"
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
        if backbone and kind != FUSED_QKV_A_SCALAR
        else Location(tensor=modules[0]),
        keys=(FACT, "mtp_exclusion_match"),
        fix=fix,
        consequence=Consequence.REFUSES_TO_START,
    )


__all__ = ["quantized_layer_built"]
