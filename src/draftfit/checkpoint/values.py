"""Read the bytes of a few *small* tensors (d2t, t2d, norm weights).

draftfit never loads the weights; but a handful of tiny tensors decide silent failures
(a vocabulary map out of range, norms left at exactly 1.0 by a converter). Reading them
costs kilobytes. The helpers use the standard library only (`array`, bytes methods), so a
check never pays numpy's import time. Anything above `limit` bytes, or without a
contiguous byte range, is not read.
"""

from __future__ import annotations

import sys
from array import array

from draftfit.checkpoint.model import Checkpoint, TensorInfo

DEFAULT_LIMIT = 8 * 1024 * 1024
_INT_CODES = {"I64": "q", "I32": "i", "I16": "h", "I8": "b", "U8": "B"}
# The little-endian bytes of 1.0 in each float dtype.
_ONE = {"BF16": b"\x80\x3f", "F16": b"\x00\x3c", "F32": b"\x00\x00\x80\x3f"}


def read_bytes(
    checkpoint: Checkpoint, info: TensorInfo, limit: int = DEFAULT_LIMIT
) -> bytes | None:
    """The tensor's raw bytes, or None when unavailable or larger than `limit`."""
    if info.byte_range is None:
        return None
    start, end = info.byte_range
    if end < start or end - start > limit:
        return None
    try:
        data = checkpoint.read_range(info.file, start, end)
    except OSError:
        return None
    return data if len(data) == end - start else None


def read_ints(checkpoint: Checkpoint, info: TensorInfo) -> array[int] | None:
    """An integer tensor's values (little-endian on disk), or None."""
    code = _INT_CODES.get(info.dtype)
    data = read_bytes(checkpoint, info) if code else None
    if data is None or code is None:
        return None
    values = array(code)
    if len(data) % values.itemsize:
        return None
    values.frombytes(data)
    if sys.byteorder == "big":  # pragma: no cover - safetensors is little-endian on disk
        values.byteswap()
    return values


def _where(info: TensorInfo) -> tuple[str, tuple[int, int] | None, str]:
    return (info.file, info.byte_range, info.dtype)


def cached_ints(checkpoint: Checkpoint, info: TensorInfo) -> array[int] | None:
    """`read_ints`, read once per checkpoint (the array is shared: do not modify it)."""
    return checkpoint.memo.remember(
        ("ints", *_where(info)), (info.file,), lambda: read_ints(checkpoint, info)
    )


def cached_mask(checkpoint: Checkpoint, info: TensorInfo) -> bytes | None:
    """`read_mask`, read once per checkpoint."""
    return checkpoint.memo.remember(
        ("mask", *_where(info)), (info.file,), lambda: read_mask(checkpoint, info)
    )


def cached_mask_count(checkpoint: Checkpoint, info: TensorInfo) -> int | None:
    """How many entries of `cached_mask` are set, counted once per checkpoint (a `matrix`
    asks for every release, and a vocabulary mask has some 10^5 entries)."""

    def count() -> int | None:
        mask = cached_mask(checkpoint, info)
        return None if mask is None else mask.count(1)

    return checkpoint.memo.remember(("mask count", *_where(info)), (info.file,), count)


def read_mask(checkpoint: Checkpoint, info: TensorInfo) -> bytes | None:
    """A BOOL/U8 tensor as bytes of 0/1, or None."""
    if info.dtype not in ("BOOL", "U8"):
        return None
    data = read_bytes(checkpoint, info)
    if data is None:
        return None
    return data.translate(bytes([0] + [1] * 255))


def all_ones(checkpoint: Checkpoint, info: TensorInfo) -> bool:
    """Whether every element of a float tensor is exactly 1.0 (read once per checkpoint)."""
    one = _ONE.get(info.dtype)
    if one is None or info.numel == 0:
        return False

    def read() -> bool:
        data = read_bytes(checkpoint, info)
        # Lengths first: a shape that does not match the stored bytes (DF010) must not make
        # `one * numel` allocate what the header claims.
        return data is not None and len(data) == len(one) * info.numel and data == one * info.numel

    return checkpoint.memo.remember(("all ones", *_where(info)), (info.file,), read)
