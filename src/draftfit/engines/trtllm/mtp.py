"""TensorRT-LLM's MTP procedure: the `decoding_type: MTP` speculative config and the MTP mode
it selects, then the steps every engine shares
(:mod:`draftfit.engines.procedure.mtp_steps`): the engine's `by_method["mtp"]` procedure.

What a release does is in the `mtp_*` facts of `data.toml`: read at the pinned 1.2.0rc2
commit (modeling_speculative.py, speculative/interface.py) and in undated main-branch
versions of llm_args.py and modeling_deepseekv3.py (`dev/trtllm-source-facts.md`); no
release was run. TensorRT-LLM builds its MTP layers as DeepSeek-V3's `DeepseekV3MTP`; with a
checkpoint that declares one MTP layer and `use_mtp_vanilla` off it builds that one layer and
runs it once per draft token (MTP-Eagle), otherwise one layer per `num_nextn_predict_layers`
of the launch (vanilla MTP). A family the data does not list at a release was not read there:
its check is unverified, not refused.
"""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.engines.procedure import mtp_steps as steps
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
    rule_ids.MTP_DEPTH_TOKENS,
    rule_ids.MTP_LAUNCH_KIND,
    rule_ids.MTP_METHOD_NAME,
)
EMITS_STAGE = "MTP procedure: the speculative config of a TensorRT-LLM launch"

EAGLE_TYPES = frozenset({"Eagle", "Eagle3"})
LAYERS_KEY = "/speculative_config/num_nextn_predict_layers"
# the vanilla-MTP rule at a release: one layer reused when the checkpoint ships one
EAGLE_IF_ONE_LAYER = "eagle-if-one-layer"


def family_read(state: BuildState) -> bool | None:
    """The target's family is one whose MTP layers the release was read to build; another
    family was not read there (unverified), which is not a refusal (DF140 is not emitted)."""
    inputs = mtp_inputs(state)
    family = inputs.target.family
    served = state.profile.fact("mtp_families_served").value or []
    if inputs.eagle_draft is None and family is not None and family.name not in served:
        mtp_view(state).family = family.name
        not_read(
            state,
            f"whether {state.title} builds the MTP layers of a {family.title} target was not "
            "read (draftfit read its DeepSeek-V3 MTP class only)",
        )
        return False
    return steps.family_served(state)


def decoding_type(state: BuildState) -> bool | None:
    """The launch's `decoding_type` is the release's MTP type (DF141); an EAGLE type on the
    target, with no draft named, is a launch of the wrong kind (DF146)."""
    launch, title = mtp_inputs(state).launch, state.title
    if not launch.given:
        mtp_view(state).method = "MTP"
        return None
    names = state.profile.fact("mtp_method_names")
    if not names.known:
        not_read(state, f"the MTP decoding types of {title} were not read")
        return False
    method = launch.method or ""
    where = Location(pointer="/speculative_config/decoding_type")
    if method in names.value:
        mtp_view(state).method = method
        return None
    if method in EAGLE_TYPES:
        mtp_finding(
            state,
            rule_ids.MTP_LAUNCH_KIND,
            f"`decoding_type: {method}` runs a separate EAGLE draft and the launch names "
            f"none; this target carries MTP layers, which {title} serves with "
            "`decoding_type: MTP`; what it does with this launch was not read",
            location=where,
            keys=("mtp_method_names",),
            fix="write `decoding_type: MTP` to draft with the target's own MTP layers",
            consequence=Consequence.UNKNOWN,
        )
        return False
    accepted = ", ".join(f"`{name}`" for name in names.value)
    mtp_finding(
        state,
        rule_ids.MTP_METHOD_NAME,
        f"{title} has no decoding type `{method}` (its MTP type is {accepted}, looked up by "
        "its exact name): the speculative config is refused while the arguments are parsed",
        location=where,
        keys=("mtp_method_names",),
        fix=f"write `decoding_type: {next(iter(names.value))}`",
    )
    return False


def mtp_mode(state: BuildState) -> bool | None:
    """The MTP layers the release builds from the checkpoint's depth and the launch's
    `num_nextn_predict_layers` (DF145): MTP-Eagle runs the one checkpoint layer once per
    draft token; vanilla MTP builds one layer per draft token, and a launch that asks for
    more layers than the checkpoint ships fails at load where the release was read to."""
    inputs, mtp = mtp_inputs(state), mtp_view(state)
    target, launch = inputs.target, inputs.launch
    rule = state.profile.fact("mtp_depth_rule")
    default = state.profile.fact("mtp_launch_depth_default")
    shipped = mtp.depth_used
    if not rule.known or rule.value != EAGLE_IF_ONE_LAYER or shipped is None:
        not_read(state, f"how {state.title} chooses the MTP layers it builds was not read")
        return False
    asked = launch.layers if launch.layers is not None else default.value
    if not isinstance(asked, int) or asked < 1:
        not_read(
            state,
            f"what {state.title} does with `num_nextn_predict_layers` {asked} was not read",
        )
        return False
    mtp.tokens = asked
    if shipped == 1 and not launch.vanilla:  # MTP-Eagle: the one layer, run `asked` times
        mtp.layers_built = (0,)
        mtp.layer_reused = asked > 1
        return None
    if asked > shipped:
        above = state.profile.fact("mtp_launch_depth_above_checkpoint")
        if not above.known or above.value != "refused":
            not_read(
                state,
                f"what {state.title} does when the launch asks for more MTP layers than the "
                "checkpoint ships was not read",
            )
            return False
        prefix = target.family.layer_prefix if target.family is not None else None
        first = (
            f"`{prefix(target.num_hidden_layers or 0, shipped)}*`" if prefix else "the next layer"
        )
        mtp_finding(
            state,
            rule_ids.MTP_DEPTH_TOKENS,
            f"the launch asks for {asked} MTP layers (`num_nextn_predict_layers`), but the "
            f"target declares {shipped}: {state.title}'s vanilla MTP builds one layer per draft "
            f"token and looks up the weights of {first} and after, which the checkpoint does "
            "not ship: the load fails",
            location=Location(pointer=LAYERS_KEY),
            keys=("mtp_launch_depth_above_checkpoint", "mtp_depth_rule"),
            fix=f"set `num_nextn_predict_layers` to at most {shipped}"
            + (
                " (or leave `use_mtp_vanilla` off: with one checkpoint layer MTP-Eagle runs "
                "it once per draft token)"
                if shipped == 1
                else ""
            ),
        )
        return False
    mtp.layers_built = tuple(range(asked))
    return None


MTP_PROCEDURE: Procedure = (
    mtp_build(
        steps.release_read,
        family_read,
        decoding_type,
        steps.draft_path,
        steps.depth,
        mtp_mode,
        steps.layers_present,
        steps.tensors_present,
        steps.quantization_covered,
    ),
)

__all__ = ["MTP_PROCEDURE", "decoding_type", "family_read", "mtp_mode"]
