"""Writes PyTorch checkpoint files without torch, by emitting pickle opcodes by hand.

The files follow what `torch.save` writes (checked against real torch output): a protocol-2
pickle of an `OrderedDict` whose values are `torch._utils._rebuild_tensor_v2(storage, offset,
size, stride, requires_grad, OrderedDict())` calls, each storage being a persistent id
`('storage', torch.<Type>Storage, key, 'cpu', numel)`. Tests use it to make files with chosen
names, dtypes, shapes, shared storages, storage offsets, strides, damage and hostile globals.
"""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

STORAGE_TYPES = {
    "F32": "FloatStorage",
    "F16": "HalfStorage",
    "BF16": "BFloat16Storage",
    "F64": "DoubleStorage",
    "I64": "LongStorage",
    "I32": "IntStorage",
    "I16": "ShortStorage",
    "I8": "CharStorage",
    "U8": "ByteStorage",
    "BOOL": "BoolStorage",
}
ITEMSIZE = {
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "F64": 8,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}
LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C


class Pickle:
    """A minimal pickle emitter: the opcodes torch.save uses, written one by one."""

    def __init__(self, protocol: int = 2) -> None:
        self.out = bytearray(b"\x80" + bytes([protocol]))

    def raw(self, data: bytes) -> Pickle:
        self.out += data
        return self

    def global_(self, module: str, name: str) -> Pickle:
        """GLOBAL: `c<module>\\n<name>\\n` (the unpickler's `find_class` is asked for it)."""
        return self.raw(b"c" + f"{module}\n{name}\n".encode())

    def stack_global(self, module: str, name: str) -> Pickle:
        """STACK_GLOBAL (protocol 4): module and name pushed as strings first."""
        return self.unicode(module).unicode(name).raw(b"\x93")

    def mark(self) -> Pickle:
        return self.raw(b"(")

    def tuple(self) -> Pickle:
        return self.raw(b"t")

    def empty_tuple(self) -> Pickle:
        return self.raw(b")")

    def empty_dict(self) -> Pickle:
        return self.raw(b"}")

    def empty_list(self) -> Pickle:
        return self.raw(b"]")

    def setitems(self) -> Pickle:
        return self.raw(b"u")

    def setitem(self) -> Pickle:
        return self.raw(b"s")

    def appends(self) -> Pickle:
        return self.raw(b"e")

    def reduce(self) -> Pickle:
        return self.raw(b"R")

    def build(self) -> Pickle:
        return self.raw(b"b")

    def binpersid(self) -> Pickle:
        return self.raw(b"Q")

    def none(self) -> Pickle:
        return self.raw(b"N")

    def bool(self, value: bool) -> Pickle:
        return self.raw(b"\x88" if value else b"\x89")

    def unicode(self, text: str) -> Pickle:
        data = text.encode()
        return self.raw(b"X" + struct.pack("<I", len(data)) + data)

    def int(self, value: int) -> Pickle:
        if 0 <= value < 256:
            return self.raw(b"K" + bytes([value]))
        if 0 <= value < 65536:
            return self.raw(b"M" + struct.pack("<H", value))
        if -(2**31) <= value < 2**31:
            return self.raw(b"J" + struct.pack("<i", value))
        data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
        return self.raw(b"\x8a" + bytes([len(data)]) + data)

    def value(self, obj: object) -> Pickle:
        """Plain data: None, bool, int, str, tuple, list, dict (recursively)."""
        if obj is None:
            return self.none()
        if isinstance(obj, bool):
            return self.bool(obj)
        if isinstance(obj, int):
            return self.int(obj)
        if isinstance(obj, str):
            return self.unicode(obj)
        if isinstance(obj, tuple):
            self.mark()
            for item in obj:
                self.value(item)
            return self.tuple()
        if isinstance(obj, list):
            self.empty_list()
            if obj:
                self.mark()
                for item in obj:
                    self.value(item)
                self.appends()
            return self
        if isinstance(obj, dict):
            self.empty_dict()
            if obj:
                self.mark()
                for key, item in obj.items():
                    self.value(key).value(item)
                self.setitems()
            return self
        raise TypeError(f"cannot pickle {type(obj).__name__}")

    def ordered_dict(self) -> Pickle:
        """An empty `collections.OrderedDict()` (items follow with MARK ... SETITEMS)."""
        return self.global_("collections", "OrderedDict").empty_tuple().reduce()

    def stop(self) -> bytes:
        self.out += b"."
        return bytes(self.out)


