"""Full mode maps several blocks of a local file at once where they are in the page cache,
and takes the exact signatures over the whole window; the value facts must be the same as
block by block, whatever lies in the blocks (NaN, infinities, zero blocks, constant rows,
copied `fc` chunks, 8-bit floats), and the same when the file is read from the disk."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from draftfit.draft.description import describe
from draftfit.origins.reference import open_checkpoint
from draftfit.values import FULL, plan, scan
from draftfit.values.facts import ValueFacts
from tests import factory as f
from tests.factory import H, Tensor


def _draft(root: Path) -> Path:
    draft = f.fill(f.specforge(), stream=60)
    fc = f.weights("trained", (H, 3 * H), 61)
    fc[5, 7] = np.nan  # one block holds a NaN (twice: chunk 2 copies it)
    fc[20:30] = 0.0  # zero rows across a block boundary
    fc[:, 2 * H :] = fc[:, :H]  # chunk 2 copies chunk 0
    draft.tensors["fc.weight"] = Tensor("BF16", fc.shape, f.bf16_bytes(fc))
    q = f.weights("trained", draft.tensors["midlayer.self_attn.q_proj.weight"].shape, 62)
    q[40, 3] = -np.inf
    q[48:64] = 0.0  # whole blocks of zeros at the end
    draft.tensors["midlayer.self_attn.q_proj.weight"] = Tensor(
        "F32", q.shape, q.astype("<f4").tobytes()
    )
    up = f.weights("trained", draft.tensors["midlayer.mlp.up_proj.weight"].shape, 63)
    up[10:12] = 0.25  # constant rows
    draft.tensors["midlayer.mlp.up_proj.weight"] = Tensor(
        "F16", up.shape, up.astype("<f2").tobytes()
    )
    codes = bytearray(np.random.default_rng(64).integers(0, 0x7F, H * H, dtype=np.uint8))
    codes[100] = 0x7F  # an E4M3 NaN: this dtype is decoded block by block
    draft.tensors["midlayer.self_attn.o_proj.weight"] = Tensor("F8_E4M3", (H, H), bytes(codes))
    return draft.write(root / "draft")


def _facts(path: Path) -> ValueFacts:
    checkpoint = open_checkpoint(path)
    return scan.scan_values(checkpoint, describe(checkpoint), None, FULL)


def test_windows_give_the_facts_of_one_block_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _draft(tmp_path)
    monkeypatch.setattr(plan, "FULL_CHUNK_BYTES", 256)  # blocks of a few rows
    fc_plan = plan.full_rows(H, 3 * H * 2)
    assert len(fc_plan) > 8 and len(scan._windows(fc_plan, 3 * H * 2)) == 1
    windowed = _facts(path)
    monkeypatch.setattr(scan, "WINDOW_BYTES", 0)  # every block a window of its own
    assert len(scan._windows(fc_plan, 3 * H * 2)) == len(fc_plan)
    one_by_one = _facts(path)
    assert windowed == one_by_one
    fc = windowed.tensors["fc.weight"]
    assert fc.nan == 2 and fc.constant_rows == 10 and fc.chunks[2].same_as == 0
    tensors = windowed.tensors
    q = tensors["layers.0.self_attn.q_proj.weight"]
    assert q.inf == 1 and q.constant_rows == 16
    assert tensors["layers.0.mlp.up_proj.weight"].constant_rows == 2
    assert tensors["layers.0.self_attn.o_proj.weight"].nan == 1


def test_windows_hold_whole_contiguous_ranges_up_to_the_window_size() -> None:
    ranges = [(0, 4), (4, 8), (8, 12), (20, 24), (24, 28)]
    assert scan._windows(ranges, 1) == [[(0, 4), (4, 8), (8, 12)], [(20, 24), (24, 28)]]
    limit = scan.WINDOW_BYTES
    assert scan._windows([(0, 2), (2, 4)], limit // 2) == [[(0, 2)], [(2, 4)]]
    assert scan._windows([(0, 1), (1, 2)], limit // 2) == [[(0, 1), (1, 2)]]
    assert scan._windows([(0, 1), (1, 2)], limit + 1) == [[(0, 1)], [(1, 2)]]


def _evict(path: Path) -> bool:
    """Drop the file's pages from the page cache; whether they are gone (a file system kept
    in memory keeps them)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        cached = scan._cached(fd, 0, os.fstat(fd).st_size)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the probe may have read some
        return not cached
    finally:
        os.close(fd)


@pytest.mark.skipif(
    not hasattr(os, "RWF_NOWAIT") or not hasattr(os, "posix_fadvise"),
    reason="needs RWF_NOWAIT reads and posix_fadvise (Linux)",
)
def test_the_page_cache_decides_the_maps_not_the_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _draft(tmp_path)
    weights = path / "model.safetensors"
    monkeypatch.setattr(plan, "FULL_CHUNK_BYTES", 256)
    warm = _facts(path)
    fd = os.open(weights, os.O_RDONLY)
    try:
        assert scan._cached(fd, 0, os.fstat(fd).st_size)  # just read
    finally:
        os.close(fd)
    if not _evict(weights):
        pytest.skip("this file system keeps every page in memory")
    assert _facts(path) == warm  # read back from the disk, a range at a time
