"""The shapes of the parameters an EAGLE draft class builds, as pure functions.

Every engine builds the same Llama-style (or MLA) decoder layer, `fc` over the aux states,
norms, embedding, head and vocabulary map; only which of them it builds, and what it does
when one is missing, differs. Each function here returns a :class:`Param`: the shape the
stored tensor must have and the same shape as a formula of config fields, which findings
quote. A dimension the config does not give stays None in the shape (it then matches no
stored tensor); the formula names it all the same.

The decoder-layer shapes also carry each dimension as an :class:`Axis`: the config fields it
is computed from, with the values used. Solved for one field, an axis says which value of
that field gives a stored tensor's dimension (:mod:`.dimension_fit`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.records import field, frozen

if TYPE_CHECKING:
    from collections.abc import Callable

Shape = tuple[int | None, ...]
# One product of config fields: a coefficient and (config key, value used) factors.
Term = tuple[int, tuple[tuple[str, int], ...]]


@frozen
class Axis:
    """One dimension of a shape as a sum of products of config fields, e.g.
    `num_attention_heads·head_dim` or `kv_lora_rank + qk_rope_head_dim`."""

    terms: tuple[Term, ...]

    @property
    def value(self) -> int:
        return sum(_product(term) for term in self.terms)

    @property
    def fields(self) -> tuple[str, ...]:
        """The config keys the dimension depends on, in order of appearance."""
        seen: dict[str, None] = {}
        for _, factors in self.terms:
            for name, _ in factors:
                seen.setdefault(name)
        return tuple(seen)

    def solve(self, key: str, size: int) -> int | None:
        """The positive value of config field `key` that makes this dimension `size`, the
        other fields kept; None when no whole number does."""
        slope = rest = 0
        for coefficient, factors in self.terms:
            others = coefficient
            has_key = False
            for name, value in factors:
                if name == key and not has_key:
                    has_key = True
                else:
                    others *= value
            if has_key:
                slope += others
            else:
                rest += others
        if slope <= 0 or (size - rest) % slope:
            return None
        solved = (size - rest) // slope
        return solved if solved > 0 else None

    def names(self) -> str:
        """`num_attention_heads·head_dim`."""
        return " + ".join(_term_text(term, _name) for term in self.terms)

    def numbers(self, key: str | None = None, value: int | None = None) -> str:
        """`64·128`, with field `key` taken as `value` when given."""

        def shown(factor: tuple[str, int]) -> str:
            return str(value if factor[0] == key and value is not None else factor[1])

        return " + ".join(_term_text(term, shown) for term in self.terms)


def _name(factor: tuple[str, int]) -> str:
    return factor[0]


def _product(term: Term) -> int:
    result = term[0]
    for _, value in term[1]:
        result *= value
    return result


def _term_text(term: Term, show: Callable[[tuple[str, int]], str]) -> str:
    coefficient, factors = term
    parts = [str(show(factor)) for factor in factors]
    if coefficient != 1 or not parts:
        parts.insert(0, str(coefficient))
    return "·".join(parts)


def axis(*factors: tuple[str, int], coefficient: int = 1) -> Axis:
    """An axis that is one product of fields: `axis(("num_attention_heads", 64),
    ("head_dim", 128))`."""
    return Axis(((coefficient, factors),))


def axis_sum(*terms: tuple[tuple[str, int], ...]) -> Axis:
    """An axis that is a sum of products of fields."""
    return Axis(tuple((1, factors) for factors in terms))


@frozen
class Param:
    """A parameter's expected stored shape (None: unknown) and its formula; `axes`, where
    known, each dimension as config fields (None for a dimension that is not)."""

    shape: Shape | None
    formula: str
    axes: tuple[Axis | None, ...] = field(default=(), compare=False)


HIDDEN = "hidden_size"
HEADS = "num_attention_heads"
KV_HEADS = "num_key_value_heads"
HEAD_DIM = "head_dim"
INTERMEDIATE = "intermediate_size"
Q_LORA_RANK = "q_lora_rank"
KV_LORA_RANK = "kv_lora_rank"
QK_NOPE_HEAD_DIM = "qk_nope_head_dim"
QK_ROPE_HEAD_DIM = "qk_rope_head_dim"
V_HEAD_DIM = "v_head_dim"


def _width_axis(width: int, hidden: int) -> Axis | None:
    """A layer's input width as fields: 2·hidden_size or hidden_size."""
    if width == 2 * hidden:
        return axis((HIDDEN, hidden), coefficient=2)
    return axis((HIDDEN, hidden)) if width == hidden else None


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
        (axis((HEADS, heads), (HEAD_DIM, head_dim)), _width_axis(width, hidden)),
    )


def kv_proj(kv_heads: int, head_dim: int, width: int, hidden: int) -> Param:
    """`k_proj.weight` / `v_proj.weight` [num_key_value_heads·head_dim, width]."""
    w = width_label(width, hidden)
    return Param(
        (kv_heads * head_dim, width),
        f"[num_key_value_heads·head_dim, {w}] = [{kv_heads}·{head_dim}, {width}]",
        (axis((KV_HEADS, kv_heads), (HEAD_DIM, head_dim)), _width_axis(width, hidden)),
    )


