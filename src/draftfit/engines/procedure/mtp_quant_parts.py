"""The MTP step that checks a quantized MTP layer carries its quantization tensors.

A module the release builds quantized gets the parameters of the target's quantization method
(`weight_scale_inv` beside an FP8 block weight, `weight_scale` beside a compressed-tensors
one, `qzeros` and `scales` beside a GPTQ `qweight`). A checkpoint that stores the module
quantized but leaves one of them out loads with no error on a quantized target (neither
engine's load check runs for one), and the parameter keeps its initial value: every draft is
wrong. The tensors required are those the target's own last decoder layer carries for the
same module, which the same method loads.

Runs after :func:`draftfit.engines.procedure.mtp_quantization.quantization_covered`, which
records the modules each MTP layer stores quantized and the release builds quantized.
"""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.mtp import WEIGHT_PARTS
from draftfit.engines.procedure.mtp_matching import ROUTED_EXPERT
from draftfit.engines.procedure.mtp_part import (
    SHOWN,
    mtp_finding,
    mtp_inputs,
    mtp_view,
)
from draftfit.engines.procedure.mtp_presence import decoder_template, tensor_outcome
from draftfit.engines.procedure.state import BuildState
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.MTP_TENSOR_MISSING,)
EMITS_STAGE = "MTP procedure: the quantization tensors of the MTP layers"

# Quantization tensors a method stores that its kernels may not read, per `quant_method`:
# GPTQ's zero points go unused for a symmetric config, the only one vLLM's GPTQ config class
# takes: its kernel is configured without zero points
# (vllm/model_executor/layers/quantization/auto_gptq.py:362@v0.34.0) and Marlin replaces the
# loaded ones with an empty tensor after loading
# (vllm/model_executor/kernels/linear/mixed_precision/marlin.py:149-152@v0.34.0); SGLang's
# Marlin step does not read them either (hardware_backend/gpu/quantization/
# gptq_kernels.py:141-168@v0.5.23). A missing one is not judged a defect. A missing weight
# (`qweight`, `weight_packed`) is DF221's by
# :func:`draftfit.engines.procedure.mtp_presence.tensors_present`.
OPTIONAL_PARTS: dict[str, frozenset[str]] = {"gptq": frozenset({"qzeros"})}


def quantized_parts_present(state: BuildState) -> bool | None:
    """Each MTP module stored and built quantized carries every quantization tensor the
    target's own layers carry for that module (DF221)."""
    target, mtp = mtp_inputs(state).target, mtp_view(state)
    built = mtp.stored_and_built_quantized
    family = target.family
    if not built or family is None or not target.backbone_quant_parts:
        return None
    if not decoder_template(family.naming, target.backbone_modules):
        return None
    optional = WEIGHT_PARTS | OPTIONAL_PARTS.get(target.quant.method or "", frozenset())
    template: dict[str, set[str]] = {}
    for item in target.backbone_quant_parts:
        module, _, part = item.rpartition(".")
        if part not in optional:
            template.setdefault(module, set()).add(part)
    for index, modules in sorted(built.items()):
        layer = target.layers.get(index)
        if layer is None:
            continue
        missing = [
            f"{module}.{part}"
            for module in sorted(modules)
            for part in sorted(template.get(module, set()) - set(layer.parts(module)))
        ]
        if not missing:
            continue
        # the target is quantized: `mtp_missing_weights`' `quantized` (no load check runs)
        outcome = tensor_outcome(state)
        if outcome is None:
            continue
        some_experts = _some_experts_only(missing, modules)
        if some_experts and outcome is Consequence.DRAFTS_GARBAGE:
            outcome = Consequence.DEGRADES
        full = [layer.prefix + item for item in missing]
        shown = ", ".join(f"`{name}`" for name in full[:SHOWN])
        more = f" and {len(full) - SHOWN} more" if len(full) > SHOWN else ""
        effect = (
            "their parameters keep their initial values, and tokens routed to those experts "
            "are drafted wrong"
            if some_experts
            else "nothing fills the parameter, and every draft is wrong"
        )
        mtp_finding(
            state,
            rule_ids.MTP_TENSOR_MISSING,
            f"MTP layer {layer.prefix.rstrip('.')} stores its weights quantized, as "
            f"{state.title} builds them (`{mtp.quantization}`), but lacks {shown}{more}, which "
            f"the target's own layers carry and the quantization loads: {effect}",
            location=Location(tensor=full[0]),
            keys=("mtp_missing_weights",),
            fix="export the MTP layer's quantization tensors with its weights (every scale the "
            "target's own quantized layers carry), or export the layer unquantized and list it "
            "in the quantization config's exclusions",
            consequence=outcome,
        )
    return None


def _some_experts_only(missing: list[str], modules: frozenset[str]) -> bool:
    """Whether every missing tensor belongs to a routed expert, and for each projection some
    experts still carry theirs: one expert's parameters stay unset within the fused MoE
    layer, which drafts wrong only for the tokens routed to it."""
    if not all(ROUTED_EXPERT.search(item) for item in missing):
        return False

    def projection(module: str) -> str:
        return ROUTED_EXPERT.sub("mlp.experts.*.", module)

    for item in missing:
        module, _, part = item.rpartition(".")
        experts = {m for m in modules if projection(m) == projection(module)}
        lacking = [i for i in missing if i.rpartition(".")[0] in experts and i.endswith("." + part)]
        if len(lacking) >= len(experts):
            return False
    return True


__all__ = ["quantized_parts_present"]
