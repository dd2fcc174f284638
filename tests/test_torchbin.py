"""Tests for the torch-free, execution-free `.bin` reader.

Two sources of files:

* `torchbin_factory` writes zip and legacy checkpoints by emitting pickle opcodes by hand,
  so a test can choose names, dtypes, views, strides, damage and hostile globals;
* `data/torchbin/` holds files written by real `torch.save` (torch 2.14, by a script kept out
  of the repository): a state dict in the zip and in the legacy layout, and a file whose
  pickle calls `os.system` through a custom `__reduce__`. `expected.json` records what torch
  said about each tensor, including its exact bytes in hex.
"""

from __future__ import annotations

import io
import json
import random
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from draftfit.checkpoint.model import Damage, TensorInfo
from draftfit.checkpoint.torchbin import inspect_torch_bin, read_torch_bin
from tests import torchbin_factory as factory

DATA = Path(__file__).parent / "data" / "torchbin"
EXPECTED = json.loads((DATA / "expected.json").read_text())
KINDS = {
    "unreadable-file",
    "truncated-file",
    "invalid-torch-bin",
    "unsafe-pickle-global",
    "reader-limit-exceeded",
}


def kinds(damage: list[Damage]) -> list[str]:
    return [d.kind for d in damage]


def slice_of(path: Path, info: TensorInfo) -> bytes:
    assert info.byte_range is not None
    start, end = info.byte_range
    return path.read_bytes()[start:end]


# --------------------------------------------------------------------------- factory files

WEIGHT = np.arange(24, dtype=np.float32)
IDS = np.array([7, -1, 1 << 40], dtype=np.int64)
FLAGS = np.array([1, 0, 0, 1, 1], dtype=np.uint8)
HALF = np.linspace(-1, 1, 8).astype(np.float16)


def sample() -> tuple[list[factory.Storage], list[factory.Tensor]]:
    storages = [
        factory.Storage("0", "F32", WEIGHT.tobytes()),
        factory.Storage("1", "I64", IDS.tobytes()),
        factory.Storage("2", "BOOL", FLAGS.tobytes()),
        factory.Storage("3", "F16", HALF.tobytes()),
        factory.Storage("4", "BF16", bytes(range(16))),
    ]
    tensors = [
        factory.Tensor("fc.weight", "0", (4, 6)),
        factory.Tensor("fc.row1", "0", (6,), storage_offset=6),  # view into the same storage
        factory.Tensor("fc.weight_t", "0", (6, 4), stride=(1, 6)),  # non-contiguous
        factory.Tensor("fc.block", "0", (2, 3), storage_offset=12, stride=(6, 1)),  # strided
        factory.Tensor("d2t", "1", (3,), rebuild="v1"),
        factory.Tensor("t2d", "2", (5,)),
        factory.Tensor("norm.weight", "3", (2, 4), rebuild="parameter"),
        factory.Tensor("one", "4", (1, 1, 8), stride=(99, 7, 1)),  # size-1 dims: contiguous
        factory.Tensor("empty", "4", (0, 3)),
    ]
    return storages, tensors


def check_sample(path: Path, tensors: dict[str, TensorInfo], offsets: dict[str, int]) -> None:
    data = path.read_bytes()
    expected_meta = {
        "fc.weight": ("F32", (4, 6)),
        "fc.row1": ("F32", (6,)),
        "fc.weight_t": ("F32", (6, 4)),
        "fc.block": ("F32", (2, 3)),
        "d2t": ("I64", (3,)),
        "t2d": ("BOOL", (5,)),
        "norm.weight": ("F16", (2, 4)),
        "one": ("BF16", (1, 1, 8)),
        "empty": ("BF16", (0, 3)),
    }
    assert {n: (t.dtype, t.shape) for n, t in tensors.items()} == expected_meta
    assert all(t.file == path.name for t in tensors.values())
    assert tensors["fc.weight"].byte_range == (offsets["0"], offsets["0"] + 96)
    assert slice_of(path, tensors["fc.weight"]) == WEIGHT.tobytes()
    assert tensors["fc.row1"].byte_range == (offsets["0"] + 24, offsets["0"] + 48)
    assert slice_of(path, tensors["fc.row1"]) == WEIGHT[6:12].tobytes()
    assert tensors["fc.weight_t"].byte_range is None
    assert tensors["fc.block"].byte_range is None
    assert slice_of(path, tensors["d2t"]) == IDS.tobytes()
    assert slice_of(path, tensors["t2d"]) == FLAGS.tobytes()
    assert slice_of(path, tensors["norm.weight"]) == HALF.tobytes()
    assert slice_of(path, tensors["one"]) == bytes(range(16))
    assert tensors["empty"].byte_range == (offsets["4"], offsets["4"])
    assert len(data) >= max(t.byte_range[1] for t in tensors.values() if t.byte_range)