def o_proj(hidden: int, heads: int, head_dim: int) -> Param:
    """`o_proj.weight` [hidden_size, num_attention_heads·head_dim]."""
    return Param(
        (hidden, heads * head_dim),
        f"[hidden_size, num_attention_heads·head_dim] = [{hidden}, {heads}·{head_dim}]",
        (axis((HIDDEN, hidden)), axis((HEADS, heads), (HEAD_DIM, head_dim))),
    )


def q_bias(heads: int, head_dim: int) -> Param:
    """`q_proj.bias` [num_attention_heads·head_dim]."""
    return Param(
        (heads * head_dim,),
        "[num_attention_heads·head_dim]",
        (axis((HEADS, heads), (HEAD_DIM, head_dim)),),
    )


def kv_bias(kv_heads: int, head_dim: int) -> Param:
    """`k_proj.bias` / `v_proj.bias` [num_key_value_heads·head_dim]."""
    return Param(
        (kv_heads * head_dim,),
        "[num_key_value_heads·head_dim]",
        (axis((KV_HEADS, kv_heads), (HEAD_DIM, head_dim)),),
    )


def head_norm(head_dim: int) -> Param:
    """`q_norm.weight` / `k_norm.weight` [head_dim] (Qwen3-style drafts)."""
    return Param((head_dim,), "[head_dim]", (axis((HEAD_DIM, head_dim)),))


# ---------------------------------------------------------------------- MLP and norms


def gate_up_fused(intermediate: int, hidden: int) -> Param:
    """A stored pre-fused `gate_up_proj.weight` [2·intermediate_size, hidden_size]."""
    return Param(
        (2 * intermediate, hidden),
        f"[2·intermediate_size, hidden_size] = [{2 * intermediate}, {hidden}]",
        (axis((INTERMEDIATE, intermediate), coefficient=2), axis((HIDDEN, hidden))),
    )


def gate_or_up(intermediate: int, hidden: int) -> Param:
    """`gate_proj.weight` / `up_proj.weight` [intermediate_size, hidden_size]."""
    return Param(
        (intermediate, hidden),
        f"[intermediate_size, hidden_size] = [{intermediate}, {hidden}]",
        (axis((INTERMEDIATE, intermediate)), axis((HIDDEN, hidden))),
    )


def down(hidden: int, intermediate: int) -> Param:
    """`down_proj.weight` [hidden_size, intermediate_size]."""
    return Param(
        (hidden, intermediate),
        f"[hidden_size, intermediate_size] = [{hidden}, {intermediate}]",
        (axis((HIDDEN, hidden)), axis((INTERMEDIATE, intermediate))),
    )


def out_bias(out_features: int) -> Param:
    """An MLP projection's bias [out features]."""
    return Param((out_features,), "[out features]")


def hidden_vector(hidden: int) -> Param:
    """A norm weight or bias over the hidden state: [hidden_size]."""
    return Param((hidden,), "[hidden_size]", (axis((HIDDEN, hidden)),))


# ---------------------------------------------------------------------- MLA attention


def mla_q_a(q_lora_rank: int, width: int, hidden: int) -> Param:
    """`q_a_proj.weight` [q_lora_rank, width]."""
    w = width_label(width, hidden)
    return Param(
        (q_lora_rank, width),
        f"[q_lora_rank, {w}] = [{q_lora_rank}, {width}]",
        (axis((Q_LORA_RANK, q_lora_rank)), _width_axis(width, hidden)),
    )


def mla_kv_a(kv_lora_rank: int, rope_dim: int, width: int, hidden: int) -> Param:
    """`kv_a_proj_with_mqa.weight` [kv_lora_rank + qk_rope_head_dim, width]."""
    w = width_label(width, hidden)
    rows = kv_lora_rank + rope_dim
    return Param(
        (rows, width),
        f"[kv_lora_rank + qk_rope_head_dim, {w}] = [{rows}, {width}]",
        (
            axis_sum(((KV_LORA_RANK, kv_lora_rank),), ((QK_ROPE_HEAD_DIM, rope_dim),)),
            _width_axis(width, hidden),
        ),
    )


def mla_fused_qkv_a(
    q_lora_rank: int, kv_lora_rank: int, rope_dim: int, width: int, hidden: int
) -> Param:
    """A stored pre-fused `fused_qkv_a_proj.weight`: q-a and kv-a stacked."""
    w = width_label(width, hidden)
    return Param(
        (q_lora_rank + kv_lora_rank + rope_dim, width),
        f"[q_lora_rank + kv_lora_rank + qk_rope_head_dim, {w}]",
        (
            axis_sum(
                ((Q_LORA_RANK, q_lora_rank),),
                ((KV_LORA_RANK, kv_lora_rank),),
                ((QK_ROPE_HEAD_DIM, rope_dim),),
            ),
            _width_axis(width, hidden),
        ),
    )


