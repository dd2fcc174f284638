"""The MTP tensors an engine's loaders map nowhere (DF222): a module an MTP layer holds that
its MTP class does not build (a tensor exported under another name), a tensor outside the
MTP layers that the MTP loader looks up, and an MTP layer shipped beyond those the release
builds for the declared depth. Steps of every engine's MTP
procedure, after :func:`draftfit.engines.procedure.mtp_presence.tensors_present`.
"""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.mtp import MtpLayer, MtpTarget
from draftfit.engines.procedure.mtp_part import (
    SHOWN,
    known_value,
    mtp_finding,
    mtp_inputs,
    mtp_view,
    not_read,
)
from draftfit.engines.procedure.mtp_presence import decoder_template, stray_stopping
from draftfit.engines.procedure.state import BuildState
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.MTP_TENSOR_UNMAPPED,)
EMITS_STAGE = "MTP procedure: the tensors the loaders map nowhere"

# Modules an engine's loader passes over whatever the class builds: rotary caches, and the
# attention KV-cache scales some exports store (`self_attn.k_scale`), which it remaps.
PASSED_OVER = ("rotary_emb",)
KV_SCALE_PARTS = frozenset({"k_scale", "v_scale", "q_scale", "prob_scale"})


def tensors_mapped(state: BuildState) -> bool | None:
    """No shipped MTP layer holds a module the release's MTP class does not build: none of
    the family's own modules and none of the target's decoder-layer modules (DF222). What the
    loader does with one is `mtp_unmapped_tensors`, by family: refused (looked up among the
    parameters), or skipped (the module meant stays missing: DF221)."""
    target = mtp_inputs(state).target
    family = target.family
    if family is None or not decoder_template(family.naming, target.backbone_modules):
        return None
    known = target.backbone_modules | set(family.own)
    for index in mtp_view(state).layers_built or ():
        layer = target.layers.get(index)
        if layer is None:
            continue
        unknown = sorted(
            module
            for module in layer.modules() - known
            if not module.endswith(PASSED_OVER) and not _only_kv_scales(layer, module)
        )
        if not unknown:
            continue
        word = _family_word(state, "mtp_unmapped_tensors", family.name)
        if word is None:
            not_read(
                state,
                f"what {state.title}'s MTP loader does with a tensor it has no parameter for "
                f"({layer.prefix}{unknown[0]}) was not read",
            )
            continue
        if word != "refused":
            continue  # passed over: the module it was meant for is missing (DF221)
        names = [f"`{_full(target, index, layer, module)}`" for module in unknown[:SHOWN]]
        more = f" and {len(unknown) - SHOWN} more" if len(unknown) > SHOWN else ""
        mtp_finding(
            state,
            rule_ids.MTP_TENSOR_UNMAPPED,
            f"MTP layer {layer.prefix.rstrip('.')} holds {', '.join(names)}{more}, which "
            f"{state.title}'s MTP class has no parameter for: its loader looks the name up "
            "and stops the load (KeyError)",
            location=Location(tensor=_full(target, index, layer, unknown[0])),
            keys=("mtp_unmapped_tensors",),
            fix="store the tensor under the name the engine loads: one of the family's MTP "
            f"modules ({', '.join(family.own)}) or a module of the target's decoder layers",
            consequence=Consequence.REFUSES_TO_START,
        )
    return None


def strays_mapped(state: BuildState) -> bool | None:
    """No tensor outside the MTP layers is one the release's MTP loader looks up and cannot
    place (DF222), where every layer it builds is shipped (a missing layer is DF220's, which
    names the stray): SGLang's Qwen3-Next loader renames `mtp` to `model` in every name that
    holds it, its MiMo loader takes every name holding one of its own modules, vLLM's MiMo
    loader every name holding `mtp_layers` (`stray_mtp`, `stray_own`, `stray_mtp_layers` of
    `mtp_missing_weights`)."""
    target, mtp = mtp_inputs(state).target, mtp_view(state)
    built = mtp.layers_built or ()
    if not built or any(index not in target.layers for index in built):
        return None
    stopping = stray_stopping(state)
    if stopping is None:
        return None
    stray, by_mtp_loader = stopping
    family = target.family
    own = f"one of the family's MTP modules ({', '.join(family.own)}) or " if family else ""
    what = (
        f"{state.title}'s MTP loader looks the name up among the MTP model's parameters, "
        "finds none and stops the load (KeyError)"
        if by_mtp_loader
        else f"{state.title}'s own loader for the target cannot place it and stops the load "
        "(KeyError or `There is no module or parameter named ...`)"
    )
    mtp_finding(
        state,
        rule_ids.MTP_TENSOR_UNMAPPED,
        f"the checkpoint holds `{stray}` outside the MTP layers it ships; {what}",
        location=Location(tensor=stray),
        keys=("mtp_missing_weights",),
        fix=f"store the tensor under the name the engine loads ({own}a module of the MTP "
        "layer), or leave it out of the checkpoint",
        consequence=Consequence.REFUSES_TO_START,
    )
    return None


