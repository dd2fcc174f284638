"""Reading PyTorch checkpoint files (`pytorch_model.bin`) without torch and without running them.

A `.bin` written by `torch.save` is a pickle, and unpickling it normally lets the file call any
Python function it names (`os.system`, `builtins.eval`, ...). This reader never does that: the
pickle is pre-scanned and loaded by :mod:`draftfit.checkpoint.unpickler`, whose unpickler
resolves only an allow-list of globals, each to an inert stand-in. The result of "loading" is
a tree of plain data from which this module reads tensor names, dtypes, shapes and byte
ranges. Any other global stops reading that file with an `unsafe-pickle-global` damage,
before anything could be called; a pickle over a cap (opcodes, nesting, sharing) is
`reader-limit-exceeded` or `invalid-torch-bin`.

Two layouts are understood:

* the zip archive written by torch >= 1.6: `<prefix>/data.pkl` (the pickle),
  `<prefix>/data/<key>` (one uncompressed member per storage), `<prefix>/byteorder`, ...;
* the legacy stream written by older torch (or `_use_new_zipfile_serialization=False`):
  pickled magic number, protocol version and sys-info, then the main pickle, then a pickled
  list of storage keys, then for each key an 8-byte little-endian element count and the raw
  bytes.

The archive itself is bounded too: at most
:data:`~draftfit.checkpoint.limits.MAX_ZIP_MEMBERS` members, and `data.pkl` is inflated only
when its declared size is under :data:`~draftfit.checkpoint.limits.MAX_PICKLE_BYTES` (and
read with that cap whatever it declares). Like the safetensors reader, every structural
problem becomes a :class:`Damage` (rules `unreadable-file`, `truncated-file`,
`invalid-torch-bin`, `unsafe-pickle-global`, `reader-limit-exceeded`) and nothing raises,
whatever the bytes.
"""

from __future__ import annotations

import errno
import io
import os
import pickle
import struct
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint.access import open_regular
from draftfit.checkpoint.dtypes import DTYPE_BITS
from draftfit.checkpoint.limits import MAX_PICKLE_BYTES, MAX_ZIP_MEMBERS
from draftfit.checkpoint.model import Damage, TensorInfo
from draftfit.checkpoint.unpickler import (
    MAX_EXPANSION_NODES,
    MAX_EXPANSION_PER_BYTE,
    MIN_EXPANSION_LIMIT,
    BadTensor,
    BoundedStream,
    Inert,
    Malformed,
    PickleLimitError,
    RestrictedUnpickler,
    Storage,
    Tensor,
    UnsafeGlobal,
    prescan_pickle,
    short_repr,
)
from draftfit.records import frozen
from draftfit.rule_ids import RuleId

if TYPE_CHECKING:
    from typing import Any, BinaryIO

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.UNREADABLE_FILE,
    rule_ids.TRUNCATED_FILE,
    rule_ids.UNSAFE_PICKLE_GLOBAL,
    rule_ids.INVALID_TORCH_BIN,
    rule_ids.READER_LIMIT_EXCEEDED,
)
EMITS_STAGE = "checkpoint reader: PyTorch .bin files"

# `torch.serialization.MAGIC_NUMBER` and `PROTOCOL_VERSION` of the legacy stream format.
LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL_VERSION = 1001
# Keys under which training scripts commonly nest the state dict.
STATE_DICT_KEYS = ("state_dict", "model", "module")

_ZIP_LOCAL_MAGIC = b"PK\x03\x04"
_ZIP_END_MAGIC = b"PK\x05\x06"
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")


@frozen
class TorchBinResult:
    """What one `.bin` file holds.

    Attributes:
        tensors: every tensor of the state dict, by name.
        damage: structural problems, in the order found.
        layout: `zip` (torch >= 1.6), `legacy`, or None when neither was recognised.
        state_dict_key: the top-level key the state dict was nested under (`state_dict`,
            `model`, `module`), or None when the top-level object is the state dict.
    """

    tensors: dict[str, TensorInfo]
    damage: list[Damage]
    layout: str | None = None
    state_dict_key: str | None = None


