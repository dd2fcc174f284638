"""What ToyLLM builds from an EAGLE-3 draft at one version, as named steps.

The toy resolves a draft the way TensorRT-LLM does (its data is TensorRT-LLM's), so its
EAGLE-3 procedure lists the steps every engine shares (`draftfit.engines.procedure`) and
TensorRT-LLM's own steps, in TensorRT-LLM's order; its launch step is its own
(:mod:`.launch_checks`). A real fourth engine writes its own steps beside this module, one
module per concern (route, the draft's parameters, the loader's walk, the target), each a
function of the :class:`~draftfit.engines.procedure.state.BuildState` that returns False to
stop the procedure.
"""

from __future__ import annotations

from draftfit.draft.description import EAGLE, EAGLE3
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
from draftfit.engines.trtllm.procedure import unproven_between
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
    truncating_loader=False,
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


def launch(state: BuildState) -> None:
    """Step: what this version does with the launch's settings."""
    from tests.toyllm.launch_checks import check_settings

    assert state.serve is not None
    check_settings(state, state.serve)


TOYLLM_PROCEDURE = EngineProcedure(
    traits=TRAITS,
    by_method={EAGLE3: EAGLE3_PROCEDURE, EAGLE: (method_supported,)},
    launch=launch,
    finish=unproven_between,  # TensorRT-LLM's: its data's releases known only by their docs
)


def build_view(inputs: BuildInputs) -> EngineView:
    """What ToyLLM at `inputs.profile.version` builds from the draft."""
    return build(TOYLLM_PROCEDURE, inputs)
