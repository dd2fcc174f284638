"""The MTP steps that check the shipped layers hold what the release loads: every layer it
builds ships tensors (DF220), and every module it loads from each is there (DF221). Steps of
every engine's MTP procedure, after the depth steps of :mod:`.mtp_steps`; the helpers that
say what a missing tensor does are shared with :mod:`.mtp_quant_parts`.
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase
from functools import partial

from draftfit import rule_ids
from draftfit.draft.mtp import (
    LAYER_INDEX,
    MTP_LAYERS,
    MTP_PREFIX,
    PARAM_PARTS,
    WEIGHT_PARTS,
    MtpFamily,
    MtpLayer,
)
from draftfit.draft.nextn_export import LAYER_INDEX as LAYER_INDEX_READING
from draftfit.engines.procedure.mtp_exclusions import shard_mates
from draftfit.engines.procedure.mtp_matching import ROUTED_EXPERT
from draftfit.engines.procedure.mtp_part import (
    OUTCOMES,
    SHOWN,
    mtp_finding,
    mtp_inputs,
    mtp_view,
    not_read,
)
from draftfit.engines.procedure.state import BuildState
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.MTP_LAYER_MISSING, rule_ids.MTP_TENSOR_MISSING)
EMITS_STAGE = "MTP procedure: the layers and tensors the release loads"


def _missing_outcome(state: BuildState) -> Consequence | None:
    """What a missing MTP tensor does at load (`mtp_missing_weights`, by whether the target
    is quantized), or None where that was not read."""
    fact = state.profile.fact("mtp_missing_weights")
    if not fact.known:
        return None
    word = fact.value.get("quantized" if mtp_inputs(state).target.quantized else "unquantized")
    return OUTCOMES.get(word) if isinstance(word, str) else None


def tensor_outcome(state: BuildState) -> Consequence | None:
    """What a missing MTP tensor does at load (:func:`_missing_outcome`); where that was not
    read, the check says so (unverified) and this is None."""
    outcome = _missing_outcome(state)
    if outcome is None:
        not_read(state, f"what {state.title} does with a missing MTP tensor was not read")
    return outcome


def _layer_missing_outcome(state: BuildState) -> tuple[Consequence | None, bool]:
    """What a wholly missing MTP layer does, and whether the family's own MTP loader refuses
    it (`mtp_missing_weights`' `layer`, per family: a check of its own that also runs for a
    quantized target) rather than the load check."""
    fact = state.profile.fact("mtp_missing_weights")
    family = mtp_inputs(state).target.family
    own = fact.value.get("layer") if fact.known and isinstance(fact.value, dict) else None
    word = own.get(family.name) if isinstance(own, dict) and family is not None else None
    outcome = OUTCOMES.get(word) if isinstance(word, str) else None
    if outcome is not None:
        return outcome, True
    return _missing_outcome(state), False


# The stray names the lookups above pass over: rotary caches, extra biases (skipped where
# they have no parameter), and `*_scale` tensors (SGLang's Qwen3-Next loader skips one whose
# value is 1.0 and asserts otherwise: a value this check does not read).
_PASSED_OVER_STRAY = ("rotary_emb.inv_freq",)
_SKIPPED_STRAY_ENDINGS = (".bias", "_scale")


def _stray_refused(state: BuildState, key: str) -> bool:
    """Whether `mtp_missing_weights`' per-family table `key` (`stray_own`, `stray_mtp`, ...)
    says the release stops on a stray name for the target's family."""
    family = mtp_inputs(state).target.family
    fact = state.profile.fact("mtp_missing_weights")
    table = fact.value.get(key) if fact.known and isinstance(fact.value, dict) else None
    return family is not None and isinstance(table, dict) and table.get(family.name) == "refused"


def _own_named(family: MtpFamily, name: str) -> bool:
    """`name` holds one of the family's own modules and is not one of its MTP model's own
    parameters (MiMo's `model.token_layernorm.weight`)."""
    held = any(f".{own}." in name for own in family.own)
    return held and not any(
        name.startswith(f"model.{own}.") and name.count(".") == 2 for own in family.own
    )


