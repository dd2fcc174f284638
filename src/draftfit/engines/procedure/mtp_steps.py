"""The MTP steps every engine shares; each reads its release's facts from the engine data.

A step writes the typed MTP part of the view and the view's findings, and returns False where
the engine stops (a refusal) or where draftfit's data stops (the release was not read for
that part: the check is then unverified, never `compatible`).
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from draftfit import rule_ids
from draftfit.draft.mtp import LAYER_INDEX, MtpLayer, MtpTarget
from draftfit.draft.nextn_export import LAYER_INDEX as LAYER_INDEX_READING
from draftfit.engines.name_patterns import NameList
from draftfit.engines.procedure.mtp_exclusions import (
    CHECKPOINT_NAMES,
    EXACT_NO_MOE,
    LISTED,
    MODELOPT,
    MODELOPT_PARTS,
    QUARK,
    RULES,
    engine_name,
    excluded,
    layer_entry,
    quantizable,
    shard_mates,
)
from draftfit.engines.procedure.mtp_part import mtp_finding, mtp_inputs, mtp_view, not_read
from draftfit.engines.procedure.state import BuildState
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.MTP_DEPTH_ABSENT,
    rule_ids.MTP_DEPTH_TOKENS,
    rule_ids.MTP_DEPTH_ZERO,
    rule_ids.MTP_DRAFT_PATH_REQUIRED,
    rule_ids.MTP_FAMILY_UNSERVED,
    rule_ids.MTP_LAUNCH_KIND,
    rule_ids.MTP_LAYER_MISSING,
    rule_ids.MTP_QUANT_EXCLUDED_STORED,
    rule_ids.MTP_QUANT_UNCOVERED,
    rule_ids.MTP_TENSOR_MISSING,
)
EMITS_STAGE = "MTP procedure: the steps every engine shares"

SHOWN = 6
# Schemes matched by their listed names where a release has no `mtp_exclusion_match`.
LISTED_SCHEMES = frozenset({"fp8", "compressed-tensors"})
OUTCOMES = {
    "refused": Consequence.REFUSES_TO_START,
    "garbage": Consequence.DRAFTS_GARBAGE,
}
# The outcome where the release builds the MTP layer unquantized for the scheme whatever the
# config says (SGLang 0.5.23's NextN classes for ModelOpt NVFP4): there is nothing to exclude.
BUILT_UNQUANTIZED = "unquantized"


def release_read(state: BuildState) -> bool | None:
    """Stop, unverified, at a release whose MTP handling draftfit has not read (for a
    stand-alone NextN export: whose reading of such an export was not read)."""
    served = state.profile.fact("mtp_families_served").value
    if not served:
        not_read(state, f"how {state.title} serves MTP layers was not read")
        return False
    export = mtp_inputs(state).export
    facts = state.profile.data.facts
    if export is not None and ("mtp_nextn_export" not in facts or not _known(state)):
        not_read(
            state,
            f"how {state.title} reads a stand-alone NextN export (`{export.architecture}`) "
            "was not read",
        )
        return False
    return None


def _known(state: BuildState) -> bool:
    return state.profile.fact("mtp_nextn_export").known


def family_served(state: BuildState) -> bool | None:
    """The target's family has an MTP class at this release (DF140); an EAGLE draft given
    where the launch selects MTP is a launch of the wrong kind (DF146)."""
    inputs = mtp_inputs(state)
    target = inputs.target
    if inputs.eagle_draft is not None:
        mtp_finding(
            state,
            rule_ids.MTP_LAUNCH_KIND,
            f"the launch selects MTP drafting, but the checkpoint is an EAGLE draft "
            f"({inputs.eagle_draft}), not a target carrying MTP layers: {state.title} "
            "builds an MTP draft from the target's own layers and finds no MTP class for "
            "this config",
            keys=("mtp_families_served",),
            fix="serve the EAGLE draft with an EAGLE method (`eagle3`), or point the MTP "
            "launch at the target that ships the MTP layers",
        )
        return False
    family = target.family
    if family is None:
        what = target.architecture or target.model_type or "this architecture"
        not_read(state, f"draftfit's MTP family table has no naming for `{what}`")
        return False
    mtp_view(state).family = family.name
    served = state.profile.fact("mtp_families_served").value
    if family.name not in served:
        mtp_finding(
            state,
            rule_ids.MTP_FAMILY_UNSERVED,
            f"{state.title} has no MTP draft class for {family.title} targets "
            f"(`{target.architecture}`): the MTP launch is refused",
            location=Location("config.json", "/architectures"),
            keys=("mtp_families_served",),
            fix="serve it with a release that has an MTP class for this family "
            "(`draftfit matrix` lists them), or without MTP drafting",
        )
        return False
    return None


def draft_path(state: BuildState) -> bool | None:
    """A family whose MTP draft the release does not default to the target needs the draft
    path in the launch (DF147)."""
    inputs = mtp_inputs(state)
    launch, family = inputs.launch, inputs.target.family
    if not launch.given or family is None or inputs.export is not None:
        return None  # a NextN export is the draft: its own step judges the launch's
    if launch.other_draft is not None:
        not_read(
            state,
            f"the launch names `{launch.other_draft}` as the MTP draft; draftfit checks the "
            "MTP layers of the checkpoint given, not that one",
        )
    fact = state.profile.fact("mtp_default_draft")
    if not fact.known or family.name not in fact.value:
        not_read(state, f"which draft {state.title} uses for {family.title} was not read")
        return None
    if fact.value[family.name] == "required" and launch.draft_model is None:
        mtp_finding(
            state,
            rule_ids.MTP_DRAFT_PATH_REQUIRED,
            f"{state.title} does not default the MTP draft of a {family.title} target to "
            "the target itself, and the launch names no draft: the launch is refused",
            location=Location(pointer=launch.pointer),
            keys=("mtp_default_draft",),
            fix="name the target itself as the draft in the launch (vLLM: "
            '`"model": TARGET` in `--speculative-config`; SGLang: '
            "`--speculative-draft-model-path TARGET`)",
        )
        return False
    return None


def depth(state: BuildState) -> bool | None:
    """The declared MTP depth: 0 is refused (DF143); absent reads as the release's config
    class says (DF144)."""
    target, mtp = mtp_inputs(state).target, mtp_view(state)
    mtp.depth_declared, mtp.depth_present = target.depth, target.depth_present
    mtp.layers_shipped = target.shipped()
    where = Location("config.json", f"/{target.depth_key}")
    if target.depth_invalid:
        not_read(state, f"`{target.depth_key}` is not a non-negative integer")
        return False
    if target.depth == 0:
        mtp_finding(
            state,
            rule_ids.MTP_DEPTH_ZERO,
            f"`{target.depth_key}` is 0: {state.title} refuses an MTP launch on a target "
            "that declares no MTP layer",
            location=where,
            keys=("mtp_depth_rule",),
            fix=f"set `{target.depth_key}` to the number of MTP layers the checkpoint ships"
            + (f" ({len(target.layers)})" if target.layers else "")
            + ", or serve without MTP drafting",
        )
        return False
    if target.depth is not None:
        mtp.depth_used = target.depth
        return None
    fact = state.profile.fact("mtp_depth_absent_reads_as")
    family = target.family
    reads = fact.value.get(family.name) if fact.known and family is not None else None
    if reads is None:
        not_read(state, f"what {state.title} reads for an absent `{target.depth_key}` was not read")
        return False
    if reads == "refused":
        mtp_finding(
            state,
            rule_ids.MTP_DEPTH_ABSENT,
            f"the config has no `{target.depth_key}`, and {state.title}'s MTP class reads it "
            "from the config: the MTP build fails (AttributeError)",
            location=where,
            keys=("mtp_depth_absent_reads_as",),
            fix=f"write `{target.depth_key}` (the number of MTP layers shipped) in config.json",
            consequence=Consequence.REFUSES_TO_START,
        )
        return False
    mtp.depth_used = 1 if reads == "one-layer" else int(reads)
    mtp_finding(
        state,
        rule_ids.MTP_DEPTH_ABSENT,
        f"the config has no `{target.depth_key}`; {state.title} reads it as "
        f"{mtp.depth_used} (the default of its config class)",
        location=where,
        keys=("mtp_depth_absent_reads_as",),
        fix=f"write `{target.depth_key}` in config.json so that every engine reads the same depth",
        consequence=Consequence.COSMETIC,
    )
    return None


def depth_vs_tokens(state: BuildState) -> bool | None:
    """The launch's token count against the depth the release reads (DF145); a depth other
    than 1 of a family the entry lists in `not_read` stops here, unverified."""
    target = mtp_inputs(state).target
    mtp = mtp_view(state)
    n = mtp.depth_used
    fact = state.profile.fact("mtp_depth_rule")
    if not fact.known or n is None:
        not_read(state, f"{state.title}'s MTP depth rule was not read")
        return False
    rule = fact.value if isinstance(fact.value, str) else fact.value.get("rule")
    family = target.family
    forced = (
        family is not None
        and isinstance(fact.value, dict)
        and family.name in fact.value.get("forced_one", [])
    )
    if (
        n != 1
        and family is not None
        and isinstance(fact.value, dict)
        and family.name in fact.value.get("not_read", [])
    ):  # what this family's MTP class does with another depth than 1 was not read
        not_read(state, f"{state.title}'s MTP depth rule for {family.title} was not read")
        return False
    where = Location("config.json", f"/{target.depth_key}")
    if forced:
        n = mtp.depth_used = 1
    elif rule == "exactly-one" and n != 1:
        mtp_finding(
            state,
            rule_ids.MTP_DEPTH_TOKENS,
            f"the target declares {n} MTP layers; {state.title}'s NextN loader supports "
            "exactly one (`Only 1 nextn layer is supported`): the draft load fails",
            location=where,
            keys=("mtp_depth_rule",),
            fix=f"set `{target.depth_key}` to 1 (the first MTP layer is the one loaded) "
            "in a copy of the config for this engine",
        )
        return False
    k = mtp.tokens
    if k is not None and rule == "divisible" and k > n and k % n:
        mtp_finding(
            state,
            rule_ids.MTP_DEPTH_TOKENS,
            f"`num_speculative_tokens` {k} is more than the {n} MTP layers and not a multiple "
            f"of {n}: {state.title} refuses it (`must be divisible by n_predict={n}`)",
            location=Location(pointer=mtp_inputs(state).launch.pointer),
            keys=("mtp_depth_rule",),
            fix=f"use `num_speculative_tokens` {n} or a multiple of it ({2 * n}, {3 * n})",
        )
        return False
    mtp.layer_reused = k is not None and k > n
    mtp.layers_built = tuple(range(n))
    return None


def _missing_outcome(state: BuildState) -> Consequence | None:
    fact = state.profile.fact("mtp_missing_weights")
    if not fact.known:
        return None
    word = fact.value.get("quantized" if mtp_inputs(state).target.quantized else "unquantized")
    return OUTCOMES.get(word) if isinstance(word, str) else None


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
    for index in mtp_view(state).layers_built or ():
        layer = target.layers.get(index)
        if layer is None:
            continue
        modules = layer.modules()
        missing = [m for m in required if m not in modules]
        if family.naming == LAYER_INDEX and target.backbone_modules:
            decoder = sorted(target.backbone_modules - modules - set(family.own))
            missing += decoder
        if not missing:
            continue
        outcome = _missing_outcome(state)
        if outcome is None:
            not_read(state, f"what {state.title} does with a missing MTP tensor was not read")
            continue
        keys: tuple[str, ...] = ("mtp_required_tensors", "mtp_missing_weights")
        words = _consequence_words(outcome)
        if outcome is Consequence.REFUSES_TO_START and not _load_check_counts(state, missing):
            outcome = Consequence.DRAFTS_GARBAGE
            keys += ("mtp_load_check_counts",)
            words = (
                "its load check leaves these modules out (they have a quantization method of "
                "their own, even unquantized), so " + _consequence_words(outcome)
            )
        own_prefix = family.own_prefix(target.num_hidden_layers or 0, index)
        full = [(own_prefix if m in family.own else layer.prefix) + m for m in missing]
        shown = ", ".join(f"`{name}.weight`" for name in full[:SHOWN])
        more = f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else ""
        mtp_finding(
            state,
            rule_ids.MTP_TENSOR_MISSING,
            f"MTP layer {layer.prefix.rstrip('.')} lacks {shown}{more}, which "
            f"{state.title} loads from the checkpoint: {words}",
            location=Location(tensor=full[0] + ".weight"),
            keys=keys,
            fix="export the MTP layer whole (every tensor of its decoder layer and "
            f"{', '.join(required)})",
            consequence=outcome,
        )
    return None


def quantization_covered(state: BuildState) -> bool | None:
    """A quantized target's MTP modules stored unquantized are excluded from the
    quantization under the names this release matches (DF540)."""
    target, mtp = mtp_inputs(state).target, mtp_view(state)
    if not target.quantized:
        return None
    mtp.quantization = target.quant.scheme or target.quant.method
    naming_fact = state.profile.fact("mtp_exclusion_names")
    outcome_fact = state.profile.fact("mtp_quant_uncovered")
    if not naming_fact.known:
        not_read(state, f"how {state.title} matches quantization exclusions was not read")
        return None
    naming = naming_fact.value
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
    entries = _mapped_entries(state, target)
    names = NameList(list(entries), "exclusions")
    for index in mtp.layers_built or ():
        layer = target.layers.get(index)
        if layer is None:
            continue
        uncovered: list[str] = []
        partial: list[str] = []
        excluded_stored: list[str] = []
        for module in sorted(layer.modules()):
            if not quantizable(module, rule):
                continue
            stored = layer.stored_quantized(module)
            if stored is True and excluded(
                engine_name(layer, module, naming), entries, names, rule
            ):
                excluded_stored.append(engine_name(layer, module, naming))
            if stored is not False:
                continue
            name = engine_name(layer, module, naming)
            if not excluded(name, entries, names, rule):
                uncovered.append(name)
            elif any(
                not excluded(engine_name(layer, mate, naming), entries, names, rule)
                for mate in shard_mates(module)
                if mate in layer.modules()
            ):
                partial.append(name)
        _report_uncovered(state, layer, sorted(set(uncovered)), naming, rule, outcome_fact.value)
        _report_excluded_stored(state, layer, sorted(set(excluded_stored)))
        if partial and naming == CHECKPOINT_NAMES:
            mtp_finding(
                state,
                rule_ids.MTP_QUANT_UNCOVERED,
                f"the exclusion list names {', '.join(f'`{p}`' for p in partial[:SHOWN])} but "
                f"not the other shard(s) of the fused module {state.title} builds from it: "
                "the build is refused (`Detected some but not all shards ... are quantized`)",
                location=Location(target.quant.source, _pointer(state)),
                keys=("mtp_exclusion_names",),
                fix="list both shards of every fused module (`q_a_proj` with "
                "`kv_a_proj_with_mqa`, `gate_proj` with `up_proj`)",
                consequence=Consequence.REFUSES_TO_START,
            )
    return None


def _mapped_entries(state: BuildState, target: MtpTarget) -> tuple[str, ...]:
    """The exclusion entries as the release matches them: renamed by its
    `mtp_exclusion_name_map` for the target's family (SGLang maps DeepSeek-V3's
    `model.layers.61` to `model.decoder`, the first match of each entry), else as written."""
    entries = _entries_read(state, target)
    if NAME_MAP not in state.profile.data.facts or target.family is None:
        return entries
    fact = state.profile.fact(NAME_MAP)
    table = fact.value.get(target.family.name) if isinstance(fact.value, dict) else None
    if not isinstance(table, dict) or not table:
        return entries
    renames = sorted(
        ((old, new) for old, new in table.items() if isinstance(new, str)),
        key=lambda pair: len(pair[0]),
        reverse=True,
    )
    mapped: list[str] = []
    for entry in entries:
        for old, new in renames:
            if old in entry:
                entry = entry.replace(old, new, 1)
                break
        mapped.append(entry)
    return tuple(mapped)


# The renames a release applies to exclusion entries before matching (by family).
NAME_MAP = "mtp_exclusion_name_map"
# Which of an FP8 config's exclusion keys the release reads, where it writes several.
FP8_KEYS = "mtp_fp8_exclusion_keys"


def _entries_read(state: BuildState, target: MtpTarget) -> tuple[str, ...]:
    """The exclusion entries the release reads: for an FP8 config that writes both
    `ignored_layers` and `modules_to_not_convert`, the one list its config class takes
    (`mtp_fp8_exclusion_keys`: the first non-empty one, or the first written); else every
    list's entries."""
    quant = target.quant
    if quant.method != "fp8" or len(quant.lists) < 2 or FP8_KEYS not in state.profile.data.facts:
        return quant.exclusions
    fact = state.profile.fact(FP8_KEYS)
    if not fact.known or not isinstance(fact.value, dict):
        return quant.exclusions
    order = [k for k in fact.value.get("keys", ()) if isinstance(k, str)]
    written = dict(quant.lists)
    present = [written[k] for k in order if k in written]
    if not present:
        return quant.exclusions
    if fact.value.get("pick") == "first-nonempty":
        return next((entries for entries in present if entries), present[-1])
    return present[0]


