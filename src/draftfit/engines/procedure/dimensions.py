"""Dimensions and decoder layers: the config widths every draft layer needs, settled into
the view, and the loop over the layers a draft builds."""

from __future__ import annotations

from collections.abc import Callable

from draftfit import rule_ids
from draftfit.engines import shapes
from draftfit.engines.dimension_fit import fit_dimensions as find_dimension_fits
from draftfit.engines.procedure.layers import llama_layer, mla_layer
from draftfit.engines.procedure.state import BuildState, layer_indices
from draftfit.engines.view import ONES, UNINITIALISED, Dims
from draftfit.location import config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.MISSING_CONFIG_FIELD,)
EMITS_STAGE = "engine procedure (every engine): dimensions and decoder layers"

# The parameters of decoder layer k: (state, k, the widths, the source lines).
LayerBuilder = Callable[[BuildState, int, Dims, tuple[str, ...]], None]


def require_dims(state: BuildState, base: str, keys: tuple[str, ...]) -> bool:
    """Refuse (missing-config-field) when a dimension every draft layer needs is absent."""
    missing = [
        k
        for k in ("hidden_size", "num_attention_heads", "intermediate_size")
        if state.vint(k) is None
    ]
    if not missing:
        return True
    state.refuse(
        rule_ids.MISSING_CONFIG_FIELD,
        "the draft config has no usable "
        + ", ".join(f"`{k}`" for k in missing)
        + f", so {state.profile.title} cannot build the draft layer",
        config_at(f"{base}/{missing[0]}"),
        keys,
        fix="write "
        + ", ".join(f"`{k}`" for k in missing)
        + " as positive integers, with the values the draft was trained with",
    )
    return False


def layer_dims(state: BuildState) -> Dims:
    """The decoder dimensions, after :func:`require_dims` passed: `head_dim` is the
    declared one or hidden_size / num_attention_heads, KV heads default to the heads."""
    H = state.vint("hidden_size")
    nh = state.vint("num_attention_heads")
    inter = state.vint("intermediate_size")
    assert H is not None and nh is not None and inter is not None
    nkv = state.vint("num_key_value_heads") or nh
    return Dims(H, nh, nkv, state.vint("head_dim") or H // nh, inter)


def settled_layer(state: BuildState) -> Dims:
    """The widths :func:`settle_widths` recorded."""
    layer = state.view.dimensions.layer
    assert layer is not None, "the widths are settled before the layers are built"
    return layer


def settled_layers(state: BuildState) -> int:
    """The number of decoder layers the engine's layer-count step recorded."""
    n = state.view.dimensions.num_layers
    assert n is not None, "the layer count is settled before the layers are built"
    return n


def settle_widths(state: BuildState) -> None:
    """Step: record the decoder layer's widths (once `fc`'s input width is settled)."""
    state.view.dimensions.layer = layer_dims(state)


def decoder_layers(state: BuildState, citations: tuple[str, ...], layer: LayerBuilder) -> bool:
    """The parameters of each decoder layer built: MLA layers for the engine's MLA class
    families, else the engine's `layer`. False when an MLA layer cannot be built."""
    d = settled_layer(state)
    for k in layer_indices(settled_layers(state)):
        if state.family in state.traits.mla_families:
            if not mla_layer(state, k, d.hidden, d.heads, d.intermediate):
                return False
            continue
        layer(state, k, d, citations)
    return True


def final_norm(state: BuildState, citations: tuple[str, ...]) -> None:
    """The norm after the last decoder layer."""
    H = settled_layer(state).hidden
    state.expect("norm.weight", shapes.hidden_vector(H), ONES, citations)


def eagle1_layers(
    state: BuildState, citations: tuple[str, ...], attn_bias: bool = False
) -> tuple[int, int]:
    """EAGLE-1 decoder layers (layer 0 has no input norm) and `fc` [H, 2H]; returns
    (hidden_size, vocab_size)."""
    d = layer_dims(state)
    n_layers = state.vint("num_hidden_layers") or 1
    state.view.dimensions.layer = d
    state.view.dimensions.num_layers = n_layers
    for k in layer_indices(n_layers):
        llama_layer(
            state,
            k,
            d,
            first_width=d.hidden,
            citations=citations,
            attn_bias=attn_bias,
            o_bias=False,
            mlp_bias=False,
            input_norm=k > 0,
            hidden_norm=False,
            qk_norm=False,
        )
    state.expect("fc.weight", shapes.eagle1_fc(d.hidden), UNINITIALISED, citations)
    return d.hidden, state.vint("vocab_size") or 0


def fit_dimensions(state: BuildState) -> None:
    """Step: the config dimension that explains stored shapes this version does not build
    (:mod:`draftfit.engines.dimension_fit`), found by building the draft again with it."""
    if state.view.built and state.inputs.fit_dimensions:
        state.view.dimension_fits = find_dimension_fits(state.inputs, state.view, state.rebuild)
