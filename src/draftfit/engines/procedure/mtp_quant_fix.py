"""The fix a DF540 finding gives for an MTP layer left quantized: the one exclusion entry (or
`dynamic` key) the release's rule takes for the whole layer, in the file and key the target's
quantization is read from, or, where no entry serves (the experts a scheme always builds
quantized, a layer under names a backbone layer shares, one under no prefix), what to ship
instead.
"""

from __future__ import annotations

import re

from draftfit.draft.mtp import MtpLayer
from draftfit.engines.name_patterns import NameList
from draftfit.engines.procedure.mtp_exclusions import (
    AWQ,
    AWQ_LISTED,
    CHECKPOINT_NAMES,
    EXACT,
    EXACT_NO_MOE,
    GPTQ,
    LISTED,
    MODELOPT,
    MODELOPT_PARTS,
    QUARK,
    RUNTIME_RENUMBERED,
    SGLANG_GPTQ,
    SGLANG_LISTED,
    SGLANG_PATHS,
    SGLANG_QUARK,
    engine_name,
    excluded,
    layer_entry,
    own_quantized,
    quantizable,
)
from draftfit.engines.procedure.mtp_matching import ROUTED_EXPERT
from draftfit.engines.procedure.mtp_part import mtp_inputs
from draftfit.engines.procedure.mtp_quant_method import (
    MLA_FUSED,
    exclusion_pointer,
    marlin_experts,
    mla_fused_by_name,
)
from draftfit.engines.procedure.state import BuildState

# The key of the exclusion list each rule's config reads, where the config writes none yet.
LIST_KEYS = {
    EXACT: "modules_to_not_convert",  # vLLM's FP8
    EXACT_NO_MOE: "modules_to_not_convert",
    MODELOPT: "exclude_modules",
    MODELOPT_PARTS: "exclude_modules",
    QUARK: "exclude",
    SGLANG_QUARK: "exclude",
    SGLANG_LISTED: "ignore",
    SGLANG_PATHS: "modules_to_not_convert",
}