def _outcome_word(target: MtpTarget, outcomes: object) -> str | None:
    """The `mtp_quant_uncovered` word for the target's scheme (and family, where the release
    differs by family), or None where the data has none."""
    method = target.quant.scheme or target.quant.method or ""
    word = outcomes.get(method) if isinstance(outcomes, dict) else None
    if isinstance(word, dict):  # the outcome differs by family at this release
        word = word.get(target.family.name) if target.family is not None else None
    return word if isinstance(word, str) else None


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


def exclusion_rule(state: BuildState) -> str | None:
    """How this release matches the target's scheme's exclusion entries (`RULES`): from
    `mtp_exclusion_match`; FP8 and compressed-tensors by their listed names where the
    release has no entry for the scheme; None where it was not read, or where the entry
    names no rule draftfit models (`unverified`)."""
    scheme = mtp_inputs(state).target.quant.scheme
    fact = state.profile.fact("mtp_exclusion_match")
    rule = fact.value.get(scheme) if fact.known and isinstance(fact.value, dict) else None
    if isinstance(rule, str):
        return rule if rule in RULES else None
    return LISTED if scheme in LISTED_SCHEMES else None


def _pointer(state: BuildState) -> str:
    quant = mtp_inputs(state).target.quant
    if quant.exclusion_keys:
        return quant.exclusion_keys[0]
    if quant.source == "hf_quant_config.json":
        return "/quantization/exclude_modules"
    return "/quantization_config"


