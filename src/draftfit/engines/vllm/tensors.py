"""vLLM's loader over the stored tensors: names it always skips, its own renaming
(`midlayer.` -> `layers.0.`, `model.` prepended), and what it does with a name that reaches
no parameter (rejected, except flag-gated parameters and, in some versions, stray biases)."""

from __future__ import annotations

import re

from draftfit.draft.description import EAGLE3
from draftfit.engines.draft_quant import quant_suffix, read_draft_quant
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.procedure.tensors import Mapped, layer_beyond, walk_tensors
from draftfit.engines.view import FateCause
from draftfit.engines.vllm.eagle3 import flag_visible
from draftfit.engines.vllm.quantization import quant_rejection
from draftfit.engines.vllm.route import LLAMA_EAGLE


def tensor_fates(state: BuildState) -> None:
    """Step: what vLLM's loader does with each stored tensor."""
    walk_tensors(state, _fixed_fate, _engine_name, _unmatched)


def vllm_canonical(raw: str) -> str:
    """vLLM's own renaming: `midlayer.` -> `layers.0.` as a substring (data:
    `eagle3_weight_mapping`, vllm/model_executor/models/llama_eagle3.py:224-229@v0.8.5)."""
    return raw.replace("midlayer.", "layers.0.", 1) if "midlayer." in raw else raw


def _fixed_fate(state: BuildState, raw: str) -> bool:
    skip = state.value("skipped_tensor_names") or []
    canonical = vllm_canonical(raw)
    if raw not in skip and canonical not in skip:
        return False
    state.fate(
        raw,
        canonical,
        "skipped",
        "always skipped by the loader",
        state.citations("skipped_tensor_names"),
        cause=FateCause.SKIPPED_BY_LOADER,
    )
    return True


def _engine_name(state: BuildState, raw: str) -> Mapped:
    if raw.startswith("model.") and "lm_head" not in raw:
        return Mapped(
            None,
            f"vLLM prepends `model.` to every name, so `{raw}` becomes `model.{raw}`",
            FateCause.PREFIX_ADDED,
        )
    return Mapped(vllm_canonical(raw))


def _unmatched(state: BuildState, raw: str, mapped: Mapped) -> None:
    """vLLM rejects every name that reaches no parameter, except those it drops on
    purpose: flag-gated parameters and (in some versions) stray biases."""
    canonical = vllm_canonical(raw)
    if mapped.cause is FateCause.PREFIX_ADDED:
        mapping = "eagle3_weight_mapping" if state.family != LLAMA_EAGLE else "eagle_weight_mapping"
        state.fate(
            raw, canonical, "rejected", mapped.why, state.citations(mapping), cause=mapped.cause
        )
        return
    gated = _flag_gated(state, canonical)
    if gated:
        state.fate(
            raw,
            canonical,
            "skipped",
            gated,
            state.citations("flag_gated_tensors"),
            cause=FateCause.NOT_BUILT,
        )
        return
    if canonical.endswith(".bias") and state.value("stray_bias_policy") == "ignored":
        state.fate(
            raw,
            canonical,
            "skipped",
            "the draft has no such bias parameter; the loader drops unknown `.bias` "
            "tensors silently",
            state.citations("stray_bias_policy"),
            cause=FateCause.STRAY_BIAS,
        )
        return
    if canonical == "d2t" and state.family != LLAMA_EAGLE:
        state.fate(
            raw,
            canonical,
            "rejected",
            "the draft has no `draft_id_to_target_id` parameter when the draft "
            "vocabulary equals the target's",
            state.citations("d2t_parameter"),
            cause=FateCause.NOT_BUILT,
        )
        return
    q = read_draft_quant(state.config)
    if q is not None and quant_suffix(canonical) is not None:
        reason, fix, citations = quant_rejection(state, canonical, q)
        state.fate(raw, canonical, "rejected", reason, citations, cause=mapped.cause, fix=fix)
        return
    reason, cause = "no parameter of the draft class has this name", mapped.cause
    n = layer_beyond(state, canonical)
    if n is not None:
        reason = (
            f"the draft builds {n} decoder layer(s) (`num_hidden_layers`"
            + ("" if state.value("multi_layer_drafts") else " is ignored: one layer only")
            + ")"
        )
        cause = FateCause.EXTRA_LAYER
    elif re.match(r"^layers\.\d+\.\d+\.", canonical):
        reason = (
            "`midlayer.` is replaced by `layers.0.` as a substring, so a multi-layer "
            "`midlayer.N.*` name becomes `layers.0.N.*`"
        )
        cause = FateCause.RENAMED
    state.fate(
        raw, canonical, "rejected", reason, state.citations("unknown_tensor_policy"), cause=cause
    )


def _flag_gated(state: BuildState, canonical: str) -> str | None:
    """Why the loader drops a tensor whose parameter a config flag switched off."""
    if not state.profile.fact("flag_gated_tensors").known or state.method != EAGLE3:
        return None
    if canonical.startswith("input_norm.") and not flag_visible(state, "norm_before_fc"):
        return "`norm_before_fc` is off, so the loader drops `input_norm.*` silently"
    if canonical.startswith("fc.") and state.view.capture.use_aux_hidden_state is False:
        return "`eagle_config.use_aux_hidden_state` is false, so there is no `fc`"
    return None