@dataclass(frozen=True)
class Storage:
    """One storage: its key (the zip member name under `data/`), dtype and raw bytes."""

    key: str
    dtype: str
    data: bytes

    @property
    def numel(self) -> int:
        return len(self.data) // ITEMSIZE[self.dtype]


@dataclass(frozen=True)
class Tensor:
    """A tensor viewing `storage` (a key): shape, storage offset (elements), stride.

    `rebuild` picks the pickled form: `v2` (what torch >= 1.x writes), `v1` (plain
    `_rebuild_tensor`) or `parameter` (`_rebuild_parameter` around a `v2` tensor).
    """

    name: str
    storage: str
    shape: tuple[int, ...]
    storage_offset: int = 0
    stride: tuple[int, ...] | None = None
    rebuild: str = "v2"


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    step = 1
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


def simple(name: str, dtype: str, shape: tuple[int, ...], data: bytes) -> tuple[Storage, Tensor]:
    """A tensor with a storage of its own, keyed by its name."""
    key = name.replace("/", "_")
    return Storage(key, dtype, data), Tensor(name, key, shape)


def _emit_tensor(
    pickle: Pickle, tensor: Tensor, storages: dict[str, Storage], legacy: bool
) -> None:
    storage = storages[tensor.storage]
    if tensor.rebuild == "parameter":
        pickle.global_("torch._utils", "_rebuild_parameter").mark()
    function = "_rebuild_tensor" if tensor.rebuild == "v1" else "_rebuild_tensor_v2"
    pickle.global_("torch._utils", function).mark()
    # persistent id: ('storage', torch.<Type>Storage, key, 'cpu', numel[, view_metadata])
    pickle.mark().unicode("storage").global_("torch", STORAGE_TYPES[storage.dtype])
    pickle.unicode(storage.key).unicode("cpu").int(storage.numel)
    if legacy:
        pickle.none()
    pickle.tuple().binpersid()
    pickle.int(tensor.storage_offset)
    pickle.value(tuple(tensor.shape))
    pickle.value(tensor.stride if tensor.stride is not None else row_major(tensor.shape))
    if tensor.rebuild != "v1":
        pickle.bool(False).ordered_dict()
    pickle.tuple().reduce()
    if tensor.rebuild == "parameter":
        pickle.bool(False).ordered_dict().tuple().reduce()


def state_dict_pickle(
    storages: Iterable[Storage],
    tensors: Iterable[Tensor],
    *,
    legacy: bool = False,
    wrap_key: str | None = None,
    extra: Callable[[Pickle], None] | None = None,
    protocol: int = 2,
) -> bytes:
    """The pickle of an `OrderedDict` name -> tensor, optionally as `{wrap_key: it}`.

    `extra`, when given, emits one more key/value pair at the end of the state dict (e.g. a
    hostile `GLOBAL` call).
    """
    by_key = {s.key: s for s in storages}
    pickle = Pickle(protocol)
    if wrap_key is not None:
        pickle.empty_dict().unicode("epoch").int(3).setitem().unicode(wrap_key)
    pickle.ordered_dict().mark()
    for tensor in tensors:
        pickle.unicode(tensor.name)
        _emit_tensor(pickle, tensor, by_key, legacy)
    if extra is not None:
        extra(pickle)
    pickle.setitems()
    if wrap_key is not None:
        pickle.setitem()
    return pickle.stop()