def _stray_looked_up(state: BuildState) -> str | None:
    """A tensor outside the MTP layers that the release's MTP loader looks up among its
    parameters, which stops the load (KeyError): one named like one of the family's own
    modules (`mtp_missing_weights`' `stray_own`: SGLang's MiMo loader), any whose name holds
    `mtp_layers` (`stray_mtp_layers`: vLLM's MiMo loader), or any whose name holds `mtp`
    (`stray_mtp`: SGLang's Qwen3-Next loader, which renames `mtp` to `model` in every such
    name and looks it up, so that `mtp.embed_tokens.*` lands on a parameter); None otherwise.
    Names the loader passes over (a rotary cache, a bias or a scale it skips) are not
    counted."""
    target = mtp_inputs(state).target
    family = target.family
    if family is None:
        return None
    kinds: tuple[tuple[str, Callable[[str], bool]], ...] = (
        ("stray_own", partial(_own_named, family)),
        ("stray_mtp_layers", lambda n: "mtp_layers" in n),
        (
            "stray_mtp",
            lambda n: (
                "mtp" in n and not n.replace("mtp", "model").startswith("model.embed_tokens.")
            ),
        ),
    )
    looked_up = _looked_up_strays(target.stray)
    for key, looks_up in kinds:
        if _stray_refused(state, key):
            found = next((n for n in looked_up if looks_up(n)), None)
            if found is not None:
                return found
    return None


def _stray_in_target(state: BuildState) -> str | None:
    """A tensor outside the MTP layers that the release's own loader for the target cannot
    place and stops on (`mtp_missing_weights`' `stray_target`, per family: vLLM's target
    loaders look every name outside the MTP layers up); None otherwise, and for a NextN
    export (the target is another checkpoint)."""
    inputs = mtp_inputs(state)
    if inputs.export is not None or not _stray_refused(state, "stray_target"):
        return None
    return next(iter(_looked_up_strays(inputs.target.stray)), None)


def stray_stopping(state: BuildState) -> tuple[str, bool] | None:
    """The stray tensor a loader stops on, and whether it is the MTP loader's
    (:func:`_stray_looked_up`) rather than the target's (:func:`_stray_in_target`); None where
    neither does."""
    looked_up = _stray_looked_up(state)
    if looked_up is not None:
        return looked_up, True
    in_target = _stray_in_target(state)
    return None if in_target is None else (in_target, False)


def _looked_up_strays(stray: tuple[str, ...]) -> list[str]:
    """The stray names a loader looks up: all but those it passes over (a rotary cache, a
    bias or a scale it skips)."""
    return [
        name
        for name in stray
        if not any(word in name for word in _PASSED_OVER_STRAY)
        and not name.endswith(_SKIPPED_STRAY_ENDINGS)
    ]


def _load_check_counts(state: BuildState, missing: list[str]) -> bool:
    """The release's load check counts at least one of the missing modules: it leaves out
    the modules `mtp_load_check_counts` does not name for the family (the modules with a
    quantization method of their own, in vLLM 0.34); without that fact every module counts."""
    family = mtp_inputs(state).target.family
    fact = state.profile.fact("mtp_load_check_counts")
    counted = fact.value.get(family.name) if fact.known and family is not None else None
    if not isinstance(counted, list):
        return True
    return any(fnmatchcase(module, pattern) for module in missing for pattern in counted)


def _tensor_of(item: str) -> str:
    """The tensor name of a missing item: a module (its `weight`), or a tensor of
    `PARAM_PARTS` by its name."""
    return item if item.rpartition(".")[2] in PARAM_PARTS else item + ".weight"


def _carries(layer: MtpLayer, part: str) -> bool:
    """Whether `layer` holds `part` (`<module>.weight`: in any stored form)."""
    module, _, last = part.rpartition(".")
    held = layer.parts(module)
    return any(p in WEIGHT_PARTS for p in held) if last == "weight" else last in held


