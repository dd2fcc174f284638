"""A corpus of damaged checkpoints, written with real bytes, for the reader-safety tests.

Each :class:`Case` writes a draft directory (starting from a clean factory draft and then
damaging one file: truncations, length lies, nesting bombs, 20k-digit numbers, duplicate
keys, non-UTF-8, overlapping or inverted offsets, dtype and shape overflow, index entries
that climb out of the folder, symlink loops, FIFOs, zip bombs, hostile pickles of every
opcode that can name or call a global, deeply nested pickle keys) and names the finding
codes `draftfit check` must report for it. Target cases damage the target instead (a target
with weights, checked with `--values`): shard indexes of 1 TB targets (120,000 shards, a
million tensors, terminal escapes, `../`, absolute and linked shard names, bombs, FIFOs,
sparse files), shard headers, MTP layers (`model.layers.N.eh_proj`, `mtp.*`,
`model.mtp_layers.*`). Exclusion-list cases put each producer's list of unquantized modules
(compressed-tensors `ignore`, ModelOpt `exclude_modules`, Quark `exclude`, GPTQ `dynamic`)
into the target's and the draft's config: huge, nested, of the wrong type, with escapes,
with patterns that do not compile or backtrack exponentially. `tests/test_malformed.py`
runs every case through the commands; `bench/fuzz.py` and the property tests mutate the
same clean files.

`python -m tests.malformed DIR` writes the whole corpus under `DIR` (one folder per case).
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import factory as f
from tests.torchbin_factory import LEGACY_MAGIC_NUMBER, Pickle, write_torch_zip

Build = Callable[[Path], None]  # damages the clean draft written in the given folder


@dataclass(frozen=True)
class Case:
    """One damaged checkpoint.

    Attributes:
        id: a short stable name.
        base: which clean draft to start from (`st`, `sharded`, `bin`).
        damage: edits the written clean draft (its folder is passed).
        codes: finding codes `check` must report.
        full: whether the test runs every command on it (otherwise `check` only).
        may_convert: whether `convert` may write an output (the damage is a warning, or a
            config value convert leaves out); otherwise it must write nothing.
    """

    id: str
    base: str
    damage: Build
    codes: frozenset[str]
    full: bool = False
    may_convert: bool = False
    target: Build | None = None

    def write(self, folder: Path) -> Path:
        """Write the damaged draft into `folder/draft` (siblings may hold outside files),
        and for a case that damages the target, its target into `folder/target`."""
        draft = folder / "draft"
        if self.base == "bin":
            f.eagle1().write(draft, fmt="bin")
        elif self.base == "sharded":
            f.specforge().write(draft, shards=3)
        else:
            f.specforge().write(draft)
        self.damage(draft)
        if self.target is not None:
            self.target(weighted_target(folder / "target"))
        return draft


CASES: list[Case] = []


def case(
    id: str, codes: set[str], base: str = "st", full: bool = False, may_convert: bool = False
) -> Callable[[Build], Build]:
    def register(build: Build) -> Build:
        CASES.append(Case(id, base, build, frozenset(codes), full, may_convert))
        return build

    return register


def simple(id: str, codes: set[str], build: Build, **kw: object) -> None:
    case(id, codes, **kw)(build)  # type: ignore[arg-type]


ST = "model.safetensors"
BIN = "pytorch_model.bin"
INDEX = "model.safetensors.index.json"
SHARD = "model-00001-of-00003.safetensors"


def _clean_header(path: Path) -> tuple[dict[str, object], bytes]:
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + length]), data[8 + length :]


def _with_header(
    header: bytes | dict[str, object], data: bytes = b"", length: int | None = None
) -> Build:
    def build(draft: Path) -> None:
        f.raw_safetensors(draft / ST, header, data, length)

    return build


def _edit_header(edit: Callable[[dict[str, object]], object]) -> Build:
    """Rewrite the clean file's header after `edit` (which may return raw bytes)."""

    def build(draft: Path) -> None:
        header, data = _clean_header(draft / ST)
        result = edit(header)
        raw = result if isinstance(result, bytes) else json.dumps(header).encode()
        f.raw_safetensors(draft / ST, raw, data)

    return build


def _first(header: dict[str, object]) -> dict[str, object]:
    name = sorted(k for k in header if k != "__metadata__")[0]
    entry = header[name]
    assert isinstance(entry, dict)
    return entry


def _set_first(key: str, value: object) -> Build:
    def edit(header: dict[str, object]) -> None:
        _first(header)[key] = value

    return _edit_header(edit)


def _replace_text(name: str, text: bytes) -> Build:
    def build(draft: Path) -> None:
        (draft / name).write_bytes(text)

    return build


def _sparse(name: str, size: int, prefix: bytes = b"") -> Build:
    def build(draft: Path) -> None:
        with (draft / name).open("wb") as handle:
            handle.write(prefix)
            handle.truncate(size)

    return build


def _truncate(name: str, keep: Callable[[int], int]) -> Build:
    def build(draft: Path) -> None:
        data = (draft / name).read_bytes()
        (draft / name).write_bytes(data[: keep(len(data))])

    return build


