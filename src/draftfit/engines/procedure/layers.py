"""The decoder layers every engine builds alike: Llama-style layers, MLA layers and their
MLP, with their shape formulas in :mod:`draftfit.engines.shapes`."""

from __future__ import annotations

from draftfit import rule_ids
from draftfit.engines import shapes
from draftfit.engines.procedure.state import BuildState
from draftfit.engines.view import ONES, TRUNCATE_COLS, TRUNCATE_ROWS, UNINITIALISED, Dims
from draftfit.location import config_at

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.MISSING_CONFIG_FIELD,)
EMITS_STAGE = "engine procedure (every engine): MLA decoder layers"


def mla_layer(state: BuildState, k: int, H: int, nh: int, inter: int) -> bool:
    """Expectations for layer `k` of an MLA draft (Eagle3DeepseekV2ForCausalLM).

    Missing MLA dims take transformers' DeepseekV3Config defaults (fact
    `mla_config_defaults`); a null `q_lora_rank` cannot load, because the loader always
    maps `kv_a_proj_with_mqa` into a fused q-a/kv-a parameter that then does not exist.
    """
    defaults = state.value("mla_config_defaults") or {}
    pointer = state.draft.layer_config_pointer
    dims: dict[str, int] = {}
    for key, default in defaults.items():
        raw = state.visible.get(key, default)
        if raw is None:
            if key == "q_lora_rank":
                state.refuse(
                    rule_ids.MISSING_CONFIG_FIELD,
                    f"`q_lora_rank` is null: {state.profile.title}'s MLA draft loader maps "
                    "`kv_a_proj_with_mqa` into the fused q-a/kv-a parameter, which a draft "
                    "without a q LoRA does not have, and the load fails",
                    config_at(f"{pointer}/q_lora_rank"),
                    ("mla_config_defaults",),
                    fix="train the MLA draft with a q LoRA (q_lora_rank set)",
                )
            else:
                state.refuse(
                    rule_ids.MISSING_CONFIG_FIELD,
                    f"`{key}` is null: the DeepSeek-V3 config class refuses null integers",
                    config_at(f"{pointer}/{key}"),
                    ("mla_config_defaults",),
                    fix=f"write `{key}` (default {default}) or remove the key",
                )
            return False
        dims[key] = raw
    qr, kvr = dims["q_lora_rank"], dims["kv_lora_rank"]
    dn, dr, dv = dims["qk_nope_head_dim"], dims["qk_rope_head_dim"], dims["v_head_dim"]
    src = state.citations("mla_config_defaults", "eagle3_weight_mapping")
    pre = f"layers.{k}.self_attn."
    width = 2 * H if k == 0 else H
    expect = state.expect
    if f"{pre}fused_qkv_a_proj.weight" in state.draft.tensors:
        expect(
            pre + "fused_qkv_a_proj.weight",
            shapes.mla_fused_qkv_a(qr, kvr, dr, width, H),
            UNINITIALISED,
            src,
            oversize=TRUNCATE_ROWS,
        )
    else:
        q_a = shapes.mla_q_a(qr, width, H)
        expect(pre + "q_a_proj.weight", q_a, UNINITIALISED, src, TRUNCATE_ROWS)
        kv_a = shapes.mla_kv_a(kvr, dr, width, H)
        expect(pre + "kv_a_proj_with_mqa.weight", kv_a, UNINITIALISED, src, TRUNCATE_ROWS)
    expect(pre + "q_a_layernorm.weight", shapes.mla_q_a_norm(qr), ONES, src)
    q_b = shapes.mla_q_b(nh, dn, dr, qr)
    expect(pre + "q_b_proj.weight", q_b, UNINITIALISED, src, TRUNCATE_ROWS)
    expect(pre + "kv_a_layernorm.weight", shapes.mla_kv_a_norm(kvr), ONES, src)
    kv_b = shapes.mla_kv_b(nh, dn, dv, kvr)
    expect(pre + "kv_b_proj.weight", kv_b, UNINITIALISED, src, TRUNCATE_ROWS)
    o = shapes.mla_o(H, nh, dv)
    expect(pre + "o_proj.weight", o, UNINITIALISED, src, TRUNCATE_COLS)
    layer = f"layers.{k}."
    mlp(state, layer, H, inter, src, bias=False)
    for norm in ("input_layernorm", "post_attention_layernorm"):
        expect(layer + f"{norm}.weight", shapes.hidden_vector(H), ONES, src)
    hidden_norm = ONES if k == 0 else None
    expect(layer + "hidden_norm.weight", shapes.hidden_vector(H), hidden_norm, src)
    return True


