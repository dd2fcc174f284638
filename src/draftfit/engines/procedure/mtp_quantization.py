"""The MTP steps of a quantized target: whether the quantization config leaves the MTP
layer's modules as the checkpoint stores them (DF540 for a BF16 layer built quantized, DF541
for a quantized layer built unquantized), matched under each release's names and rules
(:mod:`draftfit.engines.procedure.mtp_exclusions`), with the outcome the release's data
gives (`mtp_quant_uncovered`, `mtp_quant_excluded_stored`); a release or scheme not read is
unverified, never `compatible`.
"""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.mtp import MtpLayer, MtpTarget
from draftfit.engines.name_patterns import NameList
from draftfit.engines.procedure.mtp_exclusions import (
    AWQ_LISTED,
    CHECKPOINT_NAMES,
    FUSED_NAME_RULES,
    GPTQ,
    HEAD,
    LISTED,
    OWN_FACT,
    SGLANG_GPTQ,
    SGLANG_QUARK,
    SHARD_CHECKED_RULES,
    built_modules,
    engine_name,
    excluded,
    exclusion_naming,
    gptq_switch,
    gptq_unquantized,
    own_quantized,
    quantizable,
    shard_mates,
    shards_disagree,
    unquantized_under,
    unsafe_entries,
)
from draftfit.engines.procedure.mtp_matching import ROUTED_EXPERT, fused_parent
from draftfit.engines.procedure.mtp_part import (
    OUTCOMES,
    SHOWN,
    known_value,
    mtp_finding,
    mtp_inputs,
    mtp_view,
    not_read,
)
from draftfit.engines.procedure.mtp_quant_fix import uncovered_fix
from draftfit.engines.procedure.mtp_quant_method import (
    config_refusal,
    exclusion_pointer,
    exclusion_rule,
    fused_names,
    marlin_experts,
    matched_entries,
    quark_layers_unquantized,
    requested_method,
    same_method,
)
from draftfit.engines.procedure.state import BuildState
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.MTP_QUANT_EXCLUDED_STORED,
    rule_ids.MTP_QUANT_UNCOVERED,
)
EMITS_STAGE = "MTP procedure: the quantization of the MTP layers"

# The outcome where the release builds the MTP layer unquantized for the scheme whatever the
# config says (SGLang 0.5.23's NextN classes for ModelOpt NVFP4): there is nothing to exclude.
BUILT_UNQUANTIZED = "unquantized"