def mla_q_b(heads: int, nope_dim: int, rope_dim: int, q_lora_rank: int) -> Param:
    """`q_b_proj.weight` [num_attention_heads·(qk_nope + qk_rope), q_lora_rank]."""
    rows = heads * (nope_dim + rope_dim)
    return Param(
        (rows, q_lora_rank),
        f"[num_attention_heads·(qk_nope + qk_rope), q_lora_rank] = [{rows}, {q_lora_rank}]",
        (
            axis_sum(
                ((HEADS, heads), (QK_NOPE_HEAD_DIM, nope_dim)),
                ((HEADS, heads), (QK_ROPE_HEAD_DIM, rope_dim)),
            ),
            axis((Q_LORA_RANK, q_lora_rank)),
        ),
    )


def mla_kv_b(heads: int, nope_dim: int, v_dim: int, kv_lora_rank: int) -> Param:
    """`kv_b_proj.weight` [num_attention_heads·(qk_nope + v_head), kv_lora_rank]."""
    rows = heads * (nope_dim + v_dim)
    return Param(
        (rows, kv_lora_rank),
        f"[num_attention_heads·(qk_nope + v_head), kv_lora_rank] = [{rows}, {kv_lora_rank}]",
        (
            axis_sum(
                ((HEADS, heads), (QK_NOPE_HEAD_DIM, nope_dim)),
                ((HEADS, heads), (V_HEAD_DIM, v_dim)),
            ),
            axis((KV_LORA_RANK, kv_lora_rank)),
        ),
    )


def mla_o(hidden: int, heads: int, v_dim: int) -> Param:
    """`o_proj.weight` of an MLA layer [hidden_size, num_attention_heads·v_head_dim]."""
    cols = heads * v_dim
    return Param(
        (hidden, cols),
        f"[hidden_size, num_attention_heads·v_head_dim] = [{hidden}, {cols}]",
        (axis((HIDDEN, hidden)), axis((HEADS, heads), (V_HEAD_DIM, v_dim))),
    )


def mla_q_a_norm(q_lora_rank: int) -> Param:
    """`q_a_layernorm.weight` [q_lora_rank]."""
    return Param((q_lora_rank,), "[q_lora_rank]", (axis((Q_LORA_RANK, q_lora_rank)),))


def mla_kv_a_norm(kv_lora_rank: int) -> Param:
    """`kv_a_layernorm.weight` [kv_lora_rank]."""
    return Param((kv_lora_rank,), "[kv_lora_rank]", (axis((KV_LORA_RANK, kv_lora_rank)),))


# ---------------------------------------------------------------------- fc and aux norms


def fc(hidden: int, n_aux: int, target_hidden: int, count_from: str) -> Param:
    """EAGLE-3 `fc.weight` [hidden_size, N·target_hidden_size]; `count_from` says what
    decided N."""
    return Param(
        (hidden, n_aux * target_hidden),
        f"[hidden_size, N·target_hidden_size] = [{hidden}, {n_aux}·{target_hidden}] "
        f"(N = {n_aux} from {count_from})",
        (axis((HIDDEN, hidden)), None),
    )


def eagle1_fc(hidden: int) -> Param:
    """EAGLE-1 `fc.weight` [hidden_size, 2·hidden_size] (embedding and hidden state)."""
    return Param(
        (hidden, 2 * hidden),
        f"[hidden_size, 2·hidden_size] = [{hidden}, {2 * hidden}]",
        (axis((HIDDEN, hidden)), axis((HIDDEN, hidden), coefficient=2)),
    )


def eh_proj(hidden: int) -> Param:
    """`eh_proj.weight` [hidden_size, 2·hidden_size] (a projection before attention)."""
    return Param(
        (hidden, 2 * hidden),
        "[hidden_size, 2·hidden_size]",
        (axis((HIDDEN, hidden)), axis((HIDDEN, hidden), coefficient=2)),
    )


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
    return Param((vocab, hidden) if vocab else None, formula, (None, axis((HIDDEN, hidden))))


def lm_head(draft_vocab: int | None, hidden: int) -> Param:
    """`lm_head.weight` [draft_vocab_size, hidden_size]."""
    return Param(
        (draft_vocab, hidden),
        f"[draft_vocab_size, hidden_size] = [{draft_vocab}, {hidden}]",
        (None, axis((HIDDEN, hidden))),
    )


def d2t(draft_vocab: int | None, *, unknown_mismatches: bool = False) -> Param:
    """`d2t` [draft_vocab_size]: the target id of each draft token. Without a known size
    the shape is unknown (None), or, with `unknown_mismatches`, a one-dimensional shape of
    unknown length that no stored tensor matches."""
    if draft_vocab is None and not unknown_mismatches:
        return Param(None, "[draft_vocab_size]")
    return Param((draft_vocab,), "[draft_vocab_size]")