def read_torch_bin(path: Path, rel: str) -> tuple[dict[str, TensorInfo], list[Damage]]:
    """Read the tensors declared by the PyTorch checkpoint at `path` (named `rel`).

    `rel` is the file name relative to the checkpoint root; it is used in `TensorInfo.file`
    and `Damage.file`. Never executes pickle code and never raises.
    """
    result = inspect_torch_bin(path, rel)
    return result.tensors, result.damage


def inspect_torch_bin(path: Path, rel: str) -> TorchBinResult:
    """Like :func:`read_torch_bin`, also saying which layout and wrapper key were found."""
    try:
        fd, status = open_regular(path)  # non-blocking: a FIFO is an error, not a hang
        handle = os.fdopen(fd, "rb")
    except OSError as exc:
        return TorchBinResult({}, [_unreadable(rel, exc)])
    try:
        with handle:
            return _Reader(handle, status.st_size, rel).read()
    except OSError as exc:
        return TorchBinResult({}, [_unreadable(rel, exc)])
    except Exception as exc:  # fuzz-robustness: any surprise is damage, not a crash
        reason = f"{type(exc).__name__}: {exc}"[:300]
        return TorchBinResult(
            {}, [Damage(rule_ids.INVALID_TORCH_BIN, rel, f"cannot parse: {reason}")]
        )


def _unreadable(rel: str, exc: OSError) -> Damage:
    return Damage(rule_ids.UNREADABLE_FILE, rel, f"cannot read: {exc.strerror or exc}")


# --------------------------------------------------------------------------- reading


@frozen
class _StorageBytes:
    """Where a storage's bytes are: absolute offset, size, and whether they are raw there."""

    offset: int
    size: int
    raw: bool