def quantization_covered(state: BuildState) -> bool | None:
    """A quantized target's MTP modules stored unquantized are excluded from the
    quantization under the names this release matches (DF540)."""
    target, mtp = mtp_inputs(state).target, mtp_view(state)
    requested = requested_method(state)
    if not target.quantized:
        if requested is not None:
            not_read(
                state,
                f"the launch asks {state.title} to build the MTP layers with `{requested}`, and "
                "the target is not quantized: how it quantizes them at load was not read",
            )
        return None
    mtp.quantization = target.quant.scheme or target.quant.method
    if requested is not None and not same_method(state, requested):
        not_read(
            state,
            f"the launch asks {state.title} to build the MTP layers with `{requested}`, not the "
            f"method it reads from this `{mtp.quantization}` target's config: what that method "
            "does with them was not read",
        )
        return None
    outcome_fact = state.profile.fact("mtp_quant_uncovered")
    naming = exclusion_naming(state.profile, target)
    if naming is None:
        not_read(state, f"how {state.title} matches quantization exclusions was not read")
        return None
    mtp.exclusion_names = naming
    if _outcome_word(target, outcome_fact.value) == BUILT_UNQUANTIZED:
        return _built_unquantized(state)
    rule = exclusion_rule(state)
    if rule is None:
        not_read(
            state,
            f"how {state.title} matches the exclusion entries of a `{mtp.quantization}` "
            "target was not read",
        )
        return None
    entries = matched_entries(state, target, rule)
    unsafe = unsafe_entries(entries, rule)
    if unsafe:
        not_read(
            state,
            f"the exclusion entry `{unsafe[0][:80]}` is a pattern whose matching time draftfit "
            f"cannot bound (it does not compile, or nests or repeats too much): what "
            f"{state.title} leaves unquantized by it was not judged",
        )
        return None
    names = NameList(list(entries), "exclusions")
    own = _own_quantized(state, target)
    if own is None:
        return None
    by_name = fused_names(state, target, rule)
    if by_name is None:
        return None
    refusal = config_refusal(state, target, rule)
    if refusal is not None:
        not_read(state, f"{refusal}: the MTP layers were not judged")
        return None
    layers_unquantized = rule == GPTQ and gptq_switch(state.profile, target)
    whole_layer = rule == SGLANG_QUARK and quark_layers_unquantized(state, target, entries)
    head_replaced = known_value(state, HEAD_REPLACED) is True
    marlin = marlin_experts(state) if rule == GPTQ else True
    if marlin is None and not layers_unquantized and _has_experts(target, mtp.layers_built):
        not_read(
            state,
            f"how {state.title} builds the MTP layers' GPTQ experts depends on the hidden "
            "size, `moe_intermediate_size` and `group_size`, which the config does not give",
        )
        return None
    mtp.stored_and_built_quantized = {}
    for index in mtp.layers_built or ():
        layer = target.layers.get(index)
        if layer is None:
            continue
        built = built_modules(target, layer)
        built_quantized: set[str] = set()
        uncovered: list[str] = []
        partial: list[str] = []
        excluded_stored: list[str] = []
        built_elsewhere: list[str] = []  # GPTQ: under a name no quantized tensor has
        for module in sorted(layer.modules()):
            # a decoder projection, the head under the rules that quantize it, or an own
            # module the release builds quantized (vLLM's `mtp.fc`)
            if module not in own and not quantizable(module, rule):
                continue
            if module == HEAD and head_replaced:  # the target's head replaces it after loading
                continue
            start = target.num_hidden_layers
            name = engine_name(layer, module, naming, target.own_prefix_of(index, module), start)
            stored = layer.stored_quantized(module)
            mixed = shards_disagree(rule, built, name, entries, names, by_name)
            if mixed is not None and not whole_layer:
                partial.append(mixed)
            if rule == GPTQ:
                left, unlisted = gptq_unquantized(
                    target, layer, index, module, name, layers_unquantized, marlin
                )
                if stored is True and unlisted:
                    built_elsewhere.append(name)
            else:
                left = whole_layer or unquantized_under(
                    rule, target, layer, index, module, name, entries, names, by_name
                )
            if stored is True and left:
                excluded_stored.append(fused_parent(name) if rule in FUSED_NAME_RULES else name)
            elif stored is True:
                built_quantized.add(module)
            if stored is not False:
                continue
            if not left:
                # GPTQ matches the fused experts as one module: name it once
                uncovered.append(fused_parent(name) if rule in FUSED_NAME_RULES else name)
            elif rule not in FUSED_NAME_RULES | SHARD_CHECKED_RULES and any(
                not excluded(
                    engine_name(layer, mate, naming, mtp_start=start), entries, names, rule
                )
                for mate in shard_mates(module)
                if mate in built
            ):
                partial.append(name)
        mtp.stored_and_built_quantized[index] = frozenset(built_quantized)
        _report_uncovered(state, layer, sorted(set(uncovered)), naming, rule, outcome_fact.value)
        _report_excluded_stored(
            state, layer, sorted(set(excluded_stored)), sorted(set(built_elsewhere)), rule
        )
        if partial and (naming == CHECKPOINT_NAMES or rule in SHARD_CHECKED_RULES):
            _report_partial(state, sorted(set(partial)), rule)
    return None


# Whether the release replaces each MTP layer's own head with the target's after loading, so
# that how it builds the layer's head does not matter.
HEAD_REPLACED = "mtp_head_replaced"


