"""The MTP steps of a stand-alone NextN export served beside its target: how the release
reads the export (`mtp_nextn_export`), whether the launch serves it, and whether it fits
the target (`mtp_nextn_fit`). A build whose checkpoint is no export skips them.

Once the reading is known (`MtpView.export_reading`), the steps every engine shares
(:mod:`.mtp_steps`) judge the export as that release reads it: its layer 0 as the MTP layer
(`layer-zero`), or the layer after its config's decoder layers, where it stores nothing
(`layer-index`).
"""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.draft.nextn_export import LAYER_ZERO, READINGS
from draftfit.engines.procedure.mtp_part import mtp_finding, mtp_inputs, mtp_view, not_read
from draftfit.engines.procedure.state import BuildState
from draftfit.location import Location
from draftfit.rule_ids import Consequence

EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.MTP_DRAFT_PATH_REQUIRED,
    rule_ids.MTP_FAMILY_UNSERVED,
    rule_ids.NEXTN_EXPORT_MISMATCH,
)
EMITS_STAGE = "MTP procedure: a stand-alone NextN export beside its target"

UNREGISTERED = "unregistered"  # the export's architecture maps to no class of the release
OUTCOMES = {
    "refused": Consequence.REFUSES_TO_START,
    "garbage": Consequence.DRAFTS_GARBAGE,
}
EFFECTS = {
    Consequence.REFUSES_TO_START: "the first draft step fails on the shapes, at start-up",
    Consequence.DRAFTS_GARBAGE: "it loads and runs, but its layer was trained on another "
    "model's hidden states: every draft is wrong",
}
OTHER = "other"  # the fit fact's outcome for a key it does not name


def export_reading(state: BuildState) -> bool | None:
    """How the release reads a NextN export of this family (`mtp_nextn_export`): through
    its NextN loader (layer 0), as a target (the layer after the decoder layers), or not at
    all (DF140: the export's architecture maps to no MTP class); and whether the launch
    names the export as its draft (DF147, said when it does not)."""
    inputs = mtp_inputs(state)
    export, family = inputs.export, inputs.target.family
    if export is None or family is None:
        return None
    fact = state.profile.fact("mtp_nextn_export")
    reads = fact.value.get(family.name) if fact.known else None
    if reads is None:
        not_read(
            state,
            f"how {state.title} reads a stand-alone NextN export (`{export.architecture}`) "
            "was not read",
        )
        return False
    if reads == UNREGISTERED:
        mtp_finding(
            state,
            rule_ids.MTP_FAMILY_UNSERVED,
            f"{state.title} has no MTP draft class for a stand-alone {family.title} NextN "
            f"export: it rewrites the target's own architecture into its MTP class, not "
            f"`{export.architecture}`, which it then does not know; the speculative config "
            "is refused",
            location=Location("config.json", "/architectures"),
            keys=("mtp_nextn_export",),
            fix=f"serve the target's own MTP layers with {state.title} (an MTP launch of the "
            "target that names no separate draft), or serve the export with a release that "
            "reads NextN exports (`draftfit matrix` lists them)",
            consequence=Consequence.REFUSES_TO_START,
        )
        return False
    if reads not in READINGS:
        not_read(state, f"`mtp_nextn_export` of {state.title} says `{reads}`")
        return False
    mtp_view(state).export_reading = reads
    _launch_serves_export(state)
    return None


def _launch_serves_export(state: BuildState) -> None:
    """A launch that names no draft, or another one, does not serve the export: what it
    serves was not checked here (unverified, never `compatible`)."""
    launch = mtp_inputs(state).launch
    if not launch.given or launch.serves_checked:
        return
    other = launch.other_draft
    serves = f"`{other}`, not this export" if other is not None else "the target's own MTP layers"
    mtp_finding(
        state,
        rule_ids.MTP_DRAFT_PATH_REQUIRED,
        f"the launch does not name the NextN export as its draft: {state.title} drafts "
        f"with {serves}; this check of the export says nothing about that launch",
        location=Location(pointer=launch.pointer),
        keys=("mtp_nextn_export",),
        fix="name the export as the draft (SGLang: `--speculative-draft-model-path NEXTN`; "
        'vLLM: `"model": NEXTN` in `--speculative-config`), or check the target itself: '
        "`draftfit check TARGET --method mtp`",
        consequence=Consequence.UNKNOWN,
    )


def export_fit(state: BuildState) -> bool | None:
    """The export's config against the target's (DF148), where the release loads the
    export's layer (`layer-zero`): a different hidden size fails at the first draft step,
    another model's layer drafts garbage (`mtp_nextn_fit`)."""
    export = mtp_inputs(state).export
    if export is None or mtp_view(state).export_reading != LAYER_ZERO or not export.mismatches:
        return None
    if "mtp_nextn_fit" not in state.profile.data.facts or not _fit_known(state):
        not_read(state, f"what {state.title} does with an export that does not fit was not read")
        return None
    fact = state.profile.fact("mtp_nextn_fit")
    outcomes = [
        OUTCOMES.get(str(fact.value.get(m.key, fact.value.get(OTHER)))) for m in export.mismatches
    ]
    if any(outcome is None for outcome in outcomes):
        not_read(state, f"what {state.title} does with an export that does not fit was not read")
        return None
    refused = Consequence.REFUSES_TO_START in outcomes
    worst = Consequence.REFUSES_TO_START if refused else Consequence.DRAFTS_GARBAGE
    shown = ", ".join(
        f"`{m.key}` (export {m.export_value}, target {m.target_value})"
        for m in export.mismatches[:6]
    )
    more = f" and {len(export.mismatches) - 6} more" if len(export.mismatches) > 6 else ""
    mtp_finding(
        state,
        rule_ids.NEXTN_EXPORT_MISMATCH,
        f"the NextN export was not made from this target: its config differs from the "
        f"target's in {shown}{more}; {state.title} builds the export from its own config and "
        f"feeds it the target's hidden states: {EFFECTS[worst]}",
        location=Location("config.json", f"/{export.mismatches[0].key}"),
        keys=("mtp_nextn_fit",),
        fix="export the NextN layer from the target you serve (SGLang's "
        "`scripts/export_deepseek_nextn.py --input-dir TARGET`), or serve the target's own "
        "MTP layers without a separate draft",
        consequence=worst,
    )
    return None


def _fit_known(state: BuildState) -> bool:
    return state.profile.fact("mtp_nextn_fit").known


__all__ = ["export_fit", "export_reading"]
