"""Read a checkpoint directory: `config.json`, weight headers and shard indexes.

Which weight files count follows what the engines load: every `*.safetensors` when any
exist (filtered by `model.safetensors.index.json` when present), otherwise PyTorch `*.bin`
files (read without executing pickle code). Problems are recorded as :class:`Damage`.
The same code reads Hub repositories: it sees files only through a
:class:`~draftfit.checkpoint.access.FileAccess`.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint.access import LocalAccess, escapes_folder
from draftfit.checkpoint.hub_cache import find_origin, repository_folder
from draftfit.checkpoint.jsonread import (
    CONFIG_LIMITS,
    JsonDocument,
    JsonLimitError,
    JsonSyntaxError,
    duplicate_key_damage,
    parse_json,
)
from draftfit.checkpoint.limits import MAX_JSON_FILE_BYTES, MAX_WEIGHT_FILES
from draftfit.checkpoint.model import Checkpoint, Damage, TensorInfo
from draftfit.checkpoint.safetensors import read_header_via
from draftfit.errors import CheckpointNotFoundError
from draftfit.rule_ids import RuleId

if TYPE_CHECKING:
    from typing import Any

    from draftfit.checkpoint.access import FileAccess

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.UNREADABLE_FILE,
    rule_ids.INDEX_MISSING_SHARD,
    rule_ids.INDEX_TENSOR_NOT_IN_SHARD,
    rule_ids.DUPLICATE_TENSOR,
    rule_ids.TENSOR_NOT_IN_INDEX,
    rule_ids.INVALID_INDEX,
    rule_ids.MISSING_CONFIG,
    rule_ids.INVALID_CONFIG,
    rule_ids.MIXED_WEIGHT_FORMATS,
    rule_ids.NO_WEIGHTS,
    rule_ids.READER_LIMIT_EXCEEDED,
)
EMITS_STAGE = "checkpoint reader: the folder, its config and shard index"

CONFIG_NAME = "config.json"
SAFETENSORS_INDEX = "model.safetensors.index.json"
BIN_INDEX = "pytorch_model.bin.index.json"
# Files with a weight-like extension that engines skip (training state, optimizers).
NON_WEIGHT_BIN = ("training_args.bin", "optimizer.bin", "scheduler.bin", "rng_state.bin")


def load_checkpoint(
    path: str | Path, origin: str | None = None, confine: Path | None = None
) -> Checkpoint:
    """Read the checkpoint directory at `path` without loading tensor data.

    Raises :class:`CheckpointNotFoundError` when `path` is not a directory (or a
    `config.json` inside one); everything wrong *inside* the directory becomes damage.
    Files are read only inside `confine` (default: the directory itself, or for a Hugging
    Face cache snapshot its repository folder, whose `blobs/` its symlinks point into),
    whatever their names or symlinks say.
    """
    root = Path(path)
    if root.is_file() and root.name == CONFIG_NAME:
        root = root.parent
    try:
        root.stat()
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR) or exc.strerror is None:
            raise CheckpointNotFoundError(f"no such directory: {path}") from None
        raise CheckpointNotFoundError(f"cannot open {path}: {exc.strerror}") from None
    if not root.is_dir():
        raise CheckpointNotFoundError(f"not a checkpoint directory: {path}")
    try:
        files = _list_files(root)
    except OSError as exc:
        raise CheckpointNotFoundError(f"cannot list {path}: {exc.strerror or exc}") from exc

    if confine is None:
        confine = repository_folder(root)
    checkpoint = load_from_access(LocalAccess(root, confine), files, origin or str(path), root)
    checkpoint.hub_origin = find_origin(root)
    return checkpoint


def _is_read_by_reader(name: str) -> bool:
    return name in (CONFIG_NAME, SAFETENSORS_INDEX, BIN_INDEX) or name.endswith(
        (".safetensors", ".bin")
    )


def _list_files(root: Path) -> list[str]:
    """Regular files of `root`, plus every entry the reader would read whatever it is (a
    FIFO, a directory or a dangling or looping symlink named `model.safetensors` is then
    reported as unreadable instead of silently missing)."""
    names: list[str] = []
    with os.scandir(root) as entries:
        for entry in entries:
            try:
                regular = entry.is_file()
            except OSError:
                regular = False
            if regular or _is_read_by_reader(entry.name):
                names.append(entry.name)
    return sorted(names)


def load_from_access(access: FileAccess, files: list[str], origin: str, root: Path) -> Checkpoint:
    """Read config, index and weight headers of the files listed, through `access`."""
    checkpoint = Checkpoint(root=root, origin=origin, files=sorted(files), access=access)
    checkpoint.config = _read_config(access, checkpoint.files, checkpoint.damage)
    _read_weights(checkpoint)
    return checkpoint


def read_json_object(
    access: FileAccess, rel: str, damage: list[Damage], kind: RuleId
) -> dict[str, Any] | None:
    """Parse a JSON file that must hold an object, within the reader's caps; record `kind`
    damage when it is not one, DF022 when a cap is exceeded (nothing is read beyond it) and
    DF023 for keys written twice."""
    data = read_json_bytes(access, rel, damage)
    if data is None:
        return None
    document = parse_json_object(data, rel, damage, kind)
    if document is None:
        return None
    damage.extend(duplicate_key_damage(rel, document.duplicate_keys))
    value: dict[str, Any] = document.value
    return value


def read_json_bytes(access: FileAccess, rel: str, damage: list[Damage]) -> bytes | None:
    """The bytes of the JSON file `rel`, or None (recorded in `damage`) when it is larger
    than a JSON file may be or cannot be read."""
    try:
        size = access.size(rel)
        if size > MAX_JSON_FILE_BYTES:
            damage.append(
                Damage(
                    rule_ids.READER_LIMIT_EXCEEDED,
                    rel,
                    f"it is {size} bytes, above the {MAX_JSON_FILE_BYTES}-byte limit for a "
                    "JSON file; not read",
                )
            )
            return None
        return access.read_all(rel)
    except OSError as exc:
        damage.append(Damage(rule_ids.UNREADABLE_FILE, rel, f"cannot read: {exc.strerror or exc}"))
        return None


def parse_json_object(
    data: bytes, rel: str, damage: list[Damage], kind: RuleId
) -> JsonDocument | None:
    """`data` parsed within the reader's caps when it holds a JSON object; otherwise None,
    with `kind` damage (DF022 for a cap exceeded). Its duplicated keys are left to the
    caller."""
    try:
        document = parse_json(data, CONFIG_LIMITS)
    except JsonLimitError as exc:
        damage.append(Damage(rule_ids.READER_LIMIT_EXCEEDED, rel, f"not read: {exc}"))
        return None
    except JsonSyntaxError as exc:
        damage.append(Damage(kind, rel, str(exc)))
        return None
    if not isinstance(document.value, dict):
        kind_name = type(document.value).__name__
        damage.append(Damage(kind, rel, f"holds a JSON {kind_name}, expected an object"))
        return None
    return document


def _read_config(
    access: FileAccess, files: list[str], damage: list[Damage]
) -> dict[str, Any] | None:
    if CONFIG_NAME not in files:
        damage.append(
            Damage(rule_ids.MISSING_CONFIG, CONFIG_NAME, "the directory has no config.json")
        )
        return None
    return read_json_object(access, CONFIG_NAME, damage, rule_ids.INVALID_CONFIG)


def _read_weights(checkpoint: Checkpoint) -> None:
    files = checkpoint.files
    safetensors = [f for f in files if f.endswith(".safetensors")]
    bins = [f for f in files if f.endswith(".bin") and f not in NON_WEIGHT_BIN]
    if safetensors:
        if bins:
            checkpoint.ignored_weight_files = bins
            checkpoint.damage.append(
                Damage(
                    rule_ids.MIXED_WEIGHT_FORMATS,
                    bins[0],
                    f"both .safetensors ({', '.join(safetensors)}) and .bin "
                    f"({', '.join(bins)}) weights are present; engines load the "
                    ".safetensors files and ignore the .bin ones",
                )
            )
        checkpoint.weight_format = "safetensors"
        _read_format(checkpoint, safetensors, SAFETENSORS_INDEX, _read_one_safetensors)
    elif bins:
        checkpoint.weight_format = "bin"
        _read_format(checkpoint, bins, BIN_INDEX, _read_one_bin)
    else:
        checkpoint.damage.append(
            Damage(
                rule_ids.NO_WEIGHTS,
                ".",
                "no weight files (*.safetensors or pytorch_model*.bin) in the directory",
            )
        )


def _read_one_safetensors(
    access: FileAccess, rel: str
) -> tuple[dict[str, TensorInfo], list[Damage]]:
    result = read_header_via(access, rel)
    return result.tensors, result.damage


def _read_one_bin(access: FileAccess, rel: str) -> tuple[dict[str, TensorInfo], list[Damage]]:
    from draftfit.checkpoint.torchbin import read_torch_bin

    try:
        path = access.local_path(rel)
    except OSError as exc:
        return {}, [Damage(rule_ids.UNREADABLE_FILE, rel, f"cannot read: {exc.strerror or exc}")]
    if path is None:
        return {}, [
            Damage(rule_ids.UNREADABLE_FILE, rel, "PyTorch .bin files are only read locally")
        ]
    return read_torch_bin(path, rel)


if TYPE_CHECKING:
    ShardReader = Callable[[FileAccess, str], tuple[dict[str, TensorInfo], list[Damage]]]


def _read_format(
    checkpoint: Checkpoint, candidates: list[str], index_name: str, reader: ShardReader
) -> None:
    access = checkpoint.access
    assert access is not None  # set by load_from_access
    damage = checkpoint.damage
    weight_map: dict[str, str] | None = None
    shard_files = candidates
    if index_name in checkpoint.files:
        weight_map = _read_index(access, index_name, damage)
        if weight_map is not None:
            listed = sorted(set(weight_map.values()))
            escaping = [s for s in listed if escapes_folder(s)]
            for shard in escaping:
                names = [n for n, s in weight_map.items() if s == shard]
                damage.append(
                    Damage(
                        rule_ids.INVALID_INDEX,
                        index_name,
                        f"the index maps {len(names)} tensor(s) (first `{names[0]}`) to "
                        f"`{shard}`, outside the checkpoint folder; it is not read",
                        names[0],
                        "/weight_map/" + _escape(names[0]),
                    )
                )
            listed = [s for s in listed if s not in escaping]
            for shard in listed:
                if shard not in checkpoint.files:
                    missing = [n for n, s in weight_map.items() if s == shard]
                    damage.append(
                        Damage(
                            rule_ids.INDEX_MISSING_SHARD,
                            index_name,
                            f"the index maps {len(missing)} tensor(s) (first `{missing[0]}`) "
                            f"to `{shard}`, which does not exist",
                            missing[0],
                            "/weight_map/" + _escape(missing[0]),
                        )
                    )
            shard_files = [s for s in listed if s in checkpoint.files]
    if len(shard_files) > MAX_WEIGHT_FILES:
        damage.append(
            Damage(
                rule_ids.READER_LIMIT_EXCEEDED,
                shard_files[0],
                f"the checkpoint has {len(shard_files)} weight files, above the limit of "
                f"{MAX_WEIGHT_FILES}; none was read",
            )
        )
        return
    checkpoint.weight_files = shard_files

    owner: dict[str, str] = {}
    for rel in shard_files:
        tensors, shard_damage = reader(access, rel)
        damage.extend(shard_damage)
        for name, info in tensors.items():
            if name in owner:
                same = _same_bytes(access, checkpoint.tensors[name], info)
                if same is not True:
                    how = "with different values" if same is False else "(too large to compare)"
                    damage.append(
                        Damage(
                            rule_ids.DUPLICATE_TENSOR,
                            rel,
                            f"`{name}` is stored in both `{owner[name]}` and `{rel}` {how}; "
                            "which copy an engine keeps depends on file order",
                            name,
                        )
                    )
                continue
            owner[name] = rel
            checkpoint.tensors[name] = info

    if weight_map is not None:
        for name, shard in weight_map.items():
            if shard in shard_files and owner.get(name) != shard and name not in owner:
                damage.append(
                    Damage(
                        rule_ids.INDEX_TENSOR_NOT_IN_SHARD,
                        index_name,
                        f"the index maps `{name}` to `{shard}`, which does not contain it",
                        name,
                        "/weight_map/" + _escape(name),
                    )
                )
        for name, shard in owner.items():
            if name not in weight_map:
                damage.append(
                    Damage(
                        rule_ids.TENSOR_NOT_IN_INDEX,
                        shard,
                        f"`{name}` is stored in `{shard}` but not listed in `{index_name}`",
                        name,
                    )
                )
            elif weight_map[name] != shard:
                damage.append(
                    Damage(
                        rule_ids.INDEX_TENSOR_NOT_IN_SHARD,
                        index_name,
                        f"the index maps `{name}` to `{weight_map[name]}`, but it is stored "
                        f"in `{shard}`",
                        name,
                        "/weight_map/" + _escape(name),
                    )
                )


DUPLICATE_COMPARE_LIMIT = 64 * 1024 * 1024


def _same_bytes(access: FileAccess, first: TensorInfo, second: TensorInfo) -> bool | None:
    """Whether two stored copies of a tensor are byte-identical (None: not compared)."""
    if first.byte_range is None or second.byte_range is None:
        return None
    size = first.byte_range[1] - first.byte_range[0]
    if size != second.byte_range[1] - second.byte_range[0] or first.dtype != second.dtype:
        return False
    if size > DUPLICATE_COMPARE_LIMIT:
        return None
    try:
        return access.read_range(first.file, *first.byte_range) == access.read_range(
            second.file, *second.byte_range
        )
    except OSError:
        return None


def _read_index(access: FileAccess, index_name: str, damage: list[Damage]) -> dict[str, str] | None:
    index = read_json_object(access, index_name, damage, rule_ids.INVALID_INDEX)
    if index is None:
        return None
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        damage.append(
            Damage(
                rule_ids.INVALID_INDEX,
                index_name,
                "`weight_map` must be an object mapping tensor names to shard file names",
                pointer="/weight_map",
            )
        )
        return None
    return weight_map


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