class _Reader:
    """Reads one file; `damage` collects problems, methods return early on fatal ones."""

    def __init__(self, handle: BinaryIO, size: int, rel: str) -> None:
        self.handle = handle
        self.size = size
        self.rel = rel
        self.damage: list[Damage] = []
        self.unpickler = RestrictedUnpickler(io.BytesIO(), legacy=False)

    def fail(self, kind: RuleId, message: str, tensor: str | None = None) -> None:
        self.damage.append(Damage(kind, self.rel, message, tensor))

    def result(
        self,
        tensors: dict[str, TensorInfo] | None = None,
        layout: str | None = None,
        key: str | None = None,
    ) -> TorchBinResult:
        return TorchBinResult(tensors or {}, self.damage, layout, key)

    def read(self) -> TorchBinResult:
        head = self.handle.read(512)
        if not head:
            self.fail(rule_ids.TRUNCATED_FILE, "file is empty; a PyTorch checkpoint cannot be")
            return self.result()
        if head.startswith(_ZIP_LOCAL_MAGIC):
            return self._read_zip()
        if len(head) >= 262 and head[257:262] == b"ustar":
            self.fail(
                rule_ids.INVALID_TORCH_BIN,
                "file is a tar archive: the tar checkpoint layout of torch < 0.4 is not supported",
            )
            return self.result()
        return self._read_legacy()

    # ----------------------------------------------------------------- zip (torch >= 1.6)

    def _read_zip(self) -> TorchBinResult:
        members = self._declared_members()
        if members is not None and members > MAX_ZIP_MEMBERS:
            self.fail(
                rule_ids.READER_LIMIT_EXCEEDED,
                f"zip archive declares {members} members, above the limit of "
                f"{MAX_ZIP_MEMBERS}; not read",
            )
            return self.result(layout="zip")
        try:
            archive = zipfile.ZipFile(self.handle)
        except zipfile.BadZipFile as exc:
            if not self._has_end_record():
                self.fail(
                    rule_ids.TRUNCATED_FILE,
                    f"file starts like a zip archive (torch >= 1.6 layout) but has no "
                    f"end-of-central-directory record; it is probably truncated "
                    f"({self.size} bytes)",
                )
            else:
                self.fail(rule_ids.INVALID_TORCH_BIN, f"not a valid zip archive: {exc}")
            return self.result(layout="zip")
        except (OSError, ValueError, EOFError) as exc:
            return self._corrupt_zip(exc)
        with archive:
            try:
                return self._read_zip_archive(archive)
            except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as exc:
                self.fail(rule_ids.INVALID_TORCH_BIN, f"corrupt zip archive: {exc}")
                return self.result(layout="zip")
            except OSError as exc:
                return self._corrupt_zip(exc)

    def _corrupt_zip(self, exc: Exception) -> TorchBinResult:
        if isinstance(exc, OSError) and exc.errno not in (errno.EINVAL, None):
            raise exc  # a real I/O error: `unreadable-file`
        self.fail(rule_ids.INVALID_TORCH_BIN, f"corrupt zip archive: {exc}")
        return self.result(layout="zip")

    def _declared_members(self) -> int | None:
        """The member count the end-of-central-directory record (or its zip64 twin)
        declares, read before `zipfile` parses (and allocates for) the central directory;
        None when there is no such record (zipfile then reports the archive)."""
        tail_size = min(self.size, 65536 + 22)
        self.handle.seek(self.size - tail_size)
        tail = self.handle.read(tail_size)
        at = tail.rfind(_ZIP_END_MAGIC)
        if at < 0 or at + 22 > len(tail):
            return None
        (count,) = struct.unpack("<H", tail[at + 10 : at + 12])
        (directory_size,) = struct.unpack("<I", tail[at + 12 : at + 16])
        locator = at - 20
        if locator >= 0 and tail[locator : locator + 4] == b"PK\x06\x07":
            (end64,) = struct.unpack("<Q", tail[locator + 8 : locator + 16])
            if 0 <= end64 < self.size:
                self.handle.seek(end64)
                record = self.handle.read(56)
                if len(record) == 56 and record[:4] == b"PK\x06\x06":
                    (count,) = struct.unpack("<Q", record[32:40])
                    (directory_size,) = struct.unpack("<Q", record[40:48])
        # A central-directory entry is at least 46 bytes: a count the file cannot hold is
        # corruption (zipfile reports it), not a large archive.
        members = max(count, directory_size // 46)
        return members if members * 46 <= self.size else None

    def _has_end_record(self) -> bool:
        tail = min(self.size, 65536 + 22)
        self.handle.seek(self.size - tail)
        return _ZIP_END_MAGIC in self.handle.read(tail)

    def _read_zip_archive(self, archive: zipfile.ZipFile) -> TorchBinResult:
        names = archive.namelist()
        prefix = _archive_prefix(names)
        if prefix is None:
            shown = ", ".join(f"`{n}`" for n in names[:5]) + (", ..." if len(names) > 5 else "")
            self.fail(
                rule_ids.INVALID_TORCH_BIN,
                "zip archive has no `<prefix>/data.pkl` record, so it is not a torch.save "
                f"checkpoint (members: {shown or 'none'})",
            )
            return self.result(layout="zip")
        info = archive.getinfo(f"{prefix}/data.pkl")
        if info.file_size > MAX_PICKLE_BYTES:
            self.fail(
                rule_ids.INVALID_TORCH_BIN,
                f"`{prefix}/data.pkl` is {info.file_size} bytes, above the "
                f"{MAX_PICKLE_BYTES}-byte limit for a state dict's pickle",
            )
            return self.result(layout="zip")
        with archive.open(info) as record:  # inflates at most the declared size, capped
            pickled = record.read(MAX_PICKLE_BYTES + 1)
        little_endian = True
        byteorder_name = f"{prefix}/byteorder"
        if byteorder_name in names:
            with archive.open(byteorder_name) as record:
                order = record.read(16).strip()
            if order not in (b"little", b"big"):
                self.fail(
                    rule_ids.INVALID_TORCH_BIN,
                    f"`{byteorder_name}` says {order!r}, expected `little` or `big`",
                )
            little_endian = order != b"big"

        loaded = self._unpickle(io.BytesIO(pickled), False, f"`{prefix}/data.pkl`")
        if loaded is _FAILED:
            return self.result(layout="zip")
        unpickler = self.unpickler
        located = self._locate_zip_storages(archive, prefix, unpickler.storages)
        return self._collect(loaded, unpickler, located, "zip", little_endian)

    def _locate_zip_storages(
        self, archive: zipfile.ZipFile, prefix: str, storages: dict[str, Storage]
    ) -> dict[str, _StorageBytes | str]:
        """Each storage key -> where its bytes are, or a message saying why they are not."""
        located: dict[str, _StorageBytes | str] = {}
        for key in storages:
            name = f"{prefix}/data/{key}"
            try:
                info = archive.getinfo(name)
            except KeyError:
                located[key] = f"its storage record `{name}` is missing from the archive"
                continue
            self.handle.seek(info.header_offset)
            header = self.handle.read(_LOCAL_HEADER.size)
            if len(header) < _LOCAL_HEADER.size:
                located[key] = f"the local header of `{name}` lies past the end of the file"
                continue
            fields = _LOCAL_HEADER.unpack(header)
            if fields[0] != _ZIP_LOCAL_MAGIC:
                located[key] = f"`{name}` has no valid local file header at {info.header_offset}"
                continue
            name_length, extra_length = fields[9], fields[10]
            start = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
            if start + info.compress_size > self.size:
                located[key] = (
                    f"`{name}` ends at byte {start + info.compress_size}, past the end of the "
                    f"{self.size}-byte file"
                )
                continue
            raw = info.compress_type == zipfile.ZIP_STORED and not info.flag_bits & 0x1
            located[key] = _StorageBytes(start, info.file_size, raw)
        return located

    # ----------------------------------------------------------------- legacy stream

    def _read_legacy(self) -> TorchBinResult:
        self.handle.seek(0)
        head = self.handle.read(len(_LEGACY_MAGIC_PICKLE))
        if head != _LEGACY_MAGIC_PICKLE:
            if _LEGACY_MAGIC_PICKLE.startswith(head):
                self.fail(
                    rule_ids.TRUNCATED_FILE,
                    f"file is {self.size} bytes, cut inside the magic number of a legacy torch "
                    "pickle stream",
                )
            else:
                self.fail(
                    rule_ids.INVALID_TORCH_BIN,
                    "file is neither a zip archive (torch >= 1.6) nor a legacy torch pickle "
                    "stream (no torch magic number)",
                )
            return self.result()
        preamble: list[object] = []
        for what in ("legacy protocol version", "legacy system info"):
            value = self._unpickle(self.handle, True, what)
            if value is _FAILED:
                return self.result(layout="legacy")
            preamble.append(value)
        if preamble[0] != LEGACY_PROTOCOL_VERSION:
            self.fail(
                rule_ids.INVALID_TORCH_BIN,
                f"legacy protocol version is {short_repr(preamble[0])}, expected "
                f"{LEGACY_PROTOCOL_VERSION}",
            )
            return self.result(layout="legacy")
        if not isinstance(preamble[1], dict):
            self.fail(rule_ids.INVALID_TORCH_BIN, "legacy system info is not a dict")
            return self.result(layout="legacy")

        loaded = self._unpickle(self.handle, True, "the main pickle")
        unpickler = self.unpickler
        if loaded is _FAILED:
            return self.result(layout="legacy")
        keys = self._unpickle(self.handle, True, "the storage key list")
        if keys is _FAILED:
            return self.result(layout="legacy")
        if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
            self.fail(
                rule_ids.INVALID_TORCH_BIN, "the legacy storage key list is not a list of strings"
            )
            return self.result(layout="legacy")
        located = self._locate_legacy_storages(keys, unpickler.storages)
        if located is None:
            return self.result(layout="legacy")
        # The legacy writer stores every storage little-endian, whatever the machine.
        return self._collect(loaded, unpickler, located, "legacy", little_endian=True)

    def _locate_legacy_storages(
        self, keys: list[str], storages: dict[str, Storage]
    ) -> dict[str, _StorageBytes | str] | None:
        located: dict[str, _StorageBytes | str] = {}
        offset = self.handle.tell()
        for key in keys:
            storage = storages.get(key)
            if storage is None:
                self.fail(
                    rule_ids.INVALID_TORCH_BIN,
                    f"storage key `{key}` is listed but no tensor references it",
                )
                return None
            if offset + 8 > self.size:
                self.fail(
                    rule_ids.TRUNCATED_FILE,
                    f"file ends at byte {self.size}, before the element count of storage "
                    f"`{key}` (at {offset})",
                )
                return None
            self.handle.seek(offset)
            (count,) = struct.unpack("<q", self.handle.read(8))
            if count < 0:
                self.fail(
                    rule_ids.INVALID_TORCH_BIN,
                    f"storage `{key}` has a negative element count {count}",
                )
                return None
            start = offset + 8
            end = start + count * storage.type.itemsize
            if end > self.size:
                self.fail(
                    rule_ids.TRUNCATED_FILE,
                    f"storage `{key}` ({count} elements) ends at byte {end}, past the end of "
                    f"the {self.size}-byte file",
                )
                return None
            located[key] = _StorageBytes(start, end - start, raw=True)
            offset = end
        for key in storages:
            located.setdefault(key, f"storage `{key}` is not in the legacy storage key list")
        return located

    # ----------------------------------------------------------------- shared

    def _unpickle(self, source: BinaryIO, legacy: bool, what: str) -> object:
        """Pre-scan then load one pickle from `source`; on failure record damage and return
        `_FAILED`. On success, `self.unpickler` is the unpickler that loaded it.

        `legacy` means `source` is the file itself (a pickle cut short is a truncated
        file); otherwise it is an in-memory `data.pkl` (cut short is a bad pickle).
        """
        stream_is_file = legacy
        if legacy:  # reads never go past the end of the file, whatever an opcode declares
            source = BoundedStream(source, self.size)  # type: ignore[assignment]
        unpickler = self.unpickler = RestrictedUnpickler(source, legacy=legacy)
        try:
            start = source.tell()
            max_nodes = min(MAX_EXPANSION_PER_BYTE * self.size, MAX_EXPANSION_NODES)
            refusal = prescan_pickle(source, max(MIN_EXPANSION_LIMIT, max_nodes))
            if refusal is not None:
                self.fail(rule_ids.INVALID_TORCH_BIN, f"{what} is refused: {refusal}")
                return _FAILED
            source.seek(start)
            return unpickler.load()
        except PickleLimitError as exc:
            self.fail(rule_ids.READER_LIMIT_EXCEEDED, f"{what} is not read: {exc}")
        except UnsafeGlobal as exc:
            self.fail(
                rule_ids.UNSAFE_PICKLE_GLOBAL,
                f"{what} references the global `{exc.qualname}`, which is not a tensor type; "
                "reading stopped without calling it (torch.load(weights_only=False) would)",
            )
        except Malformed as exc:
            self.fail(rule_ids.INVALID_TORCH_BIN, f"{what} is not a torch checkpoint pickle: {exc}")
        except (pickle.UnpicklingError, EOFError, ValueError) as exc:
            # Only the legacy stream runs into the end of the file; a short data.pkl inside
            # an intact zip is a bad pickle, not a truncated file.
            if stream_is_file and (isinstance(exc, EOFError) or self.handle.tell() >= self.size):
                self.fail(
                    rule_ids.TRUNCATED_FILE, f"{what} ends early: the file is truncated ({exc})"
                )
            else:
                self.fail(rule_ids.INVALID_TORCH_BIN, f"{what} is not a valid pickle: {exc}")
        except RecursionError:
            self.fail(rule_ids.INVALID_TORCH_BIN, f"{what} is nested too deeply")
        except MemoryError:
            self.fail(rule_ids.INVALID_TORCH_BIN, f"{what} asks for more memory than is available")
        except OSError:
            raise
        except Exception as exc:  # anything a hostile opcode sequence can provoke
            self.fail(
                rule_ids.INVALID_TORCH_BIN,
                f"{what} is not a valid pickle: {type(exc).__name__}: {exc}",
            )
        return _FAILED

    def _collect(
        self,
        loaded: object,
        unpickler: RestrictedUnpickler,
        located: dict[str, _StorageBytes | str],
        layout: str,
        little_endian: bool,
    ) -> TorchBinResult:
        for message in unpickler.conflicts:
            self.fail(rule_ids.INVALID_TORCH_BIN, message)
        mapping, key = self._find_state_dict(loaded)
        tensors: dict[str, TensorInfo] = {}
        for name, value in (mapping or {}).items():
            if not isinstance(value, (Tensor, BadTensor)):
                continue  # non-tensor entries (step counters, config) are not weights
            if not isinstance(name, str):
                self.fail(rule_ids.INVALID_TORCH_BIN, f"a tensor is stored under the key {name!r}")
                continue
            info = self._tensor_info(name, value, located, little_endian)
            if info is not None:
                tensors[name] = info
        return self.result(tensors, layout, key)

    def _find_state_dict(self, loaded: object) -> tuple[dict[Any, Any] | None, str | None]:
        if not isinstance(loaded, dict):
            self.fail(
                rule_ids.INVALID_TORCH_BIN,
                f"top-level object is {_describe(loaded)}, expected a dict of tensors "
                "(a state dict)",
            )
            return None, None
        if any(isinstance(v, (Tensor, BadTensor)) for v in loaded.values()):
            return loaded, None
        for key in STATE_DICT_KEYS:
            nested = loaded.get(key)
            if isinstance(nested, dict):
                return nested, key
        if loaded:
            shown = ", ".join(f"`{k}`" for k in list(loaded)[:5])
            self.fail(
                rule_ids.INVALID_TORCH_BIN,
                f"top-level dict holds no tensors and no "
                f"{'/'.join(STATE_DICT_KEYS)} key (keys: {shown})",
            )
        return loaded, None

    def _tensor_info(
        self,
        name: str,
        tensor: Tensor | BadTensor,
        located: dict[str, _StorageBytes | str],
        little_endian: bool,
    ) -> TensorInfo | None:
        if isinstance(tensor, BadTensor):
            self.fail(rule_ids.INVALID_TORCH_BIN, f"`{name}`: {tensor.reason}", name)
            return None
        storage = tensor.storage
        if tensor.dtype is None or tensor.dtype not in DTYPE_BITS:
            self.fail(
                rule_ids.INVALID_TORCH_BIN,
                f"`{name}` has a torch dtype with no safetensors equivalent "
                f"(`{tensor.dtype_name}`)",
                name,
            )
            return None
        where = located.get(storage.key, f"storage `{storage.key}` was never located")
        if isinstance(where, str):
            self.fail(rule_ids.INVALID_TORCH_BIN, f"`{name}`: {where}", name)
            return None
        declared = storage.type.itemsize * (storage.view_offset + storage.numel)
        if where.size < declared:
            self.fail(
                rule_ids.INVALID_TORCH_BIN,
                f"`{name}`: storage `{storage.key}` declares {declared} bytes "
                f"({storage.type.qualname}), but its record holds {where.size}",
                name,
            )
            return None
        count = 1
        for dim in tensor.shape:
            count *= dim
        shape = list(tensor.shape)
        if count:
            last = tensor.storage_offset + sum(
                (d - 1) * s for d, s in zip(tensor.shape, tensor.stride, strict=True)
            )
            if (last + 1) * tensor.itemsize > storage.nbytes:
                self.fail(
                    rule_ids.INVALID_TORCH_BIN,
                    f"`{name}` ({tensor.dtype} {shape}, storage offset "
                    f"{tensor.storage_offset}) reaches past the end of storage "
                    f"`{storage.key}` ({storage.nbytes} bytes)",
                    name,
                )
                return None
        byte_range = None
        contiguous = _is_contiguous(tensor.shape, tensor.stride)
        if where.raw and contiguous and (little_endian or tensor.itemsize == 1):
            start = (
                where.offset
                + storage.view_offset * storage.type.itemsize
                + tensor.storage_offset * tensor.itemsize
            )
            byte_range = (start, start + count * tensor.itemsize)
        return TensorInfo(name, tensor.dtype, tensor.shape, self.rel, byte_range)


_FAILED = object()
# `pickle.dumps(LEGACY_MAGIC_NUMBER, protocol=2)`, how every legacy stream starts.
_LEGACY_MAGIC_PICKLE = b"\x80\x02\x8a\x0a" + LEGACY_MAGIC_NUMBER.to_bytes(10, "little") + b"."


def _archive_prefix(names: list[str]) -> str | None:
    """The archive's top folder, as torch finds it: the first record's, if it holds data.pkl."""
    candidates = [n[: -len("/data.pkl")] for n in names if n.endswith("/data.pkl")]
    candidates = [c for c in candidates if c and "/" not in c]
    if not candidates:
        return None
    first = names[0].split("/", 1)[0]
    return first if first in candidates else candidates[0]


def _is_contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    """Row-major contiguity as torch defines it (strides of size-1 dimensions don't matter)."""
    expected = 1
    for dim, step in zip(reversed(shape), reversed(stride), strict=True):
        if dim == 0:
            return True
        if dim != 1 and step != expected:
            return False
        expected *= dim
    return True


def _describe(value: object) -> str:
    if isinstance(value, (Tensor, BadTensor)):
        return "a single tensor"
    if isinstance(value, Inert):
        return f"a `{getattr(value, 'qualname', type(value).__name__)}`"
    return f"a {type(value).__name__}"
