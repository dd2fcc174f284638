"""Find the target's embedding (and output head) among its weight files, locally or on the Hub.

A plain check reads only the target's `config.json`; value checks also need the rows of its
`embed_tokens` (and `lm_head`), read through the access the target was read through
(:attr:`~draftfit.draft.target.Target.access`). Shard headers are read one at a time: the
first shard first (checkpoints are saved in module order, so the embedding is almost always
there), then the shard the index names. Only headers and the rows asked for cross the wire.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

from draftfit.checkpoint.jsonread import parse_json
from draftfit.checkpoint.model import Damage, TensorInfo
from draftfit.checkpoint.safetensors import HEADER_LIMITS, parse_entry
from draftfit.draft.target import Target
from draftfit.records import record

if TYPE_CHECKING:
    from draftfit.checkpoint.access import FileAccess

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


@record
class TargetWeights:
    """The target's embedding and head tensors, and how to read their bytes."""

    access: FileAccess
    embedding: TensorInfo | None
    head: TensorInfo | None
    head_tied: bool
    remote: bool
    siblings: set[str]

    def quantized(self, info: TensorInfo) -> str | None:
        """The scale tensor stored next to `info` when it is block-quantized, else None."""
        base = info.name.removesuffix(".weight")
        for suffix in (".weight_scale_inv", ".weight_scale", ".scales"):
            if base + suffix in self.siblings:
                return base + suffix
        return None


class TargetWeightsMissing(Exception):
    """The target's weights cannot be found or read; the message says why, in one line."""


def open_target_weights(target: Target, need_head: bool = True) -> TargetWeights:
    """Locate the target's embedding (and, with `need_head`, its head); raises
    TargetWeightsMissing. Only the entries needed are taken from each shard header."""
    access = target.access
    if access is None:
        raise TargetWeightsMissing("the target was given as a config alone, without its files")
    try:
        files = access.names()
    except OSError as exc:
        where = exc.filename if exc.filename is not None else "the target's folder"
        raise TargetWeightsMissing(f"cannot list {where}: {exc.strerror or exc}") from exc
    shards = [f for f in files if f.endswith(".safetensors")]
    if not shards:
        raise TargetWeightsMissing(
            "the target holds no safetensors weights (only its config.json?)"
        )
    tied = _tied(target)
    found: dict[str, TensorInfo] = {}
    names: set[str] = set()
    for shard in _search_order(access, files, shards):
        found.update(_read_entries(access, shard, names))
        embed = _first(found, EMBED_NAMES)
        head = _first(found, HEAD_NAMES)
        if embed is not None and (head is not None or tied or not need_head):
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
    remote = _is_remote(access, shards[0])
    return TargetWeights(access, embed, embed if head_tied else head, head_tied, remote, names)


def _read_entries(access: FileAccess, shard: str, names: set[str]) -> dict[str, TensorInfo]:
    """The embedding and head entries of one shard's header (every name goes to `names`)."""
    try:
        size = access.size(shard)
        first = access.read_range(shard, 0, max(8, min(size, access.prefetch)))
        (length,) = struct.unpack("<Q", first[:8]) if len(first) >= 8 else (size,)
        if length > HEADER_LIMITS.max_bytes or 8 + length > size:
            raise TargetWeightsMissing(f"{shard}: not a readable safetensors file")
        header = first[8 : 8 + length] if 8 + length <= len(first) else b""
        if not header:
            header = access.read_range(shard, 8, 8 + length)
        parsed = parse_json(header, HEADER_LIMITS).value  # bounded: a hostile header
    except (OSError, ValueError) as exc:
        raise TargetWeightsMissing(f"{shard}: cannot read its header ({exc})") from exc
    if not isinstance(parsed, dict):
        raise TargetWeightsMissing(f"{shard}: its header is not a JSON object")
    names.update(parsed)
    found: dict[str, TensorInfo] = {}
    damage: list[Damage] = []
    data_size = size - 8 - length
    for name in (*EMBED_NAMES, *HEAD_NAMES):
        if name in parsed:
            info = parse_entry(name, parsed[name], shard, 8 + length, data_size, damage)
            if info is not None and not damage and (info.byte_range or (0, size + 1))[1] <= size:
                found[name] = info
    return found


def _search_order(access: FileAccess, files: list[str], shards: list[str]) -> Iterator[str]:
    """The first shard, then (reading the index only now) the shards it names for the
    embedding and head, then the rest; each at most once."""
    yield shards[0]
    done = {shards[0]}
    named = _index_shards(access) if INDEX in files else []
    for shard in [*named, *shards]:
        if shard in shards and shard not in done:
            done.add(shard)
            yield shard


def _index_shards(access: FileAccess) -> list[str]:
    """The shards the index names for the embedding and the head, as a hint of where to
    look first (every shard is searched anyway). A 1 TB target's index maps a hundred
    thousand tensors and may be hostile, so it is not parsed: its bytes (at most
    INDEX_LIMIT) are searched for those few names' entries, the last one written winning as
    in JSON. Names it gives are only taken when they are shards of the folder."""
    try:
        if access.size(INDEX) > INDEX_LIMIT:
            return []
        data = access.read_all(INDEX)
    except (OSError, ValueError):
        return []
    found = []
    for name in (*EMBED_NAMES, *HEAD_NAMES):
        entry = re.compile(rb'"' + re.escape(name.encode()) + rb'"\s*:\s*"([^"\\]{1,4096})"')
        matches = entry.findall(data)
        if matches:
            found.append(matches[-1].decode("utf-8", "replace"))
    return found


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


def _is_remote(access: FileAccess, shard: str) -> bool:
    """Whether the target's weights are read over the network (no local path for them)."""
    try:
        return access.local_path(shard) is None
    except OSError:  # a refused name: the search above has already read from it
        return False