def mlp(
    state: BuildState, pre: str, H: int, inter: int, citations: tuple[str, ...], bias: bool
) -> None:
    """gate/up/down projections; a stored pre-fused `gate_up_proj` loads as well."""
    expect = state.expect
    if f"{pre}mlp.gate_up_proj.weight" in state.draft.tensors:
        fused = shapes.gate_up_fused(inter, H)
        expect(pre + "mlp.gate_up_proj.weight", fused, UNINITIALISED, citations, TRUNCATE_ROWS)
    else:
        for proj in ("gate_proj", "up_proj"):
            gate_up = shapes.gate_or_up(inter, H)
            expect(pre + f"mlp.{proj}.weight", gate_up, UNINITIALISED, citations, TRUNCATE_ROWS)
    down = shapes.down(H, inter)
    expect(pre + "mlp.down_proj.weight", down, UNINITIALISED, citations, TRUNCATE_COLS)
    if bias:
        for proj, n in (("gate_proj", inter), ("up_proj", inter), ("down_proj", H)):
            expect(pre + f"mlp.{proj}.bias", shapes.out_bias(n), UNINITIALISED, citations)


def llama_layer(
    state: BuildState,
    k: int,
    d: Dims,
    *,
    first_width: int,
    citations: tuple[str, ...],
    attn_bias: bool,
    o_bias: bool,
    mlp_bias: bool,
    input_norm: bool,
    hidden_norm: bool,
    qk_norm: bool,
    later_width: int | None = None,
) -> None:
    """Expectations for decoder layer `k` of a Llama-style draft.

    Layer 0's attention reads `first_width` inputs (2H for EAGLE-3: embedding and fc
    output side by side); later layers read H. With one process (TP=1) vLLM's column-
    parallel loaders narrow oversized q/k/v/gate/up rows and its row-parallel loaders
    narrow oversized o/down columns without complaint, so those are "truncated".
    """
    H, nh, nkv, hd, inter = d.hidden, d.heads, d.kv_heads, d.head_dim, d.intermediate
    expect = state.expect
    pre = f"layers.{k}."
    attn = pre + "self_attn."
    width = first_width if k == 0 else (later_width or H)
    q = shapes.q_proj(nh, hd, width, H)
    expect(attn + "q_proj.weight", q, UNINITIALISED, citations, TRUNCATE_ROWS)
    for proj in ("k_proj", "v_proj"):
        kv = shapes.kv_proj(nkv, hd, width, H)
        expect(attn + f"{proj}.weight", kv, UNINITIALISED, citations, TRUNCATE_ROWS)
    o = shapes.o_proj(H, nh, hd)
    expect(attn + "o_proj.weight", o, UNINITIALISED, citations, TRUNCATE_COLS)
    if attn_bias:
        bias_src = state.citations("attention_bias_supported")
        expect(attn + "q_proj.bias", shapes.q_bias(nh, hd), UNINITIALISED, bias_src)
        for proj in ("k_proj", "v_proj"):
            kv_bias = shapes.kv_bias(nkv, hd)
            expect(attn + f"{proj}.bias", kv_bias, UNINITIALISED, bias_src)
    if o_bias:
        expect(attn + "o_proj.bias", shapes.hidden_vector(H), UNINITIALISED, citations)
    mlp(state, pre, H, inter, citations, bias=mlp_bias)
    norm = shapes.hidden_vector(H)
    if input_norm:
        expect(pre + "input_layernorm.weight", norm, ONES, citations)
    expect(pre + "post_attention_layernorm.weight", norm, ONES, citations)
    if hidden_norm:
        expect(pre + "hidden_norm.weight", norm, ONES, citations)
    elif first_width == 2 * H:
        # EAGLE-3 layers >= 1 still build a hidden_norm they never use.
        expect(pre + "hidden_norm.weight", norm, None, citations)
    if qk_norm:
        for name in ("q_norm", "k_norm"):
            expect(
                attn + f"{name}.weight",
                shapes.head_norm(hd),
                ONES,
                state.citations("eagle3_draft_architectures"),
            )
