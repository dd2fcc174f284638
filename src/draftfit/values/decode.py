"""Decode raw safetensors bytes (little-endian) into numpy arrays.

Floating-point dtypes become float32 (F64 stays float64, so its range survives); BF16 is
widened by shifting its 16 bits into a float32; the 8-bit float formats go through a
256-entry table built from their definition (E4M3 "fn": bias 7, no infinities, 0x7f/0xff
NaN, max 448; E5M2: bias 15, IEEE-style infinities and NaNs; E8M0: a bare power of two,
0xff NaN). Integer and boolean dtypes keep their type. Anything else is not decodable and
the caller reports it.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt

_PLAIN: dict[str, str] = {
    "F16": "<f2",
    "F32": "<f4",
    "F64": "<f8",
    "BOOL": "|b1",
    "U8": "|u1",
    "I8": "|i1",
    "I16": "<i2",
    "U16": "<u2",
    "I32": "<i4",
    "U32": "<u4",
    "I64": "<i8",
    "U64": "<u8",
}
_F8 = ("F8_E4M3", "F8_E5M2", "F8_E8M0")
FLOAT_DECODABLE = frozenset({"BF16", "F16", "F32", "F64", *_F8})


def decode(data: bytes | memoryview, dtype: str) -> npt.NDArray[np.generic]:
    """A flat array of the values in `data` (floats widened to float32, F64 kept)."""
    if dtype == "BF16":
        raw = np.frombuffer(data, dtype="<u2").astype(np.uint32)
        return (raw << 16).view(np.float32)
    if dtype in _F8:
        return _f8_table(dtype)[np.frombuffer(data, dtype=np.uint8)]
    if dtype in ("F16", "F32"):
        return np.frombuffer(data, dtype=_PLAIN[dtype]).astype(np.float32)
    if dtype in _PLAIN:
        return np.frombuffer(data, dtype=_PLAIN[dtype]).astype(
            np.dtype(_PLAIN[dtype]).newbyteorder("=")
        )
    raise ValueError(f"cannot decode dtype {dtype}")


def decode_float(data: bytes | memoryview, dtype: str) -> npt.NDArray[np.floating]:
    """`decode` for floating-point dtypes: float32 (float64 for F64)."""
    if dtype not in FLOAT_DECODABLE:
        raise ValueError(f"{dtype} is not a decodable floating-point dtype")
    values = decode(data, dtype)
    assert values.dtype.kind == "f"
    return values  # type: ignore[return-value]


@cache
def _f8_table(dtype: str) -> npt.NDArray[np.float32]:
    """The float32 value of every byte in one 8-bit float format."""
    codes = np.arange(256, dtype=np.int64)
    if dtype == "F8_E8M0":
        table = np.ldexp(1.0, codes - 127).astype(np.float32)
        table[255] = np.nan
        return table
    exp_bits, man_bits, bias = (4, 3, 7) if dtype == "F8_E4M3" else (5, 2, 15)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exponent = (codes >> man_bits) & ((1 << exp_bits) - 1)
    mantissa = codes & ((1 << man_bits) - 1)
    scale = float(1 << man_bits)
    normal = np.ldexp(1.0 + mantissa / scale, exponent - bias)
    subnormal = np.ldexp(mantissa / scale, 1 - bias)
    table = sign * np.where(exponent == 0, subnormal, normal)
    top = exponent == (1 << exp_bits) - 1
    if dtype == "F8_E4M3":
        table[top & (mantissa == 7)] = np.nan
    else:
        table[top & (mantissa == 0)] = sign[top & (mantissa == 0)] * np.inf
        table[top & (mantissa != 0)] = np.nan
    return table.astype(np.float32)