def uncovered_fix(state: BuildState, layer: MtpLayer, naming: str, rule: str) -> str:
    """The fix of an uncovered MTP layer: the one entry this release's rule takes for the
    whole layer, in the file and key the target's quantization is read from, or its
    modules by name."""
    quant, title = mtp_inputs(state).target.quant, state.title
    if rule == EXACT_NO_MOE and any(".experts." in m for m in layer.modules()):
        return (
            f"ship the MTP layer quantized like the backbone: {title} builds its fused MoE "
            "quantized whatever the exclusion list says (or serve it with a release that "
            "honours the list: `draftfit matrix` shows them)"
        )
    start = mtp_inputs(state).target.num_hidden_layers
    entry = layer_entry(rule, layer, naming, start)
    built_at = engine_name(layer, "", naming, mtp_start=start)
    if naming == RUNTIME_RENUMBERED:
        return (
            f"ship the MTP layer quantized like the backbone: {title} builds it under "
            f"`{built_at}`, the names of the backbone's own layer {layer.index} too, so an "
            "entry that leaves it unquantized leaves that backbone layer's modules unquantized "
            "as well"
        )
    if not built_at and rule in (SGLANG_GPTQ, SGLANG_LISTED, SGLANG_QUARK):
        mark = "-:" if rule == SGLANG_GPTQ else "re:"
        keys = " and ".join(f"`{mark}{re.escape(part + '.')}.*`" for part in _top_parts(layer))
        where_to = (
            f"the keys {keys} (value `{{}}`) to `quantization_config.dynamic` of "
            f"{quant.source}, before any other key"
            if rule == SGLANG_GPTQ
            else f"the entries {keys} to `quantization_config.{LIST_KEYS[rule]}` of {quant.source}"
        )
        return (
            "ship the MTP layer quantized like the backbone (the portable fix), or, for "
            f"{title}, add {where_to}: {title} builds the decoder layer under no prefix "
            f"(`self_attn.qkv_proj`), and a `{mark}` pattern matches from the start of the "
            "name, so these name no backbone module"
        )
    if not built_at:
        return (
            f"ship the MTP layer quantized like the backbone: {title} builds its decoder "
            "layer under no prefix (`self_attn.qkv_proj`), and an entry naming that also "
            "names every backbone layer's module"
        )
    key = exclusion_pointer(state).rsplit("/", 1)[-1] if quant.exclusion_keys else None
    key = key or LIST_KEYS.get(rule)
    where = (
        "the quantization config's exclusion list"
        if rule == LISTED
        else f"`{key}` of {quant.source}"
    )
    portable = "ship the MTP layer quantized like the backbone (the portable fix), or, for "
    if rule == SGLANG_GPTQ and any(ROUTED_EXPERT.match(m) for m in layer.modules()):
        return (
            f"ship the MTP layer quantized like the backbone: {title} builds the fused "
            "experts of a GPTQ target with GPTQ Marlin whatever `dynamic` says (it reads no "
            "key for them)"
        )
    if rule == SGLANG_GPTQ and entry is not None:
        return (
            f"{portable}{title}, add the key `{entry}` (value `{{}}`) to "
            f"`quantization_config.dynamic` of {quant.source}, before any other key (a `-:` key "
            "leaves the modules whose runtime names it matches from the start unquantized)"
        )
    if rule == AWQ_LISTED and entry is not None:
        return (
            f"{portable}{title}, add `{entry}` to `modules_to_not_convert` of {quant.source} "
            "(it leaves a module unquantized when an entry is contained in its runtime name)"
        )
    if (
        rule == GPTQ
        and marlin_experts(state) is False
        and any(ROUTED_EXPERT.match(m) for m in layer.modules())
    ):
        target = mtp_inputs(state).target
        return (
            f"ship the MTP layer quantized like the backbone: {title} builds experts of "
            f"hidden size {target.hidden_size}, width {target.moe_intermediate_size} and GPTQ "
            f"group size {target.quant.group_size} (at this tensor-parallel size) with its MoE "
            "WNA16 fallback, which reads no `dynamic` key"
        )
    if rule == AWQ and entry is not None:
        derived = (
            ""
            if quant.exclusions
            else (
                ", with every module the checkpoint stores unquantized (written, the key replaces "
                "the list vLLM otherwise derives from the checkpoint's dtypes)"
            )
        )
        return (
            f"{portable}{title}, add `{entry}` to `modules_to_not_convert` of {quant.source}"
            f"{derived} (AWQ leaves a module unquantized when an entry is contained in its "
            "name; a list of each expert's own name does not reach the fused experts; "
            "`draftfit convert TARGET --method mtp` writes it)"
        )
    if rule == GPTQ and entry is not None:
        return (
            f"{portable}{title}, add the key `{entry}` (value `{{}}`) to "
            f"`quantization_config.dynamic` of {quant.source}, before any other key (its `-:` "
            "keys leave the modules they match unquantized; `draftfit convert TARGET --method "
            "mtp` writes it)"
        )
    if entry is not None:
        note = (
            " (a wildcard such as `*layers.N.*` is not a pattern to this release: use the "
            "`re:` entry)"
            if rule in (QUARK, SGLANG_QUARK)
            else ""
        )
        more = "".join(f" and `{name}`" for name in _own_outside(state, layer, naming, entry, rule))
        return f"{portable}{title}, add `{entry}`{more} to {where}{note}"
    names = (
        f"the checkpoint's own names (`{layer.prefix}<module>`"
        + (", `mtp.fc`)" if layer.prefix.startswith("mtp.") else ")")
        if naming == CHECKPOINT_NAMES and built_at == layer.prefix
        else f"the names it builds them under (`{built_at}<module>`)"
        if naming == CHECKPOINT_NAMES
        else "its runtime names (`model.decoder.<module>`, `model.eh_proj`, "
        "`model.decoder.mlp.experts`"
        + (
            ", and the fused `model.decoder.self_attn.fused_qkv_a_proj_with_mqa` by that name)"
            if rule == SGLANG_PATHS
            and MLA_FUSED in (mla_fused_by_name(state.profile, mtp_inputs(state).target) or ())
            else ")"
        )
    )
    tail = "; `draftfit convert TARGET --method mtp` writes them" if rule == SGLANG_PATHS else ""
    return f"{portable}{title}, list its modules in {where} under {names}{tail}"


def _own_outside(
    state: BuildState, layer: MtpLayer, naming: str, entry: str, rule: str
) -> list[str]:
    """The MTP block's own modules of `layer` the release builds quantized (DeepSeek's NextN
    `eh_proj` on SGLang with Quark) that the whole-layer `entry` does not reach, by name."""
    target = mtp_inputs(state).target
    own = own_quantized(state.profile, target) or frozenset()
    start = target.num_hidden_layers
    names = [
        engine_name(layer, module, naming, target.own_prefix_of(layer.index, module), start)
        for module in sorted(own & layer.modules())
    ]
    listed = NameList([entry], "exclusions")
    return [name for name in names if not excluded(name, (entry,), listed, rule)]


def _top_parts(layer: MtpLayer) -> list[str]:
    """The first name parts of `layer`'s quantizable modules (`self_attn`, `mlp`)."""
    return sorted({m.split(".", 1)[0] for m in layer.modules() if quantizable(m) and "." in m})


__all__ = ["uncovered_fix"]
