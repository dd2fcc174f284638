"""The largest stored bit patterns of a block are the same however many threads reduce it."""

from __future__ import annotations

import numpy as np
import pytest

from draftfit.values import stats


@pytest.mark.parametrize("threads", ["1", "2", "3", "4"])
def test_highs_do_not_depend_on_the_thread_count(
    threads: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(0, 0.02, size=3 * 1024 * 1024).astype(np.float32)  # 12 MB
    values[1_234_567] = np.inf
    values[2_345_678] = -3.5
    bits = values.view(np.int32).reshape(-1, 1024)
    assert bits.nbytes >= stats._PARALLEL_BYTES
    monkeypatch.setenv("DRAFTFIT_VALUE_THREADS", threads)
    monkeypatch.setattr(stats, "_POOL", [])
    high, unsigned_high = stats._highs(bits, np.int32)
    flat = bits.reshape(-1)
    assert high == int(flat.max())
    assert unsigned_high == int(flat.view(np.uint32).max())
    assert stats.reduce_threads() == int(threads)
