"""SGLang's loader over the stored tensors: EAGLE-3 loaders take any `d2t` and may skip
`t2d`; its renaming (legacy names, `model.` prefixes, `midlayer` before 0.5.12); unknown
names are skipped silently from 0.4.9 (before, the stacked q/k/v and gate/up loader raises
on them), and a name meant for a parameter leaves that parameter unbound."""

from __future__ import annotations

import re

from draftfit.draft.tensor_names import canonical_name
from draftfit.engines.draft_quant import quant_suffix, read_draft_quant
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.procedure.tensors import Mapped, layer_beyond, walk_tensors
from draftfit.engines.sglang.classes import LLAMA_EAGLE, MLA_EAGLE3
from draftfit.engines.view import FateCause

_STACKED = re.compile(r"\.(q_proj|k_proj|v_proj|gate_proj|up_proj)\.")


def tensor_fates(state: BuildState) -> None:
    """Step: what SGLang's loader does with each stored tensor."""
    walk_tensors(state, _fixed_fate, _engine_name, _unmatched)


def _engine_name(state: BuildState, raw: str) -> Mapped:
    """The canonical parameter a stored name reaches in this version, or None and why."""
    name = raw
    if state.family == MLA_EAGLE3:
        if name.startswith("model."):
            return Mapped(
                None,
                "the MLA draft loader prepends `model.` to every name, so `model.`-prefixed "
                "names are skipped ('Eagle3 MLA: skipping unexpected weight')",
                FateCause.PREFIX_ADDED,
            )
        return Mapped(canonical_name(name)[0])
    if state.family == LLAMA_EAGLE:
        if name.startswith("model."):
            return Mapped(
                None,
                "the EAGLE-1 loader prepends `model.` itself (`model.model.*`)",
                FateCause.PREFIX_ADDED,
            )
        return Mapped(canonical_name(name)[0])
    mapping = state.value("eagle3_weight_mapping") or {}
    for old, new in (state.value("legacy_name_map") or {}).items():
        name = name.replace(old, new)
    if name.startswith("model."):
        if not state.value("model_prefix_accepted"):
            return Mapped(
                None,
                "this version prepends `model.` to every name, so `model.`-prefixed names "
                "become `model.model.*`",
                FateCause.PREFIX_ADDED,
            )
        name = name[len("model.") :]
    if mapping.get("layer_module") == "midlayer":
        if name.startswith("layers."):
            return Mapped(
                None,
                "this version names the decoder layer `midlayer`, so `layers.*` names match "
                "no parameter",
                FateCause.RENAMED,
            )
        if re.match(r"^midlayer\.\d+\.", name):
            return Mapped(
                None, "`midlayer.N.*` (several layers) matches no parameter", FateCause.RENAMED
            )
        if name.startswith("midlayer."):
            name = "layers.0." + name[len("midlayer.") :]
    elif re.match(r"^layers\.0\.\d+\.", name):
        return Mapped(
            None,
            "`midlayer` is replaced by `layers.0` as a substring, so `midlayer.N.*` becomes "
            "`layers.0.N.*` and matches no parameter",
            FateCause.RENAMED,
        )
    return Mapped(canonical_name(name)[0])


def _mapping_sources(state: BuildState) -> tuple[str, ...]:
    return state.citations(
        "eagle_weight_mapping"
        if state.family == LLAMA_EAGLE
        else "mla_weight_mapping"
        if state.family == MLA_EAGLE3
        else "eagle3_weight_mapping",
    )


def _fixed_fate(state: BuildState, raw: str) -> bool:
    """EAGLE-3 loaders take any `d2t` as the vocabulary map and may skip `t2d`."""
    if state.family == LLAMA_EAGLE:
        return False
    if "d2t" in raw.split(".")[-1] or raw == "d2t":
        state.fate(raw, "d2t", "loaded", cause=FateCause.MATCHED)
        return True
    if "t2d" in (state.value("skipped_tensor_names") or []) and "t2d" in raw:
        state.fate(
            raw,
            canonical_name(raw)[0],
            "skipped",
            "always skipped by the loader",
            state.citations("skipped_tensor_names"),
            cause=FateCause.SKIPPED_BY_LOADER,
        )
        return True
    return False


