"""Running statistics over row blocks of one tensor (numpy), bounded in memory.

Blocks arrive as 2-D float arrays of whole rows; everything kept between blocks is a handful
of numbers, so full mode's memory does not grow with the tensor.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import numpy.typing as npt

from draftfit.values.facts import ChunkFacts, Comparison, TensorFacts

Block = npt.NDArray[np.floating]

# Two values are the same weight when they differ by at most half a bfloat16 unit in the
# last place (2^-8 relative): a frozen copy of a 16-bit embedding, saved through bf16, f16
# or f32, never differs by more; two independently trained values almost always do.
MATCH_RTOL = 2.0**-8
# ... plus an absolute slack below the smallest bf16/f16 normal, so exact zeros and
# subnormals flushed to zero still count as the same value.
MATCH_ATOL = 1e-12


class TensorAccumulator:
    """Accumulates a :class:`TensorFacts` over row blocks."""

    def __init__(self, facts: TensorFacts, chunk_width: int | None = None) -> None:
        self.facts = facts
        self.chunk_width = chunk_width
        self._s1 = self._s2 = self._s3 = self._s4 = 0.0
        self._finite = 0
        self._hash = hashlib.blake2b(digest_size=16)
        self._chunk_sq: list[float] = []
        self._chunk_same: list[list[bool]] = []

    def add(self, block: Block, raw: bytes) -> None:
        """Fold in `block` (rows × width) whose stored bytes are `raw`."""
        facts = self.facts
        self._hash.update(raw)
        facts.rows += block.shape[0]
        facts.values += block.size
        finite_mask = np.isfinite(block)
        finite_count = int(finite_mask.sum())
        if finite_count != block.size:
            nan = int(np.isnan(block).sum())
            facts.nan += nan
            facts.inf += block.size - finite_count - nan
            finite = block[finite_mask]
        else:
            finite = block.ravel()
        facts.zeros += int(np.count_nonzero(finite == 0))
        facts.ones += int(np.count_nonzero(finite == 1))
        if block.ndim == 2 and block.shape[1] > 1:
            facts.constant_rows += int((block == block[:, :1]).all(axis=1).sum())
        if finite.size:
            wide = finite.astype(np.float64)
            sq = wide * wide
            self._s1 += float(wide.sum())
            self._s2 += float(sq.sum())
            self._s3 += float((sq * wide).sum())
            self._s4 += float((sq * sq).sum())
            self._finite += finite.size
            facts.max_abs = max(facts.max_abs, float(np.abs(finite).max()))
        if self.chunk_width:
            self._add_chunks(block)

    def _add_chunks(self, block: Block) -> None:
        width = self.chunk_width or 1
        count = block.shape[1] // width
        if not self.facts.chunks:
            self.facts.chunks = [ChunkFacts(k) for k in range(count)]
            self._chunk_sq = [0.0] * count
            self._chunk_same = [[True] * count for _ in range(count)]
        parts = [block[:, k * width : (k + 1) * width] for k in range(count)]
        for k, part in enumerate(parts):
            chunk = self.facts.chunks[k]
            chunk.rows += part.shape[0]
            chunk.values += part.size
            chunk.zeros += int(np.count_nonzero(part == 0))
            chunk.constant_rows += int((part == part[:, :1]).all(axis=1).sum())
            self._chunk_sq[k] += float(np.square(part, dtype=np.float64).sum())
            for j in range(k):
                if self._chunk_same[k][j] and not np.array_equal(part, parts[j]):
                    self._chunk_same[k][j] = False

    def finish(self) -> TensorFacts:
        """The facts, with moments and the content digest filled in."""
        facts = self.facts
        n = self._finite
        if n:
            mean = self._s1 / n
            var = max(self._s2 / n - mean * mean, 0.0)
            facts.mean, facts.std = mean, math.sqrt(var)
            if var > 0:
                m4 = (
                    self._s4 / n
                    - 4 * mean * self._s3 / n
                    + 6 * mean * mean * self._s2 / n
                    - 3 * mean**4
                )
                facts.kurtosis = m4 / (var * var)
        facts.digest = self._hash.hexdigest()
        for k, chunk in enumerate(facts.chunks):
            chunk.std = math.sqrt(self._chunk_sq[k] / chunk.values) if chunk.values else 0.0
            earlier = [j for j in range(k) if self._chunk_same[k][j]]
            chunk.same_as = earlier[0] if earlier and chunk.rows else None
        return facts


class ComparisonAccumulator:
    """Accumulates a :class:`Comparison` of draft rows with the target's same rows."""

    def __init__(self, comparison: Comparison) -> None:
        self.comparison = comparison
        self._cosine_sum = 0.0

    def add(self, first_row: int, draft: Block, target: Block) -> None:
        c = self.comparison
        d = draft.astype(np.float64)
        t = target.astype(np.float64)
        diff = np.abs(d - t)
        same = (diff <= MATCH_RTOL * np.abs(t) + MATCH_ATOL) | (np.isnan(d) & np.isnan(t))
        row_match = same.all(axis=1)
        c.rows_matched += int(row_match.sum())
        finite = diff[np.isfinite(diff)]
        if finite.size:
            c.max_diff = max(c.max_diff, float(finite.max()))
        if c.first_mismatch is None and not row_match.all():
            c.first_mismatch = first_row + int(np.argmin(row_match))
        norms = np.linalg.norm(d, axis=1) * np.linalg.norm(t, axis=1)
        dots = np.einsum("ij,ij->i", d, t)
        cos = np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 1.0)
        self._cosine_sum += float(np.nansum(cos))

    def finish(self) -> Comparison:
        c = self.comparison
        if c.rows_compared:
            c.mean_cosine = self._cosine_sum / c.rows_compared
        return c
