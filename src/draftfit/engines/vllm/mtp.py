"""vLLM's MTP procedure: the method names and token count its `--speculative-config` takes,
then the steps every engine shares
(:mod:`draftfit.engines.procedure.mtp_steps`): the engine's `by_method["mtp"]` procedure.

What each release does is in the `mtp_*` facts of `data.toml` (read in the 0.10.2 and 0.34.0
wheels, confirmed on a CPU: `dev/mtp-source-facts.md`, `dev/mtp-oracle-results.md`; the
releases between read in their sources, not run).
"""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.engines.procedure import mtp_export as export
from draftfit.engines.procedure import mtp_presence as presence
from draftfit.engines.procedure import mtp_quant_parts as quant_parts
from draftfit.engines.procedure import mtp_quantization as quantization
from draftfit.engines.procedure import mtp_steps as steps
from draftfit.engines.procedure import mtp_unmapped as unmapped
from draftfit.engines.procedure.mtp_part import (
    mtp_build,
    mtp_finding,
    mtp_inputs,
    mtp_view,
    not_read,
)
from draftfit.engines.procedure.run import Procedure
from draftfit.engines.procedure.state import BuildState
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.MTP_FAMILY_UNSERVED,
    rule_ids.MTP_LAUNCH_KIND,
    rule_ids.MTP_METHOD_NAME,
    rule_ids.MTP_TOKEN_COUNT_MISSING,
)
EMITS_STAGE = "MTP procedure: the speculative config of a vLLM launch"

EAGLE_METHODS = frozenset({"eagle", "eagle3"})


def launch_line(state: BuildState) -> bool | None:
    """What the release's argument parser and SpeculativeConfig make of the MTP launch
    line, as of any launch (DF559): a flag the parser does not take, a value it cannot read,
    a word after a switch, a speculative-config key it has no field for, a token count
    below 1."""
    launch = state.inputs.launch
    if launch is None:
        return None
    from draftfit.engines.vllm.launch_checks import check_mtp_settings

    check_mtp_settings(state, launch.settings)
    return None


def method_name(state: BuildState) -> bool | None:
    """The launch's `method` names MTP at this release (DF141); an EAGLE method on the
    target is a launch of the wrong kind (DF146)."""
    launch, title = mtp_inputs(state).launch, state.title
    if not launch.given:
        return None
    method = launch.method or ""
    where = Location(pointer=f"{launch.pointer}.method")
    names = state.profile.fact("mtp_method_names")
    if not names.known:
        not_read(state, f"the MTP method names of {title} were not read")
        return False
    kind = names.value.get(method)
    if kind in ("canonical", "accepted"):
        mtp_view(state).method = method
        return None
    if kind == "deprecated":
        mtp_view(state).method = "mtp"
        mtp_finding(
            state,
            rule_ids.MTP_METHOD_NAME,
            f"method `{method}` is deprecated in {title}: it is accepted and replaced with "
            "`mtp` (vLLM logs a deprecation warning)",
            location=where,
            keys=("mtp_method_names",),
            fix='write `"method": "mtp"`',
            consequence=Consequence.COSMETIC,
        )
        return None
    if method in EAGLE_METHODS:
        return _eagle_on_target(state, method, where)
    accepted = ", ".join(f"`{n}`" for n in names.value)
    mtp_finding(
        state,
        rule_ids.MTP_METHOD_NAME,
        f"{title} does not take method `{method}` for MTP drafting (it takes {accepted}): "
        "the speculative config is refused",
        location=where,
        keys=("mtp_method_names",),
        fix=f"use one of {accepted}",
    )
    return False


