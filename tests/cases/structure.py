"""Rule cases — DF0xx: the checkpoint's files and their structure (damage found while reading)."""

from __future__ import annotations

import os
from pathlib import Path

from tests import factory as f
from tests.cases.base import Builder, _edit, _index, _sharded, _write_index, case


def _truncate(path: Path) -> None:
    shard = path / "model.safetensors"
    os.truncate(shard, shard.stat().st_size - 100)


case("truncated-shard", {"DF002"}, {"DF003"}, verdict="incompatible")(_edit(f.specforge, _truncate))


def _replace_weights(header, data: bytes = b"", length: int | None = None):
    def edit(path: Path) -> None:
        f.raw_safetensors(path / "model.safetensors", header, data, length)

    return edit


case("header-length-beyond-file", {"DF003"}, {"DF002"})(
    _edit(f.specforge, _replace_weights({"a": 1}, b"", 10**6))
)
case("header-not-object", {"DF004"}, {"DF003"})(_edit(f.specforge, _replace_weights([1, 2])))
case("invalid-entry", {"DF005"}, {"DF004"})(
    _edit(
        f.specforge,
        _replace_weights(
            {"fc.weight": {"dtype": "BF16", "shape": "x", "data_offsets": [0, 2]}}, b"\0\0"
        ),
    )
)
case("unknown-dtype", {"DF006"}, {"DF005"})(
    _edit(
        f.specforge,
        _replace_weights(
            {"fc.weight": {"dtype": "BFLOAT16", "shape": [1], "data_offsets": [0, 2]}}, b"\0\0"
        ),
    )
)
case("offsets-inverted", {"DF007"}, {"DF008"})(
    _edit(
        f.specforge,
        _replace_weights(
            {"fc.weight": {"dtype": "BF16", "shape": [1], "data_offsets": [2, 0]}}, b"\0\0"
        ),
    )
)
case("offsets-overlap", {"DF008"}, {"DF007"})(
    _edit(
        f.specforge,
        _replace_weights(
            {
                "a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
                "b": {"dtype": "BF16", "shape": [2], "data_offsets": [2, 6]},
            },
            b"\0" * 6,
        ),
    )
)
case("offsets-gap", {"DF009"}, {"DF008"})(
    _edit(
        f.specforge,
        _replace_weights({"a": {"dtype": "BF16", "shape": [1], "data_offsets": [2, 4]}}, b"\0" * 4),
    )
)
case("byte-size-mismatch", {"DF010"}, {"DF009"})(
    _edit(
        f.specforge,
        _replace_weights({"a": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 4]}}, b"\0" * 4),
    )
)


def _delete_last_shard(path: Path) -> None:
    (path / "model-00003-of-00003.safetensors").unlink()


case("index-missing-shard", {"DF011"}, {"DF012", "DF013"}, verdict="incompatible")(
    _sharded(_delete_last_shard)
)


def _misroute(path: Path) -> None:
    index = _index(path)
    index["weight_map"]["t2d"] = "model-00001-of-00003.safetensors"
    _write_index(path, index)


case("index-tensor-in-other-shard", {"DF012"}, {"DF011"}, verdict="compatible")(_sharded(_misroute))


def _unlist(path: Path) -> None:
    index = _index(path)
    del index["weight_map"]["norm.weight"]
    _write_index(path, index)


case("tensor-not-in-index", {"DF014"}, {"DF012", "DF205"}, verdict="compatible")(_sharded(_unlist))


def _bad_index(path: Path) -> None:
    (path / "model.safetensors.index.json").write_text("{not json")


case("index-not-json", {"DF015"}, {"DF011"})(_sharded(_bad_index))


def _duplicate(value: float) -> Builder:
    def build(tmp: Path) -> tuple[Path, Path | None]:
        draft = f.specforge()
        path = draft.write(tmp / "draft")
        copy = {"norm.weight": f.Tensor("BF16", (f.H,), f.norm_bytes(f.H, value))}
        f.write_checkpoint(tmp / "extra", None, copy)
        (tmp / "extra" / "model.safetensors").rename(path / "extra.safetensors")
        return path, f.llama_target(tmp / "target")

    return build


case("duplicate-tensor-differs", {"DF013"}, {"DF011"}, verdict="degraded")(_duplicate(0.25))
case("duplicate-tensor-identical", set(), {"DF013"}, verdict="compatible")(_duplicate(0.5))


def _no_config(path: Path) -> None:
    (path / "config.json").unlink()


case("missing-config", {"DF016"}, {"DF017", "DF113"}, verdict="incompatible")(
    _edit(f.specforge, _no_config)
)


def _bad_config(path: Path) -> None:
    (path / "config.json").write_text('{"architectures": ["x"],}')


case("config-not-json", {"DF017"}, {"DF016"})(_edit(f.specforge, _bad_config))


def _config_list(path: Path) -> None:
    (path / "config.json").write_text("[]")


case("config-not-object", {"DF017"}, {"DF016"})(_edit(f.specforge, _config_list))


def _add_bin(path: Path) -> None:
    (path / "pytorch_model.bin").write_bytes(b"PK\x03\x04 stale")


case("mixed-formats", {"DF018"}, {"DF020"}, verdict="compatible")(_edit(f.specforge, _add_bin))


def _no_weights(path: Path) -> None:
    (path / "model.safetensors").unlink()


case("no-weights", {"DF021"}, {"DF018"}, verdict="incompatible")(_edit(f.specforge, _no_weights))


def _config_nesting_bomb(path: Path) -> None:
    (path / "config.json").write_text('{"architectures": ' + "[" * 5000 + "]" * 5000 + "}")


case("config-nesting-bomb", {"DF022"}, {"DF017", "DF023"}, verdict="incompatible")(
    _edit(f.specforge, _config_nesting_bomb)
)


def _duplicate_config_key(path: Path) -> None:
    text = (path / "config.json").read_text()
    (path / "config.json").write_text('{"model_type": "llama", ' + text.lstrip()[1:])


case("duplicate-config-key", {"DF023"}, {"DF022", "DF017"})(
    _edit(f.specforge, _duplicate_config_key)
)
