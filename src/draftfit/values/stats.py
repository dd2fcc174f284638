"""Running statistics over row blocks of one tensor (numpy), bounded in memory.

Blocks arrive as raw bytes of whole rows. The exact signatures (NaN/Inf, exact zeros, exact
ones, constant rows, the largest magnitude) are computed on the stored bit patterns of every
value, which is several times faster than decoding, so full mode stays close to reading
speed; the moments (mean, std, kurtosis) come from the decoded values of the first rows of every
block (:data:`MOMENT_VALUES` values at least), plenty for a moment. What is kept between blocks is
a handful of numbers, so memory does not grow with the tensor.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from draftfit.values.decode import decode_float
from draftfit.values.facts import ChunkFacts, Comparison, TensorFacts

Block = npt.NDArray[np.floating]

# Two values are the same weight when they differ by at most half a bfloat16 unit in the
# last place (2^-8 relative): a frozen copy of a 16-bit embedding, saved through bf16, f16
# or f32, never differs by more; two independently trained values almost always do.
MATCH_RTOL = 2.0**-8
# ... plus an absolute slack below the smallest bf16/f16 normal, so exact zeros and
# subnormals flushed to zero still count as the same value.
MATCH_ATOL = 1e-12
# The moments come from the first rows of every block read, at least MOMENT_VALUES values
# (one row at least): 16 sampled blocks give ~260k values, a standard error on the kurtosis
# of ~0.01, far inside the tolerances of the initialiser test (DF704).
MOMENT_VALUES = 16_384

# IEEE-style formats: (signed view, magnitude mask, exponent all ones = inf, bits of 1.0).
# Seen as signed integers, positive values' bits order them by magnitude; seen as unsigned,
# so do negative values' bits (above the sign bit). So two max reductions over views of the
# same bytes give the largest magnitude (and so NaN/Inf presence and all-zero) without a
# masked copy.
_IEEE: dict[str, tuple[type[np.signedinteger], int, int, int]] = {
    "BF16": (np.int16, 0x7FFF, 0x7F80, 0x3F80),
    "F16": (np.int16, 0x7FFF, 0x7C00, 0x3C00),
    "F32": (np.int32, 0x7FFFFFFF, 0x7F800000, 0x3F800000),
    "F64": (np.int64, 0x7FFFFFFFFFFFFFFF, 0x7FF0000000000000, 0x3FF0000000000000),
}


class Moments:
    """Running mean, std and kurtosis of finite values (float64 sums)."""

    def __init__(self) -> None:
        self.n = 0
        self.s1 = self.s2 = self.s3 = self.s4 = 0.0

    def add(self, values: npt.NDArray[np.floating], all_finite: bool = False) -> None:
        """Fold in the finite ones of `values` (`all_finite`: the caller knows there is no
        NaN or Inf among them, so no masked copy is made; the sums are the same)."""
        finite = (values if all_finite else values[np.isfinite(values)]).astype(np.float64)
        if finite.size:
            sq = finite * finite
            self.s1 += float(finite.sum())
            self.s2 += float(sq.sum())
            # einsum, not `@`: BLAS threads spin on a busy machine for no gain at this size
            self.s3 += float(np.einsum("i,i->", sq, finite))
            self.s4 += float(np.einsum("i,i->", sq, sq))
            self.n += finite.size

    def add_zeros(self, count: int) -> None:
        """`add` of `count` values that are all exactly +0.0 (every sum stays the same)."""
        self.n += count

    def result(self) -> tuple[float, float, float | None]:
        """(mean, std, kurtosis); kurtosis None when the values are constant."""
        n = self.n
        if not n:
            return 0.0, 0.0, None
        mean = self.s1 / n
        var = max(self.s2 / n - mean * mean, 0.0)
        if var <= 0:
            return mean, 0.0, None
        m4 = self.s4 / n - 4 * mean * self.s3 / n + 6 * mean * mean * self.s2 / n - 3 * mean**4
        return mean, math.sqrt(var), m4 / (var * var)


class TensorAccumulator:
    """Accumulates a :class:`TensorFacts` over row blocks."""

    def __init__(self, facts: TensorFacts, chunk_width: int | None = None) -> None:
        self.facts = facts
        self.chunk_width = chunk_width
        self._moments = Moments()
        self._chunk_moments: list[Moments] = []
        self._crc = 0
        self._chunk_same: list[list[bool]] = []

    def add(
        self, raw: bytes | memoryview, rows: int, width: int, blocks: Sequence[int] = ()
    ) -> None:
        """Fold in `rows` whole rows of `width` values stored as `raw`: one block, or the
        consecutive blocks of `blocks` rows each. The exact signatures are taken over all of
        `raw` at once; the moments and the digest come from the first rows of each block, so
        the answer does not depend on how the blocks are grouped."""
        facts = self.facts
        facts.rows += rows
        facts.values += rows * width
        blocks = blocks or [rows]
        per_row = len(raw) // rows if rows else 0
        ieee = _IEEE.get(facts.dtype)
        bad_before = facts.nan + facts.inf
        zero_bits = False  # every stored bit of `raw` is 0: every value is +0.0
        if ieee is None:
            for block, count in blocks_of(raw, blocks, per_row):  # decoded a block at a time
                self._add_decoded(block, count, width)
        else:
            zero_bits = self._add_bits(raw, rows, width, ieee)
        all_finite = facts.nan + facts.inf == bad_before  # no NaN/Inf in `raw`
        for block, count in blocks_of(raw, blocks, per_row):
            self._add_sample(block, count, width, zero_bits, all_finite)

    def _add_sample(
        self, raw: bytes | memoryview, rows: int, width: int, zero_bits: bool, all_finite: bool
    ) -> None:
        """The moments and the digest of the first rows of one block."""
        keep = min(rows, -(-MOMENT_VALUES // max(width, 1)))
        if not keep:
            return
        part = raw[: keep * (len(raw) // rows)] if keep < rows else raw
        self._crc = zlib.crc32(part, self._crc)
        step = self.chunk_width
        chunks = width // step if step and width % step == 0 else 0  # `fc` aux chunks
        if chunks and not self._chunk_moments:
            self._chunk_moments = [Moments() for _ in range(chunks)]
        if zero_bits:
            self._moments.add_zeros(keep * width)
            for moments in self._chunk_moments:
                moments.add_zeros(keep * width // len(self._chunk_moments))
            return
        values = decode_float(part, self.facts.dtype)
        self._moments.add(values, all_finite)
        if chunks:
            grid = values.reshape(keep, chunks, width // chunks)
            for k, moments in enumerate(self._chunk_moments):
                moments.add(grid[:, k, :].ravel(), all_finite)

    def _add_bits(
        self,
        raw: bytes | memoryview,
        rows: int,
        width: int,
        ieee: tuple[type[np.signedinteger], int, int, int],
    ) -> bool:
        """The exact signatures, on the stored bits; whether every bit of `raw` is 0."""
        facts = self.facts
        view, mask, exponent, one = ieee
        sign = mask + 1
        bits = np.frombuffer(raw, dtype=np.dtype(view).newbyteorder("<")).reshape(rows, width)
        if not bits.size:
            return False
        high, unsigned_high = _highs(bits, view)
        if not unsigned_high:  # every bit pattern is 0 (+0.0): nothing else to look at
            facts.all_one = False
            if width > 1:
                facts.constant_rows += rows
            if self.chunk_width:
                self._add_chunks(bits, None)
            return True
        top = max(high, unsigned_high - sign if unsigned_high >= sign else 0)
        if top >= exponent:  # NaN or Inf somewhere: count them on the magnitudes
            nan, inf, top = _non_finite(bits, view(mask), exponent)
            facts.nan += nan
            facts.inf += inf
            facts.all_zero = False
        if top:
            facts.all_zero = False
            scalar = np.array([top], dtype=view).tobytes()
            facts.max_abs = max(facts.max_abs, float(decode_float(scalar, facts.dtype)[0]))
        if facts.all_one:
            facts.all_one = high == one and unsigned_high == one and int(bits.min()) == one
        if width > 1:
            facts.constant_rows += _constant_rows(bits)
        if self.chunk_width:
            self._add_chunks(bits, view(mask))
        return False

    def _add_decoded(self, raw: bytes | memoryview, rows: int, width: int) -> None:
        facts = self.facts
        block = decode_float(raw, facts.dtype).reshape(rows, width)
        finite_mask = np.isfinite(block)
        finite = block[finite_mask]
        nan = int(np.isnan(block).sum())
        facts.nan += nan
        facts.inf += block.size - finite.size - nan
        if np.count_nonzero(block):
            facts.all_zero = False
        if facts.all_one:
            facts.all_one = bool((block == 1).all())
        if finite.size:
            facts.max_abs = max(facts.max_abs, float(np.abs(finite).max()))
        if width > 1:
            facts.constant_rows += _constant_rows(block)
        if self.chunk_width:
            self._add_chunks(block, None)

    def _add_chunks(self, block: npt.NDArray[np.generic], mask: np.generic | None) -> None:
        """The `fc` aux chunks' signatures of `block` (stored bits with the magnitude
        `mask`, or decoded values when `mask` is None)."""
        width = self.chunk_width or 1
        count = block.shape[1] // width
        if not self.facts.chunks:
            self.facts.chunks = [ChunkFacts(k) for k in range(count)]
            self._chunk_same = [[True] * count for _ in range(count)]
        parts = [block[:, k * width : (k + 1) * width] for k in range(count)]
        for k, part in enumerate(parts):
            chunk = self.facts.chunks[k]
            chunk.rows += part.shape[0]
            chunk.values += part.size
            if chunk.all_zero and np.any(part if mask is None else np.bitwise_and(part, mask)):
                chunk.all_zero = False
            chunk.constant_rows += _constant_rows(part)
            for j in range(k):
                if self._chunk_same[k][j] and not _equal(part, parts[j]):
                    self._chunk_same[k][j] = False

    def finish(self) -> TensorFacts:
        """The facts, with moments and the content digest filled in."""
        facts = self.facts
        facts.mean, facts.std, facts.kurtosis = self._moments.result()
        facts.digest = f"{self._crc:08x}-{facts.values}"  # of the first rows of each block
        for k, chunk in enumerate(facts.chunks):
            if k < len(self._chunk_moments):
                chunk.mean, chunk.std, chunk.kurtosis = self._chunk_moments[k].result()
            earlier = [j for j in range(k) if self._chunk_same[k][j]]
            chunk.same_as = earlier[0] if earlier and chunk.rows else None
        return facts


# Where NaN/Inf are counted, masked copies are made this many bytes of rows at a time, so
# the memory they take stays bounded whatever the block size.
_COPY_BYTES = 8 * 1024 * 1024


def _non_finite(
    bits: npt.NDArray[np.signedinteger], mask: np.signedinteger, exponent: int
) -> tuple[int, int, int]:
    """(NaN count, Inf count, largest finite magnitude's bits) of the (rows, width) `bits`."""
    nan = inf = top = 0
    step = max(1, _COPY_BYTES // max(1, bits.shape[1] * bits.itemsize))
    for start in range(0, bits.shape[0], step):
        magnitude = bits[start : start + step] & mask
        bad = magnitude >= exponent
        infinite = int(np.count_nonzero(magnitude == exponent))
        inf += infinite
        nan += int(np.count_nonzero(bad)) - infinite
        finite = magnitude[~bad]
        if finite.size:
            top = max(top, int(finite.max()))
    return nan, inf, top


def blocks_of(
    raw: bytes | memoryview, blocks: Sequence[int], per_row: int
) -> Iterator[tuple[bytes | memoryview, int]]:
    """(bytes, rows) of each block of `raw` (no copy; a slice is released once used)."""
    if len(blocks) == 1:
        yield raw, blocks[0]
        return
    with memoryview(raw) as whole:
        at = 0
        for count in blocks:
            with whole[at : at + count * per_row] as block:
                yield block, count
            at += count * per_row


# The two max reductions of `_highs` run over pieces of about this many bytes, so the second
# reads the piece from the CPU cache instead of from memory (a quarter less time per block).
_PIECE_BYTES = 512 * 1024


def _highs(bits: npt.NDArray[np.signedinteger], view: type[np.signedinteger]) -> tuple[int, int]:
    """(largest value, largest value seen as unsigned) of the non-empty `bits`.

    A large block is split between :func:`reduce_threads` threads (numpy releases the GIL
    while it reduces, and the maxima combine in any order, so the answer is the same)."""
    flat = bits.reshape(-1)
    threads = reduce_threads()
    if threads < 2 or flat.nbytes < _PARALLEL_BYTES:
        return _highs_of(flat, view)
    step = -(-flat.size // threads)
    parts = [flat[k : k + step] for k in range(0, flat.size, step)]
    results = list(_pool().map(lambda part: _highs_of(part, view), parts))
    return max(r[0] for r in results), max(r[1] for r in results)


def _highs_of(flat: npt.NDArray[np.signedinteger], view: type[np.signedinteger]) -> tuple[int, int]:
    unsigned = np.dtype(view).str.replace("i", "u")
    step = max(1, _PIECE_BYTES // flat.itemsize)
    high = unsigned_high = None
    for start in range(0, flat.size, step):
        piece = flat[start : start + step]
        h, u = int(piece.max()), int(piece.view(unsigned).max())
        high = h if high is None else max(high, h)
        unsigned_high = u if unsigned_high is None else max(unsigned_high, u)
    assert high is not None and unsigned_high is not None
    return high, unsigned_high


# Blocks at least this large are reduced in several threads (full mode hands over up to 32 MB;
# below 2 MB the threads' hand-off costs about what they save).
_PARALLEL_BYTES = 2 * 1024 * 1024
# At most this many threads: the reduction is bound by memory bandwidth, which two or three
# cores already saturate on common machines.
_MAX_REDUCE_THREADS = 4
_POOL: list[ThreadPoolExecutor] = []


def reduce_threads() -> int:
    """How many threads reduce a large block: the CPUs this process may run on, at most
    :data:`_MAX_REDUCE_THREADS`; `DRAFTFIT_VALUE_THREADS` overrides it (1: no threads)."""
    override = os.environ.get("DRAFTFIT_VALUE_THREADS", "")
    if override.isdigit() and int(override) >= 1:
        return min(int(override), _MAX_REDUCE_THREADS)
    available = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(available or 1, _MAX_REDUCE_THREADS))


def _pool() -> ThreadPoolExecutor:
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(reduce_threads(), thread_name_prefix="draftfit-values"))
    return _POOL[0]


def _constant_rows(bits: npt.NDArray[np.generic]) -> int:
    """Rows whose values are all equal: the first 8 columns rule almost every row out, only
    the rows left are compared in full (same answer, a fraction of the work)."""
    candidates = np.flatnonzero((bits[:, :8] == bits[:, :1]).all(axis=1))
    if not candidates.size:
        return 0
    rows = bits[candidates]
    return int((rows == rows[:, :1]).all(axis=1).sum())


def _equal(a: npt.NDArray[np.generic], b: npt.NDArray[np.generic]) -> bool:
    """`np.array_equal`, settled on the first row when that already differs (as it does
    for all but copied chunks)."""
    return np.array_equal(a[:1], b[:1]) and np.array_equal(a, b)


class ComparisonAccumulator:
    """Accumulates a :class:`Comparison` of draft rows with the target's same rows."""

    def __init__(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self._cosine_sum = 0.0

    def add_raw(
        self,
        first_row: int,
        rows: int,
        width: int,
        draft: bytes | memoryview,
        draft_dtype: str,
        target: bytes | memoryview,
        target_dtype: str,
    ) -> None:
        """Fold in rows given as stored bytes. Identical bytes of one IEEE dtype are rows
        `add` would find matching (a NaN matches a NaN at the same place, and such a row's
        cosine counts as 1 there too), so neither side is decoded."""
        ieee = _IEEE.get(draft_dtype)
        if ieee is not None and draft_dtype == target_dtype and len(draft) == len(target):
            view = np.dtype(ieee[0]).newbyteorder("<")
            if np.array_equal(np.frombuffer(draft, dtype=view), np.frombuffer(target, dtype=view)):
                self.comparison.rows_matched += rows
                self._cosine_sum += float(rows)
                return
        self.add(
            first_row,
            decode_float(draft, draft_dtype).reshape(rows, width),
            decode_float(target, target_dtype).reshape(rows, width),
        )

    def add(self, first_row: int, draft: Block, target: Block) -> None:
        c = self.comparison
        equal = (draft == target).all(axis=1)
        if equal.all():  # the common case, a frozen copy: one comparison pass
            c.rows_matched += int(equal.size)
            self._cosine_sum += float(equal.size)
            return
        c.rows_matched += int(equal.sum())
        self._cosine_sum += float(equal.sum())
        rows = np.flatnonzero(~equal)
        d, t = draft[rows], target[rows]  # float32 (float64 for F64): exact for 16-bit values
        diff = np.abs(d - t)
        same = (diff <= MATCH_RTOL * np.abs(t) + MATCH_ATOL) | (np.isnan(d) & np.isnan(t))
        row_match = same.all(axis=1)
        c.rows_matched += int(row_match.sum())
        finite = diff[np.isfinite(diff)]
        if finite.size:
            c.max_diff = max(c.max_diff, float(finite.max()))
        if c.first_mismatch is None and not row_match.all():
            c.first_mismatch = first_row + int(rows[int(np.argmin(row_match))])
        norms = np.linalg.norm(d, axis=1) * np.linalg.norm(t, axis=1)
        dots = np.einsum("ij,ij->i", d, t)
        cos = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 1.0)
        self._cosine_sum += float(np.nansum(cos))

    def finish(self) -> Comparison:
        c = self.comparison
        if c.rows_compared:
            c.mean_cosine = self._cosine_sum / c.rows_compared
        return c
