"""Read a sharded checkpoint's config, its index and only the shards that hold wanted tensors.

A target that carries its own MTP layers is judged from a few tensors of a checkpoint that
may hold a thousand gigabytes in 163 shards: the index names every tensor and the shard it is
in, so only the headers of the shards that hold a wanted tensor (the MTP layers) are read.
Every other tensor is known by its name alone (:attr:`ScopedCheckpoint.index`). Without an
index every safetensors file is read, as :func:`~draftfit.checkpoint.local.load_checkpoint`
reads it; PyTorch `.bin` checkpoints are read whole by that function. The same reading
serves a Hub repository (:func:`scoped_from_access`, with its header reads at once, see
:func:`draftfit.origins.hub.load_hub_scoped`).

The same caps bound every read (the index and the config through the bounded JSON reader,
each header through the safetensors header reader, the number of shards).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint.access import LocalAccess, escapes_folder
from draftfit.checkpoint.hub_cache import find_origin, repository_folder
from draftfit.checkpoint.index_names import read_index_names
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

    from draftfit.checkpoint.access import FileAccess
    from draftfit.checkpoint.index_names import NameQuery
    from draftfit.checkpoint.safetensors import HeaderResult

    # Given the config and the tensor names read from the index, the names whose shards are
    # read (all at once: an index may name ~100,000 tensors).
    Selector = Callable[[Mapping[str, Any] | None, Collection[str]], Iterable[str]]
    # Given the config, which names of the index to read at all (None: every name).
    QueryFor = Callable[[Mapping[str, Any] | None], NameQuery | None]
    # Reads the headers of the shards named, in that order (one after the other, or at
    # once for a remote source).
    HeaderReader = Callable[[FileAccess, list[str]], list[HeaderResult]]


@frozen
class ScopedCheckpoint:
    """A checkpoint read in part.

    Attributes:
        checkpoint: the config and the tensors of the shards read (with their damage).
        index: the tensor names read from the index, with their shards: every name it
            lists, or only those a query picked; None without an index (then every weight
            file was read and `checkpoint.tensors` is complete).
        shards_read: the shards whose headers were read, in order.
    """

    checkpoint: Checkpoint
    index: dict[str, str] | None = None
    shards_read: tuple[str, ...] = field(default=())

    def names(self) -> list[str]:
        """The tensor names known: those read from the index, else those of the headers."""
        if self.index is not None:
            return list(self.index)
        return list(self.checkpoint.tensors)


def load_scoped(
    path: str | Path,
    select: Selector,
    origin: str | None = None,
    query: QueryFor | None = None,
) -> ScopedCheckpoint:
    """Read `path`'s config and index, and the headers of the shards holding a tensor that
    `select` picks (every safetensors file when there is no index); with `query`, only the
    index's names it picks for the config are read and selected from. Raises
    :class:`CheckpointNotFoundError` when `path` is not a directory."""
    root = Path(path)
    if root.is_file() and root.name == CONFIG_NAME:
        root = root.parent
    if not root.is_dir():
        raise CheckpointNotFoundError(f"no such directory: {path}")
    files = sorted(p.name for p in root.iterdir() if p.is_file())
    if SAFETENSORS_INDEX not in files:
        return ScopedCheckpoint(load_checkpoint(root, origin or str(path)))
    name = origin or str(path)
    access = LocalAccess(root, repository_folder(root))
    scoped = scoped_from_access(
        access,
        files,
        name,
        root,
        select,
        read_in_turn,
        lambda: load_checkpoint(root, name),
        query,
    )
    scoped.checkpoint.hub_origin = find_origin(root)
    return scoped


def scoped_from_access(
    access: FileAccess,
    files: list[str],
    origin: str,
    root: Path,
    select: Selector,
    read_headers: HeaderReader,
    read_whole: Callable[[], Checkpoint],
    query: QueryFor | None = None,
) -> ScopedCheckpoint:
    """Read, through `access`, the config, the index (with `query`, only the names it picks
    for the config) and the headers of the shards holding a tensor that `select` picks, of
    a checkpoint whose top-level files are `files` (which hold the index). An index without
    a readable `weight_map` falls back to `read_whole()` (every header)."""
    checkpoint = Checkpoint(root=root, origin=origin, files=sorted(files), access=access)
    damage = checkpoint.damage
    if CONFIG_NAME in files:
        checkpoint.config = read_json_object(access, CONFIG_NAME, damage, rule_ids.INVALID_CONFIG)
    else:
        damage.append(
            Damage(rule_ids.MISSING_CONFIG, CONFIG_NAME, "the directory has no config.json")
        )
    wanted = query(checkpoint.config) if query is not None else None
    read = read_index_names(access, SAFETENSORS_INDEX, damage, wanted)
    if read is None:
        return ScopedCheckpoint(read_whole())
    index = read.shards
    shards = sorted({index[name] for name in select(checkpoint.config, index)})
    checkpoint.weight_format = "safetensors"
    readable: list[str] = []
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
        elif shard not in files:
            damage.append(
                Damage(
                    rule_ids.INDEX_MISSING_SHARD,
                    SAFETENSORS_INDEX,
                    f"the index names `{shard}`, which is not in the folder",
                )
            )
        else:
            readable.append(shard)
    for shard, result in zip(readable, read_headers(access, readable), strict=True):
        damage.extend(result.damage)
        checkpoint.tensors.update(result.tensors)
        checkpoint.weight_files.append(shard)
    return ScopedCheckpoint(checkpoint, index, tuple(readable))


def read_in_turn(access: FileAccess, shards: list[str]) -> list[HeaderResult]:
    """The headers of `shards`, read one after the other (a local folder)."""
    return [read_header_via(access, shard) for shard in shards]


__all__ = ["ScopedCheckpoint", "load_scoped", "read_in_turn", "scoped_from_access"]