def _fix(state: BuildState, layer: MtpLayer, naming: str, rule: str) -> str:
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
    entry = layer_entry(rule, layer, naming)
    key = _pointer(state).rsplit("/", 1)[-1] if quant.exclusion_keys else None
    if rule in (MODELOPT, MODELOPT_PARTS):
        key = key or "exclude_modules"
    elif rule == QUARK:
        key = key or "exclude"
    where = (
        "the quantization config's exclusion list"
        if rule == LISTED
        else f"`{key}` of {quant.source}"
    )
    portable = "ship the MTP layer quantized like the backbone (the portable fix), or, for "
    if entry is not None:
        note = (
            " (a wildcard such as `*layers.N.*` is not a pattern to this release: use the "
            "`re:` entry)"
            if rule == QUARK
            else ""
        )
        return f"{portable}{title}, add `{entry}` to {where}{note}"
    names = (
        "the checkpoint's own names (`model.layers.{L}...`)"
        if naming == CHECKPOINT_NAMES
        else "its runtime names (`model.decoder.<module>`, `model.eh_proj`, "
        "`model.decoder.mlp.experts`)"
    )
    return f"{portable}{title}, list its modules in {where} under {names}"


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
    word = _outcome_word(target, outcomes)
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
            else ""
        )
        if outcome is Consequence.REFUSES_TO_START
        else "the BF16 values are cast into quantized parameters whose scales are never "
        "loaded, with no error: every draft is wrong (acceptance ≈ 0)"
    )
    keys: tuple[str, ...] = ("mtp_quant_uncovered", "mtp_exclusion_names")
    if rule != LISTED:
        keys += ("mtp_exclusion_match",)
    mtp_finding(
        state,
        rule_ids.MTP_QUANT_UNCOVERED,
        f"the target is quantized (`{method}`) but its MTP layer {prefix.rstrip('.')} is stored "
        f"unquantized, and the exclusion list does not cover {shown}{more} under the names "
        f"{state.title} matches; it builds them quantized like the target: {effect}",
        location=Location(mtp_inputs(state).target.quant.source, _pointer(state)),
        keys=keys,
        fix=_fix(state, layer, naming, rule),
        consequence=outcome,
    )


