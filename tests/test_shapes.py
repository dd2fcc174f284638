"""The parameter shape formulas every engine builder shares (draftfit.engines.shapes).

A tiny Llama-style draft: hidden 64, 4 heads of 16, 2 KV heads, MLP 128, target width 96,
vocabulary 1000 with a draft vocabulary of 500; and a tiny MLA layer (q LoRA 32, KV LoRA 16,
nope 8, rope 4, v 8).
"""

from __future__ import annotations

from draftfit.engines import shapes

H, HEADS, KV_HEADS, HEAD_DIM, INTER, T = 64, 4, 2, 16, 128, 96


def test_attention_projections_layer_zero_reads_two_widths() -> None:
    q = shapes.q_proj(HEADS, HEAD_DIM, 2 * H, H)
    assert q.shape == (64, 128)
    assert q.formula == "[num_attention_heads·head_dim, 2H] = [4·16, 128]"
    k = shapes.kv_proj(KV_HEADS, HEAD_DIM, 2 * H, H)
    assert k.shape == (32, 128)
    assert k.formula == "[num_key_value_heads·head_dim, 2H] = [2·16, 128]"


def test_attention_projections_later_layer_reads_hidden() -> None:
    assert shapes.q_proj(HEADS, HEAD_DIM, H, H).formula.endswith("H] = [4·16, 64]")
    assert shapes.kv_proj(KV_HEADS, HEAD_DIM, H, H).shape == (32, 64)


def test_o_proj_follows_declared_head_dim() -> None:
    assert shapes.o_proj(H, HEADS, HEAD_DIM).shape == (64, 64)
    # head_dim 24 declared although 64 / 4 = 16: o_proj reads 4·24 = 96 columns.
    wide = shapes.o_proj(H, HEADS, 24)
    assert wide.shape == (64, 96)
    assert wide.formula == "[hidden_size, num_attention_heads·head_dim] = [64, 4·24]"


def test_biases_and_head_norms() -> None:
    assert shapes.q_bias(HEADS, HEAD_DIM).shape == (64,)
    assert shapes.kv_bias(KV_HEADS, HEAD_DIM).shape == (32,)
    assert shapes.head_norm(HEAD_DIM) == shapes.Param((16,), "[head_dim]")
    assert shapes.hidden_vector(H) == shapes.Param((64,), "[hidden_size]")
    assert shapes.out_bias(INTER) == shapes.Param((128,), "[out features]")


def test_mlp() -> None:
    assert shapes.gate_or_up(INTER, H).shape == (128, 64)
    fused = shapes.gate_up_fused(INTER, H)
    assert fused.shape == (256, 64)
    assert fused.formula == "[2·intermediate_size, hidden_size] = [256, 64]"
    assert shapes.down(H, INTER) == shapes.Param(
        (64, 128), "[hidden_size, intermediate_size] = [64, 128]"
    )


def test_fc_over_three_aux_states_of_a_wider_target() -> None:
    fc = shapes.fc(H, 3, T, "`eagle_aux_hidden_state_layer_ids`")
    assert fc.shape == (64, 288)
    assert fc.formula == (
        "[hidden_size, N·target_hidden_size] = [64, 3·96] "
        "(N = 3 from `eagle_aux_hidden_state_layer_ids`)"
    )
    assert shapes.aux_input_norm(3, T) == shapes.Param((288,), "[N·target_hidden_size] = [288]")
    assert shapes.aux_fc_norm(T).shape == (96,)


def test_eagle1_fc_and_eh_proj_read_embedding_and_hidden() -> None:
    assert shapes.eagle1_fc(H) == shapes.Param(
        (64, 128), "[hidden_size, 2·hidden_size] = [64, 128]"
    )
    assert shapes.eh_proj(H).shape == (64, 128)


def test_mla_projections() -> None:
    qr, kvr, nope, rope, v = 32, 16, 8, 4, 8
    assert shapes.mla_q_a(qr, 2 * H, H) == shapes.Param((32, 128), "[q_lora_rank, 2H] = [32, 128]")
    kv_a = shapes.mla_kv_a(kvr, rope, H, H)
    assert kv_a.shape == (20, 64)
    assert kv_a.formula == "[kv_lora_rank + qk_rope_head_dim, H] = [20, 64]"
    assert shapes.mla_fused_qkv_a(qr, kvr, rope, 2 * H, H).shape == (52, 128)
    q_b = shapes.mla_q_b(HEADS, nope, rope, qr)
    assert q_b.shape == (48, 32)
    assert q_b.formula.endswith("= [48, 32]")
    assert shapes.mla_kv_b(HEADS, nope, v, kvr).shape == (64, 16)
    assert shapes.mla_o(H, HEADS, v).shape == (64, 32)
    assert shapes.mla_q_a_norm(qr).shape == (32,)
    assert shapes.mla_kv_a_norm(kvr).shape == (16,)


def test_vocabulary() -> None:
    emb = shapes.embedding(1000, H)
    assert emb == shapes.Param((1000, 64), "[vocab_size, hidden_size] = [1000, 64]")
    assert shapes.embedding(1000, H, values=False).formula == "[vocab_size, hidden_size]"
    assert shapes.embedding(None, H).shape is None
    assert shapes.lm_head(500, H) == shapes.Param(
        (500, 64), "[draft_vocab_size, hidden_size] = [500, 64]"
    )
    assert shapes.d2t(500) == shapes.Param((500,), "[draft_vocab_size]")


def test_unknown_sizes() -> None:
    # Without a vocabulary size the head's rows are unknown and match no stored tensor.
    assert shapes.lm_head(None, H).shape == (None, 64)
    assert shapes.d2t(None).shape is None
    assert shapes.d2t(None, unknown_mismatches=True).shape == (None,)
