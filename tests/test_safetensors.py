"""The header reader and writer, against the `safetensors` library and on damaged files."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from draftfit.checkpoint.safetensors import (
    TensorToWrite,
    build_header,
    read_safetensors_header,
    write_safetensors,
)
from tests.factory import raw_safetensors


def test_reader_matches_safetensors_library(tmp_path: Path) -> None:
    arrays = {
        "a": np.arange(12, dtype=np.float32).reshape(3, 4),
        "b": np.array([1, -2, 3], dtype=np.int64),
        "c": np.array([True, False, True, True]),
        "d": np.zeros((2, 0), dtype=np.float16),
    }
    path = tmp_path / "lib.safetensors"
    save_file(arrays, str(path), metadata={"format": "np"})
    result = read_safetensors_header(path, "lib.safetensors")
    assert result.damage == []
    assert result.metadata == {"format": "np"}
    assert {n: (t.dtype, t.shape) for n, t in result.tensors.items()} == {
        "a": ("F32", (3, 4)),
        "b": ("I64", (3,)),
        "c": ("BOOL", (4,)),
        "d": ("F16", (2, 0)),
    }
    raw = path.read_bytes()
    for name, array in arrays.items():
        start, end = result.tensors[name].byte_range
        assert raw[start:end] == array.tobytes()


def test_writer_output_loads_in_safetensors_library(tmp_path: Path) -> None:
    values = np.arange(6, dtype="<i8")
    path = tmp_path / "ours.safetensors"
    write_safetensors(
        path,
        [
            TensorToWrite("x", "I64", (6,), values.tobytes()),
            TensorToWrite("hole", "F32", (2, 3)),
        ],
        metadata={"k": "v"},
    )
    loaded = load_file(str(path))
    assert np.array_equal(loaded["x"], values)
    assert np.array_equal(loaded["hole"], np.zeros((2, 3), dtype=np.float32))
    assert read_safetensors_header(path, "ours.safetensors").damage == []


def test_writer_header_is_padded_to_eight_bytes() -> None:
    prefix, layout = build_header([("a", "BF16", (3,)), ("b", "I64", (2,))])
    (length,) = struct.unpack("<Q", prefix[:8])
    assert length % 8 == 0 and len(prefix) == 8 + length
    assert layout == [("a", 0, 6), ("b", 6, 22)]


def test_sparse_write_costs_no_data_blocks(tmp_path: Path) -> None:
    path = tmp_path / "big.safetensors"
    size = write_safetensors(path, [TensorToWrite("w", "BF16", (16384, 16384))])
    assert path.stat().st_size == size > 512 * 1024 * 1024
    assert path.stat().st_blocks * 512 < 1024 * 1024  # holes, not data
    assert read_safetensors_header(path, "big.safetensors").damage == []


def _kinds(path: Path) -> list[str]:
    return [d.kind for d in read_safetensors_header(path, path.name).damage]


@pytest.mark.parametrize(
    ("header", "data", "length", "kind"),
    [
        (
            {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
            b"\0" * 4,
            None,
            "truncated-file",
        ),
        (
            {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}},
            b"\0" * 8,
            10**9,
            "header-length-out-of-range",
        ),
        ([1, 2, 3], b"", None, "header-not-json-object"),
        (b"\xff\xfe not json", b"", None, "header-not-json-object"),
        (
            {"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}},
            b"\0" * 4,
            None,
            "invalid-tensor-entry",
        ),
        (
            {"a": {"dtype": "BFLOAT16", "shape": [2], "data_offsets": [0, 4]}},
            b"\0" * 4,
            None,
            "unknown-dtype",
        ),
        (
            {"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}},
            b"\0" * 8,
            None,
            "data-offsets-out-of-range",
        ),
        (
            {
                "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
            },
            b"\0" * 12,
            None,
            "data-offsets-overlap",
        ),
        (
            {"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}},
            b"\0" * 8,
            None,
            "data-section-not-covered",
        ),
        (
            {"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}},
            b"\0" * 8,
            None,
            "data-section-not-covered",
        ),
        (
            {"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}},
            b"\0" * 8,
            None,
            "tensor-byte-size-mismatch",
        ),
    ],
)
def test_damage_is_reported_not_raised(tmp_path: Path, header, data, length, kind) -> None:
    path = raw_safetensors(tmp_path / "bad.safetensors", header, data, length)
    assert kind in _kinds(path)


def test_file_shorter_than_prefix(tmp_path: Path) -> None:
    path = tmp_path / "tiny.safetensors"
    path.write_bytes(b"\x01\x02")
    assert _kinds(path) == ["truncated-file"]


def test_offsets_past_end_with_gap_are_out_of_range(tmp_path: Path) -> None:
    header = {"a": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}}
    path = raw_safetensors(tmp_path / "bad.safetensors", header, b"\0" * 4)
    kinds = _kinds(path)
    assert "data-offsets-out-of-range" in kinds and "truncated-file" not in kinds


def test_random_bytes_never_raise(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    for i in range(200):
        blob = rng.integers(0, 256, size=int(rng.integers(0, 64)), dtype=np.uint8).tobytes()
        if i % 2:  # a plausible length prefix followed by noise
            blob = struct.pack("<Q", len(blob)) + blob
        path = tmp_path / f"r{i}.safetensors"
        path.write_bytes(blob)
        read_safetensors_header(path, path.name)


def test_metadata_must_map_strings(tmp_path: Path) -> None:
    header = {"__metadata__": {"x": 1}, "a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}
    path = raw_safetensors(tmp_path / "m.safetensors", json.dumps(header).encode(), b"\0")
    assert _kinds(path) == ["invalid-tensor-entry"]


def test_a_tensor_name_over_the_limit_is_a_reader_limit_and_its_bytes_stay_covered(
    tmp_path: Path,
) -> None:
    """A name longer than any real one is not read (every release would match, rename and
    quote it), and its bytes are not reported a second time as a gap."""
    header = {
        "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
        "n" * 5000: {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
    }
    path = raw_safetensors(tmp_path / "long.safetensors", header, b"\0" * 8)
    result = read_safetensors_header(path, path.name)
    assert list(result.tensors) == ["a"]
    assert [d.rule.name for d in result.damage] == ["reader-limit-exceeded"]
    assert "5,000 characters" in result.damage[0].message
    assert len(result.damage[0].message) < 300
