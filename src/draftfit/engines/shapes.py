"""The shapes of the parameters an EAGLE draft class builds, as pure functions.

Every engine builds the same Llama-style (or MLA) decoder layer, `fc` over the aux states,
norms, embedding, head and vocabulary map; only which of them it builds, and what it does
when one is missing, differs. Each function here returns a :class:`Param`: the shape the
stored tensor must have and the same shape as a formula of config fields, which findings
quote. A dimension the config does not give stays None in the shape (it then matches no
stored tensor); the formula names it all the same.
"""

from __future__ import annotations

from draftfit.records import frozen

Shape = tuple[int | None, ...]


@frozen
class Param:
    """A parameter's expected stored shape (None: unknown) and its formula."""

    shape: Shape | None
    formula: str


def width_label(width: int, hidden: int) -> str:
    """`2H` for a layer reading embedding and hidden state side by side, else `H`."""
    return "2H" if width == 2 * hidden else "H"


# ---------------------------------------------------------------------- attention


def q_proj(heads: int, head_dim: int, width: int, hidden: int) -> Param:
    """`q_proj.weight` [num_attention_heads·head_dim, width]."""
    w = width_label(width, hidden)
    return Param(
        (heads * head_dim, width),
        f"[num_attention_heads·head_dim, {w}] = [{heads}·{head_dim}, {width}]",
    )


def kv_proj(kv_heads: int, head_dim: int, width: int, hidden: int) -> Param:
    """`k_proj.weight` / `v_proj.weight` [num_key_value_heads·head_dim, width]."""
    w = width_label(width, hidden)
    return Param(
        (kv_heads * head_dim, width),
        f"[num_key_value_heads·head_dim, {w}] = [{kv_heads}·{head_dim}, {width}]",
    )


def o_proj(hidden: int, heads: int, head_dim: int) -> Param:
    """`o_proj.weight` [hidden_size, num_attention_heads·head_dim]."""
    return Param(
        (hidden, heads * head_dim),
        f"[hidden_size, num_attention_heads·head_dim] = [{hidden}, {heads}·{head_dim}]",
    )


def q_bias(heads: int, head_dim: int) -> Param:
    """`q_proj.bias` [num_attention_heads·head_dim]."""
    return Param((heads * head_dim,), "[num_attention_heads·head_dim]")


def kv_bias(kv_heads: int, head_dim: int) -> Param:
    """`k_proj.bias` / `v_proj.bias` [num_key_value_heads·head_dim]."""
    return Param((kv_heads * head_dim,), "[num_key_value_heads·head_dim]")


def head_norm(head_dim: int) -> Param:
    """`q_norm.weight` / `k_norm.weight` [head_dim] (Qwen3-style drafts)."""
    return Param((head_dim,), "[head_dim]")


# ---------------------------------------------------------------------- MLP and norms


def gate_up_fused(intermediate: int, hidden: int) -> Param:
    """A stored pre-fused `gate_up_proj.weight` [2·intermediate_size, hidden_size]."""
    return Param(
        (2 * intermediate, hidden),
        f"[2·intermediate_size, hidden_size] = [{2 * intermediate}, {hidden}]",
    )


def gate_or_up(intermediate: int, hidden: int) -> Param:
    """`gate_proj.weight` / `up_proj.weight` [intermediate_size, hidden_size]."""
    return Param(
        (intermediate, hidden),
        f"[intermediate_size, hidden_size] = [{intermediate}, {hidden}]",
    )


def down(hidden: int, intermediate: int) -> Param:
    """`down_proj.weight` [hidden_size, intermediate_size]."""
    return Param(
        (hidden, intermediate),
        f"[hidden_size, intermediate_size] = [{hidden}, {intermediate}]",
    )


def out_bias(out_features: int) -> Param:
    """An MLP projection's bias [out features]."""
    return Param((out_features,), "[out features]")


def hidden_vector(hidden: int) -> Param:
    """A norm weight or bias over the hidden state: [hidden_size]."""
    return Param((hidden,), "[hidden_size]")


# ---------------------------------------------------------------------- MLA attention


def mla_q_a(q_lora_rank: int, width: int, hidden: int) -> Param:
    """`q_a_proj.weight` [q_lora_rank, width]."""
    w = width_label(width, hidden)
    return Param((q_lora_rank, width), f"[q_lora_rank, {w}] = [{q_lora_rank}, {width}]")


def mla_kv_a(kv_lora_rank: int, rope_dim: int, width: int, hidden: int) -> Param:
    """`kv_a_proj_with_mqa.weight` [kv_lora_rank + qk_rope_head_dim, width]."""
    w = width_label(width, hidden)
    rows = kv_lora_rank + rope_dim
    return Param((rows, width), f"[kv_lora_rank + qk_rope_head_dim, {w}] = [{rows}, {width}]")


