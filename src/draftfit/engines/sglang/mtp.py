"""SGLang's MTP (NextN) procedure: the `--speculative-algorithm` values and step flags its
server arguments take, then the steps every engine shares
(:mod:`draftfit.engines.procedure.mtp_steps`): the engine's `by_method["mtp"]` procedure.

What each release does is in the `mtp_*` facts of `data.toml` (read in the 0.5.23 wheel,
confirmed on a CPU for DeepSeek-V3 and GLM targets: `dev/mtp-source-facts.md`,
`dev/mtp-oracle-results.md`).
"""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.engines.procedure import mtp_export as export
from draftfit.engines.procedure import mtp_presence as presence
from draftfit.engines.procedure import mtp_quant_build as quant_build
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
    tokens_chosen,
)
from draftfit.engines.procedure.run import Procedure
from draftfit.engines.procedure.state import BuildState
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.MTP_FAMILY_UNSERVED,
    rule_ids.MTP_LAUNCH_KIND,
    rule_ids.MTP_TOKEN_COUNT_MISSING,
)
EMITS_STAGE = "MTP procedure: the speculative algorithm and steps of an SGLang launch"


def algorithm(state: BuildState) -> bool | None:
    """`--speculative-algorithm` is an MTP algorithm at this release (NEXTN, or EAGLE with
    no separate draft); another algorithm on the target is a launch of the wrong kind
    (DF146): refused where the release was read to refuse it (EAGLE3 on a family whose
    NextN class cannot share EAGLE-3's embedding), otherwise its outcome was not read."""
    launch, title = mtp_inputs(state).launch, state.title
    if not launch.given:
        return None
    names = state.profile.fact("mtp_method_names")
    if not names.known:
        not_read(state, f"the MTP algorithms of {title} were not read")
        return False
    method = (launch.method or "").upper()
    if method in names.value:
        mtp_view(state).method = "EAGLE"
        return None
    known = state.profile.fact("known_algorithms")
    if known.known and method not in known.value:
        mtp_finding(
            state,
            rule_ids.MTP_LAUNCH_KIND,
            f"{title} knows no speculative algorithm `{launch.method}`: the launch is refused "
            "while its arguments are read (`Unknown speculative algorithm name`)",
            location=Location(pointer="--speculative-algorithm"),
            keys=("known_algorithms",),
            fix="use `--speculative-algorithm NEXTN` to draft with the target's own MTP layers",
        )
        return False
    refused = method == "EAGLE3" and _eagle3_refused(state)
    outcome = (
        ": the draft path defaults to the target, the draft is built as its NextN class, and "
        "EAGLE-3's embedding sharing finds no `set_embed` or `hot_token_id` on that class, so "
        "start-up fails "
        "(AttributeError)"
        if refused
        else "; what it does with this target was not read"
    )
    mtp_finding(
        state,
        rule_ids.MTP_LAUNCH_KIND,
        f"`--speculative-algorithm {launch.method}` does not serve the target's NextN "
        f"layers in {title} (NEXTN or EAGLE does){outcome}",
        location=Location(pointer="--speculative-algorithm"),
        keys=("mtp_method_names", "mtp_eagle3_on_target") if refused else ("mtp_method_names",),
        fix="use `--speculative-algorithm NEXTN` to draft with the target's own MTP layers",
        consequence=None if refused else Consequence.UNKNOWN,
    )
    return False


def _eagle3_refused(state: BuildState) -> bool:
    """EAGLE3 on this family's target, drafting from the target itself, was read to be
    refused at this release (`mtp_eagle3_on_target`)."""
    inputs = mtp_inputs(state)
    family = inputs.target.family
    if family is None or inputs.launch.other_draft is not None:
        return False
    fact = state.profile.fact("mtp_eagle3_on_target")
    return fact.known and fact.value.get(family.name) == "refused"


def launch_line(state: BuildState) -> bool | None:
    """What the release's argument parser and server arguments make of the MTP launch line,
    as of any launch (DF559): a flag the parser does not take, a value it cannot read, a
    word after a switch, some of the three step flags without the others."""
    launch = state.inputs.launch
    if launch is None:
        return None
    from draftfit.engines.sglang.launch_checks import check_mtp_settings

    check_mtp_settings(state, launch.settings)
    return None


def step_count(state: BuildState) -> bool | None:
    """Without `--speculative-num-steps`, the release picks the steps itself (DF142, info)."""
    launch, title = mtp_inputs(state).launch, state.title
    mtp_view(state).tokens = launch.tokens
    if not launch.given or launch.tokens is not None:
        return None
    family = mtp_inputs(state).target.family
    chosen = tokens_chosen(state.profile, family.name if family is not None else None)
    if chosen is None:
        not_read(state, f"{title}'s default MTP steps were not read")
        return None
    steps_, topk, tokens = chosen
    mtp_view(state).tokens = steps_
    judged = state.inputs.launch
    if judged is not None and (
        judged.settings.speculative_eagle_topk is not None
        or judged.settings.speculative_num_draft_tokens is not None
    ):
        return None  # some step flags without the steps: `launch_line` judges that
    mtp_finding(
        state,
        rule_ids.MTP_TOKEN_COUNT_MISSING,
        f"the launch gives no `--speculative-num-steps`; {title} chooses {steps_} steps, top-k "
        f"{topk} and {tokens} draft tokens for this target",
        location=Location(pointer="--speculative-num-steps"),
        keys=("mtp_tokens_default",),
        fix="pass `--speculative-num-steps`, `--speculative-eagle-topk` and "
        "`--speculative-num-draft-tokens` to choose them",
        consequence=Consequence.COSMETIC,
    )
    return None


def architecture_rewritten(state: BuildState) -> bool | None:
    """SGLang turns a target into its NextN draft by `architectures[0]`; for some families
    a release rewrites only some of their architectures (`mtp_family_architectures`: the
    multimodal Qwen3.5 forms from 0.5.9, the text-only ones from 0.5.17). Another one is
    not rewritten, and its draft is built as the whole target model (DF140)."""
    inputs = mtp_inputs(state)
    family, target = inputs.target.family, inputs.target
    if inputs.eagle_draft is not None or inputs.export is not None or family is None:
        return None
    fact = state.profile.fact("mtp_family_architectures")
    if not fact.known or not isinstance(fact.value, dict):
        return None
    rewritten = fact.value.get(family.name)
    if not isinstance(rewritten, list) or target.architecture in rewritten:
        return None
    shown = ", ".join(f"`{a}`" for a in rewritten)
    mtp_finding(
        state,
        rule_ids.MTP_FAMILY_UNSERVED,
        f"{state.title} turns a {family.title} target into its NextN draft by architecture "
        f"({shown}), and this target's is `{target.architecture}`: the config is not "
        "rewritten, and the MTP launch is refused",
        location=Location("config.json", "/architectures"),
        keys=("mtp_family_architectures",),
        fix="serve it with a release that rewrites this architecture (`draftfit matrix` "
        "lists them)",
    )
    return False


MTP_PROCEDURE: Procedure = (
    mtp_build(
        steps.release_read,
        steps.family_served,
        steps.remote_code,
        architecture_rewritten,
        algorithm,
        export.export_reading,
        steps.draft_path,
        launch_line,
        step_count,
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
        quant_build.quantized_layer_built,
    ),
)

__all__ = ["MTP_PROCEDURE", "algorithm", "architecture_rewritten", "launch_line", "step_count"]