def _shard_counts(state: BuildState, layer: MtpLayer, missing: list[str]) -> bool:
    """Whether the release's load check counts a missing item as one unfilled shard of a
    fused module whose other shards were loaded (`mtp_load_check_shards`: vLLM 0.34.0's
    stacked linear layers, `q_proj` of `qkv_proj`, `gate_proj` of `gate_up_proj`; a
    routed expert's projections are one fused MoE, not a stacked layer)."""
    fact = state.profile.fact("mtp_load_check_shards")
    if not (fact.known and fact.value is True):
        return False
    for item in missing:
        named = item.rpartition(".")[2] in PARAM_PARTS
        module, part = item.rpartition(".")[::2] if named else (item, "weight")
        if ROUTED_EXPERT.match(module):
            continue
        if any(f"{mate}.{part}" in layer.tensors for mate in shard_mates(module)):
            return True
    return False


def _consequence_words(consequence: Consequence) -> str:
    if consequence is Consequence.REFUSES_TO_START:
        return "the load check refuses it"
    return "its parameters keep their initial values, silently: every draft is wrong"


def layers_present(state: BuildState) -> bool | None:
    """Every MTP layer the release builds is shipped (DF220)."""
    target, mtp = mtp_inputs(state).target, mtp_view(state)
    built = mtp.layers_built or ()
    family = target.family
    if family is None or (target.num_hidden_layers is None and family.naming == LAYER_INDEX):
        not_read(state, "the target config has no usable `num_hidden_layers`")
        return False
    missing = [i for i in built if i not in target.layers]
    if not missing:
        return None
    outcome, refused_by_loader = _layer_missing_outcome(state)
    if outcome is None:
        not_read(state, f"what {state.title} does with a missing MTP layer was not read")
        return None
    stopping = stray_stopping(state)
    if stopping is not None:
        outcome, refused_by_loader = Consequence.REFUSES_TO_START, False
    prefixes = ", ".join(
        f"`{family.layer_prefix(target.num_hidden_layers or 0, i)}*`" for i in missing[:SHOWN]
    )
    stray = (
        f"; tensors that look like MTP weights under other names ({', '.join(target.stray[:3])}) "
        "are mapped nowhere"
        if target.stray
        else ""
    )
    words = (
        "its MTP loader refuses a layer no tensor reached (`MTP speculative decoding layer "
        "... weights missing from checkpoint`), quantized or not"
        if refused_by_loader
        else _consequence_words(outcome)
        if stopping is None
        else f"its MTP loader looks up `{stopping[0]}` among the layer's parameters and stops "
        "(KeyError)"
        if stopping[1]
        else f"its own loader for the target cannot place `{stopping[0]}` and stops the load "
        "(KeyError or `There is no module or parameter named ...`)"
    )
    message = (
        f"the config declares {mtp.depth_used} MTP layer(s), but the checkpoint ships no "
        f"tensor under {prefixes}{stray}: {state.title} builds the layer and {words}"
    )
    fix = (
        "export the MTP layers with the checkpoint (the exporter dropped them), or set "
        f"`{target.depth_key}` to the layers shipped and serve without MTP if there are none"
    )
    keys: tuple[str, ...] = ("mtp_missing_weights",)
    export_reading = mtp.export_reading
    if export_reading == LAYER_INDEX_READING:
        message = (
            f"{state.title} builds the NextN export's layer as it builds a target's MTP "
            "layer, after the target's decoder layers (the target's `num_hidden_layers` + i), "
            f"and reads its tensors from the export, which stores none under {prefixes} "
            f"(SGLang's export stores it as `model.layers.0.*`): {_consequence_words(outcome)}"
        )
        fix = (
            f"serve the target's own MTP layers with {state.title} (an MTP launch of the "
            "target that names no separate draft), or serve the export with a release whose "
            "NextN loader reads layer 0 (`draftfit matrix` lists them)"
        )
        keys += ("mtp_nextn_export",)
    elif export_reading is not None:
        fix = (
            "re-export the NextN layer as `model.layers.0.*` of a one-layer model (SGLang's "
            "`scripts/export_deepseek_nextn.py`)"
        )
        keys += ("mtp_nextn_export",)
    mtp_finding(
        state,
        rule_ids.MTP_LAYER_MISSING,
        message,
        location=Location("config.json", f"/{target.depth_key}"),
        keys=keys,
        fix=fix,
        consequence=outcome,
    )
    return None