def _report_excluded_stored(state: BuildState, layer: MtpLayer, names: list[str]) -> None:
    """DF541: MTP modules stored quantized (like the backbone) that the exclusion list
    names under this release's names, so it builds them unquantized: what loading the
    quantized tensors into them does is `mtp_quant_excluded_stored`, by scheme (and family);
    unverified where it was not read."""
    if not names:
        return
    target = mtp_inputs(state).target
    method = target.quant.scheme or target.quant.method or ""
    facts = state.profile.data.facts
    fact = state.profile.fact(EXCLUDED_STORED) if EXCLUDED_STORED in facts else None
    word = _outcome_word(target, fact.value) if fact is not None and fact.known else None
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
    effect = (
        "their scales have no parameter to load into, and the load is refused "
        "(`KeyError: ...weight_scale_inv`)"
        if outcome is Consequence.REFUSES_TO_START
        else "the quantized values are loaded as unquantized weights and their scales are "
        "dropped, with no error: every draft is wrong (acceptance ≈ 0)"
    )
    mtp_finding(
        state,
        rule_ids.MTP_QUANT_EXCLUDED_STORED,
        f"the target's MTP layer {prefix} is stored quantized (`{method}`, like the "
        f"backbone), but the exclusion list names {shown}{more} under the names "
        f"{state.title} matches, so it builds them unquantized: {effect}",
        location=Location(target.quant.source, _pointer(state)),
        keys=(EXCLUDED_STORED, "mtp_exclusion_names"),
        fix="take the MTP layer's modules out of the exclusion list (they are quantized like "
        "the backbone, and the engine builds them so); or store the MTP layer unquantized "
        "if it must stay excluded",
        consequence=outcome,
    )


# What loading an MTP layer stored quantized, but excluded from the quantization, does.
EXCLUDED_STORED = "mtp_quant_excluded_stored"


__all__ = [
    "depth",
    "depth_vs_tokens",
    "draft_path",
    "family_served",
    "layers_present",
    "quantization_covered",
    "release_read",
    "tensors_present",
]
