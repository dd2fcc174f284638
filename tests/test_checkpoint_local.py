"""The directory reader: which weight files count, shard indexes, and usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.checkpoint import load_checkpoint
from draftfit.errors import CheckpointNotFoundError
from tests import factory as f


def test_sharded_safetensors_are_read_through_the_index(tmp_path: Path) -> None:
    draft = f.specforge()
    path = draft.write(tmp_path / "d", shards=3)
    checkpoint = load_checkpoint(path)
    assert checkpoint.damage == []
    assert checkpoint.weight_format == "safetensors"
    assert len(checkpoint.weight_files) == 3
    assert set(checkpoint.tensors) == set(draft.tensors)


def test_sharded_bin_is_read_through_its_index(tmp_path: Path) -> None:
    from tests.torchbin_factory import simple, write_torch_zip

    path = tmp_path / "d"
    path.mkdir()
    (path / "config.json").write_text(json.dumps(f.eagle1().config))
    tensors = list(f.eagle1().tensors.items())
    weight_map = {}
    for i, chunk in enumerate((tensors[:5], tensors[5:])):
        name = f"pytorch_model-0000{i + 1}-of-00002.bin"
        pairs = [
            simple(
                n, t.dtype, t.shape, bytes(t.shape[0] * (t.shape[1] if len(t.shape) > 1 else 1) * 2)
            )
            for n, t in chunk
        ]
        write_torch_zip(path / name, [p[0] for p in pairs], [p[1] for p in pairs])
        weight_map.update({n: name for n, _ in chunk})
    (path / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
    checkpoint = load_checkpoint(path)
    assert checkpoint.damage == []
    assert checkpoint.weight_format == "bin"
    assert set(checkpoint.tensors) == {n for n, _ in tensors}
    assert checkpoint.tensors["fc.weight"].shape == (f.H, 2 * f.H)


def test_safetensors_win_over_bin(tmp_path: Path) -> None:
    path = f.specforge().write(tmp_path / "d")
    (path / "pytorch_model.bin").write_bytes(b"stale")
    checkpoint = load_checkpoint(path)
    assert checkpoint.weight_format == "safetensors"
    assert checkpoint.ignored_weight_files == ["pytorch_model.bin"]
    assert [d.kind for d in checkpoint.damage] == ["mixed-weight-formats"]


def test_training_state_files_are_not_weights(tmp_path: Path) -> None:
    path = f.specforge().write(tmp_path / "d")
    (path / "training_args.bin").write_bytes(b"not weights")
    assert load_checkpoint(path).damage == []


def test_config_json_path_is_accepted(tmp_path: Path) -> None:
    path = f.specforge().write(tmp_path / "d")
    assert load_checkpoint(path / "config.json").root == path


def test_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointNotFoundError):
        load_checkpoint(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CheckpointNotFoundError):
        load_checkpoint(tmp_path / "file")
