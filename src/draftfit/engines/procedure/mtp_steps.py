"""The MTP steps every engine shares; each reads its release's facts from the engine data.

A step writes the typed MTP part of the view and the view's findings, and returns False where
the engine stops (a refusal) or where draftfit's data stops (the release was not read for
that part: the check is then unverified, never `compatible`).
"""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.engines.procedure.mtp_part import (
    mtp_finding,
    mtp_inputs,
    mtp_view,
    not_read,
)
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.remote_code import FACT as REMOTE_CODE_FACT
from draftfit.engines.remote_code import remote_code_at
from draftfit.escape import clip
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.MTP_DEPTH_ABSENT,
    rule_ids.MTP_DEPTH_TOKENS,
    rule_ids.MTP_DEPTH_ZERO,
    rule_ids.MTP_DRAFT_PATH_REQUIRED,
    rule_ids.MTP_FAMILY_UNSERVED,
    rule_ids.MTP_LAUNCH_KIND,
    rule_ids.REMOTE_CODE_NOT_TRUSTED,
)
EMITS_STAGE = "MTP procedure: the steps every engine shares"


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


def remote_code(state: BuildState) -> bool | None:
    """A whole MTP launch without the release's `--trust-remote-code`, of a target whose
    config names code of its own for `AutoConfig` with a model type the release reads with no
    class of its own or of Transformers (MiMo-7B's `mimo`): the config is refused and the
    server does not start (DF560, as for any launch: `config_model_types`)."""
    inputs = mtp_inputs(state)
    launch = inputs.launch
    if not launch.given or not launch.whole or launch.trust_remote_code:
        return None
    if inputs.export is not None:
        return None  # an export is judged beside its target's launch (not read for this)
    found = remote_code_at(state.profile, None, state.checkpoint.config)
    if found.unread:
        not_read(state, f"whether {state.title} reads the target's config without its code")
        return None
    for code in found.needed:
        mtp_finding(
            state,
            rule_ids.REMOTE_CODE_NOT_TRUSTED,
            f"the launch has no `--trust-remote-code`, and the target's config.json names "
            f"code of its own (`auto_map.AutoConfig`: `{clip(code.code)}`) with "
            f"{code.shown_type}, for which {state.title} has no class (neither its own nor "
            f"Transformers {found.transformers}'s): the config is refused without running "
            "that code and the server does not start",
            location=Location("config.json", "/auto_map"),
            keys=(REMOTE_CODE_FACT,),
            fix="add `--trust-remote-code` to the launch (read that code first: the engine "
            "runs it)",
        )
    return False if found.needed else None


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
        if _listed_in_depth_rule(state, "key_unread") or _listed_in_depth_rule(state, "forced_one"):
            # the release builds its one layer whatever the config declares (the key unread,
            # or set to 1 by its config rewrite: SGLang's Qwen3-Next, run on a CPU)
            mtp.depth_used = 1
            return None
        if _listed_in_depth_rule(state, "not_read"):
            title = target.family.title if target.family is not None else "this family's"
            not_read(state, f"what {state.title} does with a {title} depth of 0 was not read")
            return False
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
    if reads in ("refused", 0):
        why = (
            f"{state.title}'s MTP class reads it from the config: the MTP build or load "
            "stops on the missing key"
            if reads == "refused"
            # the default of the target's own config class (MiMo's)
            else f"the target's config class defaults it to 0: {state.title} refuses an MTP "
            "launch on a target that declares no MTP layer"
        )
        shipped = f": {len(target.layers)}" if reads == 0 and target.layers else ""
        mtp_finding(
            state,
            rule_ids.MTP_DEPTH_ABSENT,
            f"the config has no `{target.depth_key}`, and {why}",
            location=where,
            keys=("mtp_depth_absent_reads_as",),
            fix=f"write `{target.depth_key}` (the number of MTP layers shipped{shipped}) in "
            "config.json",
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


def _listed_in_depth_rule(state: BuildState, key: str) -> bool:
    """Whether `mtp_depth_rule`'s list `key` names the target's family: `key_unread` (the
    release never reads its depth key: SGLang builds one Qwen3.5 NextN layer,
    `mtp_num_hidden_layers` unread), `forced_one` (its config rewrite sets the depth to 1),
    `not_read` (what another depth than 1 does was not read), `collapsed` (its shipped layers
    load into one)."""
    fact = state.profile.fact("mtp_depth_rule")
    family = mtp_inputs(state).target.family
    return (
        family is not None
        and fact.known
        and isinstance(fact.value, dict)
        and family.name in fact.value.get(key, [])
    )


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
    forced = _listed_in_depth_rule(state, "forced_one")
    if n != 1 and family is not None and _listed_in_depth_rule(state, "not_read"):
        # what this family's MTP class does with another depth than 1 was not read
        not_read(state, f"{state.title}'s MTP depth rule for {family.title} was not read")
        return False
    where = Location("config.json", f"/{target.depth_key}")
    shipped = target.shipped()
    collapsed = forced and _listed_in_depth_rule(state, "collapsed")
    if collapsed and len(shipped) > 1:
        last = target.layers[shipped[-1]].prefix.rstrip(".")
        mtp_finding(
            state,
            rule_ids.MTP_DEPTH_TOKENS,
            f"the checkpoint ships {len(shipped)} MTP layers; {state.title} builds one and "
            "loads every shipped layer's tensors into it, each overwriting the one before: "
            f"it drafts with {last}'s weights, trained for a later step, so every draft "
            "is wrong",
            location=where,
            keys=("mtp_depth_rule",),
            fix="serve a copy of the checkpoint that ships only its first MTP layer "
            f"(`{target.layers[shipped[0]].prefix}*`), or serve it with vLLM",
            consequence=Consequence.DRAFTS_GARBAGE,
        )
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


__all__ = [
    "depth",
    "depth_vs_tokens",
    "draft_path",
    "family_served",
    "release_read",
    "remote_code",
]
