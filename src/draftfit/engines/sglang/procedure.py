"""What SGLang builds from a draft checkpoint at one version (EAGLE-3 and EAGLE-1), as
named steps.

SGLang's procedure, as read from every release wheel 0.4.4-0.5.23 (`dev/sglang-trtllm-
procedure.md` walks through it): the method comes from `--speculative-algorithm`, the draft
config goes through transformers as is (no speculators reader), `architectures[0]` picks the
class with no rewrite, the decoder layer is `midlayer` before 0.5.12 and `layers.{i}` after,
unknown tensor names are skipped silently from 0.4.9, and the TARGET runner reads aux ids
only from `eagle_config.eagle_aux_hidden_state_layer_ids`, adding 1 (with per-target
exceptions). Every version-dependent value comes from `data.toml`; the steps shared with the
other engines are in :mod:`draftfit.engines.procedure`.
"""

from __future__ import annotations

from draftfit.draft.description import EAGLE, EAGLE3
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
from draftfit.engines.sglang.capture import aux_capture
from draftfit.engines.sglang.classes import LLAMA_EAGLE, LLAMA_EAGLE3, MLA_EAGLE3
from draftfit.engines.sglang.eagle3 import (
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
    quantized_parameters,
    sliding_window,
)
from draftfit.engines.sglang.mtp import MTP_PROCEDURE
from draftfit.engines.sglang.route import (
    layer_buildable,
    method_matches,
    method_supported,
    resolve_class,
)
from draftfit.engines.sglang.target import target_checks
from draftfit.engines.sglang.tensors import tensor_fates
from draftfit.engines.view import BuildInputs, EngineView

TRAITS = EngineTraits(
    eagle1_families=frozenset({LLAMA_EAGLE}),
    eagle3_families=frozenset({LLAMA_EAGLE3, MLA_EAGLE3}),
    mla_families=frozenset({MLA_EAGLE3}),
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
        quantized_parameters,
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
    building(eagle1_families, eagle1_draft),
    tensor_fates,
    fit_dimensions,
    quant_data_missing,
    target_checks,
)


def launch(state: BuildState) -> None:
    """Step: what this version does with the launch's serving settings."""
    from draftfit.engines.sglang.launch_checks import check_settings

    assert state.serve is not None
    check_settings(state, state.serve)


SGLANG_PROCEDURE = EngineProcedure(
    traits=TRAITS,
    by_method={EAGLE3: EAGLE3_PROCEDURE, EAGLE: EAGLE1_PROCEDURE, MTP: MTP_PROCEDURE},
    launch=launch,
)


def build_view(inputs: BuildInputs) -> EngineView:
    """What SGLang at `inputs.profile.version` builds from the draft."""
    return build(SGLANG_PROCEDURE, inputs)