def _replace_node(name: str, kind: str, target: str | None = None) -> Build:
    """Replace `name` by a FIFO, a directory, a symlink loop or a symlink to `target`."""

    def build(draft: Path) -> None:
        path = draft / name
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "dir":
            path.mkdir()
        elif kind == "loop":
            os.symlink(path.name + ".loop", path)
            os.symlink(path.name, draft / (path.name + ".loop"))
        elif kind == "outside":
            outside = draft.parent / ("outside-" + name)
            if not outside.exists():
                f.specforge().write(draft.parent / "outside-draft")
                source = draft.parent / "outside-draft" / name
                outside.write_bytes(source.read_bytes() if source.exists() else b"{}")
            os.symlink(outside, path)
        elif kind == "link":
            assert target is not None
            os.symlink(target, path)

    return build


# ---------------------------------------------------------------------- safetensors bytes

simple("st-empty", {"DF002"}, _replace_text(ST, b""), full=True)
simple("st-four-bytes", {"DF002"}, _replace_text(ST, b"\x10\x00\x00\x00"))
simple("st-length-lie", {"DF003"}, _with_header({}, b"", length=4096), full=True)
simple("st-length-2-63", {"DF003"}, _with_header(b"{}", b"", length=2**63))
simple("st-length-u64-max", {"DF003"}, _with_header(b"{}", b"", length=2**64 - 1))
simple(
    "st-header-over-cap",
    {"DF022"},
    _sparse(ST, 64 * 1024 * 1024, struct.pack("<Q", 40 * 1024 * 1024) + b"{"),
    full=True,
)
simple("st-cut-in-data", {"DF002"}, _truncate(ST, lambda n: n - 100), full=True)
simple("st-cut-in-header", {"DF003"}, _truncate(ST, lambda n: 40))
simple("st-header-garbage", {"DF004"}, _with_header(b"\x00garbage{{", b""))
simple("st-header-not-utf8", {"DF004"}, _with_header(b'{"\xff\xfe": 1}', b""), full=True)
simple("st-header-list", {"DF004"}, _with_header(b"[1, 2, 3]", b""))
simple(
    "st-header-nesting-bomb",
    {"DF022"},
    _with_header(b'{"__metadata__": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    full=True,
)
simple(
    "st-header-object-bomb",
    {"DF022"},
    _with_header(b'{"a": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_000 + b"}"),
)
simple(
    "st-20k-digit-dim",
    {"DF022"},
    _edit_header(lambda h: _digits(h, "shape", [int("9" * 20)])),
    full=True,
)
simple("st-20k-digit-offset", {"DF022"}, _edit_header(lambda h: _digits(h, "data_offsets", [0])))
simple("st-20k-digit-float", {"DF022"}, _edit_header(lambda h: _digits(h, "shape", [], "1.")))


def _lone_surrogate_name(header: dict[str, object]) -> bytes:
    """The header with its first tensor renamed to end in `\\ud800` (a lone surrogate
    escape: Python's decoder accepts it, it is not Unicode text)."""
    name = sorted(k for k in header if k != "__metadata__")[0]
    header[name + "\ud800"] = header.pop(name)
    return json.dumps(header).encode()  # ensure_ascii writes the escape


simple("st-lone-surrogate-name", {"DF004"}, _edit_header(_lone_surrogate_name), full=True)


def _digits(header: dict[str, object], key: str, before: list[int], prefix: str = "") -> bytes:
    """The header with the first entry's `key` holding a 20,000-digit number."""
    entry = _first(header)
    entry[key] = [*before, "@@"]
    text = json.dumps(header).replace('"@@"', prefix + "1" * 20_000)
    return text.encode()


def _duplicate_tensor(header: dict[str, object]) -> bytes:
    text = json.dumps(header)
    name = sorted(k for k in header if k != "__metadata__")[0]
    entry = json.dumps(header[name])
    return text.replace("{", "{" + json.dumps(name) + ": " + entry + ", ", 1).encode()


simple("st-duplicate-tensor-key", {"DF023"}, _edit_header(_duplicate_tensor), may_convert=True)


def _many_tensors(
    count: int, entry: str = '{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'
) -> Build:
    def build(draft: Path) -> None:
        body = ",".join(f'"t{i}":{entry}' for i in range(count))
        f.raw_safetensors(draft / ST, ("{" + body + "}").encode())

    return build


simple("st-20001-tensors", {"DF022"}, _many_tensors(20_001), full=True)
simple("st-claims-1m-tensors", {"DF022"}, _many_tensors(1_000_000, "0"), full=True)
simple("st-65-dims", {"DF022"}, _set_first("shape", [1] * 65))
simple("st-shape-overflow", {"DF005"}, _set_first("shape", [2**62, 2**62, 16]), full=True)
simple("st-offset-overflow", {"DF005"}, _set_first("data_offsets", [0, 2**64 + 5]))


def _offsets(edit: Callable[[list[tuple[str, list[int]]]], None]) -> Build:
    def change(header: dict[str, object]) -> None:
        spans = sorted(
            (
                (k, v["data_offsets"])
                for k, v in header.items()
                if isinstance(v, dict) and k != "__metadata__"
            ),
            key=lambda item: item[1][0],
        )
        edit(spans)

    return _edit_header(change)


def _invert(spans: list[tuple[str, list[int]]]) -> None:
    spans[0][1].reverse()


def _overlap(spans: list[tuple[str, list[int]]]) -> None:
    spans[1][1][0] -= 2
    spans[1][1][1] -= 2


def _outside(spans: list[tuple[str, list[int]]]) -> None:
    spans[-1][1][0] += 10**9
    spans[-1][1][1] += 10**9


def _gap(spans: list[tuple[str, list[int]]]) -> None:
    spans[-1][1][0] += 8
    spans[-1][1][1] += 8


simple("st-inverted-offsets", {"DF007"}, _offsets(_invert), full=True)
simple("st-overlapping-offsets", {"DF008"}, _offsets(_overlap), full=True)
simple("st-offsets-outside-file", {"DF007"}, _offsets(_outside))
simple("st-gap-in-data", {"DF009"}, _offsets(_gap))
simple("st-lowercase-dtype", {"DF006"}, _set_first("dtype", "bf16"), full=True)
simple("st-unknown-dtype", {"DF006"}, _set_first("dtype", "F4X"))
simple("st-dtype-number", {"DF005"}, _set_first("dtype", 16))
simple("st-shape-negative", {"DF005"}, _set_first("shape", [-1, 64]))
simple("st-shape-float", {"DF005"}, _set_first("shape", [64.0]))
simple("st-shape-bool", {"DF005"}, _set_first("shape", [True]))
simple("st-shape-string", {"DF005"}, _set_first("shape", "64"))
simple("st-offsets-three", {"DF005"}, _set_first("data_offsets", [0, 1, 2]))
simple("st-entry-not-object", {"DF005"}, _edit_header(lambda h: h.update({"x": [1]})))
simple(
    "st-metadata-not-strings",
    {"DF005"},
    _edit_header(lambda h: h.update({"__metadata__": {"format": 1}})),
)
simple("st-byte-size-mismatch", {"DF010"}, _set_first("shape", [1]))


def _f4_vocab(header: dict[str, object]) -> None:
    """`d2t` stored as 4-bit floats: a real safetensors dtype, but not an index type."""
    entry = header["d2t"]
    assert isinstance(entry, dict)
    begin, end = entry["data_offsets"]
    entry["dtype"] = "F4"
    entry["shape"] = [(end - begin) * 2]


simple("st-d2t-as-f4", {"DF203"}, _edit_header(_f4_vocab), full=True, may_convert=True)
simple(
    "st-sparse-1tb",
    {"DF009"},
    _sparse(ST, 2**40, struct.pack("<Q", 8) + b"{}      "),
    full=True,
)
simple("st-is-fifo", {"DF001"}, _replace_node(ST, "fifo"), full=True)
simple("st-is-directory", {"DF001"}, _replace_node(ST, "dir"), full=True)
simple("st-symlink-loop", {"DF001"}, _replace_node(ST, "loop"), full=True)
simple("st-symlink-outside", {"DF001"}, _replace_node(ST, "outside"), full=True)
simple("st-symlink-dev-zero", {"DF001"}, _replace_node(ST, "link", "/dev/zero"))
simple("st-dangling-symlink", {"DF001"}, _replace_node(ST, "link", "missing.bin.part"))


def _many_files(count: int) -> Build:
    def build(draft: Path) -> None:
        for i in range(count):
            f.raw_safetensors(draft / f"extra-{i:05d}.safetensors", b"{}      ")

    return build


simple("st-4097-weight-files", {"DF022"}, _many_files(4097))

# ---------------------------------------------------------------------- config.json

CFG = "config.json"
simple("cfg-not-json", {"DF017"}, _replace_text(CFG, b'{"hidden_size": 64,'), full=True)
simple("cfg-not-utf8", {"DF017"}, _replace_text(CFG, b'{"model_type": "\xff\xfe"}'))
simple("cfg-empty", {"DF017"}, _replace_text(CFG, b""))
simple("cfg-list", {"DF017"}, _replace_text(CFG, b"[1, 2]"))
simple("cfg-bom", {"DF017"}, _replace_text(CFG, b'\xef\xbb\xbf{"a": 1}'))
simple(
    "cfg-nesting-bomb",
    {"DF022"},
    _replace_text(CFG, b'{"eagle_config": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"),
    full=True,
)
simple(
    "cfg-object-bomb",
    {"DF022"},
    _replace_text(CFG, b'{"a": ' * 100_000 + b"1" + b"}" * 100_000),
)
simple(
    "cfg-20k-digit-int",
    {"DF022"},
    _replace_text(CFG, b'{"hidden_size": ' + b"7" * 20_000 + b"}"),
    full=True,
)
simple(
    "cfg-20k-digit-float",
    {"DF022"},
    _replace_text(CFG, b'{"rms_norm_eps": 0.' + b"1" * 20_000 + b"}"),
)
simple(
    "cfg-20k-digit-exponent-float",
    {"DF022"},
    _replace_text(CFG, b'{"rope_theta": 1' + b"0" * 50 + b"e5}"),
)


def _config_edit(edit: Callable[[str], str]) -> Build:
    def build(draft: Path) -> None:
        text = (draft / CFG).read_text()
        (draft / CFG).write_text(edit(text))

    return build


simple(
    "cfg-duplicate-key",
    {"DF023"},
    _config_edit(lambda t: '{"num_hidden_layers": 7, ' + t.lstrip()[1:]),
    full=True,
    may_convert=True,
)
simple(
    "cfg-infinite-float",
    {"DF118"},
    _config_edit(lambda t: t.replace('"hidden_size": 64', '"hidden_size": 1e999')),
    may_convert=True,
)
simple(
    "cfg-nan",
    {"DF118"},
    _config_edit(lambda t: t.replace('"hidden_size": 64', '"hidden_size": NaN')),
    full=True,
    may_convert=True,
)
simple(
    "cfg-lone-surrogate",
    {"DF017"},
    _config_edit(lambda t: t.replace('"model_type": "llama"', '"model_type": "ll\\ud800ama"')),
    full=True,
)
simple("cfg-huge-file", {"DF022"}, _sparse(CFG, 40 * 1024 * 1024, b'{"a": "'), full=True)
simple("cfg-is-directory", {"DF001"}, _replace_node(CFG, "dir"), full=True)
simple("cfg-is-fifo", {"DF001"}, _replace_node(CFG, "fifo"), full=True)
simple("cfg-symlink-loop", {"DF001"}, _replace_node(CFG, "loop"), full=True)
simple("cfg-symlink-outside", {"DF001"}, _replace_node(CFG, "outside"), full=True)
simple("cfg-dangling-symlink", {"DF001"}, _replace_node(CFG, "link", "nowhere.json"))

# ---------------------------------------------------------------------- shard index


def _index_edit(edit: Callable[[dict[str, object]], object]) -> Build:
    def build(draft: Path) -> None:
        index = json.loads((draft / INDEX).read_text())
        result = edit(index)
        raw = result if isinstance(result, bytes) else json.dumps(index).encode()
        (draft / INDEX).write_bytes(raw)

    return build


def _retarget(shard: str) -> Callable[[dict[str, object]], None]:
    def edit(index: dict[str, object]) -> None:
        weight_map = index["weight_map"]
        assert isinstance(weight_map, dict)
        for name, value in list(weight_map.items()):
            if value == SHARD:
                weight_map[name] = shard

    return edit


def _outside_shard(draft: Path) -> None:
    (draft.parent / "stolen.safetensors").write_bytes((draft / SHARD).read_bytes())
    _index_edit(_retarget("../stolen.safetensors"))(draft)


simple("idx-dotdot-shard", {"DF015"}, _outside_shard, base="sharded", full=True)
simple(
    "idx-absolute-shard",
    {"DF015"},
    _index_edit(_retarget("/etc/passwd")),
    base="sharded",
    full=True,
)
simple(
    "idx-nested-dotdot-shard",
    {"DF015"},
    _index_edit(_retarget("sub/../../x.safetensors")),
    base="sharded",
)
simple(
    "idx-missing-shard", {"DF011"}, _index_edit(_retarget("model-gone.safetensors")), base="sharded"
)
simple("idx-not-json", {"DF015"}, _replace_text(INDEX, b"{"), base="sharded")
simple("idx-not-utf8", {"DF015"}, _replace_text(INDEX, b'{"weight_map": "\xff"}'), base="sharded")
simple("idx-list", {"DF015"}, _replace_text(INDEX, b"[]"), base="sharded")
simple(
    "idx-weight-map-list",
    {"DF015"},
    _index_edit(lambda i: i.update({"weight_map": [1]})),
    base="sharded",
)
simple(
    "idx-nesting-bomb",
    {"DF022"},
    _replace_text(INDEX, b'{"metadata": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    base="sharded",
    full=True,
)
simple(
    "idx-20k-digit",
    {"DF022"},
    _replace_text(INDEX, b'{"metadata": {"total_size": ' + b"1" * 20_000 + b"}}"),
    base="sharded",
)


def _duplicate_index_key(index: dict[str, object]) -> bytes:
    text = json.dumps(index)
    return text.replace(
        '"weight_map": {', '"weight_map": {"fc.weight": "x.safetensors", ', 1
    ).encode()


simple(
    "idx-duplicate-key",
    {"DF023"},
    _index_edit(_duplicate_index_key),
    base="sharded",
    full=True,
    may_convert=True,
)
simple("idx-huge-file", {"DF022"}, _sparse(INDEX, 40 * 1024 * 1024, b"{"), base="sharded")
simple("idx-is-fifo", {"DF001"}, _replace_node(INDEX, "fifo"), base="sharded", full=True)
simple("idx-shard-is-fifo", {"DF001"}, _replace_node(SHARD, "fifo"), base="sharded", full=True)
simple("idx-shard-symlink-outside", {"DF001"}, _replace_node(SHARD, "outside"), base="sharded")

# ---------------------------------------------------------------------- PyTorch .bin


def _bin_pickle(data_pkl: bytes) -> Build:
    def build(draft: Path) -> None:
        write_torch_zip(draft / BIN, [], data_pkl=data_pkl)

    return build


def _global(module: str, name: str, opcode: str = "GLOBAL") -> bytes:
    """A pickle calling (or building) `module.name` through the given opcode."""
    pickle = Pickle(4)
    if opcode == "GLOBAL":
        return pickle.global_(module, name).value(("id",)).reduce().stop()
    if opcode == "STACK_GLOBAL":
        return pickle.stack_global(module, name).value(("id",)).reduce().stop()
    if opcode == "INST":
        return pickle.mark().unicode("id").raw(f"i{module}\n{name}\n".encode()).stop()
    if opcode == "OBJ":
        return pickle.mark().global_(module, name).unicode("id").raw(b"o").stop()
    if opcode == "NEWOBJ":
        return pickle.global_(module, name).value(("id",)).raw(b"\x81").stop()
    if opcode == "NEWOBJ_EX":
        return pickle.global_(module, name).value(("id",)).empty_dict().raw(b"\x92").stop()
    if opcode == "BUILD":
        return pickle.global_(module, name).empty_dict().build().stop()
    raise ValueError(opcode)


HOSTILE = [
    ("os", "system", "GLOBAL"),
    ("posix", "system", "GLOBAL"),
    ("subprocess", "Popen", "STACK_GLOBAL"),
    ("builtins", "eval", "GLOBAL"),
    ("builtins", "exec", "STACK_GLOBAL"),
    ("builtins", "getattr", "GLOBAL"),
    ("importlib", "import_module", "GLOBAL"),
    ("os", "system", "INST"),
    ("subprocess", "check_output", "OBJ"),
    ("builtins", "object", "NEWOBJ"),
    ("builtins", "set", "NEWOBJ_EX"),
    ("os", "environ", "BUILD"),
    ("torch", "load", "GLOBAL"),
    ("torch._C", "_set_grad_enabled", "STACK_GLOBAL"),
    ("torch.serialization", "load", "GLOBAL"),
    ("torch._utils", "_rebuild_device_tensor_from_numpy", "GLOBAL"),
]
for _module, _name, _opcode in HOSTILE:
    simple(
        f"bin-{_opcode.lower()}-{_module}-{_name}".replace("_", "-").replace(".", "-"),
        {"DF019"},
        _bin_pickle(_global(_module, _name, _opcode)),
        base="bin",
        full=_opcode in ("GLOBAL", "INST") and _module == "os",
    )


def _nested_key(depth: int, opcode: bytes) -> bytes:
    """`{k: 1}` whose key is a tuple (TUPLE1) or frozenset (FROZENSET) nested `depth` deep:
    hashing it would recurse `depth` times in C."""
    if opcode == b"\x91":
        key = b"(" * depth + b"K\x01" + b"\x91" * depth
    else:
        key = b"K\x01" + opcode * depth
    return b"\x80\x04}" + key + b"K\x01s."


simple(
    "bin-nested-tuple-key",
    {"DF022"},
    _bin_pickle(_nested_key(200_000, b"\x85")),
    base="bin",
    full=True,
)
simple(
    "bin-nested-frozenset-key",
    {"DF022"},
    _bin_pickle(_nested_key(100_000, b"\x91")),
    base="bin",
    full=True,
)
simple(
    "bin-nested-lists",
    {"DF022"},
    _bin_pickle(b"\x80\x02" + b"]" * 50_000 + b"a" * 49_999 + b"."),
    base="bin",
)
simple(
    "bin-nested-dict-values",
    {"DF022"},
    _bin_pickle(b"\x80\x02" + b"}K\x01" * 50_000 + b"K\x01" + b"s" * 50_000 + b"."),
    base="bin",
)
simple(
    "bin-too-many-opcodes",
    {"DF022"},
    _bin_pickle(b"\x80\x02" + b"N0" * 1_100_000 + b"}."),
    base="bin",
)


def _billion_laughs(depth: int) -> bytes:
    out = b"\x80\x02K\x01"
    for i in range(depth):
        out += b"q" + bytes([i % 256]) + b"h" + bytes([i % 256]) + b"\x86"
    return out + b"}\x85."


simple("bin-billion-laughs", {"DF020"}, _bin_pickle(_billion_laughs(64)), base="bin", full=True)
simple(
    "bin-huge-memo-slot",
    {"DF020"},
    _bin_pickle(b"\x80\x02}r" + struct.pack("<I", 2**31 - 1) + b"."),
    base="bin",
)
simple("bin-ext-opcode", {"DF020"}, _bin_pickle(b"\x80\x02\x82\x01."), base="bin")
simple("bin-garbage-pickle", {"DF020"}, _bin_pickle(b"\x80\x02\xff\xfe"), base="bin")
simple("bin-garbage-file", {"DF020"}, _replace_text(BIN, b"not a checkpoint at all"), base="bin")
simple("bin-empty-file", {"DF002"}, _replace_text(BIN, b""), base="bin")
simple("bin-truncated-zip", {"DF002"}, _truncate(BIN, lambda n: n // 2), base="bin", full=True)


def _zip_bomb(draft: Path) -> None:
    """`data.pkl` deflated from 80 MiB of zeros to ~80 KB."""
    with zipfile.ZipFile(draft / BIN, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", bytes(80 * 1024 * 1024))
        archive.writestr("archive/version", "3\n")


simple("bin-zip-bomb", {"DF020"}, _zip_bomb, base="bin", full=True)


def _many_members(draft: Path) -> None:
    """A zip archive of 120,000 empty members, written record by record."""
    local, central = bytearray(), bytearray()
    for i in range(120_000):
        name = f"archive/data/{i}".encode()
        offset = len(local)
        local += struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0)
        local += name
        central += struct.pack(
            "<4s6H3I5H2I",
            b"PK\x01\x02",
            20,
            20,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            len(name),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
        central += name
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, len(central), len(local), 0)
    (draft / BIN).write_bytes(bytes(local + central + end))


simple("bin-120k-zip-members", {"DF022"}, _many_members, base="bin", full=True)


def _legacy(main: bytes, size: int | None = None) -> Build:
    def build(draft: Path) -> None:
        head = Pickle().int(LEGACY_MAGIC_NUMBER).stop() + Pickle().int(1001).stop()
        head += Pickle().value({"protocol_version": 1001, "little_endian": True}).stop()
        with (draft / BIN).open("wb") as handle:
            handle.write(head + main)
            if size is not None:
                handle.truncate(size)

    return build


simple(
    "bin-legacy-2-60-byte-string",
    {"DF002"},
    _legacy(b"\x80\x04\x8d" + struct.pack("<Q", 2**60) + b"abc"),
    base="bin",
    full=True,
)
simple(
    "bin-legacy-endless-line",
    {"DF020"},
    _legacy(b"\x80\x02S'", size=64 * 1024 * 1024),
    base="bin",
)
simple(
    "bin-legacy-hostile",
    {"DF019"},
    _legacy(_global("os", "system")),
    base="bin",
)
simple("bin-is-fifo", {"DF001"}, _replace_node(BIN, "fifo"), base="bin", full=True)
simple("bin-symlink-outside", {"DF001"}, _replace_node(BIN, "link", "/etc/hostname"), base="bin")


def _norm_claims_2_31(header: dict[str, object]) -> None:
    """A norm weight whose shape claims 2**31 elements over its 128 stored bytes."""
    entry = header["midlayer.input_layernorm.weight"]
    assert isinstance(entry, dict)
    entry["shape"] = [2**31]


simple("st-norm-shape-claims-2-31", {"DF010"}, _edit_header(_norm_claims_2_31), full=True)


def _vocab_2_31_without_t2d(draft: Path) -> None:
    """A config claiming a 2**31-token vocabulary and no stored `t2d`: deriving `t2d` from
    `d2t` (convert planning, recipes) must not allocate what the config claims."""
    _config_edit(lambda t: t.replace('"vocab_size": 256', '"vocab_size": 2147483647'))(draft)
    _edit_header(lambda h: h.pop("t2d"))(draft)


simple("cfg-vocab-2-31-no-t2d", {"DF009"}, _vocab_2_31_without_t2d, full=True)


simple(
    "cfg-layers-2-31",
    {"DF205"},
    _config_edit(lambda t: t.replace('"num_hidden_layers": 1', '"num_hidden_layers": 2147483647')),
    full=True,
    may_convert=True,
)
simple(
    "bin-cfg-layers-2-31",
    {"DF205"},
    _config_edit(lambda t: t.replace('"num_hidden_layers": 1', '"num_hidden_layers": 2147483647')),
    base="bin",
    full=True,
)


simple(
    "cfg-million-aux-ids",
    {"DF022"},
    _config_edit(
        lambda t: (
            '{"eagle_aux_hidden_state_layer_ids": [' + "1," * 999_999 + "1], " + t.lstrip()[1:]
        )
    ),
    full=True,
)


def _readme_outside(draft: Path) -> None:
    """A README that is a symlink to a file outside the folder: convert must not copy it."""
    (draft.parent / "secret.txt").write_text("not part of the checkpoint\n")
    os.symlink(draft.parent / "secret.txt", draft / "README.md")


simple("other-file-symlink-outside", set(), _readme_outside, full=True, may_convert=True)


# ---------------------------------------------------------------------- targets
# A 1 TB target is read for its config, and with --values for its index and the headers of
# the shards holding the embedding and the head. Each case damages a target that has weights
# (two shards; the embedding in the second, so the index is read) and is checked with
# --values; the draft is clean.

TARGET_INDEX = "model.safetensors.index.json"
TARGET_SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
MTP_NAMES = (
    "model.layers.{n}.eh_proj.weight",
    "model.layers.{n}.enorm.weight",
    "model.layers.{n}.hnorm.weight",
    "model.layers.{n}.shared_head.head.weight",
    "model.layers.{n}.embed_tokens.weight",
    "mtp.layers.0.eh_proj.weight",
    "mtp.fc.weight",
    "model.mtp_layers.0.input_proj.weight",
    "model.mtp_layers.0.final_layernorm.weight",
)


def weighted_target(path: Path) -> Path:
    """A clean target with weights: config, embedding in the second of two shards, index."""
    import numpy as np

    embed = np.random.default_rng(5).standard_normal((256, 64)).astype("float32") * 0.02
    f.values_target(path, embed, shards=2)
    index = json.loads((path / TARGET_INDEX).read_text())
    for name in index["weight_map"]:
        index["weight_map"][name] = TARGET_SHARDS[1 if "embed" in name else 0]
    (path / TARGET_INDEX).write_text(json.dumps(index))
    return path


def target_case(id: str, build: Build, codes: set[str] | None = None, full: bool = False) -> None:
    """A case whose target is damaged by `build` (the draft is the clean one)."""
    CASES.append(
        Case(id, "st", lambda draft: None, frozenset(codes or set()), full, True, target=build)
    )


def _target_index(edit: Callable[[dict[str, Any]], object]) -> Build:
    def build(target: Path) -> None:
        index = json.loads((target / TARGET_INDEX).read_text())
        result = edit(index)
        raw = result if isinstance(result, bytes) else json.dumps(index).encode()
        (target / TARGET_INDEX).write_bytes(raw)

    return build


def _huge_weight_map(count: int, shards: int) -> Callable[[dict[str, Any]], bytes]:
    """A 1 TB MoE target's weight map: `count` tensors over `shards` shards (none present)."""

    def edit(index: dict[str, Any]) -> bytes:
        entries = ", ".join(
            f'"model.layers.{i % 61}.mlp.experts.{i}.w{i % 3}.weight": '
            f'"model-{i % shards:06d}-of-{shards:06d}.safetensors"'
            for i in range(count)
        )
        text = json.dumps(index)
        at = text.index('"weight_map": {') + len('"weight_map": {')
        return (text[:at] + entries + ", " + text[at:]).encode()

    return edit


def _embedding_in(shard: str) -> Callable[[dict[str, Any]], None]:
    def edit(index: dict[str, Any]) -> None:
        for name in index["weight_map"]:
            if "embed" in name:
                index["weight_map"][name] = shard

    return edit


def _escaped_names(index: dict[str, Any]) -> None:
    weight_map = index["weight_map"]
    weight_map["model.embed_tokens.weight\x1b[2J\n::error::x"] = "\x1b]8;;http://x\x07.safetensors"
    weight_map["lm_head.weight"] = "model-00002\x1b[31m-of-00002.safetensors\u202e"


def _linked_shard(target: Path) -> None:
    os.symlink("/etc/hostname", target / "link.safetensors")
    _target_index(_embedding_in("link.safetensors"))(target)


def _outside_shard_of_target(target: Path) -> None:
    (target.parent / "stolen.safetensors").write_bytes((target / TARGET_SHARDS[1]).read_bytes())
    _target_index(_embedding_in("../stolen.safetensors"))(target)


def _target_file(name: str, text: bytes) -> Build:
    def build(target: Path) -> None:
        (target / name).write_bytes(text)

    return build


def _target_node(name: str, kind: str) -> Build:
    def build(target: Path) -> None:
        (target / name).unlink()
        if kind == "fifo":
            os.mkfifo(target / name)
        elif kind == "sparse":
            with (target / name).open("wb") as handle:
                handle.truncate(2**40)

    return build


def _mtp_target(n: int, names: tuple[str, ...] = MTP_NAMES) -> Build:
    """MTP layers stored after the decoder layers (DeepSeek-V3's layer N, MiMo's and GLM's
    `mtp` / `mtp_layers`), and the config field naming them."""

    def build(target: Path) -> None:
        config = json.loads((target / "config.json").read_text())
        config["num_nextn_predict_layers"] = 1
        (target / "config.json").write_text(json.dumps(config))
        shard = target / TARGET_SHARDS[1]
        header, data = _clean_header(shard)
        for pattern in names:
            name = pattern.format(n=n)
            header[name] = {
                "dtype": "BF16",
                "shape": [2],
                "data_offsets": [len(data), len(data) + 4],
            }
            data += b"\x00" * 4
        f.raw_safetensors(shard, json.dumps(header).encode(), data)
        index = json.loads((target / TARGET_INDEX).read_text())
        index["weight_map"].update({p.format(n=n): TARGET_SHARDS[1] for p in names})
        (target / TARGET_INDEX).write_text(json.dumps(index))

    return build


target_case("tgt-index-120k-shards", _target_index(_huge_weight_map(120_000, 120_000)), full=True)
target_case("tgt-index-1m-tensors", _target_index(_huge_weight_map(1_000_000, 4096)))
target_case("tgt-index-escapes", _target_index(_escaped_names), full=True)
target_case("tgt-index-dotdot-shard", _outside_shard_of_target, full=True)
target_case("tgt-index-absolute-shard", _target_index(_embedding_in("/etc/passwd")))
target_case("tgt-index-linked-shard", _linked_shard)
target_case(
    "tgt-index-nesting-bomb",
    _target_file(TARGET_INDEX, b'{"weight_map": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
    full=True,
)
target_case(
    "tgt-index-20k-digit",
    _target_file(TARGET_INDEX, b'{"metadata": {"total_size": ' + b"1" * 20_000 + b"}}"),
)
target_case("tgt-index-not-utf8", _target_file(TARGET_INDEX, b'{"weight_map": {"\xff": "\xfe"}}'))
target_case("tgt-index-fifo", _target_node(TARGET_INDEX, "fifo"), full=True)
target_case("tgt-index-sparse-1tb", _target_node(TARGET_INDEX, "sparse"))
target_case("tgt-shard-fifo", _target_node(TARGET_SHARDS[1], "fifo"))
target_case("tgt-shard-sparse-1tb", _target_node(TARGET_SHARDS[1], "sparse"), full=True)
target_case(
    "tgt-shard-header-nesting-bomb",
    lambda target: f.raw_safetensors(
        target / TARGET_SHARDS[1], b'{"__metadata__": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    ),
    full=True,
)
target_case(
    "tgt-shard-header-20k-digit",
    lambda target: f.raw_safetensors(
        target / TARGET_SHARDS[1],
        b'{"model.embed_tokens.weight": {"dtype": "BF16", "shape": [' + b"9" * 20_000 + b"]}}",
    ),
)
target_case("tgt-mtp-deepseek-layer", _mtp_target(8, MTP_NAMES[:5]), full=True)
target_case("tgt-mtp-all-names", _mtp_target(8), full=True)
target_case("tgt-mtp-layer-2-31", _mtp_target(2**31))

# ---------------------------------------------------------------------- exclusion lists
# Each producer's list of modules left unquantized, hostile, in the target's config and in
# the draft's: huge, deeply nested, of the wrong type, holding terminal escapes, patterns
# that do not compile or backtrack exponentially.

EXCLUSION_LISTS: dict[str, tuple[dict[str, Any], str]] = {
    "ct-ignore": (
        {
            "quant_method": "compressed-tensors",
            "format": "float-quantized",
            "config_groups": {
                "group_0": {"targets": ["Linear"], "weights": {"type": "float", "num_bits": 8}}
            },
        },
        "ignore",
    ),
    "modelopt-exclude-modules": (
        {"quant_method": "modelopt", "quant_algo": "FP8"},
        "exclude_modules",
    ),
    "quark-exclude": ({"quant_method": "quark", "global_quant_config": {}}, "exclude"),
    "gptq-dynamic": ({"quant_method": "gptq", "bits": 4, "group_size": 128}, "dynamic"),
}
HOSTILE_LISTS: dict[str, Any] = {
    "huge": [f"model.layers.{i}.mlp.down_proj" for i in range(90_000)],
    "nested": "@@NESTED@@",
    "wrong-type": 5,
    "string": "lm_head",
    "objects": [{"a": [1, 2]}, None, 3.5],
    "escapes": ["lm_head\x1b[2J\x1b]8;;http://x\x07", "\n::error::x", "\u202eevil"],
    "bad-regex": ["re:(", "re:[z-a]"],
    "backtracking-regex": ["re:(.*)*x$", "re:(a|a)*b", "re:(\\w+\\s?)*$"],
    "300-patterns": [f"re:.*layers\\.{i}\\..*" for i in range(300)],
    "long-pattern": ["re:" + "a" * 100_000],
}


def _exclusions(producer: str, hostile: str) -> Callable[[str], str]:
    """A config edit: the producer's quantization config with its list set to `hostile`."""

    def edit(text: str) -> str:
        config = json.loads(text)
        qc, key = EXCLUSION_LISTS[producer]
        qc = json.loads(json.dumps(qc))
        qc[key] = HOSTILE_LISTS[hostile]
        if producer == "gptq-dynamic" and isinstance(qc[key], list):
            qc[key] = {"-:" + str(item)[:200]: {"bits": 8} for item in qc[key][:1000]}
        config["quantization_config"] = qc
        out = json.dumps(config)
        return out.replace('"@@NESTED@@"', "[" * 60 + '"lm_head"' + "]" * 60)

    return edit


def _target_config(edit: Callable[[str], str]) -> Build:
    def build(target: Path) -> None:
        (target / "config.json").write_text(edit((target / "config.json").read_text()))

    return build


for _producer in EXCLUSION_LISTS:
    for _hostile in HOSTILE_LISTS:
        _full = _hostile in ("huge", "backtracking-regex", "escapes")
        target_case(
            f"tgt-quant-{_producer}-{_hostile}",
            _target_config(_exclusions(_producer, _hostile)),
            full=_full and _producer == "ct-ignore",
        )
        simple(
            f"cfg-quant-{_producer}-{_hostile}",
            set(),
            _config_edit(_exclusions(_producer, _hostile)),
            full=_full,
            may_convert=True,
        )


def write_corpus(root: Path) -> list[tuple[Case, Path]]:
    """Write every case under `root/<id>/draft`."""
    written = []
    for item in CASES:
        written.append((item, item.write(root / item.id)))
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "malformed-corpus")
    for item, path in write_corpus(target):
        print(f"{item.id}: {sorted(item.codes)} -> {path}")
