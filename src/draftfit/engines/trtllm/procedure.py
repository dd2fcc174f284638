"""What TensorRT-LLM's PyTorch backend builds from an EAGLE-3 draft at one version, as
named steps.

TensorRT-LLM's procedure (`dev/sglang-trtllm-procedure.md` §2): the user's
`speculative_config` selects EAGLE-3; from 0.21 the one-model path always builds
`Eagle3ForCausalLM`, whatever `architectures` says; tensor names are `midlayer[.i].*` with
`model.` prepended by the loader; names that match no module are ignored; the aux layers
come ONLY from the user's `eagle3_layers_to_capture` (output-of counting) — the draft's own
ids are never read — else the default {1, L//2-1, L-4}. EAGLE-1 drafts are not supported
on the PyTorch backend. With the launch's settings (`--serve-args`, `--serve-config`), the
layers it passes are the layers captured, and `eagle3_one_model: false` takes the two-model
path where the version still has one. Every version-dependent value comes from
`data.toml`; many boundaries there are approximate and findings built on them say so.
"""

from __future__ import annotations

from draftfit.draft.description import EAGLE, EAGLE3
from draftfit.draft.mtp import MTP
from draftfit.engines.procedure.capture import aux_norms, concat_order
from draftfit.engines.procedure.dimensions import fit_dimensions, settle_widths
from draftfit.engines.procedure.quantization import quant_data_missing
from draftfit.engines.procedure.run import (
    EngineProcedure,
    Procedure,
    build,
    building,
    eagle3_families,
)
from draftfit.engines.procedure.state import BuildState, EngineTraits
from draftfit.engines.procedure.vocabulary import vocabulary_settled
from draftfit.engines.trtllm.eagle3 import (
    aux_capture,
    aux_states,
    d2t,
    decoder_layers,
    draft_vocabulary,
    embedding,
    fc,
    fc_width,
    flags,
    head,
    layer_count,
    norms,
    sliding_window,
)
from draftfit.engines.trtllm.mtp import MTP_PROCEDURE
from draftfit.engines.trtllm.route import (
    LLAMA_EAGLE3,
    MLA_EAGLE3,
    layer_buildable,
    method_supported,
    resolve_class,
)
from draftfit.engines.trtllm.target import target_checks
from draftfit.engines.trtllm.tensors import tensor_fates
from draftfit.engines.view import BuildInputs, EngineView

TRAITS = EngineTraits(
    truncating_loader=False,  # fact oversized_weight_policy: copy_ raises on a mismatch
    eagle3_families=frozenset({LLAMA_EAGLE3, MLA_EAGLE3}),
    mla_families=frozenset({MLA_EAGLE3}),
    fc_norm_replaces_input_norm=True,
)

EAGLE3_PROCEDURE: Procedure = (
    method_supported,
    resolve_class,
    layer_buildable,
    building(
        eagle3_families,
        fc_width,
        settle_widths,
        draft_vocabulary,
        layer_count,
        decoder_layers,
        aux_states,
        fc,
        norms,
        aux_norms,
        embedding,
        head,
        d2t,
        vocabulary_settled,
        aux_capture,
        concat_order,
        flags,
        sliding_window,
    ),
    tensor_fates,
    fit_dimensions,
    quant_data_missing,
    target_checks,
)

# Facts that are unknown at a release by design, which the checks reading them handle
# themselves: decoding_config_pages lists a release's signature pages only where there is one.
_UNKNOWN_BY_DESIGN = frozenset({"decoding_config_pages"})


def launch(state: BuildState) -> None:
    """Step: what this version does with the launch's serving settings."""
    from draftfit.engines.trtllm.launch_checks import check_settings

    assert state.serve is not None
    check_settings(state, state.serve)


def unproven_between(inputs: BuildInputs, view: EngineView) -> None:
    """A release that lies between two releases whose facts differ, with no entry of its
    own (a 1.3.0rcN release known only through its documentation), leaves the checks
    resting on those facts unproven; the verdict says which."""
    unknown = [k for k in inputs.profile.unknown_between() if k not in _UNKNOWN_BY_DESIGN]
    if unknown:
        view.unjudged.append(
            f"the checks resting on {', '.join(unknown)} were not made: draftfit's data "
            "has no entry at this release, which lies between releases that differ there, "
            "and its code was not read"
        )


TRTLLM_PROCEDURE = EngineProcedure(
    traits=TRAITS,
    # EAGLE-1 drafts: the method step refuses them at every release.
    by_method={
        EAGLE3: EAGLE3_PROCEDURE,
        EAGLE: (method_supported,),
        # MTP: the target's own MTP layers (read at 1.2.0rc2; other releases unverified)
        MTP: MTP_PROCEDURE,
    },
    launch=launch,
    finish=unproven_between,
)


def build_view(inputs: BuildInputs) -> EngineView:
    """What TensorRT-LLM at `inputs.profile.version` builds from the draft."""
    return build(TRTLLM_PROCEDURE, inputs)