def _report_partial(state: BuildState, partial: list[str], rule: str) -> None:
    """The fused modules whose shards the exclusion list names only in part: the release
    refuses to build them (vLLM names the listed shards; SGLang the fused module)."""
    shown = ", ".join(f"`{p}`" for p in partial[:SHOWN])
    if rule in SHARD_CHECKED_RULES:
        what = (
            f"the exclusion list names some but not all shards of {shown} (by their module "
            f"paths), which {state.title} builds as one module: the build is refused "
            "(`Detected some but not all shards of ... are quantized`)"
        )
    else:
        what = (
            f"the exclusion list names {shown} but not the other shard(s) of the fused module "
            f"{state.title} builds from it: the build is refused (`Detected some but not all "
            "shards ... are quantized`)"
        )
    target = mtp_inputs(state).target
    mtp_finding(
        state,
        rule_ids.MTP_QUANT_UNCOVERED,
        what,
        location=Location(target.quant.source, exclusion_pointer(state)),
        keys=("mtp_exclusion_names", "mtp_exclusion_match"),
        fix="list every shard of each fused module or none of them (`q_proj`, `k_proj` "
        "with `v_proj`; `gate_proj` with `up_proj`; `q_a_proj` with `kv_a_proj_with_mqa`)",
        consequence=Consequence.REFUSES_TO_START,
    )


def _has_experts(target: MtpTarget, indexes: tuple[int, ...] | list[int] | None) -> bool:
    """Whether one of the MTP layers `indexes` holds routed experts."""
    return any(
        ROUTED_EXPERT.match(module)
        for index in indexes or ()
        if index in target.layers
        for module in target.layers[index].modules()
    )


def _own_quantized(state: BuildState, target: MtpTarget) -> frozenset[str] | None:
    """The MTP block's own modules the release builds quantized (:func:`own_quantized`);
    None, after saying so, where that was not read for the target's family."""
    own = own_quantized(state.profile, target)
    if own is None:
        title = target.family.title if target.family is not None else "the target"
        not_read(
            state,
            f"whether {state.title} builds {title}'s own MTP modules (`mtp.fc`) with the "
            "target's quantization was not read",
        )
    return own


def _outcome_word(
    target: MtpTarget, outcomes: object, names: list[str] | tuple[str, ...] = ()
) -> str | None:
    """The outcome word (`mtp_quant_uncovered`, `mtp_quant_excluded_stored`) for the
    target's scheme (and family, where the release differs by family; and, where its loader
    differs by module, the worst over the modules `names` by their last name part, `other`
    for the rest: a refusal stops the load), or None where the data has none."""
    method = target.quant.scheme or target.quant.method or ""
    word = outcomes.get(method) if isinstance(outcomes, dict) else None
    if isinstance(word, dict):  # the outcome differs by family at this release
        word = word.get(target.family.name) if target.family is not None else None
    if isinstance(word, dict):  # ... and by module
        table = word
        words = [table.get(name.rsplit(".", 1)[-1], table.get(OTHER)) for name in names]
        words = words or [table.get(OTHER)]
        if not all(isinstance(w, str) for w in words):
            return None
        word = REFUSED if REFUSED in words else words[0]
    return word if isinstance(word, str) else None


# The outcome word of a load the release refuses, and the key of an outcome-by-module table
# for the modules it does not name.
REFUSED = "refused"
OTHER = "other"


def _built_unquantized(state: BuildState) -> bool | None:
    """The release builds the MTP layer unquantized for this scheme whatever the exclusion
    list says: an MTP layer stored unquantized needs no exclusion; one stored quantized is
    loaded into the unquantized layer, which was not read (unverified)."""
    inputs, mtp = mtp_inputs(state), mtp_view(state)
    target = inputs.target
    for index in mtp.layers_built or ():
        layer = target.layers.get(index)
        if layer is None:
            continue
        stored = sorted(m for m in layer.modules() if layer.stored_quantized(m))
        if stored:
            not_read(
                state,
                f"{state.title} builds the MTP layer {layer.prefix.rstrip('.')} of a "
                f"`{mtp.quantization}` target unquantized whatever its config says, and the "
                f"checkpoint stores it quantized (`{stored[0]}`): how it loads those tensors "
                "was not read",
            )
            return None
    return None


