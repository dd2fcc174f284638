"""vLLM and quantized drafts: the parameters a quantized draft's layers register where this
version builds the draft with its own `quantization_config`, why a quantization tensor has
no parameter here, the V2 runner's lm_head sharing check (:mod:`.head_share`), and a
quantized target whose config this version builds an unquantized draft with."""

from __future__ import annotations

import re

from draftfit import rule_ids
from draftfit.draft.target import Target
from draftfit.engines.draft_quant import DraftQuant, add_quantized_parameters, read_draft_quant
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.vllm.capture import runner
from draftfit.engines.vllm.head_share import head_share_event
from draftfit.location import target_config_at
from draftfit.rule_ids import Consequence

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.DRAFT_BUILT_WITH_TARGET_QUANTIZATION,
    rule_ids.TARGET_QUANTIZATION_NOT_MODELLED,
)
EMITS_STAGE = "engine procedure: vLLM's quantization"

# Decoder projections every EAGLE draft builds, as draftfit names them (`DraftQuant.covers`).
_DECODER_PROJECTIONS = (
    "layers.0.self_attn.q_proj",
    "layers.0.self_attn.o_proj",
    "layers.0.mlp.gate_proj",
    "layers.0.mlp.down_proj",
)


def quantized_parameters(state: BuildState) -> None:
    """Step: the parameters a quantized draft's linear layers register, when this version
    builds the draft with the draft's own `quantization_config` (`get_draft_quant_config`)
    and draftfit knows the scheme's parameters: `weight_scale`, `input_scale`, ... beside
    `weight`, or `weight_packed` instead of it. Their shapes are not checked."""
    q = read_draft_quant(state.config)
    if q is None:
        return
    resolution = state.view.resolution
    resolution.draft_quantization = q.method
    if state.value("draft_quant_config_source") != "draft":
        return
    if q.method not in (state.value("draft_quant_methods") or []) or q.scheme is None:
        return
    params: list[str] = (state.value("compressed_tensors_params") or {}).get(q.scheme) or []
    if not params:
        return
    lm_head = bool(state.value("draft_quant_lm_head"))
    citations = state.citations("draft_quant_config_source", "draft_quant_methods")
    citations += state.citations("compressed_tensors_params")
    add_quantized_parameters(
        state.view, q, params, lambda module: _is_quantizable(module, lm_head), citations
    )
    resolution.draft_quantization_scheme = q.scheme


def head_share(state: BuildState) -> None:
    """Step: whether the V2 model runner's lm_head sharing check fails on the draft's own
    quantized head (:mod:`.head_share`)."""
    q = read_draft_quant(state.config)
    if q is None:
        return
    draft = state.draft
    event = head_share_event(state.profile, q, draft.tensors, draft.raw, runner(state))
    if event is not None:
        state.view.add(event)


def first_release(state: BuildState, key: str, value: object) -> str | None:
    """The first release where fact `key` has `value`, from the data."""
    fact = state.profile.data.facts.get(key)
    if fact is None:
        return None
    for entry in fact.entries:
        if entry.value == value and entry.since is not None:
            return str(entry.since)
    return None


def quant_rejection(
    state: BuildState, canonical: str, q: DraftQuant
) -> tuple[str, str, tuple[str, ...]]:
    """Why this version has no parameter for a quantization tensor of a quantized draft,
    the fix right for this version, and the source lines."""
    title = state.profile.title
    suffix = canonical.rsplit(".", 1)[-1]
    module = canonical.rsplit(".", 1)[0]
    own = first_release(state, "draft_quant_config_source", "draft")
    head = first_release(state, "draft_quant_lm_head", True)
    if state.value("draft_quant_config_source") == "none":
        return (
            f"{title} builds the draft's decoder layers without a quantization "
            "config (unquantized; the draft's own `quantization_config` is read from "
            f"vLLM {own} on), so there is no `{suffix}` parameter",
            f"serve with vLLM >= {own}"
            + (f" (>= {head}: lm_head is quantized)" if head and q.covers("lm_head") else "")
            + ", or store the draft dequantized (bf16)",
            state.citations("draft_quant_config_source"),
        )
    if state.value("draft_quant_config_source") != "draft":
        return (
            f"{title} builds the draft's layers with the target's quantization "
            "config, not the draft's own `quantization_config` (read for drafts from "
            f"vLLM {own} on), so there is no `{suffix}` parameter (the target's scheme "
            "would have to match the draft's; an unquantized target builds none)",
            f"serve with vLLM >= {own}"
            + (f" (>= {head}: lm_head is quantized)" if head and q.covers("lm_head") else "")
            + ", or store the draft dequantized (bf16)",
            state.citations("draft_quant_config_source"),
        )
    if module == "lm_head" and not state.value("draft_quant_lm_head"):
        return (
            f"{title} builds the draft's lm_head unquantized (a compressed-tensors "
            f"lm_head is quantized from vLLM {head} on), so there is no `{suffix}` parameter",
            f"serve with vLLM >= {head}, or keep lm_head unquantized (list it in "
            "`quantization_config.ignore`)",
            state.citations("draft_quant_lm_head"),
        )
    if q.method not in (state.value("draft_quant_methods") or []) or q.scheme is None:
        return (
            f"draftfit has no record of the parameters {title} builds for this "
            f"`quant_method` ({q.method}) and scheme, so it cannot say the `{suffix}` "
            "tensor loads",
            "check that this vLLM release supports the draft's quantization scheme",
            state.citations("draft_quant_methods", "compressed_tensors_params"),
        )
    if module == "lm_head" and q.all_linear and "lm_head" not in q.ignore:
        return (
            f"{title} quantizes only the layers the draft's `quantization_config` "
            "targets, and its `Linear` target matches the engine's linear layer classes, "
            f"not its `ParallelLMHead`: lm_head is built unquantized, so there is no "
            f"`{suffix}` parameter",
            'name lm_head in the scheme\'s `targets` (e.g. ["Linear", "lm_head"]), or store '
            "lm_head unquantized and list it in `ignore`",
            state.citations("draft_quant_lm_head", "draft_quant_methods"),
        )
    return (
        f"the draft's `quantization_config` leaves `{module}` unquantized (not targeted, "
        f"or in `ignore`), so it has no `{suffix}` parameter",
        f"remove `{module}` from `quantization_config.ignore`, or store it unquantized",
        state.citations("draft_quant_config_source", "compressed_tensors_params"),
    )


