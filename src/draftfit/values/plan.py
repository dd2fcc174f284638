"""Which rows of a tensor the value checks read, in either mode.

A tensor is seen as a matrix of rows (its first dimension; trailing dimensions are flattened
into the row; a 1-D tensor is one row). Reads are whole rows, so row statistics (constant
rows, rows that match the target's) never straddle a read. The choice depends only on the
tensor's shape and dtype, never on chance, so two runs, and the draft and the target, read
the same rows.
"""

from __future__ import annotations

from draftfit.checkpoint.dtypes import DTYPE_BITS

# Sampled mode reads at most SAMPLE_ROWS rows per tensor: 256 rows give a row statistic
# (fraction of constant rows, of rows equal to the target's) to better than ±7% at 95%, and
# a moment estimate (std, kurtosis) over ≥ 256 × row-width values, plenty for any real width.
SAMPLE_ROWS = 256
# ... in SAMPLE_GROUPS evenly spaced runs of consecutive rows: 16 ranged reads per tensor
# keep a Hub read to a few round trips while still spanning the whole tensor.
SAMPLE_GROUPS = 16
# ... and at most SAMPLE_BYTES per tensor (wide rows get fewer of them), so a sampled check
# of a 4.7 GB Kimi-K2 draft reads ~10 MB — but never fewer than MIN_SAMPLE_ROWS rows.
SAMPLE_BYTES = 512 * 1024
MIN_SAMPLE_ROWS = 16
# The embedding comparison always reads EMBED_SAMPLE_ROWS rows on both sides: "a few hundred
# rows" decides whether two embeddings are copies (one differing row is enough to tell).
EMBED_SAMPLE_ROWS = 256
# Full mode streams in chunks of at most FULL_CHUNK_BYTES (whole rows, one row at least), so
# peak memory is a few chunks whatever the checkpoint size.
FULL_CHUNK_BYTES = 8 * 1024 * 1024


def rows_and_width(shape: tuple[int, ...]) -> tuple[int, int]:
    """(rows, elements per row) of a tensor seen as a matrix."""
    if not shape:
        return 1, 1
    if len(shape) == 1:
        return 1, shape[0]
    width = 1
    for dim in shape[1:]:
        width *= dim
    return shape[0], width


def row_bytes(dtype: str, shape: tuple[int, ...]) -> int | None:
    """Bytes of one row, or None for a dtype whose rows are not whole bytes."""
    bits = DTYPE_BITS.get(dtype)
    if bits is None or bits % 8:
        return None
    return rows_and_width(shape)[1] * bits // 8


def sampled_rows(rows: int, per_row: int, limit: int | None = None) -> list[tuple[int, int]]:
    """Row ranges `[start, end)` of a sample: every row when few, else evenly spaced runs."""
    want = limit if limit is not None else SAMPLE_ROWS
    if limit is None and per_row > 0:
        want = min(want, max(MIN_SAMPLE_ROWS, SAMPLE_BYTES // per_row))
    if rows <= want:
        return [(0, rows)] if rows else []
    groups = min(SAMPLE_GROUPS, want)
    size = max(1, want // groups)  # never more rows than `want`
    ranges: list[tuple[int, int]] = []
    for g in range(groups):
        start = (g * (rows - size)) // (groups - 1) if groups > 1 else 0
        end = start + size
        if ranges and start <= ranges[-1][1]:
            ranges[-1] = (ranges[-1][0], max(end, ranges[-1][1]))
        else:
            ranges.append((start, end))
    return ranges


def full_rows(rows: int, per_row: int) -> list[tuple[int, int]]:
    """Every row, in chunks of at most FULL_CHUNK_BYTES (at least one row each)."""
    step = max(1, FULL_CHUNK_BYTES // per_row) if per_row > 0 else rows or 1
    return [(start, min(start + step, rows)) for start in range(0, rows, step)]


def split_ranges(ranges: list[tuple[int, int]], per_row: int) -> list[tuple[int, int]]:
    """`ranges` cut so that no piece exceeds FULL_CHUNK_BYTES (whole rows)."""
    out: list[tuple[int, int]] = []
    for start, end in ranges:
        out += [(start + a, start + b) for a, b in full_rows(end - start, per_row)]
    return out


def count_rows(ranges: list[tuple[int, int]]) -> int:
    return sum(end - start for start, end in ranges)
