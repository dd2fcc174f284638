"""Which quantization method a release builds a target's MTP layers with, and whether it
builds them with the scheme at all: the exclusion rule it matches the scheme's entries by
(`mtp_exclusion_match`), the launch's own quantization setting (`mtp_quant_launch_names`),
the config classes that refuse a config for the whole target (`gptq_config_refused`,
`awq_config_refused`, SGLang's Marlin path) and, for SGLang's compressed-tensors, the fused
modules matched by their fused name (`mtp_fused_by_name`). Shared by the quantization step
(:mod:`draftfit.engines.procedure.mtp_quantization`) and DF542's
(:mod:`draftfit.engines.procedure.mtp_quant_build`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.draft.mtp import MtpTarget
from draftfit.engines.name_patterns import NameList
from draftfit.engines.procedure.mtp_exclusions import (
    AWQ,
    AWQ_LISTED,
    DYNAMIC_RULES,
    GPTQ,
    SGLANG_GPTQ,
    SGLANG_LISTED,
    SGLANG_QUARK,
    SHARD_CHECKED_RULES,
    as_matched,
    entry_renames,
    fused_by_name,
    gptq_marlin_experts,
    match_rule,
)
from draftfit.engines.procedure.mtp_part import known_value, mtp_inputs, not_read
from draftfit.engines.procedure.state import BuildState

if TYPE_CHECKING:
    from draftfit.engines.profile import Profile


def exclusion_rule(state: BuildState) -> str | None:
    """How this release matches the target's scheme's exclusion entries (see
    :func:`~draftfit.engines.procedure.mtp_exclusions.match_rule`)."""
    quant = mtp_inputs(state).target.quant
    return match_rule(state.profile, quant.scheme or quant.method or "")


def fused_names(state: BuildState, target: MtpTarget, rule: str) -> frozenset[str] | None:
    """The fused modules the release matches by the fused name under `rule` (SGLang's
    compressed-tensors: `mtp_fused_by_name`; its FP8 and ModelOpt: an MLA layer's fused
    `q_a_proj` + `kv_a_proj_with_mqa` where the model class maps no shards for it,
    :func:`mla_fused_by_name`; none for any other rule); None, after saying so, where that
    was not read for the target's family."""
    title = target.family.title if target.family is not None else "the target"
    if rule in (SGLANG_LISTED, SGLANG_QUARK):
        found = fused_by_name(state.profile, target)
        if found is None:
            not_read(
                state,
                f"which of {title}'s fused MTP modules {state.title}'s quantization config "
                "matches by the fused module's name was not read",
            )
            return None
        # Quark's loader maps `gate_up_proj` and the MLA module itself; the class, `qkv_proj`
        return found & {"qkv_proj"} if rule == SGLANG_QUARK else found
    if rule not in SHARD_CHECKED_RULES:
        return frozenset()
    found = mla_fused_by_name(state.profile, target)
    if found is None:
        not_read(
            state,
            f"whether {state.title}'s quantization config reads {title}'s fused "
            f"`{MLA_FUSED}` by its shards was not read",
        )
    return found


# Families whose MTP class builds the whole MTP layer unquantized for a Quark target when its
# `exclude` list says so (`mtp_quark_layer_switch`): 'layer-prefix' (an entry equal to, or a
# `re:` pattern matching, the layer's prefix as the class maps it), 'mtp-experts-listed' (an
# entry under `mtp.` naming `mlp.experts`).
QUARK_SWITCH = "mtp_quark_layer_switch"


def quark_layers_unquantized(
    state: BuildState, target: MtpTarget, entries: tuple[str, ...]
) -> bool:
    """Whether the release builds the target's MTP layers unquantized whatever the per-module
    entries say, for a Quark target whose `exclude` list (`entries`, as the release maps
    them) meets its family's switch (:data:`QUARK_SWITCH`)."""
    table = known_value(state, QUARK_SWITCH)
    family = target.family.name if target.family is not None else ""
    how = table.get(family) if isinstance(table, dict) else None
    if how == "layer-prefix" and target.num_hidden_layers is not None:
        renames = entry_renames(state.profile, target)
        prefix = as_matched(f"model.layers.{target.num_hidden_layers}", renames)
        return NameList(list(entries), "exclude").matches(prefix)
    if how == "mtp-experts-listed":
        return any(e.startswith("mtp.") and "mlp.experts" in e for e in target.quant.exclusions)
    return False


# How the release's FP8 and ModelOpt configs read an MLA layer's fused module, by family.
MLA_SHARDS = "mtp_mla_shards"
MLA_FUSED = "fused_qkv_a_proj_with_mqa"


def mla_fused_by_name(profile: Profile, target: MtpTarget) -> frozenset[str] | None:
    """Under SGLang's FP8 and ModelOpt (`is_layer_skipped`), the MLA fused module of the
    target's MTP layers that `profile`'s release matches by its own name (`mtp_mla_shards`
    'fused-name': the model class maps no shards for it); empty where it maps them or the
    layers have no MLA module; None where the family was not read."""
    if not any(
        module.endswith("kv_a_proj_with_mqa")
        for layer in target.layers.values()
        for module in layer.modules()
    ):
        return frozenset()
    fact = profile.fact(MLA_SHARDS) if MLA_SHARDS in profile.data.facts else None
    how = fact.value if fact is not None and fact.known else None
    family = target.family.name if target.family is not None else ""
    reading = how.get(family) if isinstance(how, dict) else None
    if reading == "shards":
        return frozenset()
    return frozenset({MLA_FUSED}) if reading == "fused-name" else None