def target_quantization(state: BuildState, t: Target) -> None:
    """A quantized target next to an unquantized draft on a version that builds the
    draft's decoder layers with the target's quantization config (vLLM 0.11.0): what
    the target's method makes of the draft's weights (data: `target_quant_in_draft`)."""
    if state.value("draft_quant_config_source") != "target":
        return
    if read_draft_quant(state.config) is not None:
        return
    found = t.quantization
    if found is None:
        return
    qc, pointer = found
    method = qc.get("quant_method")
    method = method if isinstance(method, str) else None
    key = method.lower() if method else None
    shown = f"`{method}`" if method else "a `quantization_config` without `quant_method`"
    if key == "compressed-tensors":
        scheme = read_draft_quant({"quantization_config": qc})
        if scheme is not None and not _covers_decoder(scheme):
            return
        key = f"compressed-tensors:{scheme.scheme}" if scheme and scheme.scheme else None
        shown += f", {scheme.scheme} scheme" if scheme and scheme.scheme else ""
    outcomes = state.value("target_quant_in_draft") or {}
    outcome = outcomes.get(key) if key else None
    own = first_release(state, "draft_quant_config_source", "draft")
    fix = f"serve with vLLM {own} or later, which builds the draft with its own (absent) " + (
        "quantization config"
    )
    where = target_config_at(f"{pointer}/quant_method" if method else pointer)
    keys = ("draft_quant_config_source", "target_quant_in_draft")
    built = (
        f"the target is quantized ({shown}) and the draft is not: {state.profile.title} builds "
        "the draft's decoder layers with the target's quantization config"
    )
    if outcome is None:
        state.event(
            rule_ids.TARGET_QUANTIZATION_NOT_MODELLED,
            f"{built}; draftfit has no record of what that method makes of an "
            "unquantized draft's weights",
            where,
            keys,
            fix=fix,
        )
        return
    example = next((n for n in state.draft.tensors if n.endswith("_proj.weight")), "*_proj.weight")
    consequence = Consequence.REFUSES_TO_START
    if outcome == "no-weight":
        fused = re.sub(r"\.[qkv]_proj\.", ".qkv_proj.", example)
        fused = re.sub(r"\.(gate|up)_proj\.", ".gate_up_proj.", fused)
        what = (
            "whose layers hold packed weights (`qweight` / `weight_packed`) and no "
            f"`weight`, so loading the draft's `{example}` fails at start-up with "
            f"KeyError: '{fused}'"
        )
    else:
        what = (
            "whose layers take the draft's weights in the quantized dtype beside scales "
            "the draft does not store, left at their initial values: the loader does not "
            "notice, and the draft's proposals are garbage (acceptance near zero, no error)"
        )
        consequence = Consequence.DRAFTS_GARBAGE
    state.event(
        rule_ids.DRAFT_BUILT_WITH_TARGET_QUANTIZATION,
        f"{built}, {what}",
        where,
        keys,
        fix=fix,
        consequence=consequence,
    )


def _is_quantizable(module: str, lm_head: bool) -> bool:
    """Whether the draft builds `module` as a linear layer with its quantization config:
    the decoder projections, `fc`, and `lm_head` where the version passes the config."""
    if module == "lm_head":
        return lm_head
    return module == "fc" or module.endswith("_proj")


def _covers_decoder(q: DraftQuant) -> bool:
    """Whether a compressed-tensors config quantizes the draft's decoder projections."""
    return q.all_linear or any(q.covers(m) for m in _DECODER_PROJECTIONS)
