"""Quantization, the part every engine shares: DF211, linear layers a quantized draft's
`quantization_config` covers that store no scales (or zero points)."""

from __future__ import annotations

from collections.abc import Callable

from draftfit import rule_ids
from draftfit.engines.draft_quant import (
    QUANTIZED_DTYPES,
    MissingData,
    missing_quant_data,
    read_draft_quant,
)
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.view import Event

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.QUANTIZATION_DATA_MISSING,)
EMITS_STAGE = "engine procedure (every engine): quantized drafts"


def quant_data_missing(state: BuildState) -> None:
    """Step: DF211, linear layers the draft's `quantization_config` quantizes that store no
    scales (or zero points), and what this version does with them: a layer it builds
    with the scheme keeps the missing data at its initial values; one it builds
    unquantized takes the stored FP8/INT8 values as plain weights (fact
    `quantized_weight_in_unquantized_layer`: `cast`). Either way the draft loads and
    drafts garbage."""
    q = read_draft_quant(state.config)
    if q is None:
        return
    draft, view, p = state.draft, state.view, state.profile
    dtypes = {name: info.dtype for name, info in draft.tensors.items()}
    missing = missing_quant_data(q, dtypes)
    if not missing:
        return
    cast = (
        "quantized_weight_in_unquantized_layer" in p.data.facts
        and state.value("quantized_weight_in_unquantized_layer") == "cast"
    )
    scaled: list[MissingData] = []
    unscaled: list[MissingData] = []
    for item in missing:
        if any(f"{item.module}.{n}" in view.expectations for n in item.missing):
            scaled.append(item)
        elif cast and item.weight.endswith(".weight") and item.dtype in QUANTIZED_DTYPES:
            unscaled.append(item)
    declared = f"the draft's `quantization_config` declares {q.method} {q.scheme} weights"
    fix = (
        "store the tensors the quantization wrote beside each weight (re-export the "
        "quantized draft whole), or store the draft dequantized (bf16) without a "
        "`quantization_config`"
    )
    if scaled:
        first = scaled[0]
        names = _names(first.missing)
        expectation = view.expectations.get(f"{first.module}.{first.missing[0]}")
        view.add(
            Event(
                rule_ids.QUANTIZATION_DATA_MISSING,
                f"{declared}, but no {names} is stored for {_layers(scaled, draft.raw)}: "
                f"{p.title} builds {_them(scaled)} with the {q.scheme} scheme and "
                f"leaves each missing {names} at its initial value; it loads without an "
                "error and drafts garbage (acceptance near zero)",
                state.tensor_location(first.weight),
                expectation.citations if expectation is not None else (),
                fix,
            )
        )
    if unscaled:
        first = unscaled[0]
        state.event(
            rule_ids.QUANTIZATION_DATA_MISSING,
            f"{declared}, but no {_names(first.missing)} is stored for "
            f"{_layers(unscaled, draft.raw)}: {p.title} builds {_them(unscaled)} "
            f"unquantized and copies the stored {first.dtype} values into its weights as "
            "they are, without scales; it loads without an error and drafts garbage "
            "(acceptance near zero)",
            state.tensor_location(first.weight),
            ("draft_quant_config_source", "quantized_weight_in_unquantized_layer"),
            fix=fix,
        )


def _names(names: tuple[str, ...]) -> str:
    """`` `weight_scale` `` or `` `weight_scale` and `weight_zero_point` ``."""
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _layers(items: list[MissingData], raw: Callable[[str], str]) -> str:
    """`9 quantized layers (first `midlayer.self_attn.q_proj`)` or `the quantized layer `fc``."""
    first = raw(items[0].weight).rsplit(".", 1)[0]
    if len(items) == 1:
        return f"the quantized layer `{first}`"
    return f"{len(items)} quantized layers (first `{first}`)"


def _them(items: list[MissingData]) -> str:
    return "it" if len(items) == 1 else "them"
