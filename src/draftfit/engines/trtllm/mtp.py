"""TensorRT-LLM's MTP procedure: the `decoding_type: MTP` speculative config and the MTP mode
it selects, then the steps every engine shares
(:mod:`draftfit.engines.procedure.mtp_steps`): the engine's `by_method["mtp"]` procedure.

What a release does is in the `mtp_*` facts of `data.toml`: read at the pinned 1.2.0rc2
commit (modeling_speculative.py, speculative/interface.py) and in undated main-branch
versions of llm_args.py and modeling_deepseekv3.py; from 1.4.0rc0 in undated main-branch
versions only (`dev/trtllm-source-facts.md`); no release was run. TensorRT-LLM builds
DeepSeek-V3's MTP layers as `DeepseekV3MTP`; with a checkpoint that declares one MTP layer
and `use_mtp_vanilla` off it builds that one layer and runs it once per draft token
(MTP-Eagle), otherwise one layer per draft token (vanilla MTP). The launch's depth is
`num_nextn_predict_layers` at 1.2.0rc2 and `max_draft_len` from 1.4.0rc0; a vanilla launch
deeper than the checkpoint fails at load at 1.2.0rc2, and from 1.4.0rc0 shares the
checkpoint's layers (DeepSeek with `use_mtp_vanilla`) or is silently capped at them. A
family the data does not list at a release was not read there: its check is unverified,
not refused.
"""

from __future__ import annotations

from draftfit import rule_ids
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
    rule_ids.MTP_DEPTH_TOKENS,
    rule_ids.MTP_LAUNCH_KIND,
    rule_ids.MTP_METHOD_NAME,
)
EMITS_STAGE = "MTP procedure: the speculative config of a TensorRT-LLM launch"

EAGLE_TYPES = frozenset({"Eagle", "Eagle3"})
# the vanilla-MTP rule at a release: one layer reused when the checkpoint ships one
EAGLE_IF_ONE_LAYER = "eagle-if-one-layer"
# where a release reads the MTP launch's depth, when not `num_nextn_predict_layers`
DRAFT_LEN_KEY = "max_draft_len"
# what vanilla MTP does with a launch deeper than the checkpoint
REFUSED, SHARED, CLAMPED = "refused", "shared", "clamped"


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
    """The MTP layers the release builds from the checkpoint's depth and the launch's depth
    (`num_nextn_predict_layers`, or `max_draft_len` where the release reads it there)
    (DF145): MTP-Eagle runs the one checkpoint layer once per draft token; vanilla MTP builds
    one layer per draft token, and a launch that asks for more layers than the checkpoint
    ships fails at load, shares the checkpoint's layers or is silently capped at them, as
    the release was read to do."""
    inputs, mtp = mtp_inputs(state), mtp_view(state)
    launch = inputs.launch
    rule = state.profile.fact("mtp_depth_rule")
    shipped = mtp.depth_used
    if not rule.known or rule.value != EAGLE_IF_ONE_LAYER or shipped is None:
        not_read(state, f"how {state.title} chooses the MTP layers it builds was not read")
        return False
    eagle = shipped == 1 and not launch.vanilla
    asked = _launch_depth(state, eagle, shipped)
    if asked is None:
        return False
    mtp.tokens = asked
    if eagle:  # MTP-Eagle: the one layer, run `asked` times
        mtp.layers_built = (0,)
        mtp.layer_reused = asked > 1
        return None
    if asked <= shipped:
        mtp.layers_built = tuple(range(asked))
        return None
    return _above_checkpoint(state, asked, shipped)


def _launch_depth(state: BuildState, eagle: bool, shipped: int) -> int | None:
    """The draft depth the launch asks for, under the key the release reads it from, or the
    release's default for the mode; None (with the part not read) where that is unknown."""
    launch, title = mtp_inputs(state).launch, state.title
    key = state.profile.fact("mtp_launch_depth_key")
    if not key.known:
        not_read(state, f"where {title} reads the MTP launch's depth was not read")
        return None
    written = launch.max_draft_len if key.value == DRAFT_LEN_KEY else launch.layers
    if key.value == DRAFT_LEN_KEY and written is None and launch.layers is not None:
        not_read(
            state,
            f"{title} reads the MTP depth from `max_draft_len` and fills "
            "`num_nextn_predict_layers` from the checkpoint; what it does with the launch's "
            f"own `num_nextn_predict_layers: {launch.layers}` was not read",
        )
        return None
    asked = written if written is not None else _default(state, eagle, shipped)
    if not isinstance(asked, int) or asked < 1:
        not_read(state, f"what {title} does with an MTP depth of {asked} was not read")
        return None
    return asked


