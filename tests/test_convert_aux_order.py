"""`draftfit convert` lists aux ids written out of order ascending and moves `fc`'s input
blocks with them (DF310): read back byte for byte with a reader of its own, numpy and the
safetensors library; `input_norm` and `fc_norm` follow; a quantized `fc` is left as it is
(and then no recipe is shown); the input is never touched; memory stays bounded."""

from __future__ import annotations

import json
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open

from draftfit.checker import check_path
from draftfit.cli.main import main
from draftfit.commands.recipe import attach_recipes
from draftfit.conversion import convert_path
from draftfit.conversion.write import CHUNK
from tests import factory as f
from tests.test_convert import tree_hash

# ids written [6, 1, 3] (capture-before): ascending [1, 3, 6] takes source blocks 1, 2, 0.
WRITTEN, ASCENDING, BLOCKS = [6, 1, 3], [1, 3, 6], [1, 2, 0]
NUMPY = {"BF16": "<u2", "F16": "<f2", "F32": "<f4"}


def raw_tensor(path: Path, name: str) -> tuple[str, list[int], bytes]:
    """dtype, shape and bytes of `name` in the safetensors file `path`, read directly."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    entry = json.loads(data[8 : 8 + size])[name]
    begin, end = entry["data_offsets"]
    return entry["dtype"], entry["shape"], data[8 + size + begin : 8 + size + end]


def as_array(path: Path, name: str) -> np.ndarray:
    dtype, shape, data = raw_tensor(path, name)
    return np.frombuffer(data, dtype=NUMPY[dtype]).reshape(shape)


def moved(source: np.ndarray, blocks: list[int]) -> np.ndarray:
    """`source` with the blocks of its last dimension in the order `blocks` gives."""
    width = source.shape[-1] // len(blocks)
    return np.concatenate([source[..., b * width : (b + 1) * width] for b in blocks], axis=-1)


def _values(dtype: str, shape: tuple[int, ...], seed: int) -> bytes:
    """Distinct random values of `dtype` (no two columns alike: a wrong move shows)."""
    values = np.random.default_rng(seed).normal(0, 0.05, shape).astype(np.float32)
    if dtype == "BF16":
        return f.bf16_bytes(values)
    return values.astype(NUMPY[dtype]).tobytes()


def _draft(dtype: str = "BF16", *, input_norm: bool = False, fc_norm: bool = False) -> f.Draft:
    draft = f.fill(f.speculators(aux=list(WRITTEN)))
    shape = draft.tensors["fc.weight"].shape
    draft.tensors["fc.weight"] = f.Tensor(dtype, shape, _values(dtype, shape, 1))
    if input_norm:
        draft.config["norm_before_fc"] = True
        draft.add("input_norm.weight", dtype, (shape[1],), _values(dtype, (shape[1],), 2))
    if fc_norm:
        draft.config["fc_norm"] = True
        for k in range(3):
            draft.add(f"fc_norm.{k}.weight", "BF16", (f.H,), _values("BF16", (f.H,), 10 + k))
    return draft


@pytest.mark.parametrize("dtype", sorted(NUMPY))
def test_fc_input_blocks_follow_the_ids_into_ascending_order(tmp_path: Path, dtype: str) -> None:
    draft = _draft(dtype, input_norm=True).write(tmp_path / "in")
    target = f.llama_target(tmp_path / "t")
    before = tree_hash(draft)
    out = tmp_path / "out"
    result = convert_path(draft, "vllm", out, target=target)
    assert tree_hash(draft) == before, "the input was modified"
    assert result.exit_code() == 0, [(x.code, x.message) for x in result.report.findings]
    config = json.loads((out / "config.json").read_text())
    assert config["eagle_aux_hidden_state_layer_ids"] == ASCENDING
    assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [i - 1 for i in ASCENDING]
    source, written = draft / "model.safetensors", out / "model.safetensors"
    for name in ("fc.weight", "input_norm.weight"):
        got = as_array(written, name)
        assert np.array_equal(got, moved(as_array(source, name), BLOCKS)), name
        assert not np.array_equal(got, as_array(source, name))  # something did move
        assert raw_tensor(written, name)[:2] == raw_tensor(source, name)[:2]
    if dtype != "BF16":  # the reference library reads it the same way (numpy has no bf16)
        with safe_open(written, framework="np") as handle:
            assert np.array_equal(handle.get_tensor("fc.weight"), as_array(written, "fc.weight"))
    # every other tensor is byte for byte the input's
    with safe_open(written, framework="np") as handle:
        names = set(handle.keys()) - {"fc.weight", "input_norm.weight"}
    assert {"norm.weight", "d2t", "lm_head.weight"} <= names
    for name in names:
        assert raw_tensor(written, name)[2] == raw_tensor(source, name)[2], name
    assert not any(x.code == "DF310" for x in check_path(out, target=target).findings)


@pytest.mark.parametrize("to", ["sglang", "speculators"])
def test_every_convention_lists_them_ascending(tmp_path: Path, to: str) -> None:
    draft = _draft(fc_norm=True).write(tmp_path / "in", shards=3)
    target = f.llama_target(tmp_path / "t")
    out = tmp_path / "out"
    convert_path(draft, to, out, target=target)
    config = json.loads((out / "config.json").read_text())
    if to == "sglang":
        assert config["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [0, 2, 5]
    else:
        assert config["eagle_aux_hidden_state_layer_ids"] == ASCENDING

    def tensor(folder: Path, name: str) -> np.ndarray:
        owner = next(p for p in sorted(folder.glob("*.safetensors")) if _holds(p, name))
        return as_array(owner, name)

    assert np.array_equal(tensor(out, "fc.weight"), moved(tensor(draft, "fc.weight"), BLOCKS))
    for j, k in enumerate(BLOCKS):  # the per-state norms move as whole tensors
        got, want = tensor(out, f"fc_norm.{j}.weight"), tensor(draft, f"fc_norm.{k}.weight")
        assert np.array_equal(got, want), j


def _holds(path: Path, name: str) -> bool:
    (size,) = struct.unpack("<Q", path.read_bytes()[:8])
    return name in json.loads(path.read_bytes()[8 : 8 + size])


def test_the_plan_and_the_recipe_say_so(tmp_path: Path, capsys) -> None:
    draft = _draft().write(tmp_path / "in")
    target = f.llama_target(tmp_path / "t")
    args = ["convert", str(draft), "--to", "vllm", "--target", str(target), "--dry-run"]
    assert main([*args, "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    fc = next(t for t in plan["tensors"] if t["name"] == "fc.weight")
    assert fc["column_blocks"] == BLOCKS and fc["from"] == "fc.weight"
    reorder = [e for e in plan["edits"] if e["action"] == "reorder-aux-ids"]
    assert len(reorder) == 1 and reorder[0]["applied"] and reorder[0]["safety"] == "safe"
    report = check_path(draft, target=target, engines=["vllm==0.34.0"])
    assert any(x.code == "DF310" for x in report.findings)
    attach_recipes(report)
    (recipe,) = report.recipes or []
    assert recipe.steps and recipe.steps[0].startswith("draftfit convert")
    assert "moves `fc.weight`'s input blocks" in recipe.notes[0] and "DF310" in recipe.notes[0]


@pytest.mark.parametrize("quantize", [f.quantize_packed, f.quantize_fp8])
def test_a_quantized_fc_is_left_as_it_is_and_gets_no_recipe(tmp_path: Path, quantize) -> None:
    draft = quantize(f.speculators(aux=list(WRITTEN))).write(tmp_path / "in")
    target = f.llama_target(tmp_path / "t")
    before = tree_hash(draft)
    out = tmp_path / "out"
    result = convert_path(draft, "vllm", out, target=target)
    assert tree_hash(draft) == before
    pending = [e for e in result.plan.pending if e.target == "fc.weight"]
    assert len(pending) == 1 and "quantized" in pending[0].description
    config = json.loads((out / "config.json").read_text())
    assert config["eagle_aux_hidden_state_layer_ids"] == WRITTEN  # as trained
    assert all(t.column_blocks is None for t in result.plan.tensors)
    report = check_path(draft, target=target, engines=["vllm==0.34.0"])
    attach_recipes(report)
    assert report.recipes == []
    (missing,) = report.no_recipes or []
    assert "DF310" in missing.remaining and missing.reason.startswith("DF310")


@pytest.mark.slow
def test_a_large_fc_is_moved_in_bounded_memory_and_stays_sparse(tmp_path: Path) -> None:
    """A Llama-70B-sized `fc` (8192 × 24576 BF16, 384 MiB), sparse but for a band of
    rows: the writer holds a few rows at a time, and all-zero rows stay holes."""
    hidden = 8192
    draft = f.speculators(aux=list(WRITTEN))
    draft.config["transformer_layer_config"]["hidden_size"] = hidden
    draft.tensors["fc.weight"] = f.Tensor("BF16", (hidden, 3 * hidden))
    path = draft.write(tmp_path / "in")
    weights = path / "model.safetensors"
    (size,) = struct.unpack("<Q", weights.read_bytes()[:8])
    begin = (
        8 + size + json.loads(weights.read_bytes()[8 : 8 + size])["fc.weight"]["data_offsets"][0]
    )
    band = np.random.default_rng(4).integers(0, 2**16, (4, 3 * hidden), dtype=np.uint16)
    with weights.open("r+b") as handle:  # rows 100-103 hold data, the rest is a hole
        handle.seek(begin + 100 * 3 * hidden * 2)
        handle.write(band.astype("<u2").tobytes())
    out = tmp_path / "out"
    tracemalloc.start()
    try:
        convert_path(path, "vllm", out, engines=["vllm==0.34.0"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * CHUNK, peak  # the tensor is 384 MiB
    written = out / "model.safetensors"
    dtype, shape, _ = raw_tensor(written, "fc.weight")
    assert (dtype, shape) == ("BF16", [hidden, 3 * hidden])
    got = as_array(written, "fc.weight")
    assert np.array_equal(got[100:104], moved(band, BLOCKS)) and not got[:100].any()
    allocated = written.stat().st_blocks * 512
    assert allocated < 64 * 1024 * 1024, allocated  # the zero rows were not written