def _report_uncovered(
    state: BuildState,
    layer: MtpLayer,
    uncovered: list[str],
    naming: str,
    rule: str,
    outcomes: object,
) -> None:
    if not uncovered:
        return
    target = mtp_inputs(state).target
    prefix = layer.prefix
    method = target.quant.scheme or target.quant.method or ""
    word = _outcome_word(target, outcomes, uncovered)
    outcome = OUTCOMES.get(word) if word is not None else None
    if outcome is None:
        not_read(
            state,
            f"what {state.title} does with an unquantized MTP layer in a `{method}` target "
            "was not read",
        )
        return
    shown = ", ".join(f"`{n}`" for n in uncovered[:SHOWN])
    more = f" and {len(uncovered) - SHOWN} more" if len(uncovered) > SHOWN else ""
    effect = (
        "loading a BF16 tensor into a quantized parameter is refused at start-up"
        + (
            " (the packed 4-bit weight has half the BF16 tensor's columns: a shape error)"
            if "fp4" in method
            else f" (the {method.upper()} modules have packed parameters and none for a BF16 "
            "`weight`)"
            if method in ("gptq", "awq")
            else ""
        )
        if outcome is Consequence.REFUSES_TO_START
        else "the BF16 tensors match no parameter of the packed modules and are skipped, "
        "with no error: those modules are never loaded and every draft is wrong "
        "(acceptance ≈ 0)"
        if method in ("gptq", "awq")
        else "the BF16 values are cast into quantized parameters whose scales are never "
        "loaded, with no error: every draft is wrong (acceptance ≈ 0)"
    )
    keys: tuple[str, ...] = ("mtp_quant_uncovered", "mtp_exclusion_names")
    if rule != LISTED:
        keys += ("mtp_exclusion_match",)
    own = target.family.own if target.family is not None else ()
    if any(name.rsplit(".", 1)[-1] in own and not name.startswith(prefix) for name in uncovered):
        keys += (OWN_FACT,)  # `mtp.fc`, built quantized by the release
    mtp_finding(
        state,
        rule_ids.MTP_QUANT_UNCOVERED,
        f"the target is quantized (`{method}`) but its MTP layer {prefix.rstrip('.')} is stored "
        f"unquantized, and the exclusion list does not cover {shown}{more} under the names "
        f"{state.title} matches; it builds them quantized like the target: {effect}",
        location=Location(mtp_inputs(state).target.quant.source, exclusion_pointer(state)),
        keys=keys,
        fix=uncovered_fix(state, layer, naming, rule),
        consequence=outcome,
    )