def _default(state: BuildState, eagle: bool, shipped: int) -> object:
    """The release's depth when the launch writes none: one number, or one per mode
    (`vanilla = "checkpoint"`: the checkpoint's own layer count)."""
    value = state.profile.fact("mtp_launch_depth_default").value
    if isinstance(value, dict):
        value = value.get("mtp-eagle" if eagle else "vanilla")
    return shipped if value == "checkpoint" else value


def _above_checkpoint(state: BuildState, asked: int, shipped: int) -> bool | None:
    """Vanilla MTP asked for more layers than the checkpoint ships: the load fails
    ('refused'), the extra layers reuse the checkpoint's ('shared', with `use_mtp_vanilla`),
    or the draft is silently capped at the checkpoint's layers ('clamped')."""
    inputs, mtp, title = mtp_inputs(state), mtp_view(state), state.title
    target, launch = inputs.target, inputs.launch
    key = state.profile.fact("mtp_launch_depth_key").value
    what = _above_rule(state)
    if what == SHARED and not launch.vanilla:
        what = CLAMPED  # the shared path is taken only when the launch asks for vanilla
    keys = ("mtp_launch_depth_above_checkpoint", "mtp_depth_rule", "mtp_launch_depth_key")
    where = Location(pointer=f"/speculative_config/{key}")
    if what == SHARED:
        mtp.layers_built = tuple(range(shipped))
        mtp.layer_reused = True
        return None
    if what == CLAMPED:
        mtp.tokens = shipped
        mtp.layers_built = tuple(range(shipped))
        mtp_finding(
            state,
            rule_ids.MTP_DEPTH_TOKENS,
            f"the launch asks for {asked} draft tokens (`{key}`), but the target ships "
            f"{shipped} MTP layer(s): {title}'s vanilla MTP silently caps the draft at "
            f"{shipped} token(s) per step — fewer draft tokens than asked, each one drafted "
            "by its own layer",
            location=where,
            keys=keys,
            fix=f"set `{key}` to at most {shipped}, the MTP layers the target ships",
            consequence=Consequence.DEGRADES,
        )
        return None
    if what != REFUSED:
        not_read(
            state,
            f"what {title} does when the launch asks for more MTP layers than the "
            "checkpoint ships was not read",
        )
        return False
    prefix = target.family.layer_prefix if target.family is not None else None
    first = f"`{prefix(target.num_hidden_layers or 0, shipped)}*`" if prefix else "the next layer"
    mtp_finding(
        state,
        rule_ids.MTP_DEPTH_TOKENS,
        f"the launch asks for {asked} MTP layers (`{key}`), but the target declares "
        f"{shipped}: {title}'s vanilla MTP builds one layer per draft token and looks up the "
        f"weights of {first} and after, which the checkpoint does not ship: the load fails",
        location=where,
        keys=keys,
        fix=f"set `{key}` to at most {shipped}"
        + (
            " (or leave `use_mtp_vanilla` off: with one checkpoint layer MTP-Eagle runs "
            "it once per draft token)"
            if shipped == 1
            else ""
        ),
    )
    return False


def _above_rule(state: BuildState) -> object:
    """`mtp_launch_depth_above_checkpoint` for the target's family (`"*"`: the others)."""
    above = state.profile.fact("mtp_launch_depth_above_checkpoint")
    if not above.known:
        return None
    if not isinstance(above.value, dict):
        return above.value
    family = mtp_inputs(state).target.family
    name = family.name if family is not None else None
    return above.value.get(name or "", above.value.get("*"))


MTP_PROCEDURE: Procedure = (
    mtp_build(
        steps.release_read,
        family_read,
        decoding_type,
        steps.draft_path,
        steps.depth,
        mtp_mode,
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

__all__ = ["MTP_PROCEDURE", "decoding_type", "family_read", "mtp_mode"]