def test_factory_zip(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    offsets = factory.write_torch_zip(path, *sample())
    tensors, damage = read_torch_bin(path, path.name)
    assert damage == []
    check_sample(path, tensors, offsets)
    assert inspect_torch_bin(path, path.name).layout == "zip"


@pytest.mark.parametrize(("align", "zip64"), [(1, False), (64, True), (1, True)])
def test_factory_zip_member_layouts(tmp_path: Path, align: int, zip64: bool) -> None:
    """Offsets come from each local header, whatever padding or zip64 fields it carries."""
    path = tmp_path / "pytorch_model.bin"
    offsets = factory.write_torch_zip(path, *sample(), align=align, zip64=zip64, prefix="archive")
    tensors, damage = read_torch_bin(path, path.name)
    assert damage == []
    check_sample(path, tensors, offsets)


def test_factory_legacy(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    offsets = factory.write_torch_legacy(path, *sample())
    result = inspect_torch_bin(path, path.name)
    assert result.damage == []
    assert result.layout == "legacy"
    check_sample(path, result.tensors, offsets)


@pytest.mark.parametrize("key", ["state_dict", "model"])
@pytest.mark.parametrize("layout", ["zip", "legacy"])
def test_wrapped_state_dict(tmp_path: Path, key: str, layout: str) -> None:
    path = tmp_path / "checkpoint.bin"
    write = factory.write_torch_zip if layout == "zip" else factory.write_torch_legacy
    offsets = write(path, *sample(), wrap_key=key)
    result = inspect_torch_bin(path, path.name)
    assert result.damage == []
    assert result.state_dict_key == key
    check_sample(path, result.tensors, offsets)


def test_plain_state_dict_has_no_wrapper_key(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, *sample())
    assert inspect_torch_bin(path, path.name).state_dict_key is None


def test_non_tensor_values_are_ignored(tmp_path: Path) -> None:
    storage, tensor = factory.simple("w", "F32", (2,), WEIGHT[:2].tobytes())

    def extra(p: factory.Pickle) -> None:
        p.unicode("step").int(1000).unicode("config").value({"lr": [1, 2], "name": "x"})

    pickled = factory.state_dict_pickle([storage], [tensor], extra=extra)
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [storage], data_pkl=pickled)
    tensors, damage = read_torch_bin(path, "pytorch_model.bin")
    assert damage == []
    assert list(tensors) == ["w"]


def test_shard_name_and_rel_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model-00001-of-00002.bin"
    factory.write_torch_zip(path, *sample())
    tensors, _ = read_torch_bin(path, "sub/pytorch_model-00001-of-00002.bin")
    assert {t.file for t in tensors.values()} == {"sub/pytorch_model-00001-of-00002.bin"}


# --------------------------------------------------------------------------- real torch files


@pytest.mark.parametrize("name", sorted(EXPECTED["files"]))
def test_real_torch_files(name: str) -> None:
    path = DATA / name
    expected = EXPECTED["files"][name]
    result = inspect_torch_bin(path, name)
    assert result.damage == []
    assert result.layout == ("legacy" if "legacy" in name else "zip")
    assert sorted(result.tensors) == sorted(expected)
    for tensor_name, want in expected.items():
        info = result.tensors[tensor_name]
        assert info.dtype == want["dtype"], tensor_name
        assert list(info.shape) == want["shape"], tensor_name
        if want["contiguous"]:
            assert slice_of(path, info) == bytes.fromhex(want["hex"]), tensor_name
        else:
            assert info.byte_range is None, tensor_name


def test_real_torch_view_shares_storage() -> None:
    tensors, _ = read_torch_bin(DATA / "state_dict_zip.bin", "state_dict_zip.bin")
    whole = tensors["fc.weight"].byte_range
    row = tensors["fc.weight_row2"].byte_range
    assert whole is not None and row is not None
    assert row == (whole[0] + 2 * 8 * 2, whole[0] + 3 * 8 * 2)


def test_real_torch_malicious_file_is_refused_unexecuted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its pickle runs `touch draftfit_torchbin_pwned` in the working directory if called."""
    monkeypatch.chdir(tmp_path)
    tensors, damage = read_torch_bin(DATA / "malicious_reduce.bin", "malicious_reduce.bin")
    assert tensors == {}
    assert kinds(damage) == ["unsafe-pickle-global"]
    assert EXPECTED["malicious_reduce.bin"]["global"] in damage[0].message
    assert not (tmp_path / "draftfit_torchbin_pwned").exists()
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- hostile pickles

HOSTILE = [
    ("os", "system", False),
    ("posix", "system", True),
    ("builtins", "eval", False),
    ("builtins", "exec", True),
    ("subprocess", "call", False),
    ("numpy.core.multiarray", "_reconstruct", False),
    ("torch", "load", False),
    ("torch._utils", "_rebuild_device_tensor_from_numpy", False),
    ("collections", "OrderedDict.fromkeys", False),
]


def payload_args(module: str, name: str, marker: Path) -> tuple[object, ...]:
    """Arguments under which the global, if called, would create `marker`."""
    if name in ("eval", "exec"):
        return (f"open({str(marker)!r}, 'w').close()",)
    if name == "call":
        return (["touch", str(marker)],)
    return (f"touch {marker}",)


@pytest.mark.parametrize(("module", "name", "stack"), HOSTILE)
@pytest.mark.parametrize("layout", ["zip", "legacy"])
def test_hostile_global_is_refused_unexecuted(
    tmp_path: Path, module: str, name: str, stack: bool, layout: str
) -> None:
    marker = tmp_path / "pwned"
    storage, tensor = factory.simple("w", "F32", (2,), WEIGHT[:2].tobytes())
    extra = factory.call_global(module, name, *payload_args(module, name, marker), stack=stack)
    pickled = factory.state_dict_pickle(
        [storage], [tensor], legacy=layout == "legacy", extra=extra, protocol=4 if stack else 2
    )
    path = tmp_path / "pytorch_model.bin"
    if layout == "zip":
        factory.write_torch_zip(path, [storage], data_pkl=pickled)
    else:
        factory.write_torch_legacy(path, [storage], main_pickle=pickled)
    tensors, damage = read_torch_bin(path, "pytorch_model.bin")
    assert tensors == {}
    assert kinds(damage) == ["unsafe-pickle-global"]
    assert f"`{module}.{name}`" in damage[0].message
    assert damage[0].file == "pytorch_model.bin"
    assert not marker.exists()


def test_hostile_global_in_legacy_preamble(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    data, _ = factory.legacy_bytes(
        [], [], sys_info=factory.hostile_pickle("os", "system", f"touch {marker}")
    )
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(data)
    _, damage = read_torch_bin(path, "pytorch_model.bin")
    assert kinds(damage) == ["unsafe-pickle-global"]
    assert not marker.exists()


def test_hostile_global_as_storage_type(tmp_path: Path) -> None:
    p = factory.Pickle().ordered_dict().mark().unicode("w")
    p.global_("torch._utils", "_rebuild_tensor_v2").mark()
    p.mark().unicode("storage").global_("os", "system").unicode("0").unicode("cpu").int(2)
    p.tuple().binpersid().int(0).value((2,)).value((1,)).bool(False).ordered_dict()
    p.tuple().reduce().setitems()
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [factory.Storage("0", "F32", bytes(8))], data_pkl=p.stop())
    _, damage = read_torch_bin(path, "pytorch_model.bin")
    assert kinds(damage) == ["unsafe-pickle-global"]
    assert "`os.system`" in damage[0].message


# --------------------------------------------------------------------------- damage


def read(path: Path) -> tuple[dict[str, TensorInfo], list[Damage]]:
    return read_torch_bin(path, path.name)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(b"")
    assert kinds(read(path)[1]) == ["truncated-file"]


def test_garbage_bytes(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(bytes(random.Random(1).randrange(256) for _ in range(4000)))
    tensors, damage = read(path)
    assert tensors == {}
    assert kinds(damage) == ["invalid-torch-bin"]


def test_missing_file_and_directory(tmp_path: Path) -> None:
    assert kinds(read(tmp_path / "absent.bin")[1]) == ["unreadable-file"]
    assert kinds(read(tmp_path)[1]) == ["unreadable-file"]


def test_truncated_zip(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, *sample())
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    tensors, damage = read(path)
    assert tensors == {}
    assert kinds(damage) == ["truncated-file"]


# The quick run cuts at every STEP-th byte; the full run (`slow`) at every byte.
EVERY_CUT = (pytest.param(37, id="sampled"), pytest.param(1, id="every", marks=pytest.mark.slow))


@pytest.mark.parametrize("step", EVERY_CUT)
def test_every_truncation_of_a_legacy_file(tmp_path: Path, step: int) -> None:
    data, _ = factory.legacy_bytes(*sample())
    path = tmp_path / "pytorch_model.bin"
    for cut in range(1, len(data), step):
        path.write_bytes(data[:cut])
        tensors, damage = read(path)
        assert kinds(damage) == ["truncated-file"], (cut, damage)
        assert tensors == {}


@pytest.mark.parametrize("step", EVERY_CUT)
def test_every_truncation_of_a_zip_file(tmp_path: Path, step: int) -> None:
    data = (DATA / "state_dict_zip.bin").read_bytes()
    path = tmp_path / "pytorch_model.bin"
    for cut in range(0, len(data), 7 * step):
        path.write_bytes(data[:cut])
        tensors, damage = read(path)
        assert tensors == {}
        assert damage and set(kinds(damage)) <= {"truncated-file", "invalid-torch-bin"}
        if cut and cut < len(data) - 22:  # the end record is gone: plainly truncated
            assert kinds(damage) == ["truncated-file"], cut


def test_zip_without_data_pkl(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data/0", bytes(8))
        archive.writestr("archive/version", "3\n")
    _, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"]
    assert "data.pkl" in damage[0].message


def test_zip_with_garbage_data_pkl(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [], data_pkl=b"\x00not a pickle")
    _, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"]


def test_missing_storage_member(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, *sample(), omit=["1"])
    tensors, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"]
    assert damage[0].tensor == "d2t"
    assert "data/1" in damage[0].message and "missing" in damage[0].message
    assert "d2t" not in tensors and "fc.weight" in tensors


def test_storage_member_too_small(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, *sample(), member_data={"1": IDS.tobytes()[:16]})
    tensors, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"]
    assert damage[0].tensor == "d2t"
    assert "24 bytes" in damage[0].message and "holds 16" in damage[0].message
    assert "d2t" not in tensors


def test_tensor_past_its_storage(tmp_path: Path) -> None:
    storage = factory.Storage("0", "F32", WEIGHT.tobytes())
    tensor = factory.Tensor("w", "0", (4, 6), storage_offset=1)
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [storage], [tensor])
    tensors, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"]
    assert damage[0].tensor == "w" and "past the end" in damage[0].message
    assert tensors == {}


def test_compressed_storage_has_no_byte_range(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, *sample(), compress=True)
    tensors, damage = read(path)
    assert damage == []
    assert tensors["fc.weight"].shape == (4, 6)
    assert all(t.byte_range is None for t in tensors.values())


def test_big_endian_archive_keeps_byte_ranges_only_for_bytes(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, *sample())
    rewritten = tmp_path / "big.bin"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(rewritten, "w") as dst:
        for info in src.infolist():
            content = b"big" if info.filename.endswith("/byteorder") else src.read(info)
            dst.writestr(info, content)
    tensors, damage = read(rewritten)
    assert damage == []
    assert tensors["fc.weight"].byte_range is None
    assert tensors["t2d"].byte_range is not None


def test_top_level_not_a_dict(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [], data_pkl=factory.Pickle().value([1, 2]).stop())
    _, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"]
    assert "list" in damage[0].message


def test_dict_without_tensors_or_wrapper(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [], data_pkl=factory.Pickle().value({"epoch": 3}).stop())
    tensors, damage = read(path)
    assert tensors == {}
    assert kinds(damage) == ["invalid-torch-bin"]


def test_empty_state_dict_is_not_damage(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [], [])
    assert read(path) == ({}, [])


def test_bad_persistent_id(tmp_path: Path) -> None:
    p = factory.Pickle().empty_dict().unicode("w").value(("module", "x")).binpersid().setitem()
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [], data_pkl=p.stop())
    _, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"]
    assert "persistent id" in damage[0].message


def test_bad_rebuild_arguments(tmp_path: Path) -> None:
    p = factory.Pickle().empty_dict().unicode("w")
    p.global_("torch._utils", "_rebuild_tensor_v2").value(("not a storage", 0, (2,), (1,), False))
    p.reduce().setitem()
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [], data_pkl=p.stop())
    tensors, damage = read(path)
    assert tensors == {}
    assert kinds(damage) == ["invalid-torch-bin"]
    assert damage[0].tensor == "w"


def test_legacy_bad_magic_and_tar(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(factory.Pickle().int(12345).stop() + b"rest")
    assert kinds(read(path)[1]) == ["invalid-torch-bin"]
    with tarfile.open(path, "w") as archive:
        info = tarfile.TarInfo("pickle")
        archive.addfile(info, io.BytesIO(b""))
    _, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"] and "tar" in damage[0].message


def test_legacy_storage_key_list_mismatch(tmp_path: Path) -> None:
    storages, tensors = sample()
    main = factory.state_dict_pickle(storages, tensors, legacy=True)
    data, _ = factory.legacy_bytes(storages[:2], main_pickle=main)
    path = tmp_path / "pytorch_model.bin"
    path.write_bytes(data)
    tensors_read, damage = read(path)
    assert set(kinds(damage)) == {"invalid-torch-bin"}
    assert {d.tensor for d in damage} == {"t2d", "norm.weight", "one", "empty"}
    assert "fc.weight" in tensors_read and "d2t" in tensors_read


def billion_laughs(depth: int) -> bytes:
    """`{t: 0}` where t = (t', t') nested `depth` times through the memo: a few hundred
    bytes whose key has 2**depth leaves, so merely hashing it would never finish."""
    p = factory.Pickle().empty_dict().int(1)
    for slot in range(depth):
        p.raw(b"q" + bytes([slot]) + b"h" + bytes([slot]) + b"\x86")  # BINPUT, BINGET, TUPLE2
    return p.int(0).setitem().stop()


@pytest.mark.parametrize("layout", ["zip", "legacy"])
def test_billion_laughs_is_refused_quickly(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "pytorch_model.bin"
    if layout == "zip":
        factory.write_torch_zip(path, [], data_pkl=billion_laughs(60))
    else:
        factory.write_torch_legacy(path, [], main_pickle=billion_laughs(60))
    tensors, damage = read(path)  # would hang without the pre-scan
    assert tensors == {}
    assert kinds(damage) == ["invalid-torch-bin"]
    assert "billion laughs" in damage[0].message


def test_modest_sharing_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [], data_pkl=billion_laughs(10))  # 1024 leaves: fine
    tensors, damage = read(path)
    assert tensors == {}
    assert kinds(damage) == ["invalid-torch-bin"]  # a dict of no tensors, nothing worse
    assert "no tensors" in damage[0].message


def test_huge_memo_slot_is_refused(tmp_path: Path) -> None:
    """`LONG_BINPUT 2**31 - 1` would make CPython's unpickler allocate a 32 GiB memo."""
    pickled = b"\x80\x02}r\xff\xff\xff\x7f."  # EMPTY_DICT, LONG_BINPUT 2**31-1, STOP
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [], data_pkl=pickled)
    _, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"]
    assert "memo slot" in damage[0].message


