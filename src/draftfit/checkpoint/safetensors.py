"""Reading and writing safetensors *headers*; tensor bytes are never decoded here.

The reader validates everything the format promises (header length, JSON object, dtypes,
shapes, contiguous non-overlapping offsets that cover the data section, byte sizes) and
reports each violation as a :class:`Damage` instead of raising, so a damaged shard yields
precise findings. The writer produces real safetensors files; with `data=None` a tensor's
bytes are left as a hole in a sparse file, which lets tests and the demo build full-size
checkpoints that cost no disk.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint.dtypes import DTYPE_BITS, byte_size, numel
from draftfit.checkpoint.jsonread import (
    JsonLimitError,
    JsonLimits,
    JsonSyntaxError,
    duplicate_key_damage,
    parse_json,
)
from draftfit.checkpoint.limits import (
    MAX_SAFETENSORS_HEADER_BYTES,
    MAX_SAFETENSORS_INT,
    MAX_TENSOR_DIMS,
    MAX_TENSOR_NAME_CHARS,
    MAX_TENSORS_PER_FILE,
)
from draftfit.checkpoint.model import Damage, TensorInfo
from draftfit.records import frozen

if TYPE_CHECKING:
    from typing import Any

    from draftfit.checkpoint.access import FileAccess

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.UNREADABLE_FILE,
    rule_ids.TRUNCATED_FILE,
    rule_ids.HEADER_LENGTH_OUT_OF_RANGE,
    rule_ids.HEADER_NOT_JSON_OBJECT,
    rule_ids.INVALID_TENSOR_ENTRY,
    rule_ids.UNKNOWN_DTYPE,
    rule_ids.DATA_OFFSETS_OUT_OF_RANGE,
    rule_ids.DATA_OFFSETS_OVERLAP,
    rule_ids.DATA_SECTION_NOT_COVERED,
    rule_ids.TENSOR_BYTE_SIZE_MISMATCH,
    rule_ids.READER_LIMIT_EXCEEDED,
)
EMITS_STAGE = "checkpoint reader: safetensors headers"

# The reference implementation refuses headers above 100 MB (DF003); draftfit reads at most
# MAX_SAFETENSORS_HEADER_BYTES of one (DF022 above that).
MAX_HEADER_BYTES = 100_000_000
# A header holds per tensor one object, two arrays, three members, five strings (name,
# three keys, dtype) and about eight values, plus `__metadata__`.
HEADER_LIMITS = JsonLimits(
    max_bytes=MAX_SAFETENSORS_HEADER_BYTES,
    max_members=4 * MAX_TENSORS_PER_FILE + 10_000,
    max_containers=3 * MAX_TENSORS_PER_FILE + 10_000,
    max_strings=5 * MAX_TENSORS_PER_FILE + 10_000,
    max_items=8 * MAX_TENSORS_PER_FILE + 10_000,
)
_ALIGN = 8


@frozen
class HeaderResult:
    """What one safetensors file declares: tensors, metadata and damage found."""

    tensors: dict[str, TensorInfo]
    metadata: dict[str, str] | None
    damage: list[Damage]
    header_length: int


def read_safetensors_header(path: Path, rel: str) -> HeaderResult:
    """Read and validate the header of the local safetensors file at `path` (named `rel`)."""
    from draftfit.checkpoint.access import LocalAccess

    return read_header_via(LocalAccess(path.parent), path.name, rel)


def read_header_via(access: FileAccess, name: str, rel: str | None = None) -> HeaderResult:
    """Read and validate a safetensors header through `access` (local file or remote)."""
    rel = rel or name
    try:
        size = access.size(name)
        first = access.read_range(name, 0, max(8, min(size, access.prefetch)))
        if len(first) < 8:
            return HeaderResult(
                {},
                None,
                [
                    Damage(
                        rule_ids.TRUNCATED_FILE,
                        rel,
                        f"file is {size} bytes; a safetensors file needs at least 8 "
                        "(the header length)",
                    )
                ],
                0,
            )
        (header_length,) = struct.unpack("<Q", first[:8])
        if header_length > MAX_HEADER_BYTES or 8 + header_length > size:
            limit = f" (limit {MAX_HEADER_BYTES})" if header_length > MAX_HEADER_BYTES else ""
            return HeaderResult(
                {},
                None,
                [
                    Damage(
                        rule_ids.HEADER_LENGTH_OUT_OF_RANGE,
                        rel,
                        f"header length prefix says {header_length} bytes, but the file has "
                        f"{max(size - 8, 0)} bytes after the prefix{limit}",
                    )
                ],
                header_length,
            )
        if header_length > MAX_SAFETENSORS_HEADER_BYTES:
            return HeaderResult(
                {},
                None,
                [
                    Damage(
                        rule_ids.READER_LIMIT_EXCEEDED,
                        rel,
                        f"header length prefix says {header_length} bytes, above the "
                        f"{MAX_SAFETENSORS_HEADER_BYTES}-byte limit draftfit reads; not read",
                    )
                ],
                header_length,
            )
        if 8 + header_length <= len(first):
            header = first[8 : 8 + header_length]
        else:
            header = access.read_range(name, 8, 8 + header_length)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return HeaderResult(
            {}, None, [Damage(rule_ids.UNREADABLE_FILE, rel, f"cannot read: {reason}")], 0
        )
    return parse_header(header, size - 8 - header_length, rel, header_length)


def parse_header(header: bytes, data_size: int, rel: str, header_length: int) -> HeaderResult:
    """Validate header bytes against a data section of `data_size` bytes.

    Shared by the local reader and remote readers that fetch only the header bytes.
    """
    damage: list[Damage] = []
    try:
        document = parse_json(header, HEADER_LIMITS)
    except JsonLimitError as exc:
        return HeaderResult(
            {},
            None,
            [Damage(rule_ids.READER_LIMIT_EXCEEDED, rel, f"header not read: {exc}")],
            header_length,
        )
    except JsonSyntaxError as exc:
        return HeaderResult(
            {},
            None,
            [
                Damage(
                    rule_ids.HEADER_NOT_JSON_OBJECT, rel, f"header is not valid JSON: {exc.detail}"
                )
            ],
            header_length,
        )
    parsed = document.value
    if not isinstance(parsed, dict):
        return HeaderResult(
            {},
            None,
            [
                Damage(
                    rule_ids.HEADER_NOT_JSON_OBJECT,
                    rel,
                    f"header is a JSON {type(parsed).__name__}, expected an object",
                )
            ],
            header_length,
        )

    if document.duplicate_keys:
        damage.extend(duplicate_key_damage(rel, document.duplicate_keys))
    declared = len(parsed) - ("__metadata__" in parsed)
    if declared > MAX_TENSORS_PER_FILE:
        damage.append(
            Damage(
                rule_ids.READER_LIMIT_EXCEEDED,
                rel,
                f"the header declares {declared} tensors, above the limit of "
                f"{MAX_TENSORS_PER_FILE} per file; none was read",
            )
        )
        return HeaderResult({}, None, damage, header_length)
    metadata = None
    raw_metadata = parsed.pop("__metadata__", None)
    if raw_metadata is not None:
        if isinstance(raw_metadata, dict) and all(
            isinstance(v, str) for v in raw_metadata.values()
        ):
            metadata = dict(raw_metadata)
        else:
            damage.append(
                Damage(
                    rule_ids.INVALID_TENSOR_ENTRY,
                    rel,
                    "`__metadata__` must map strings to strings",
                    pointer="/__metadata__",
                )
            )

    data_start = 8 + header_length
    tensors: dict[str, TensorInfo] = {}
    spans: list[tuple[int, int, str]] = []
    for name, entry in parsed.items():
        if len(name) > MAX_TENSOR_NAME_CHARS:
            shown = f"{name[:60]}…({len(name):,} characters)"
            damage.append(
                Damage(
                    rule_ids.READER_LIMIT_EXCEEDED,
                    rel,
                    f"a tensor name of {len(name):,} characters (`{shown}`), above the limit of "
                    f"{MAX_TENSOR_NAME_CHARS}; that tensor was not read",
                )
            )
            # Its bytes still count as covered, so the gap is not reported a second time.
            ignored = parse_entry("tensor", entry, rel, data_start, data_size, [])
            if ignored is not None and ignored.byte_range is not None:
                begin, end = ignored.byte_range
                spans.append((begin - data_start, end - data_start, shown))
            continue
        info = parse_entry(name, entry, rel, data_start, data_size, damage)
        if info is None:
            continue
        tensors[name] = info
        assert info.byte_range is not None
        spans.append((info.byte_range[0] - data_start, info.byte_range[1] - data_start, name))

    damage.extend(_check_coverage(spans, data_size, rel))
    return HeaderResult(tensors, metadata, damage, header_length)


def parse_entry(
    name: str, entry: object, rel: str, data_start: int, data_size: int, damage: list[Damage]
) -> TensorInfo | None:
    """The tensor one header entry declares (`data_start`: where the data section begins in
    the file, `data_size`: its length), or None when the entry cannot be used; what is wrong
    with it is appended to `damage`."""
    if type(entry) is dict:
        plain = _plain_entry(name, entry, rel, data_start)
        if plain is not None:
            return plain
    pointer = "/" + name.replace("~", "~0").replace("/", "~1")
    if not isinstance(entry, dict):
        damage.append(
            Damage(rule_ids.INVALID_TENSOR_ENTRY, rel, f"entry for `{name}` is not an object", name)
        )
        return None
    dtype = entry.get("dtype")
    shape = entry.get("shape")
    offsets = entry.get("data_offsets")
    if not isinstance(dtype, str):
        damage.append(
            Damage(
                rule_ids.INVALID_TENSOR_ENTRY, rel, f"`{name}` has no string `dtype`", name, pointer
            )
        )
        return None
    if isinstance(shape, list) and len(shape) > MAX_TENSOR_DIMS:
        damage.append(
            Damage(
                rule_ids.READER_LIMIT_EXCEEDED,
                rel,
                f"`{name}` has {len(shape)} dimensions, above the limit of {MAX_TENSOR_DIMS}",
                name,
                pointer,
            )
        )
        return None
    if not (isinstance(shape, list) and all(_is_uint(d) for d in shape)):
        damage.append(
            Damage(
                rule_ids.INVALID_TENSOR_ENTRY,
                rel,
                f"`{name}` has shape {shape!r}, expected a list of non-negative integers",
                name,
                pointer,
            )
        )
        return None
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_uint(o) for o in offsets)):
        damage.append(
            Damage(
                rule_ids.INVALID_TENSOR_ENTRY,
                rel,
                f"`{name}` has data_offsets {offsets!r}, expected [begin, end]",
                name,
                pointer,
            )
        )
        return None
    begin, end = offsets
    shape_t = tuple(shape)
    too_large = [v for v in (*shape, begin, end) if v > MAX_SAFETENSORS_INT]
    total = numel(shape_t) * DTYPE_BITS.get(dtype, 8) // 8
    if too_large or total > MAX_SAFETENSORS_INT:
        what = f"the value {too_large[0]}" if too_large else f"a size of {total} bytes"
        damage.append(
            Damage(
                rule_ids.INVALID_TENSOR_ENTRY,
                rel,
                f"`{name}` ({dtype} shape with {len(shape)} dims) states {what}, which "
                f"overflows a 64-bit size (above {MAX_SAFETENSORS_INT})",
                name,
                pointer,
            )
        )
        return None
    if dtype not in DTYPE_BITS:
        damage.append(
            Damage(
                rule_ids.UNKNOWN_DTYPE,
                rel,
                f"`{name}` has dtype `{dtype}`, which is not a safetensors dtype",
                name,
                pointer,
            )
        )
    elif end >= begin:
        expected = byte_size(dtype, shape_t)
        bits = DTYPE_BITS[dtype]
        if bits < 8 and (numel(shape_t) * bits) % 8:
            damage.append(
                Damage(
                    rule_ids.TENSOR_BYTE_SIZE_MISMATCH,
                    rel,
                    f"`{name}` ({dtype} {list(shape_t)}) does not fill whole bytes",
                    name,
                    pointer,
                )
            )
        elif expected != end - begin:
            damage.append(
                Damage(
                    rule_ids.TENSOR_BYTE_SIZE_MISMATCH,
                    rel,
                    f"`{name}` spans {end - begin} bytes, but {dtype} {list(shape_t)} "
                    f"needs {expected}",
                    name,
                    pointer,
                )
            )
    if end < begin:
        damage.append(
            Damage(
                rule_ids.DATA_OFFSETS_OUT_OF_RANGE,
                rel,
                f"`{name}` has data_offsets [{begin}, {end}]: end before begin",
                name,
                pointer,
            )
        )
        return None
    return TensorInfo(name, dtype, shape_t, rel, (data_start + begin, data_start + end))


def _plain_entry(name: str, entry: dict[str, Any], rel: str, data_start: int) -> TensorInfo | None:
    """The tensor of an entry that passes every check of :func:`parse_entry`, settled in one
    pass (a 671B target's MTP shards hold ~1,500 entries); None for any other entry, which
    :func:`parse_entry` then examines and reports."""
    dtype = entry.get("dtype")
    shape = entry.get("shape")
    offsets = entry.get("data_offsets")
    if type(dtype) is not str:
        return None
    bits = DTYPE_BITS.get(dtype)
    if (
        bits is None
        or type(shape) is not list
        or len(shape) > MAX_TENSOR_DIMS
        or type(offsets) is not list
        or len(offsets) != 2
    ):
        return None
    count = 1
    for dim in shape:  # JSON gives no int subclass but bool, which `type(...) is int` refuses
        if type(dim) is not int or not 0 <= dim <= MAX_SAFETENSORS_INT:
            return None
        count *= dim
    begin, end = offsets
    if type(begin) is not int or type(end) is not int:
        return None
    total_bits = count * bits
    if not 0 <= begin <= end <= MAX_SAFETENSORS_INT:
        return None
    if total_bits % 8 or total_bits // 8 != end - begin:
        return None
    return TensorInfo(name, dtype, tuple(shape), rel, (data_start + begin, data_start + end))


def _check_coverage(spans: list[tuple[int, int, str]], data_size: int, rel: str) -> list[Damage]:
    """Offsets must tile `[0, data_size)` exactly: no overlap, no gap, nothing past the end."""
    damage: list[Damage] = []
    spans.sort()
    cursor = 0
    for begin, end, name in spans:
        if begin < cursor:
            damage.append(
                Damage(
                    rule_ids.DATA_OFFSETS_OVERLAP,
                    rel,
                    f"`{name}` starts at byte {begin} of the data section, inside the previous "
                    f"tensor (which ends at {cursor})",
                    name,
                )
            )
        elif begin > cursor:
            damage.append(
                Damage(
                    rule_ids.DATA_SECTION_NOT_COVERED,
                    rel,
                    f"bytes {cursor}..{begin} of the data section belong to no tensor "
                    f"(gap before `{name}`)",
                    name,
                )
            )
        cursor = max(cursor, end)
    if cursor > data_size:
        beyond = [name for _, end, name in spans if end > data_size]
        contiguous = not any(
            d.rule in (rule_ids.DATA_OFFSETS_OVERLAP, rule_ids.DATA_SECTION_NOT_COVERED)
            for d in damage
        )
        kind = rule_ids.TRUNCATED_FILE if contiguous else rule_ids.DATA_OFFSETS_OUT_OF_RANGE
        damage.append(
            Damage(
                kind,
                rel,
                f"tensors end at byte {cursor} of the data section, but the file holds only "
                f"{data_size} data bytes ({len(beyond)} tensor(s) past the end, first "
                f"`{beyond[0]}`)",
                beyond[0],
            )
        )
    elif cursor < data_size:
        damage.append(
            Damage(
                rule_ids.DATA_SECTION_NOT_COVERED,
                rel,
                f"the data section has {data_size - cursor} trailing bytes that belong to no "
                "tensor",
            )
        )
    return damage


def _is_uint(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# --------------------------------------------------------------------------- writing


@frozen
class TensorToWrite:
    """A tensor for :func:`write_safetensors`: bytes, or None to leave a hole."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    data: bytes | None = None


def build_header(
    tensors: Iterable[tuple[str, str, tuple[int, ...]]],
    metadata: dict[str, str] | None = None,
) -> tuple[bytes, list[tuple[str, int, int]]]:
    """Serialise a header for tensors laid out in the given order.

    Returns the 8-byte length prefix plus padded JSON, and `(name, begin, end)` offsets
    relative to the data section.
    """
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    layout: list[tuple[str, int, int]] = []
    cursor = 0
    for name, dtype, shape in tensors:
        size = byte_size(dtype, tuple(shape))
        if size is None:
            raise ValueError(f"unknown dtype {dtype!r} for tensor {name!r}")
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [cursor, cursor + size],
        }
        layout.append((name, cursor, cursor + size))
        cursor += size
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % _ALIGN)
    return struct.pack("<Q", len(encoded)) + encoded, layout


def write_safetensors(
    path: Path,
    tensors: Iterable[TensorToWrite],
    metadata: dict[str, str] | None = None,
) -> int:
    """Write a safetensors file; tensors with `data=None` become holes (sparse, zeros).

    Returns the file size. Tensors are laid out in the order given.
    """
    items = list(tensors)
    prefix, layout = build_header(((t.name, t.dtype, t.shape) for t in items), metadata)
    total = len(prefix) + (layout[-1][2] if layout else 0)
    with path.open("wb") as handle:
        handle.write(prefix)
        for item, (_, begin, end) in zip(items, layout, strict=True):
            if item.data is None:
                continue
            if len(item.data) != end - begin:
                raise ValueError(
                    f"{item.name}: {len(item.data)} bytes given, {end - begin} expected"
                )
            handle.seek(len(prefix) + begin)
            handle.write(item.data)
        handle.truncate(total)
    return total
