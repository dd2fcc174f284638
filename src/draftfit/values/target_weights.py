"""Find the target's embedding (and output head) among its weight files, locally or on the Hub.

A plain check reads only the target's `config.json`; value checks also need the rows of its
`embed_tokens` (and `lm_head`). Shard headers are read one at a time: the first shard first
(checkpoints are saved in module order, so the embedding is almost always there), then the
shard the index names. Only headers and the rows asked for cross the wire.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from draftfit.checkpoint.access import FileAccess, LocalAccess
from draftfit.checkpoint.model import TensorInfo
from draftfit.checkpoint.safetensors import read_header_via
from draftfit.target import Target

# Where multimodal and text-only checkpoints keep the token embedding, most common first.
EMBED_NAMES = (
    "model.embed_tokens.weight",
    "language_model.model.embed_tokens.weight",
    "model.language_model.embed_tokens.weight",
    "language_model.embed_tokens.weight",
    "embed_tokens.weight",
    "transformer.wte.weight",
)
HEAD_NAMES = (
    "lm_head.weight",
    "language_model.lm_head.weight",
    "model.language_model.lm_head.weight",
    "model.lm_head.weight",
)
INDEX = "model.safetensors.index.json"
# A larger index is not parsed: the search falls back to the first shard's header.
INDEX_LIMIT = 64 * 1024 * 1024


@dataclass
class TargetWeights:
    """The target's embedding and head tensors, and how to read their bytes."""

    access: FileAccess
    embedding: TensorInfo | None
    head: TensorInfo | None
    head_tied: bool
    remote: bool
    siblings: dict[str, TensorInfo]

    def quantized(self, info: TensorInfo) -> str | None:
        """The scale tensor stored next to `info` when it is block-quantized, else None."""
        base = info.name.removesuffix(".weight")
        for suffix in (".weight_scale_inv", ".weight_scale", ".scales"):
            if base + suffix in self.siblings:
                return base + suffix
        return None


class TargetWeightsMissing(Exception):
    """The target's weights cannot be found or read; the message says why, in one line."""


def open_target_weights(target: Target) -> TargetWeights:
    """Locate the target's embedding and head (raises TargetWeightsMissing)."""
    from draftfit.sources import is_hub_reference

    if is_hub_reference(target.source):
        access, files, remote = _hub_access(target.source), None, True
    else:
        root = Path(target.source)
        if root.is_file():
            root = root.parent
        access, remote = LocalAccess(root), False
        try:
            files = sorted(p.name for p in root.iterdir() if p.is_file())
        except OSError as exc:
            raise TargetWeightsMissing(f"cannot list {root}: {exc.strerror or exc}") from exc
    if files is None:
        files = sorted(getattr(access, "sizes", {}))
    shards = [f for f in files if f.endswith(".safetensors")]
    if not shards:
        raise TargetWeightsMissing(
            "the target holds no safetensors weights (only its config.json?)"
        )
    tied = _tied(target)
    found: dict[str, TensorInfo] = {}
    for shard in _search_order(access, files, shards):
        result = read_header_via(access, shard)
        if not result.tensors and result.damage:
            raise TargetWeightsMissing(f"{shard}: {result.damage[0].message}")
        found.update(result.tensors)
        embed = _first(found, EMBED_NAMES)
        head = _first(found, HEAD_NAMES)
        if embed is not None and (head is not None or tied):
            break
    embed = _first(found, EMBED_NAMES)
    head = _first(found, HEAD_NAMES)
    if embed is None:
        raise TargetWeightsMissing(
            "no embedding found among the target's tensors (looked for "
            + ", ".join(f"`{n}`" for n in EMBED_NAMES[:3])
            + ", ...)"
        )
    head_tied = head is None and tied
    return TargetWeights(access, embed, embed if head_tied else head, head_tied, remote, found)


def _search_order(access: FileAccess, files: list[str], shards: list[str]) -> list[str]:
    """The first shard, then the shards the index names for the embedding and head, then the
    rest (each at most once)."""
    order = [shards[0]]
    if INDEX in files:
        for shard in _index_shards(access):
            if shard in shards and shard not in order:
                order.append(shard)
    order += [s for s in shards if s not in order]
    return order


def _index_shards(access: FileAccess) -> list[str]:
    try:
        if access.size(INDEX) > INDEX_LIMIT:
            return []
        index = json.loads(access.read_all(INDEX))
    except (OSError, ValueError):
        return []
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        return []
    return [
        shard
        for name in (*EMBED_NAMES, *HEAD_NAMES)
        if isinstance(shard := weight_map.get(name), str)
    ]


def _first(tensors: dict[str, TensorInfo], names: tuple[str, ...]) -> TensorInfo | None:
    for name in names:
        if name in tensors:
            return tensors[name]
    return None


def _tied(target: Target) -> bool:
    for config in (target.text_config, target.config):
        value = config.get("tie_word_embeddings")
        if isinstance(value, bool):
            return value
    return False


def _hub_access(source: str) -> FileAccess:
    from draftfit.hub import RemoteAccess, _list_files, parse_hub_reference

    ref = parse_hub_reference(source)
    commit, sizes = _list_files(ref)
    return RemoteAccess(ref, commit, sizes)
