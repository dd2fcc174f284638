"""TensorRT-LLM's loader over the stored tensors: names are `midlayer[.i].*` with `model.`
prepended by the loader (a `model.`-prefixed name fails its fused loaders), `t2d` and an
unused `d2t` are skipped, and names that match no module are ignored; one meant for a
parameter leaves that parameter unbound."""

from __future__ import annotations

import re

from draftfit.draft.tensor_names import canonical_name
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.procedure.tensors import Mapped, layer_beyond, walk_tensors
from draftfit.engines.view import FateCause

PREFIX_REASON = (
    "TensorRT-LLM prepends `model.` to every name without `lm_head`, so `model.`-prefixed "
    "names become `model.model.*` and match no module; its fused q/k/v and gate/up loaders "
    "then find no weights and fail (AssertionError)"
)


def tensor_fates(state: BuildState) -> None:
    """Step: what TensorRT-LLM's loader does with each stored tensor."""
    walk_tensors(state, _fixed_fate, _engine_name, _unmatched)


def _engine_name(state: BuildState, raw: str) -> Mapped:
    name = raw
    if "lm_head" not in name and name.startswith("model."):
        return Mapped(None, PREFIX_REASON, FateCause.PREFIX_ADDED)
    remap = (state.value("eagle3_weight_mapping") or {}).get("layers_remap") or {}
    n_layers = state.view.dimensions.num_layers or 1
    if name.startswith("layers."):
        if not remap:
            return Mapped(
                None,
                "this version names the decoder layer `midlayer`; `layers.*` matches nothing",
                FateCause.RENAMED,
            )
        pattern, repl = remap["single" if n_layers == 1 else "multi"]
        name = re.sub(pattern, repl.replace("\\1", r"\1"), name, count=1)
    m = re.match(r"^midlayer\.(\d+)\.", name)
    if m:
        if n_layers == 1:
            return Mapped(
                None,
                "a one-layer draft's module is `midlayer`, not `midlayer.N`",
                FateCause.RENAMED,
            )
        return Mapped("layers." + name[len("midlayer.") :])
    if name.startswith("midlayer."):
        if n_layers > 1:
            return Mapped(None, "a multi-layer draft's modules are `midlayer.N`", FateCause.RENAMED)
        return Mapped("layers.0." + name[len("midlayer.") :])
    return Mapped(canonical_name(name)[0])


def _fixed_fate(state: BuildState, raw: str) -> bool:
    """The loader always skips `t2d`, and `d2t` where the draft builds no map."""
    if raw == "t2d":
        keys: tuple[str, ...] = ("skipped_tensor_names",)
    elif raw == "d2t" and "d2t" not in state.view.expectations:
        keys = ("d2t_parameter",)
    else:
        return False
    state.fate(
        raw,
        raw,
        "skipped",
        "always skipped by the loader",
        state.citations(*keys),
        cause=FateCause.SKIPPED_BY_LOADER,
    )
    return True


def _unmatched(state: BuildState, raw: str, mapped: Mapped) -> None:
    """A `model.`-prefixed name fails the fused loaders; any other unknown name is
    ignored, and one meant for a parameter leaves it unbound."""
    draft_canonical = canonical_name(raw)[0]
    if mapped.cause is FateCause.PREFIX_ADDED:
        citations = state.citations("model_prefix_accepted")
        state.fate(raw, draft_canonical, "rejected", mapped.why, citations, cause=mapped.cause)
        return
    if draft_canonical in state.view.expectations:
        cause = mapped.cause if mapped.canonical is None else FateCause.RENAMED
        state.fate(
            raw,
            draft_canonical,
            "unbound",
            mapped.why or "the loader maps it to no module",
            state.citations("eagle3_weight_mapping"),
            cause=cause,
        )
        return
    reason = mapped.why or "no module of the draft class has this name"
    cause = mapped.cause
    if draft_canonical.endswith(".bias"):
        reason = "the draft has no such bias parameter"
        cause = FateCause.STRAY_BIAS
    n = layer_beyond(state, draft_canonical)
    if n is not None:
        reason = f"the draft builds {n} decoder layer(s)" + (
            "" if state.value("multi_layer_policy") == "supported" else " (one only)"
        )
        cause = FateCause.EXTRA_LAYER
    state.fate(
        raw,
        draft_canonical,
        "skipped",
        reason + "; the loader ignores it silently",
        state.citations("unknown_tensor_policy"),
        cause=cause,
    )