def tensors_present(state: BuildState) -> bool | None:
    """Every module the release loads from each shipped MTP layer is there (DF221)."""
    target = mtp_inputs(state).target
    family = target.family
    if family is None:
        return None
    fact = state.profile.fact("mtp_required_tensors")
    required = fact.value.get(family.name) if fact.known else None
    if required is None:
        not_read(state, f"which MTP tensors {state.title} requires was not read")
        return None
    # `mtp.*` naming: the own modules (`mtp.fc`, the norms) are the MTP block's, shared by
    # its layers, and read with the first one
    shared_own = family.naming == MTP_PREFIX
    first = min(target.layers) if target.layers else None
    for index in mtp_view(state).layers_built or ():
        layer = target.layers.get(index)
        if layer is None:
            continue
        modules = layer.modules()
        missing = [
            m
            for m in required
            if m not in modules and not (shared_own and index != first and m in family.own)
        ]
        if decoder_template(family.naming, target.backbone_modules):
            decoder = sorted(target.backbone_modules - modules - set(family.own))
            missing += decoder
            # a tensor of a module that is there: its weight (by the module's name), a bias
            # or a router's score-correction bias (by the tensor's name)
            missing += sorted(
                part.removesuffix(".weight") if part.endswith(".weight") else part
                for part in target.backbone_parts
                if part.rpartition(".")[0] in modules and not _carries(layer, part)
            )
        if not missing:
            continue
        outcome = tensor_outcome(state)
        if outcome is None:
            continue
        keys: tuple[str, ...] = ("mtp_required_tensors", "mtp_missing_weights")
        words = _consequence_words(outcome)
        left_out = outcome is Consequence.REFUSES_TO_START and not _load_check_counts(
            state, missing
        )
        if left_out and _shard_counts(state, layer, missing):
            keys += ("mtp_load_check_shards",)  # one shard of a fused module: refused
        elif left_out:
            outcome = Consequence.DRAFTS_GARBAGE
            keys += ("mtp_load_check_counts",)
            words = (
                "its load check leaves these modules out (they have a quantization method of "
                "their own, even unquantized), so " + _consequence_words(outcome)
            )
        own_prefix = family.own_prefix(target.num_hidden_layers or 0, index)
        full = [_tensor_of((own_prefix if m in family.own else layer.prefix) + m) for m in missing]
        shown = ", ".join(f"`{name}`" for name in full[:SHOWN])
        more = f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else ""
        mtp_finding(
            state,
            rule_ids.MTP_TENSOR_MISSING,
            f"MTP layer {layer.prefix.rstrip('.')} lacks {shown}{more}, which "
            f"{state.title} loads from the checkpoint: {words}",
            location=Location(tensor=full[0]),
            keys=keys,
            fix="export the MTP layer whole (every tensor of its decoder layer and "
            f"{', '.join(required)})",
            consequence=outcome,
        )
    return None


def decoder_template(naming: str, backbone: frozenset[str]) -> bool:
    """Whether the target's last decoder layer (`backbone`, its modules) shows what an MTP
    layer's decoder layer holds: always for `model.layers.{L+i}` naming and MiMo's
    `model.mtp_layers.{i}` (its MTP block a dense decoder layer like every backbone layer,
    stored without the `mtp_block` the engines build it under); for `mtp.*` naming (a
    full-attention layer each) when that last layer is one too, not a linear-attention
    layer (Qwen3-Next and Qwen3.5 end on a full-attention layer)."""
    if not backbone:
        return False
    if naming in (LAYER_INDEX, MTP_LAYERS):
        return True
    return naming == MTP_PREFIX and not any(m.startswith("linear_attn.") for m in backbone)


__all__ = [
    "decoder_template",
    "layers_present",
    "tensor_outcome",
    "tensors_present",
]