def test_out_of_band_buffers_are_refused(tmp_path: Path) -> None:
    pickled = b"\x80\x05\x96" + (3).to_bytes(8, "little") + b"abc\x98."  # BYTEARRAY8, READONLY
    path = tmp_path / "pytorch_model.bin"
    factory.write_torch_zip(path, [], data_pkl=pickled)
    _, damage = read(path)
    assert kinds(damage) == ["invalid-torch-bin"]
    assert "BYTEARRAY8" in damage[0].message


# --------------------------------------------------------------------------- robustness


def check_well_formed(tensors: object, damage: object) -> None:
    assert isinstance(tensors, dict) and isinstance(damage, list)
    assert all(isinstance(d, Damage) and d.kind in KINDS for d in damage)
    assert all(isinstance(t, TensorInfo) for t in tensors.values())


@pytest.mark.parametrize("rounds", [40, pytest.param(400, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ["state_dict_zip.bin", "state_dict_legacy.bin"])
def test_fuzz_mutations_never_raise(tmp_path: Path, name: str, rounds: int) -> None:
    original = (DATA / name).read_bytes()
    rng = random.Random(name)
    path = tmp_path / name
    for _ in range(rounds):
        data = bytearray(original)
        for _ in range(rng.randint(1, 8)):
            position = rng.randrange(len(data))
            data[position] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        path.write_bytes(bytes(data))
        check_well_formed(*read_torch_bin(path, name))


def test_fuzz_pickle_bytes_never_raise(tmp_path: Path) -> None:
    """Random opcode soup inside a valid zip and as a legacy main pickle."""
    rng = random.Random(7)
    opcodes = b"()]}tuseRQbNKJX\x85\x86\x87\x88\x89\x8a\x93\x94hqc.0123"
    path = tmp_path / "pytorch_model.bin"
    for index in range(300):
        body = bytes(rng.choice(opcodes) for _ in range(rng.randint(1, 60)))
        pickled = b"\x80\x02" + body
        if index % 2:
            factory.write_torch_zip(path, [], data_pkl=pickled)
        else:
            factory.write_torch_legacy(path, [], main_pickle=pickled)
        check_well_formed(*read_torch_bin(path, path.name))
