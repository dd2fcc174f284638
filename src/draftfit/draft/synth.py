"""Synthetic checkpoints: full-size *sparse* replicas for the demo and benchmarks.

A replica has real safetensors headers (every name, dtype and shape of the real model) and
holes instead of weight bytes, so a 5 GB draft costs a few hundred KB of disk. Small tensors
that decide silent failures (`d2t`, `t2d`) get real, consistent values.
"""

from __future__ import annotations

import json
import random
import sys
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint.dtypes import byte_size
from draftfit.checkpoint.safetensors import TensorToWrite, write_safetensors

if TYPE_CHECKING:
    from typing import Any

    # (name, safetensors dtype, shape) of one tensor.
    TableEntry = tuple[str, str, tuple[int, ...]]


def vocab_maps(vocab: int, draft_vocab: int, seed: int = 0) -> tuple[bytes, bytes]:
    """A sorted random draft vocabulary as (`d2t` int64 offsets, `t2d` bool mask) bytes."""
    chosen = sorted(random.Random(seed).sample(range(vocab), draft_vocab))
    d2t = array("q", (target - i for i, target in enumerate(chosen)))
    if sys.byteorder == "big":  # pragma: no cover - safetensors is little-endian
        d2t.byteswap()
    t2d = bytearray(vocab)
    for target in chosen:
        t2d[target] = 1
    return d2t.tobytes(), bytes(t2d)


def eagle3_tensor_table(
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    intermediate: int,
    vocab: int,
    draft_vocab: int,
    *,
    prefix: str = "layers.0.",
    n_aux: int = 3,
    target_hidden: int | None = None,
    embed: bool = True,
) -> list[tuple[str, str, tuple[int, ...]]]:
    """(name, dtype, shape) of a single-layer EAGLE-3 draft, speculators-training layout."""
    t_hidden = target_hidden or hidden
    table: list[tuple[str, str, tuple[int, ...]]] = []
    if embed:
        table.append(("embed_tokens.weight", "BF16", (vocab, hidden)))
    table += [
        ("fc.weight", "BF16", (hidden, n_aux * t_hidden)),
        (f"{prefix}input_layernorm.weight", "BF16", (hidden,)),
        (f"{prefix}hidden_norm.weight", "BF16", (hidden,)),
        (f"{prefix}self_attn.q_proj.weight", "BF16", (heads * head_dim, 2 * hidden)),
        (f"{prefix}self_attn.k_proj.weight", "BF16", (kv_heads * head_dim, 2 * hidden)),
        (f"{prefix}self_attn.v_proj.weight", "BF16", (kv_heads * head_dim, 2 * hidden)),
        (f"{prefix}self_attn.o_proj.weight", "BF16", (hidden, heads * head_dim)),
        (f"{prefix}post_attention_layernorm.weight", "BF16", (hidden,)),
        (f"{prefix}mlp.gate_proj.weight", "BF16", (intermediate, hidden)),
        (f"{prefix}mlp.up_proj.weight", "BF16", (intermediate, hidden)),
        (f"{prefix}mlp.down_proj.weight", "BF16", (hidden, intermediate)),
        ("norm.weight", "BF16", (hidden,)),
        ("lm_head.weight", "BF16", (draft_vocab, hidden)),
    ]
    if draft_vocab != vocab:
        table += [("d2t", "I64", (draft_vocab,)), ("t2d", "BOOL", (vocab,))]
    return table


def speculators_table(config: dict[str, Any]) -> list[tuple[str, str, tuple[int, ...]]]:
    """The tensor table a speculators-format EAGLE-3 `config` describes (training layout)."""
    layer = config["transformer_layer_config"]
    return eagle3_tensor_table(
        layer["hidden_size"],
        layer["num_attention_heads"],
        layer["num_key_value_heads"],
        layer["head_dim"],
        layer["intermediate_size"],
        layer["vocab_size"],
        config["draft_vocab_size"],
    )


def write_sparse_checkpoint(
    root: Path,
    config: dict[str, Any] | None,
    table: Iterable[tuple[str, str, tuple[int, ...]]],
    *,
    vocab: int | None = None,
    draft_vocab: int | None = None,
    shards: int = 1,
) -> Path:
    """Write config.json and sparse safetensors (sharded with an index when `shards` > 1)."""
    root.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (root / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    data: dict[str, bytes] = {}
    if vocab and draft_vocab and draft_vocab != vocab:
        data["d2t"], data["t2d"] = vocab_maps(vocab, draft_vocab)
    items = [TensorToWrite(n, d, tuple(s), data.get(n)) for n, d, s in table]
    if shards <= 1:
        write_safetensors(root / "model.safetensors", items)
        return root
    per = -(-len(items) // shards)
    named = [
        (shard_name(index, shards), items[index * per : (index + 1) * per])
        for index in range(shards)
    ]
    write_shards(root, named)
    return root


def shard_name(index: int, count: int, digits: int = 5) -> str:
    """The Hugging Face name of shard `index` (0-based) of `count`: `model-00001-of-00004`;
    `digits` is the width of the count (DeepSeek-V3 writes `model-00001-of-000163`)."""
    return f"model-{index + 1:05d}-of-{count:0{digits}d}.safetensors"


def split_by_bytes(table: Sequence[TableEntry], count: int) -> list[list[TableEntry]]:
    """`table`, in order, cut into `count` shards of about equal bytes (the way
    `save_pretrained` fills shards up to a size): the last tensors land in the last shards.
    Raises ValueError when a shard would be empty (a tensor larger than a shard's share)."""
    sizes = [byte_size(d, tuple(s)) or 0 for _, d, s in table]
    total = sum(sizes)
    out: list[list[TableEntry]] = [[] for _ in range(count)]
    before = 0
    for entry, size in zip(table, sizes, strict=True):
        out[min(count - 1, before * count // max(total, 1))].append(entry)
        before += size
    if any(not shard for shard in out):
        raise ValueError(f"{len(table)} tensors do not fill {count} shards")
    return out


def write_shards(root: Path, shards: Sequence[tuple[str, Sequence[TensorToWrite]]]) -> None:
    """Write each (file name, tensors) shard and `model.safetensors.index.json`, which lists
    every tensor with its shard and the total size, as `save_pretrained` writes it."""
    weight_map: dict[str, str] = {}
    total = 0
    for name, chunk in shards:
        write_safetensors(root / name, chunk)
        weight_map.update({t.name: name for t in chunk})
        total += sum(byte_size(t.dtype, t.shape) or 0 for t in chunk)
    (root / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2) + "\n"
    )