# How the release treats an MTP layer shipped beyond those it builds (`mtp_layers_beyond`):
# the target's own loader skips only the declared MTP layers and stops on the next one; the
# MTP loader has no layer for it and stops; or it is passed over.
BEYOND_WORDS = {
    "target-refuses": "the target's own loader skips only the declared MTP layers, tries "
    "to load this one as a decoder layer it does not have and stops (KeyError), after the "
    "rest of the target has loaded",
    "mtp-refuses": "its MTP loader has no layer for it and stops (`There is no module or "
    "parameter named ...`)",
}


def layers_beyond(state: BuildState) -> bool | None:
    """No MTP layer is shipped beyond those the release builds for the declared depth
    (DF222): vLLM stops on one, in the target's loader (DeepSeek-style naming) or the MTP
    loader; SGLang passes it over (`mtp_layers_beyond`, by family)."""
    inputs, mtp = mtp_inputs(state), mtp_view(state)
    target, family = inputs.target, inputs.target.family
    if family is None or inputs.export is not None or mtp.layers_built is None:
        return None
    beyond = [i for i in target.shipped() if i not in mtp.layers_built]
    if not beyond:
        return None
    word = _family_word(state, "mtp_layers_beyond", family.name)
    prefixes = ", ".join(f"`{target.layers[i].prefix}*`" for i in beyond[:SHOWN])
    if word is None:
        not_read(
            state,
            f"what {state.title} does with an MTP layer shipped beyond the "
            f"{len(mtp.layers_built)} it builds ({prefixes}) was not read",
        )
        return None
    if word not in BEYOND_WORDS:
        return None  # passed over, or loaded into the one layer built (DF145)
    mtp_finding(
        state,
        rule_ids.MTP_TENSOR_UNMAPPED,
        f"the checkpoint ships MTP layer(s) {prefixes} beyond the {len(mtp.layers_built)} "
        f"{state.title} builds for `{target.depth_key}`: {BEYOND_WORDS[word]}",
        location=Location("config.json", f"/{target.depth_key}"),
        keys=("mtp_layers_beyond",),
        fix=f"set `{target.depth_key}` to the {len(target.shipped())} MTP layers shipped, or "
        "serve a copy of the checkpoint without the layers beyond it",
        consequence=Consequence.REFUSES_TO_START,
    )
    return None


# GPTQ's activation-order tensor, which exporters store beside every quantized module.
G_IDX = "g_idx"


def gptq_order_mapped(state: BuildState) -> bool | None:
    """A GPTQ target's MTP layer holds no `g_idx` tensor that the release's MTP loader
    looks up among parameters the GPTQ methods never register (DF222): vLLM drops `g_idx`
    only in loaders that go through `AutoWeightsLoader` with the quantization's name map
    (`mtp_gptq_g_idx`, by family: 'refused' or 'dropped')."""
    target = mtp_inputs(state).target
    family = target.family
    if family is None or target.quant.method != "gptq":
        return None
    for index in mtp_view(state).layers_built or ():
        layer = target.layers.get(index)
        if layer is None:
            continue
        orders = sorted(sub for sub in layer.tensors if sub.rsplit(".", 1)[-1] == G_IDX)
        if not orders:
            continue
        word = _family_word(state, "mtp_gptq_g_idx", family.name)
        first = layer.prefix + orders[0]
        if word is None:
            not_read(
                state,
                f"what {state.title}'s MTP loader does with GPTQ's `g_idx` tensors "
                f"(`{first}`) was not read",
            )
            return None
        if word != "refused":
            return None
        more = f" and {len(orders) - 1} more" if len(orders) > 1 else ""
        mtp_finding(
            state,
            rule_ids.MTP_TENSOR_UNMAPPED,
            f"MTP layer {layer.prefix.rstrip('.')} holds GPTQ's activation-order tensor "
            f"`{first}`{more}, which {state.title}'s GPTQ methods register no parameter for; "
            "its MTP loader looks the name up and stops the load (KeyError)",
            location=Location(tensor=first),
            keys=("mtp_gptq_g_idx",),
            fix="export the MTP layer without its `g_idx` tensors (with `desc_act: false` "
            "they hold no order the engine uses), or store it unquantized (BF16) with a `-:` "
            "key of `quantization_config.dynamic` matching it",
            consequence=Consequence.REFUSES_TO_START,
        )
        return None
    return None


def _family_word(state: BuildState, key: str, family: str) -> str | None:
    """The release's word for `family` in the per-family fact `key`; None where the fact (or
    the family in it) was not read, or the engine's data has no such fact at all."""
    table = known_value(state, key)
    word = table.get(family) if isinstance(table, dict) else None
    return word if isinstance(word, str) else None


def _only_kv_scales(layer: MtpLayer, module: str) -> bool:
    """Whether `module` holds only attention KV-cache scales (`self_attn.k_scale`)."""
    parts = layer.parts(module)
    return bool(parts) and KV_SCALE_PARTS.issuperset(parts)


def _full(target: MtpTarget, index: int, layer: MtpLayer, module: str) -> str:
    """The checkpoint name of `module` of `layer` (its first tensor): under the MTP block's
    own prefix where it is stored there (`mtp.eh_proj`, `mtp.layer.0.self_attn.q_proj`)."""
    prefix = target.own_prefix_of(index, module) or layer.prefix
    part = next(iter(layer.parts(module)), "weight")
    return f"{prefix}{module}.{part}"


__all__ = ["layers_beyond", "strays_mapped", "tensors_mapped"]