def _unmatched(state: BuildState, raw: str, mapped: Mapped) -> None:
    """SGLang skips unknown names silently (from 0.4.9; before, the stacked q/k/v and
    gate/up loader raises on them); a name meant for a parameter stays unbound."""
    draft_canonical = canonical_name(raw)[0]
    if state.family == LLAMA_EAGLE and raw.startswith("lm_head"):
        state.fate(
            raw,
            draft_canonical,
            "skipped",
            "EAGLE-1 drafts use the target's lm_head; the stored one is ignored",
            _mapping_sources(state),
            cause=FateCause.TARGET_HEAD,
        )
        return
    meant = draft_canonical in state.view.expectations
    stacked = _STACKED.search("." + (mapped.canonical or raw))
    if state.value("unknown_tensor_policy") == "error-if-stacked" and stacked:
        state.fate(
            raw,
            draft_canonical,
            "rejected",
            (mapped.why or "no parameter of the draft class has this name")
            + "; the stacked q/k/v/gate/up loader raises KeyError",
            state.citations("unknown_tensor_policy"),
            cause=mapped.cause,
        )
        return
    if meant:
        cause = mapped.cause if mapped.canonical is None else FateCause.RENAMED
        state.fate(
            raw, draft_canonical, "unbound", mapped.why, _mapping_sources(state), cause=cause
        )
        return
    reason = mapped.why or "no parameter of the draft class has this name"
    cause = mapped.cause
    citations = state.citations("unknown_tensor_policy")
    quant = _quant_skip_reason(state, draft_canonical)
    if quant is not None:
        reason, citations = quant
    elif draft_canonical.endswith(".bias"):
        reason = "the draft has no such bias parameter; the loader drops it silently"
        cause = FateCause.STRAY_BIAS
    n = layer_beyond(state, draft_canonical)
    if n is not None:
        reason = f"the draft builds {n} decoder layer(s) (`num_hidden_layers`)"
        cause = FateCause.EXTRA_LAYER
    state.fate(
        raw,
        draft_canonical,
        "skipped",
        reason + ", so it is skipped silently",
        citations,
        cause=cause,
    )


def _quant_skip_reason(state: BuildState, canonical: str) -> tuple[str, tuple[str, ...]] | None:
    """Why a quantization tensor of a quantized draft has no parameter here (fc, or an
    lm_head this version builds unquantized), or None when no specific reason applies."""
    q = read_draft_quant(state.config)
    if q is None or quant_suffix(canonical) is None:
        return None
    title = state.profile.title
    module = canonical.rsplit(".", 1)[0]
    if module == "fc" and not state.value("draft_quant_fc"):
        return (
            f"{title} builds `fc` as a plain torch Linear, without the draft's "
            "quantization config (a quantized `fc.weight` then loads without its scale)",
            state.citations("draft_quant_fc"),
        )
    head = state.profile.fact("draft_quant_lm_head")
    if module == "lm_head" and head.known and not head.value:
        return (
            f"{title} builds lm_head unquantized (its compressed-tensors scheme "
            "covers linear layers only; a quantized `lm_head.weight` then loads without "
            "its scale)",
            state.citations("draft_quant_lm_head"),
        )
    if module == "lm_head" and head.known and not q.covers("lm_head"):
        return (
            f"{title} quantizes lm_head only when a `targets` entry of the draft's "
            "`quantization_config` names it (`Linear` does not); it builds lm_head "
            "unquantized, and a quantized `lm_head.weight` then loads without its scale",
            state.citations("draft_quant_lm_head"),
        )
    return None