def mla_fused_qkv_a(
    q_lora_rank: int, kv_lora_rank: int, rope_dim: int, width: int, hidden: int
) -> Param:
    """A stored pre-fused `fused_qkv_a_proj.weight`: q-a and kv-a stacked."""
    w = width_label(width, hidden)
    return Param(
        (q_lora_rank + kv_lora_rank + rope_dim, width),
        f"[q_lora_rank + kv_lora_rank + qk_rope_head_dim, {w}]",
    )


def mla_q_b(heads: int, nope_dim: int, rope_dim: int, q_lora_rank: int) -> Param:
    """`q_b_proj.weight` [num_attention_heads·(qk_nope + qk_rope), q_lora_rank]."""
    rows = heads * (nope_dim + rope_dim)
    return Param(
        (rows, q_lora_rank),
        f"[num_attention_heads·(qk_nope + qk_rope), q_lora_rank] = [{rows}, {q_lora_rank}]",
    )


def mla_kv_b(heads: int, nope_dim: int, v_dim: int, kv_lora_rank: int) -> Param:
    """`kv_b_proj.weight` [num_attention_heads·(qk_nope + v_head), kv_lora_rank]."""
    rows = heads * (nope_dim + v_dim)
    return Param(
        (rows, kv_lora_rank),
        f"[num_attention_heads·(qk_nope + v_head), kv_lora_rank] = [{rows}, {kv_lora_rank}]",
    )


def mla_o(hidden: int, heads: int, v_dim: int) -> Param:
    """`o_proj.weight` of an MLA layer [hidden_size, num_attention_heads·v_head_dim]."""
    cols = heads * v_dim
    return Param(
        (hidden, cols),
        f"[hidden_size, num_attention_heads·v_head_dim] = [{hidden}, {cols}]",
    )


def mla_q_a_norm(q_lora_rank: int) -> Param:
    """`q_a_layernorm.weight` [q_lora_rank]."""
    return Param((q_lora_rank,), "[q_lora_rank]")


def mla_kv_a_norm(kv_lora_rank: int) -> Param:
    """`kv_a_layernorm.weight` [kv_lora_rank]."""
    return Param((kv_lora_rank,), "[kv_lora_rank]")


# ---------------------------------------------------------------------- fc and aux norms


def fc(hidden: int, n_aux: int, target_hidden: int, count_from: str) -> Param:
    """EAGLE-3 `fc.weight` [hidden_size, N·target_hidden_size]; `count_from` says what
    decided N."""
    return Param(
        (hidden, n_aux * target_hidden),
        f"[hidden_size, N·target_hidden_size] = [{hidden}, {n_aux}·{target_hidden}] "
        f"(N = {n_aux} from {count_from})",
    )


def eagle1_fc(hidden: int) -> Param:
    """EAGLE-1 `fc.weight` [hidden_size, 2·hidden_size] (embedding and hidden state)."""
    return Param(
        (hidden, 2 * hidden),
        f"[hidden_size, 2·hidden_size] = [{hidden}, {2 * hidden}]",
    )


def eh_proj(hidden: int) -> Param:
    """`eh_proj.weight` [hidden_size, 2·hidden_size] (a projection before attention)."""
    return Param((hidden, 2 * hidden), "[hidden_size, 2·hidden_size]")


def aux_input_norm(n_aux: int, target_hidden: int) -> Param:
    """`input_norm.weight` over the concatenated aux states: [N·target_hidden_size]."""
    return Param((n_aux * target_hidden,), f"[N·target_hidden_size] = [{n_aux * target_hidden}]")


def aux_fc_norm(target_hidden: int) -> Param:
    """`fc_norm.k.weight` over one aux state: [target_hidden_size]."""
    return Param((target_hidden,), "[target_hidden_size]")


# ---------------------------------------------------------------------- vocabulary


def embedding(vocab: int | None, hidden: int, *, values: bool = True) -> Param:
    """`embed_tokens.weight` [vocab_size, hidden_size]; unknown without a vocab size.
    `values` adds the numbers to the formula."""
    formula = "[vocab_size, hidden_size]"
    if values:
        formula += f" = [{vocab}, {hidden}]"
    return Param((vocab, hidden) if vocab else None, formula)


def lm_head(draft_vocab: int | None, hidden: int) -> Param:
    """`lm_head.weight` [draft_vocab_size, hidden_size]."""
    return Param(
        (draft_vocab, hidden),
        f"[draft_vocab_size, hidden_size] = [{draft_vocab}, {hidden}]",
    )


def d2t(draft_vocab: int | None, *, unknown_mismatches: bool = False) -> Param:
    """`d2t` [draft_vocab_size]: the target id of each draft token. Without a known size
    the shape is unknown (None), or, with `unknown_mismatches`, a one-dimensional shape of
    unknown length that no stored tensor matches."""
    if draft_vocab is None and not unknown_mismatches:
        return Param(None, "[draft_vocab_size]")
    return Param((draft_vocab,), "[draft_vocab_size]")