def _eagle_on_target(state: BuildState, method: str, where: Location) -> bool:
    launch, title = mtp_inputs(state).launch, state.title
    if launch.other_draft is not None:
        mtp_finding(
            state,
            rule_ids.MTP_LAUNCH_KIND,
            f"the launch serves `{launch.other_draft}` as an `{method}` draft, not this "
            "target's MTP layers: the checkpoint checked here is the target, and the draft "
            "that runs was not checked",
            location=where,
            keys=("mtp_method_names",),
            fix=f"check the draft: `draftfit check {launch.other_draft} --target TARGET`; "
            'or serve the MTP layers with `"method": "mtp"`',
            consequence=Consequence.UNKNOWN,
        )
        return False
    fact = state.profile.fact("mtp_eagle_without_draft")
    names_target = launch.draft_model is not None and launch.draft_model == launch.target_model
    needs = (
        f"method `{method}` needs a separate draft checkpoint, and the launch names the "
        "target itself as that draft (`model`)"
        if names_target
        else f"method `{method}` needs a separate draft checkpoint and the launch names none"
    )
    mtp_finding(
        state,
        rule_ids.MTP_LAUNCH_KIND,
        f"{needs}; this target carries MTP layers, which {title} serves with method `mtp`"
        + (": the speculative config is refused" if fact.known else ""),
        location=where,
        keys=("mtp_method_names", "mtp_eagle_without_draft"),
        fix='use `"method": "mtp"` to draft with the target\'s own MTP layers',
        consequence=None if fact.known else Consequence.UNKNOWN,
    )
    return False


def token_count(state: BuildState) -> bool | None:
    """The launch gives `num_speculative_tokens` where the release requires it (DF142)."""
    launch, title = mtp_inputs(state).launch, state.title
    mtp_view(state).tokens = launch.tokens
    if not launch.given or launch.tokens is not None:
        return None
    fact = state.profile.fact("mtp_tokens_required")
    if launch.draft_model is not None and not (fact.known and fact.value == "always"):
        return None  # the count defaults to the MTP depth
    if not fact.known:
        not_read(state, f"whether {title} requires `num_speculative_tokens` for MTP was not read")
        return None
    why = (
        f"{title} refuses an MTP `--speculative-config` without it, also where `model` names "
        "the draft: its MTP config compares the missing count with 1 before the depth "
        "defaults it (TypeError)"
        if launch.draft_model is not None
        else f"{title} refuses an MTP `--speculative-config` without it "
        "(`num_speculative_tokens must be provided ...`)"
    )
    mtp_finding(
        state,
        rule_ids.MTP_TOKEN_COUNT_MISSING,
        f"the launch gives no `num_speculative_tokens`; {why}",
        location=Location(pointer=launch.pointer),
        keys=("mtp_tokens_required",),
        fix='add `"num_speculative_tokens": 1` (or the number of MTP layers, or a multiple)',
    )
    return False


def model_type_rewritten(state: BuildState) -> bool | None:
    """vLLM turns a target into its MTP draft by `model_type` for some families
    (`mtp_family_model_types`): a target of the family under another model type (Kimi-K2's
    `kimi_k2`, a DeepSeek-V3 by its tensors) is not rewritten, and its draft is built as the
    whole target model (DF140)."""
    inputs = mtp_inputs(state)
    family, target = inputs.target.family, inputs.target
    if inputs.eagle_draft is not None or inputs.export is not None or family is None:
        return None
    fact = state.profile.fact("mtp_family_model_types")
    if not fact.known or not isinstance(fact.value, dict):
        return None
    rewritten = fact.value.get(family.name)
    if not isinstance(rewritten, list) or target.model_type in rewritten:
        return None
    shown = ", ".join(f"`{t}`" for t in rewritten)
    mtp_finding(
        state,
        rule_ids.MTP_FAMILY_UNSERVED,
        f"{state.title} turns a {family.title} target into its MTP draft by `model_type` "
        f"({shown}), and this target's is `{target.model_type}`: the config is not "
        "rewritten, the draft is built as the whole target model, and the MTP launch is "
        "refused",
        location=Location("config.json", "/model_type"),
        keys=("mtp_family_model_types",),
        fix="serve the MTP layers with SGLang (0.5.23 chooses its NextN class by architecture "
        f"and serves such a target); or a config with `model_type` {shown} if the checkpoint "
        "is that model",
    )
    return False


MTP_PROCEDURE: Procedure = (
    mtp_build(
        steps.release_read,
        steps.family_served,
        steps.remote_code,
        model_type_rewritten,
        method_name,
        export.export_reading,
        steps.draft_path,
        launch_line,
        token_count,
        steps.depth,
        steps.depth_vs_tokens,
        export.export_fit,
        presence.layers_present,
        presence.tensors_present,
        unmapped.tensors_mapped,
        unmapped.strays_mapped,
        unmapped.layers_beyond,
        unmapped.gptq_order_mapped,
        quantization.quantization_covered,
        quant_parts.quantized_parts_present,
    ),
)

__all__ = ["MTP_PROCEDURE", "launch_line", "method_name", "model_type_rewritten", "token_count"]
