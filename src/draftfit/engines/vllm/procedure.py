"""What vLLM builds from a draft checkpoint at one version (EAGLE-3 and EAGLE-1), as named
steps: the method (guessed from the draft path when the launch names none), config route,
architecture rewrite and registry lookup, the parameters the draft class builds, the
loader's walk over the stored tensors, aux-layer capture and the target checks. Every
version-dependent value comes from `data.toml` through a :class:`Profile`, each with the
source line it was read from; the steps shared with the other engines are in
:mod:`draftfit.engines.procedure`."""

from __future__ import annotations

from draftfit.draft.description import EAGLE, EAGLE3, DraftDescription
from draftfit.draft.mtp import MTP
from draftfit.engines.procedure.capture import aux_norms, aux_states, aux_switch, concat_order
from draftfit.engines.procedure.dimensions import fit_dimensions, settle_widths
from draftfit.engines.procedure.quantization import quant_data_missing
from draftfit.engines.procedure.run import (
    EngineProcedure,
    Procedure,
    build,
    building,
    eagle1_families,
    eagle3_families,
)
from draftfit.engines.procedure.state import BuildState, EngineTraits
from draftfit.engines.procedure.vocabulary import vocabulary_settled
from draftfit.engines.view import BuildInputs, EngineView
from draftfit.engines.vllm.capture import aux_capture
from draftfit.engines.vllm.eagle3 import (
    context,
    d2t,
    decoder_layers,
    draft_vocabulary,
    eagle1_draft,
    embedding,
    fc,
    fc_width,
    flags,
    head,
    layer_count,
    norms,
    sliding_window,
)
from draftfit.engines.vllm.method import method_matches, method_supported, settle_method
from draftfit.engines.vllm.mtp import MTP_PROCEDURE
from draftfit.engines.vllm.quantization import head_share, quantized_parameters
from draftfit.engines.vllm.route import (
    DEEPSEEK_EAGLE3,
    LLAMA_EAGLE,
    LLAMA_EAGLE3,
    QWEN3_EAGLE3,
    layer_buildable,
    resolve_class,
)
from draftfit.engines.vllm.target import target_checks
from draftfit.engines.vllm.tensors import tensor_fates

TRAITS = EngineTraits(
    eagle1_families=frozenset({LLAMA_EAGLE}),
    eagle3_families=frozenset({LLAMA_EAGLE3, QWEN3_EAGLE3, DEEPSEEK_EAGLE3}),
    mla_families=frozenset({DEEPSEEK_EAGLE3}),
    maps_after_refusal=True,  # a refusal while building leaves the tensor walk to report
)

EAGLE3_PROCEDURE: Procedure = (
    method_supported,
    method_matches,
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
        aux_switch,
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
        context,
        quantized_parameters,
        head_share,
    ),
    tensor_fates,
    fit_dimensions,
    quant_data_missing,
    target_checks,
)

EAGLE1_PROCEDURE: Procedure = (
    method_supported,
    method_matches,
    resolve_class,
    layer_buildable,
    building(eagle1_families, eagle1_draft, quantized_parameters),
    tensor_fates,
    fit_dimensions,
    quant_data_missing,
    target_checks,
)


def launch(state: BuildState) -> None:
    """Step: what this version does with the launch's serving settings."""
    from draftfit.engines.vllm.launch_checks import check_settings

    assert state.serve is not None
    check_settings(state, state.serve)


def _method_as_given(method: str | None, draft: DraftDescription) -> str | None:
    """`auto` stays: vLLM guesses the method from the draft path (`settle_method`)."""
    return method


VLLM_PROCEDURE = EngineProcedure(
    traits=TRAITS,
    by_method={EAGLE3: EAGLE3_PROCEDURE, EAGLE: EAGLE1_PROCEDURE, MTP: MTP_PROCEDURE},
    launch=launch,
    settle=(settle_method,),
    method_for=_method_as_given,
)


def build_view(inputs: BuildInputs) -> EngineView:
    """What vLLM at `inputs.profile.version` builds from the draft."""
    return build(VLLM_PROCEDURE, inputs)
