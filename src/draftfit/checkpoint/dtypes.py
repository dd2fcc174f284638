"""Tensor element types as safetensors names them, with their widths in bits.

The list follows the safetensors format (`Dtype` in the reference implementation), so an
unknown string in a header is recognisably foreign and becomes a finding instead of a crash.
"""

from __future__ import annotations

DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "I64": 64,
    "U64": 64,
    "F64": 64,
    "C64": 64,
}

FLOAT_DTYPES = frozenset(
    {"F8_E5M2", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "F16", "BF16", "F32", "F64"}
)
# The float widths a weight is trained and kept in before any quantization: one value per
# element, so a column is a whole number of bytes (what `convert` may move as blocks).
PLAIN_FLOAT_DTYPES = frozenset({"BF16", "F16", "F32"})


def byte_size(dtype: str, shape: tuple[int, ...]) -> int | None:
    """Bytes a tensor of this dtype and shape occupies, or None for an unknown dtype."""
    bits = DTYPE_BITS.get(dtype)
    if bits is None:
        return None
    numel = 1
    for dim in shape:
        numel *= dim
    total_bits = numel * bits
    return (total_bits + 7) // 8


def numel(shape: tuple[int, ...]) -> int:
    """Number of elements in a tensor of this shape."""
    count = 1
    for dim in shape:
        count *= dim
    return count