def write_torch_zip(
    path: Path,
    storages: Iterable[Storage],
    tensors: Iterable[Tensor] = (),
    *,
    prefix: str | None = None,
    wrap_key: str | None = None,
    data_pkl: bytes | None = None,
    omit: Iterable[str] = (),
    member_data: dict[str, bytes] | None = None,
    compress: bool = False,
    align: int = 64,
    zip64: bool = False,
) -> dict[str, int]:
    """Write a torch >= 1.6 zip checkpoint; returns each storage key's data offset.

    `data_pkl` replaces the generated pickle; `omit` leaves storage members out;
    `member_data` replaces a storage member's bytes; `compress` deflates the storages;
    `align` pads each member's local extra field so its data starts on that boundary,
    as torch does (64 bytes); `zip64` adds zip64 extra fields, as torch does past 4 GiB.
    """
    storages = list(storages)
    tensors = list(tensors)
    prefix = prefix if prefix is not None else path.stem
    if data_pkl is None:
        data_pkl = state_dict_pickle(storages, tensors, wrap_key=wrap_key)
    records: list[tuple[str, bytes, bool]] = [(f"{prefix}/data.pkl", data_pkl, False)]
    records.append((f"{prefix}/byteorder", b"little", False))
    for storage in storages:
        if storage.key in omit:
            continue
        data = (member_data or {}).get(storage.key, storage.data)
        records.append((f"{prefix}/data/{storage.key}", data, compress))
    records.append((f"{prefix}/version", b"3\n", False))
    offsets: dict[str, int] = {}
    with path.open("wb") as handle, zipfile.ZipFile(handle, "w") as archive:
        for name, data, deflate in records:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            header_end = handle.tell() + 30 + len(name.encode())
            padding = (-(header_end + 4) % align) if align > 1 else 0
            info.extra = struct.pack("<HH", 0x4246, padding) + b"Z" * padding  # torch's "FB"
            with archive.open(info, "w", force_zip64=zip64) as stream:
                # the local header is out: the member's data starts here
                if name.startswith(f"{prefix}/data/"):
                    offsets[name.rsplit("/", 1)[1]] = handle.tell()
                stream.write(data)
    return offsets


def legacy_bytes(
    storages: Iterable[Storage],
    tensors: Iterable[Tensor] = (),
    *,
    wrap_key: str | None = None,
    main_pickle: bytes | None = None,
    sys_info: bytes | None = None,
) -> tuple[bytes, dict[str, int]]:
    """A legacy (torch < 1.6) stream and each storage's data offset in it.

    Layout: pickled magic number, protocol version 1001, sys-info dict, the main pickle,
    the pickled list of storage keys, then per storage an 8-byte little-endian element count
    and its raw bytes.
    """
    storages = list(storages)
    out = bytearray(Pickle().int(LEGACY_MAGIC_NUMBER).stop())
    out += Pickle().int(1001).stop()
    if sys_info is None:
        info = {
            "protocol_version": 1001,
            "little_endian": True,
            "type_sizes": {"short": 2, "int": 4, "long": 4},
        }
        sys_info = Pickle().value(info).stop()
    if main_pickle is None:
        main_pickle = state_dict_pickle(storages, tensors, legacy=True, wrap_key=wrap_key)
    out += sys_info + main_pickle
    out += Pickle().value([s.key for s in storages]).stop()
    offsets: dict[str, int] = {}
    for storage in storages:
        out += struct.pack("<q", storage.numel)
        offsets[storage.key] = len(out)
        out += storage.data
    return bytes(out), offsets


def write_torch_legacy(path: Path, *args: object, **kwargs: object) -> dict[str, int]:
    """Write :func:`legacy_bytes` to `path`; returns each storage's data offset."""
    data, offsets = legacy_bytes(*args, **kwargs)  # type: ignore[arg-type]
    path.write_bytes(data)
    return offsets


def call_global(
    module: str, name: str, *args: object, stack: bool = False
) -> Callable[[Pickle], None]:
    """An `extra` entry `"payload": module.name(*args)`: what a hostile checkpoint carries."""

    def emit(pickle: Pickle) -> None:
        pickle.unicode("payload")
        if stack:
            pickle.stack_global(module, name)
        else:
            pickle.global_(module, name)
        pickle.value(tuple(args)).reduce()

    return emit


def hostile_pickle(module: str, name: str, *args: object, stack: bool = False) -> bytes:
    """A pickle that is nothing but `module.name(*args)` (the classic payload)."""
    pickle = Pickle(4 if stack else 2)
    if stack:
        pickle.stack_global(module, name)
    else:
        pickle.global_(module, name)
    return pickle.value(tuple(args)).reduce().stop()
