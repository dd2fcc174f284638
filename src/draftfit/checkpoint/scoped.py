"""Read a sharded checkpoint's config, its index and only the shards that hold wanted tensors.

A target that carries its own MTP layers is judged from a few tensors of a checkpoint that
may hold a thousand gigabytes in 163 shards: the index names every tensor and the shard it is
in, so only the headers of the shards that hold a wanted tensor (the MTP layers) are read.
Every other tensor is known by its name alone (:attr:`ScopedCheckpoint.index`). Without an
index every safetensors file is read, as :func:`~draftfit.checkpoint.local.load_checkpoint`
reads it; PyTorch `.bin` checkpoints are read whole by that function.

The same caps bound every read (the index and the config through the bounded JSON reader,
each header through the safetensors header reader, the number of shards).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint.access import LocalAccess, escapes_folder
from draftfit.checkpoint.hub_cache import find_origin, repository_folder
from draftfit.checkpoint.limits import MAX_WEIGHT_FILES
from draftfit.checkpoint.local import (
    CONFIG_NAME,
    SAFETENSORS_INDEX,
    load_checkpoint,
    read_json_object,
)
from draftfit.checkpoint.model import Checkpoint, Damage
from draftfit.checkpoint.safetensors import read_header_via
from draftfit.errors import CheckpointNotFoundError
from draftfit.records import field, frozen

EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.INDEX_MISSING_SHARD,
    rule_ids.INVALID_CONFIG,
    rule_ids.INVALID_INDEX,
    rule_ids.MISSING_CONFIG,
)
EMITS_STAGE = "checkpoint reader: the MTP shards of a target (config, index, those headers)"

if TYPE_CHECKING:
    from typing import Any

    # Decides from the config and a tensor name whether the tensor's shard is read.
    Wanted = Callable[[Mapping[str, Any] | None, str], bool]


@frozen
class ScopedCheckpoint:
    """A checkpoint read in part.

    Attributes:
        checkpoint: the config and the tensors of the shards read (with their damage).
        index: every tensor name the index lists, with its shard; None without an index
            (then every weight file was read and `checkpoint.tensors` is complete).
        shards_read: the shards whose headers were read, in order.
    """

    checkpoint: Checkpoint
    index: dict[str, str] | None = None
    shards_read: tuple[str, ...] = field(default=())

    def names(self) -> list[str]:
        """Every tensor name known: the index's, else those read."""
        if self.index is not None:
            return list(self.index)
        return list(self.checkpoint.tensors)


def load_scoped(path: str | Path, wanted: Wanted, origin: str | None = None) -> ScopedCheckpoint:
    """Read `path`'s config and index, and the headers of the shards holding a tensor that
    `wanted` selects (every safetensors file when there is no index). Raises
    :class:`CheckpointNotFoundError` when `path` is not a directory."""
    root = Path(path)
    if root.is_file() and root.name == CONFIG_NAME:
        root = root.parent
    if not root.is_dir():
        raise CheckpointNotFoundError(f"no such directory: {path}")
    files = sorted(p.name for p in root.iterdir() if p.is_file())
    if SAFETENSORS_INDEX not in files:
        return ScopedCheckpoint(load_checkpoint(root, origin or str(path)))
    access = LocalAccess(root, repository_folder(root))
    checkpoint = Checkpoint(root=root, origin=origin or str(path), files=files, access=access)
    checkpoint.hub_origin = find_origin(root)
    damage = checkpoint.damage
    if CONFIG_NAME in files:
        checkpoint.config = read_json_object(access, CONFIG_NAME, damage, rule_ids.INVALID_CONFIG)
    else:
        damage.append(
            Damage(rule_ids.MISSING_CONFIG, CONFIG_NAME, "the directory has no config.json")
        )
    document = read_json_object(access, SAFETENSORS_INDEX, damage, rule_ids.INVALID_INDEX)
    weight_map = document.get("weight_map") if document is not None else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        if document is not None:
            damage.append(
                Damage(rule_ids.INVALID_INDEX, SAFETENSORS_INDEX, "`weight_map` is not a map")
            )
        return ScopedCheckpoint(load_checkpoint(root, origin or str(path)))
    index: dict[str, str] = dict(weight_map)
    shards = sorted({index[name] for name in index if wanted(checkpoint.config, name)})
    checkpoint.weight_format = "safetensors"
    read: list[str] = []
    for shard in shards[:MAX_WEIGHT_FILES]:
        if escapes_folder(shard):
            damage.append(
                Damage(
                    rule_ids.INVALID_INDEX,
                    SAFETENSORS_INDEX,
                    f"the index maps tensors to `{shard}`, outside the checkpoint folder; "
                    "it is not read",
                )
            )
            continue
        if shard not in files:
            damage.append(
                Damage(
                    rule_ids.INDEX_MISSING_SHARD,
                    SAFETENSORS_INDEX,
                    f"the index names `{shard}`, which is not in the folder",
                )
            )
            continue
        result = read_header_via(access, shard)
        damage.extend(result.damage)
        checkpoint.tensors.update(result.tensors)
        checkpoint.weight_files.append(shard)
        read.append(shard)
    return ScopedCheckpoint(checkpoint, index, tuple(read))


__all__ = ["ScopedCheckpoint", "load_scoped"]