def config_refusal(state: BuildState, target: MtpTarget, rule: str) -> str | None:
    """Why the release builds no MTP layer of this target with the scheme's method at all, or
    None: its GPTQ or AWQ config class refuses the config for the whole target at start-up
    (`gptq_config_refused`, `awq_config_refused`), or SGLang's Marlin path does not take it
    (no plain GPTQ method on a GPU: refused; another AWQ method: not read)."""
    quant, title = target.quant, state.title
    if rule == GPTQ and quant.gptq_refused and known_value(state, CONFIG_REFUSED) is True:
        return (
            f"{title}'s GPTQ config class refuses this target's config at start-up, for the "
            f"whole target ({quant.gptq_refused})"
        )
    if rule == AWQ and quant.awq_refused and known_value(state, AWQ_REFUSED) is True:
        return (
            f"{title}'s AWQ config class refuses this target's config at start-up, for the "
            f"whole target ({quant.awq_refused})"
        )
    if rule in (SGLANG_GPTQ, AWQ_LISTED) and quant.marlin_refused is not None:
        return (
            f"{title} serves this `{quant.scheme or quant.method}` config on a GPU with no "
            f"Marlin kernel ({quant.marlin_refused}): "
            + (
                "it registers no other GPTQ method there and refuses the whole target at start-up"
                if rule == SGLANG_GPTQ
                else "it builds the target with another AWQ method, which was not read"
            )
        )
    return None


# The release's `--quantization` values that build a scheme's MTP layers with the method read
# from the checkpoint's config, by scheme; whether the draft takes the target's value.
LAUNCH_NAMES = "mtp_quant_launch_names"
INHERITED = "draft_quantization_inherited"
# SGLang's value of `--speculative-draft-model-quantization` that leaves the draft's method to
# its config.
UNQUANT = "unquant"


def method_judged(state: BuildState) -> bool:
    """Whether the MTP layers are built with the method of the target's config, the one the
    release's data was read for: the launch names none for them, or one that selects it."""
    requested = requested_method(state)
    return requested is None or same_method(state, requested)


def requested_method(state: BuildState) -> str | None:
    """The quantization method the launch names for the MTP layers, or None where it leaves it
    to the checkpoint's config: the draft's own setting (SGLang's `unquant` leaves it to the
    config: run, the MTP layers of an FP8 target are still built FP8), else, where the
    release builds the draft with the target's `--quantization` (`draft_quantization_inherited`),
    that one."""
    launch = mtp_inputs(state).launch
    value = launch.draft_quantization
    if value is None and known_value(state, INHERITED) is True:
        value = launch.quantization  # `--quantization unquant` is passed on as `unquant`
    if value is None or value.lower() == UNQUANT:
        return None
    return value[:64]


def same_method(state: BuildState, requested: str) -> bool:
    """Whether `requested` builds the target's MTP layers with the method of its config
    (`mtp_quant_launch_names` for the target's scheme)."""
    quant = mtp_inputs(state).target.quant
    table = known_value(state, LAUNCH_NAMES)
    names = table.get(quant.scheme or quant.method or "") if isinstance(table, dict) else None
    return isinstance(names, list) and requested.lower() in names


# Releases whose GPTQ config class refuses the configs of `MtpQuant.gptq_refused`, and whose
# AWQ config class refuses those of `MtpQuant.awq_refused`.
CONFIG_REFUSED = "gptq_config_refused"
AWQ_REFUSED = "awq_config_refused"


def marlin_experts(state: BuildState) -> bool | None:
    """Whether the release builds the target's GPTQ experts with the method that honours
    `-:` keys (:func:`gptq_marlin_experts`, at the launch's tensor-parallel size)."""
    inputs = mtp_inputs(state)
    return gptq_marlin_experts(inputs.target, inputs.launch.tensor_parallel)


def exclusion_pointer(state: BuildState) -> str:
    """Where the target's exclusion list is written (a JSON pointer into its quantization
    config's file), for locations and fixes."""
    quant = mtp_inputs(state).target.quant
    if quant.method == "gptq":
        return "/quantization_config/dynamic"
    if quant.method == "awq":
        return "/quantization_config/modules_to_not_convert"
    if quant.exclusion_keys:
        return quant.exclusion_keys[0]
    if quant.source == "hf_quant_config.json":
        return "/quantization/exclude_modules"
    return "/quantization_config"


def matched_entries(state: BuildState, target: MtpTarget, rule: str) -> tuple[str, ...]:
    """The exclusion entries the release matches the target's MTP modules against under
    `rule`: GPTQ's `dynamic` keys; SGLang's AWQ entries as written (it maps none: no
    `apply_weight_name_mapper`); else the entries it reads, renamed as it renames them."""
    if rule in DYNAMIC_RULES:
        return target.quant.dynamic
    if rule == AWQ_LISTED:
        return target.quant.exclusions
    return _mapped_entries(state, target)


def _mapped_entries(state: BuildState, target: MtpTarget) -> tuple[str, ...]:
    """The exclusion entries as the release matches them (:func:`entry_renames`)."""
    renames = entry_renames(state.profile, target)
    return tuple(as_matched(entry, renames) for entry in _entries_read(state, target))


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


__all__ = [
    "AWQ_REFUSED",
    "CONFIG_REFUSED",
    "MLA_FUSED",
    "MLA_SHARDS",
    "QUARK_SWITCH",
    "config_refusal",
    "exclusion_pointer",
    "exclusion_rule",
    "fused_names",
    "marlin_experts",
    "matched_entries",
    "method_judged",
    "mla_fused_by_name",
    "quark_layers_unquantized",
    "requested_method",
    "same_method",
]