def _report_excluded_stored(
    state: BuildState, layer: MtpLayer, names: list[str], unlisted: list[str], rule: str
) -> None:
    """DF541: MTP modules stored quantized (like the backbone) that the exclusion list
    names under this release's names, so it builds them unquantized (`unlisted`: GPTQ
    modules built unquantized because no quantized tensor carries the name they are built
    under): what loading the quantized tensors into them does is
    `mtp_quant_excluded_stored`, by scheme (and family); unverified where it was not
    read."""
    if not names:
        return
    target = mtp_inputs(state).target
    method = target.quant.scheme or target.quant.method or ""
    outcomes = known_value(state, EXCLUDED_STORED)
    word = _outcome_word(target, outcomes, names) if outcomes is not None else None
    outcome = OUTCOMES.get(word) if word is not None else None
    prefix = layer.prefix.rstrip(".")
    if outcome is None:
        not_read(
            state,
            f"what {state.title} does with an MTP layer stored quantized (`{method}`) whose "
            f"modules the exclusion list names ({prefix}) was not read",
        )
        return
    shown = ", ".join(f"`{n}`" for n in names[:SHOWN])
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    gptq = method == "gptq"
    packed = method in ("gptq", "awq")
    effect = (
        (
            "their packed tensors (`qweight`, `scales`) have no parameter to load into, and "
            "the load is refused"
            if packed
            else "their scales have no parameter to load into, and the load is refused "
            "(`KeyError: ...weight_scale_inv`)"
        )
        if outcome is Consequence.REFUSES_TO_START
        else "their packed tensors (`qweight`, `scales`) match no parameter and are skipped "
        "with no error: the unquantized weights are never loaded, and every draft is wrong "
        "(acceptance ≈ 0)"
        if packed
        else "the quantized values are loaded as unquantized weights and their scales are "
        "dropped, with no error: every draft is wrong (acceptance ≈ 0)"
    )
    if unlisted:
        mtp_finding(
            state,
            rule_ids.MTP_QUANT_EXCLUDED_STORED,
            f"the target's MTP layer {prefix} is stored quantized (`{method}`), but "
            f"{state.title} takes the GPTQ-quantized modules from the checkpoint's names and "
            f"builds {shown}{more} under a name no quantized tensor has, so it builds them "
            "unquantized: their packed tensors (`qweight`, `scales`) have no parameter to load "
            "into, and the load is refused",
            location=Location(tensor=_packed_tensor(layer)),
            keys=(EXCLUDED_STORED, "mtp_exclusion_names", "mtp_exclusion_match"),
            fix=f"store the MTP layer unquantized (BF16) for {state.title}: it builds the "
            "layer under other names than the checkpoint's, so no GPTQ list reaches it",
            consequence=outcome,
        )
        return
    listing = (
        "a `-:` key of `quantization_config.dynamic` matches"
        if gptq
        else "the exclusion list names"
    )
    mtp_finding(
        state,
        rule_ids.MTP_QUANT_EXCLUDED_STORED,
        f"the target's MTP layer {prefix} is stored quantized (`{method}`, like the "
        f"backbone), but {listing} {shown}{more} under the names "
        f"{state.title} matches, so it builds them unquantized: {effect}",
        location=Location(target.quant.source, exclusion_pointer(state)),
        keys=(EXCLUDED_STORED, "mtp_exclusion_names"),
        fix=(
            "take out of `quantization_config.dynamic` the `-:` keys whose patterns match the "
            f"MTP layer's runtime names from the start ({state.title}); or store the MTP layer "
            "unquantized if it must stay excluded"
            if rule == SGLANG_GPTQ
            else "take the entries contained in the MTP layer's runtime names out of "
            f"`modules_to_not_convert` ({state.title}); or store the MTP layer unquantized if "
            "it must stay excluded"
            if rule == AWQ_LISTED
            else "take out of `quantization_config.dynamic` the `-:` keys that match the MTP "
            f"layer (for {state.title}'s Qwen3.5 MTP class, any `-:` key containing `mtp` "
            "leaves every MTP layer unquantized; `draftfit convert TARGET --method mtp` does "
            "it where the keys match no backbone module); or store the MTP layer unquantized "
            "if it must stay excluded"
            if gptq
            else "take the MTP layer's modules out of the exclusion list (they are quantized "
            "like the backbone, and the engine builds them so: `draftfit convert TARGET "
            "--method mtp` does it where the entries name no backbone module); or store the "
            "MTP layer unquantized if it must stay excluded"
        ),
        consequence=outcome,
    )


def _packed_tensor(layer: MtpLayer) -> str:
    """The first packed GPTQ tensor of `layer` (its prefix where none is named so)."""
    packed = sorted(sub for sub in layer.tensors if sub.endswith(".qweight"))
    return layer.prefix + (packed[0] if packed else "")


# What loading an MTP layer stored quantized, but excluded from the quantization, does.
EXCLUDED_STORED = "mtp_quant_excluded_stored"


__all__ = ["quantization_covered"]
