"""Reading PyTorch checkpoint files (`pytorch_model.bin`) without torch and without running them.

A `.bin` written by `torch.save` is a pickle, and unpickling it normally lets the file call any
Python function it names (`os.system`, `builtins.eval`, ...). This reader never does that: its
unpickler resolves only an allow-list of globals, and each one resolves to an inert stand-in
built here (never the real class or function). Calling a stand-in merely records its
arguments, so the result of "loading" is a tree of plain data from which tensor names, dtypes,
shapes and byte ranges are read. Any other global stops reading that file with an
`unsafe-pickle-global` damage, before anything could be called.

Before the unpickler runs, a pre-scan walks the opcodes (with `pickletools`, executing
nothing) and refuses pickles that would exhaust the reader rather than fool it: objects
shared through the memo so that hashing them never ends ("billion laughs"), memo slot
numbers that make CPython's unpickler allocate gigabytes, and protocol-5 buffer opcodes.

Two layouts are understood:

* the zip archive written by torch >= 1.6: `<prefix>/data.pkl` (the pickle),
  `<prefix>/data/<key>` (one uncompressed member per storage), `<prefix>/byteorder`, ...;
* the legacy stream written by older torch (or `_use_new_zipfile_serialization=False`):
  pickled magic number, protocol version and sys-info, then the main pickle, then a pickled
  list of storage keys, then for each key an 8-byte little-endian element count and the raw
  bytes.

Like the safetensors reader, every structural problem becomes a :class:`Damage` (kinds
`unreadable-file`, `truncated-file`, `invalid-torch-bin`, `unsafe-pickle-global`) and nothing
raises, whatever the bytes.
"""

from __future__ import annotations

import errno
import io
import pickle
import pickletools
import reprlib
import struct
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from draftfit.checkpoint.dtypes import DTYPE_BITS
from draftfit.checkpoint.model import Damage, TensorInfo

# `torch.serialization.MAGIC_NUMBER` and `PROTOCOL_VERSION` of the legacy stream format.
LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL_VERSION = 1001
# A state dict's pickle is ~150 bytes per tensor; anything this large is not one (zip bomb).
MAX_PICKLE_BYTES = 64 * 1024 * 1024
# Through its memo a pickle can share one object many times, so a few hundred bytes can
# describe a tuple of 2**40 leaves whose mere hashing never ends ("billion laughs"). The
# pre-scan refuses any object larger, fully expanded, than this many nodes per pickle byte
# (torch's own pickles stay near 1).
MAX_EXPANSION_PER_BYTE = 16
MIN_EXPANSION_LIMIT = 1_000_000
# Elements the stand-ins may inspect in one pickle: a hostile pickle can hand the same large
# list to many calls through its memo, which must not turn into quadratic work.
MAX_INSPECTED_ELEMENTS = 50_000_000
# torch tensors have at most this many dimensions.
MAX_DIMS = 64
# Keys under which training scripts commonly nest the state dict.
STATE_DICT_KEYS = ("state_dict", "model", "module")

_ZIP_LOCAL_MAGIC = b"PK\x03\x04"
_ZIP_END_MAGIC = b"PK\x05\x06"
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")

# Legacy typed-storage classes (`torch.<Name>`) -> (safetensors dtype or None, bytes per element).
_STORAGE_TYPES: dict[str, tuple[str | None, int]] = {
    "FloatStorage": ("F32", 4),
    "HalfStorage": ("F16", 2),
    "BFloat16Storage": ("BF16", 2),
    "DoubleStorage": ("F64", 8),
    "LongStorage": ("I64", 8),
    "IntStorage": ("I32", 4),
    "ShortStorage": ("I16", 2),
    "CharStorage": ("I8", 1),
    "ByteStorage": ("U8", 1),
    "BoolStorage": ("BOOL", 1),
    "ComplexFloatStorage": ("C64", 8),
    "ComplexDoubleStorage": (None, 16),
    # Storage of bytes; torch uses it for dtypes newer than the typed classes (float8, uint16).
    "UntypedStorage": ("U8", 1),
}

# `torch.<name>` dtype objects -> (safetensors dtype or None when it has none, bytes per element).
_TORCH_DTYPES: dict[str, tuple[str | None, int]] = {
    "float32": ("F32", 4),
    "float": ("F32", 4),
    "float16": ("F16", 2),
    "half": ("F16", 2),
    "bfloat16": ("BF16", 2),
    "float64": ("F64", 8),
    "double": ("F64", 8),
    "int64": ("I64", 8),
    "long": ("I64", 8),
    "int32": ("I32", 4),
    "int": ("I32", 4),
    "int16": ("I16", 2),
    "short": ("I16", 2),
    "int8": ("I8", 1),
    "uint8": ("U8", 1),
    "bool": ("BOOL", 1),
    "uint16": ("U16", 2),
    "uint32": ("U32", 4),
    "uint64": ("U64", 8),
    "float8_e4m3fn": ("F8_E4M3", 1),
    "float8_e5m2": ("F8_E5M2", 1),
    "float8_e8m0fnu": ("F8_E8M0", 1),
    "complex64": ("C64", 8),
    "cfloat": ("C64", 8),
    # Known to torch but with no safetensors name: a tensor of these is reported, not read.
    "float8_e4m3fnuz": (None, 1),
    "float8_e5m2fnuz": (None, 1),
    "float4_e2m1fn_x2": (None, 1),
    "complex32": (None, 4),
    "complex128": (None, 16),
    "cdouble": (None, 16),
}

_REBUILD_FUNCTIONS: dict[tuple[str, str], str] = {
    ("torch._utils", "_rebuild_tensor"): "tensor",
    ("torch._utils", "_rebuild_tensor_v2"): "tensor_v2",
    ("torch._utils", "_rebuild_tensor_v3"): "tensor_v3",
    ("torch._utils", "_rebuild_parameter"): "parameter",
    ("torch._utils", "_rebuild_parameter_with_state"): "parameter",
    ("torch._tensor", "_rebuild_from_type_v2"): "from_type_v2",
}

# Classes a tensor subclass may be rebuilt as (`_rebuild_from_type_v2`'s `new_type`).
_TENSOR_TYPES = frozenset({("torch", "Tensor"), ("torch.nn.parameter", "Parameter")})


@dataclass(frozen=True)
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
        handle = path.open("rb")
    except OSError as exc:
        return TorchBinResult({}, [_unreadable(rel, exc)])
    try:
        with handle:
            size = path.stat().st_size
            return _Reader(handle, size, rel).read()
    except OSError as exc:
        return TorchBinResult({}, [_unreadable(rel, exc)])
    except Exception as exc:  # fuzz-robustness: any surprise is damage, not a crash
        reason = f"{type(exc).__name__}: {exc}"[:300]
        return TorchBinResult({}, [Damage("invalid-torch-bin", rel, f"cannot parse: {reason}")])


def _unreadable(rel: str, exc: OSError) -> Damage:
    return Damage("unreadable-file", rel, f"cannot read: {exc.strerror or exc}")


# --------------------------------------------------------------------------- inert stand-ins


class _Malformed(Exception):
    """The pickle is well-formed pickle but not a torch checkpoint; reading stops."""


class _UnsafeGlobal(Exception):
    """The pickle names a global outside the allow-list; reading stops before it is used."""

    def __init__(self, qualname: str) -> None:
        super().__init__(qualname)
        self.qualname = qualname


class _Inert:
    """Base of every stand-in: `BUILD` state is ignored instead of touching attributes."""

    __slots__ = ()

    def __setstate__(self, state: object) -> None:
        return None


class _StorageType(_Inert):
    """Stands in for `torch.FloatStorage` & co."""

    __slots__ = ("dtype", "itemsize", "qualname")

    def __init__(self, qualname: str, dtype: str | None, itemsize: int) -> None:
        self.qualname = qualname
        self.dtype = dtype
        self.itemsize = itemsize


class _DType(_Inert):
    """Stands in for a `torch.<dtype>` object."""

    __slots__ = ("dtype", "itemsize", "qualname")

    def __init__(self, qualname: str, dtype: str | None, itemsize: int) -> None:
        self.qualname = qualname
        self.dtype = dtype
        self.itemsize = itemsize


class _TypeMarker(_Inert):
    """Stands in for `torch.Tensor` / `torch.nn.Parameter` as a rebuild target type."""

    __slots__ = ("qualname",)

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname


class _Storage(_Inert):
    """A persistent-id storage reference: which record holds the bytes, and how many.

    `view_offset` is for legacy storage views: the view starts that many elements into
    storage `key` and spans `numel` elements.
    """

    __slots__ = ("key", "numel", "type", "view_offset")

    def __init__(self, key: str, type: _StorageType, numel: int, view_offset: int = 0) -> None:
        self.key = key
        self.type = type
        self.numel = numel
        self.view_offset = view_offset

    @property
    def nbytes(self) -> int:
        return self.numel * self.type.itemsize


class _Tensor(_Inert):
    """A rebuilt tensor: nothing but where its elements live."""

    __slots__ = (
        "dtype",
        "dtype_name",
        "itemsize",
        "shape",
        "storage",
        "storage_offset",
        "stride",
    )

    def __init__(
        self,
        storage: _Storage,
        storage_offset: int,
        shape: tuple[int, ...],
        stride: tuple[int, ...],
        dtype: str | None,
        itemsize: int,
        dtype_name: str,
    ) -> None:
        self.storage = storage
        self.storage_offset = storage_offset
        self.shape = shape
        self.stride = stride
        self.dtype = dtype
        self.itemsize = itemsize
        self.dtype_name = dtype_name


class _BadTensor(_Inert):
    """A rebuild call whose arguments make no tensor; reported under the tensor's name."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _StateDict(dict):  # type: ignore[type-arg]
    """What `collections.OrderedDict` builds: a plain dict that ignores `BUILD` state
    (`Module.state_dict()` pickles a `_metadata` attribute that way)."""

    def __setstate__(self, state: object) -> None:
        return None


class _Budget:
    """Counts elements the stand-ins inspect, against :data:`MAX_INSPECTED_ELEMENTS`."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = MAX_INSPECTED_ELEMENTS

    def charge(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise _Malformed(
                f"the pickle makes its readers inspect more than {MAX_INSPECTED_ELEMENTS} elements"
            )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _dims_ok(value: object) -> bool:
    """Whether `value` is a sequence short enough to be a tensor's size or stride."""
    return isinstance(value, (tuple, list)) and len(value) <= MAX_DIMS


def _int_tuple(value: object) -> tuple[int, ...] | None:
    if isinstance(value, (tuple, list)) and all(_is_int(v) for v in value):
        return tuple(value)
    return None


class _OrderedDictFactory(_Inert):
    """Stands in for `collections.OrderedDict`."""

    __slots__ = ("budget",)

    def __init__(self, budget: _Budget) -> None:
        self.budget = budget

    def __call__(self, *args: object) -> _StateDict:
        if not args:
            return _StateDict()
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            self.budget.charge(len(args[0]))
            result = _StateDict()
            for pair in args[0]:
                if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
                    raise _Malformed("OrderedDict built from something other than pairs")
                key, value = pair
                try:
                    result[key] = value
                except TypeError as exc:
                    raise _Malformed(f"OrderedDict key is not hashable: {exc}") from None
            return result
        raise _Malformed(f"OrderedDict called with {len(args)} unexpected arguments")


class _SizeFactory(_Inert):
    """Stands in for `torch.Size`: returns the tuple of dimensions."""

    __slots__ = ()

    def __call__(self, *args: object) -> tuple[int, ...]:
        dims = _int_tuple(args[0]) if len(args) == 1 and _dims_ok(args[0]) else None
        if dims is None:
            raise _Malformed("torch.Size called with something other than a list of integers")
        return dims


class _Rebuild(_Inert):
    """Stands in for one of torch's tensor rebuild functions; calling it validates the
    arguments and returns a :class:`_Tensor` (or a :class:`_BadTensor` saying why not)."""

    __slots__ = ("kind", "qualname")

    def __init__(self, qualname: str, kind: str) -> None:
        self.qualname = qualname
        self.kind = kind

    def __call__(self, *args: object) -> _Tensor | _BadTensor:
        if self.kind == "parameter":
            # _rebuild_parameter(data, requires_grad, backward_hooks[, state])
            if not args or not isinstance(args[0], (_Tensor, _BadTensor)):
                return _BadTensor(f"{self.qualname} was not given a tensor")
            return args[0]
        if self.kind == "from_type_v2":
            # _rebuild_from_type_v2(func, new_type, args, state)
            if len(args) != 4:
                return _BadTensor(f"{self.qualname} takes 4 arguments, got {len(args)}")
            func, new_type, inner_args = args[0], args[1], args[2]
            if not (isinstance(func, _Rebuild) and isinstance(new_type, _TypeMarker)):
                return _BadTensor(f"{self.qualname} given no tensor rebuild function and type")
            if not isinstance(inner_args, tuple) or func.kind == "from_type_v2":
                return _BadTensor(f"{self.qualname} given malformed arguments")
            return func(*inner_args)
        return self._tensor(args)

    def _tensor(self, args: tuple[object, ...]) -> _Tensor | _BadTensor:
        minimum = {"tensor": 4, "tensor_v2": 6, "tensor_v3": 7}[self.kind]
        if len(args) < minimum:
            return _BadTensor(f"{self.qualname} takes {minimum} arguments, got {len(args)}")
        storage, storage_offset, size, stride = args[:4]
        if not isinstance(storage, _Storage):
            return _BadTensor(f"{self.qualname} was not given a storage")
        if not (_is_int(storage_offset) and storage_offset >= 0):  # type: ignore[operator]
            return _BadTensor(f"storage offset {storage_offset!r} is not a non-negative integer")
        if not (_dims_ok(size) and _dims_ok(stride)):
            return _BadTensor(f"size or stride is not a list of at most {MAX_DIMS} integers")
        shape = _int_tuple(size)
        strides = _int_tuple(stride)
        if shape is None or any(d < 0 for d in shape):
            return _BadTensor(f"size {size!r} is not a list of non-negative integers")
        if strides is None or len(strides) != len(shape) or any(s < 0 for s in strides):
            return _BadTensor(
                f"stride {stride!r} is not a list of {len(shape)} non-negative integers"
            )
        if self.kind == "tensor_v3":
            dtype = args[6]
            if not isinstance(dtype, _DType):
                return _BadTensor(f"{self.qualname} was not given a dtype")
            return _Tensor(
                storage,
                storage_offset,
                shape,
                strides,
                dtype.dtype,
                dtype.itemsize,
                dtype.qualname,
            )
        return _Tensor(
            storage,
            storage_offset,  # type: ignore[arg-type]
            shape,
            strides,
            storage.type.dtype,
            storage.type.itemsize,
            storage.type.qualname,
        )


_SIZE = _SizeFactory()


def _allowed_global(module: str, name: str, budget: _Budget) -> object | None:
    """The stand-in for an allowed global, or None when it is not allowed."""
    if (module, name) == ("collections", "OrderedDict"):
        return _OrderedDictFactory(budget)
    qualname = f"{module}.{name}"
    kind = _REBUILD_FUNCTIONS.get((module, name))
    if kind is not None:
        return _Rebuild(qualname, kind)
    if (module, name) in _TENSOR_TYPES:
        return _TypeMarker(qualname)
    if module in ("torch", "torch.cuda", "torch.storage") and name in _STORAGE_TYPES:
        if module == "torch.storage" and name != "UntypedStorage":
            return None
        dtype, itemsize = _STORAGE_TYPES[name]
        return _StorageType(qualname, dtype, itemsize)
    if module == "torch" and name == "Size":
        return _SIZE
    if module == "torch" and name in _TORCH_DTYPES:
        dtype, itemsize = _TORCH_DTYPES[name]
        return _DType(qualname, dtype, itemsize)
    return None


class _RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only allow-listed globals, to stand-ins.

    `persistent_load` turns torch's storage references into :class:`_Storage` records,
    collected in `storages` by key (the first reference to a key defines its type and size).
    """

    def __init__(self, data: BinaryIO, legacy: bool) -> None:
        super().__init__(data, encoding="utf-8")
        self.legacy = legacy
        self.storages: dict[str, _Storage] = {}
        self.conflicts: list[str] = []
        self.budget = _Budget()

    def find_class(self, module: str, name: str) -> Any:
        found = _allowed_global(module, name, self.budget)
        if found is None:
            raise _UnsafeGlobal(f"{module}.{name}")
        return found

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and pid and pid[0] in ("storage", b"storage")):
            raise _Malformed(f"unexpected persistent id {_short_repr(pid)}")
        expected = 6 if self.legacy else 5
        if len(pid) != expected:
            raise _Malformed(
                f"storage reference has {len(pid)} fields, expected {expected}: {_short_repr(pid)}"
            )
        storage_type, key, _location, numel = pid[1:5]
        if not isinstance(storage_type, _StorageType):
            raise _Malformed(f"storage reference names no storage type: {_short_repr(pid)}")
        if isinstance(key, int) and not isinstance(key, bool):
            key = str(key)
        if not isinstance(key, str) or not _is_int(numel) or numel < 0:
            raise _Malformed(f"storage reference is malformed: {_short_repr(pid)}")
        storage = _Storage(key, storage_type, numel)
        known = self.storages.setdefault(key, storage)
        if known.type.itemsize != storage_type.itemsize or known.type.dtype != storage_type.dtype:
            self.conflicts.append(
                f"storage `{key}` is referenced as both {known.type.qualname} and "
                f"{storage_type.qualname}"
            )
        view = pid[5] if self.legacy else None
        if view is not None:
            if not (
                isinstance(view, tuple)
                and len(view) == 3
                and isinstance(view[0], str)
                and _is_int(view[1])
                and _is_int(view[2])
                and view[1] >= 0
                and view[2] >= 0
            ):
                raise _Malformed(f"storage view metadata is malformed: {_short_repr(pid)}")
            _view_key, offset, view_size = view
            if offset + view_size > numel:
                raise _Malformed(
                    f"storage view [{offset}, {offset + view_size}) exceeds storage `{key}` "
                    f"of {numel} elements"
                )
            return _Storage(key, storage_type, view_size, view_offset=offset)
        return storage


_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel = 3
_SHORT_REPR.maxstring = 60
_SHORT_REPR.maxother = 60


def _short_repr(value: object, limit: int = 120) -> str:
    """A bounded repr: pickled values can be huge or deeply shared."""
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Protocol-5 out-of-band buffers: torch never writes them, and they only widen the surface.
_BUFFER_OPCODES = frozenset({"BYTEARRAY8", "NEXT_BUFFER", "READONLY_BUFFER"})
# Opcodes that add their operands to an object further down the stack.
_MUTATING_OPCODES = frozenset({"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"})
_MEMO_PUT = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_MEMO_GET = frozenset({"GET", "BINGET", "LONG_BINGET"})


def _prescan_pickle(stream: BinaryIO, max_nodes: int) -> str | None:
    """Walk one pickle's opcodes without running any; return why to refuse it, or None.

    Each stack entry is a one-element list holding the object's size when fully expanded
    (shared through the memo, so mutations are seen by every reference). An object above
    `max_nodes` would make hashing or comparing it explode, so the pickle is refused before
    the real unpickler sees it. Memo slots must be numbered as a pickler numbers them (about
    one per opcode): CPython's unpickler allocates its memo up to twice the highest slot, so
    a six-byte `LONG_BINPUT 2**31` would otherwise ask for 32 GiB. Malformed opcodes raise;
    the caller reports them.
    """
    with warnings.catch_warnings():
        # pickletools warns about odd escapes in protocol-0 strings; the bytes are hostile
        # input, not code, so the warning helps nobody.
        warnings.simplefilter("ignore")
        return _prescan_opcodes(stream, max_nodes)


# How each opcode moves the stack: objects it pops below its MARK (all of them when it has
# no MARK), whether it pops down to a MARK, and whether it pushes a result.
_STACK_EFFECTS: dict[str, tuple[int, bool, bool]] = {
    op.name: (
        op.stack_before.index(pickletools.markobject)
        if pickletools.markobject in op.stack_before
        else len(op.stack_before),
        pickletools.markobject in op.stack_before,
        bool(op.stack_after),
    )
    for op in pickletools.opcodes
}


def _prescan_opcodes(stream: BinaryIO, max_nodes: int) -> str | None:
    stack: list[list[int] | None] = []  # None marks a MARK
    memo: dict[object, list[int]] = {}
    start: int | None = None
    for opcode, arg, position in pickletools.genops(stream):
        name = opcode.name
        if start is None:
            start = position or 0
        if name == "MARK":
            stack.append(None)
            continue
        if name in _MEMO_PUT or name == "MEMOIZE":
            if not stack or stack[-1] is None:
                return "it memoizes an empty stack"
            if name == "MEMOIZE":
                arg = len(memo)
            elif not (isinstance(arg, int) and 0 <= arg <= (position or 0) - start + 1024):
                return f"it stores memo slot {_short_repr(arg)}, beyond any pickler's numbering"
            memo[arg] = stack[-1]  # type: ignore[assignment]
            continue
        if name in _MEMO_GET:
            if arg not in memo:
                return f"it reads memo slot {_short_repr(arg)} before writing it"
            stack.append(memo[arg])
            continue
        if name == "DUP":
            if not stack or stack[-1] is None:
                return "it duplicates an empty stack"
            stack.append(stack[-1])
            continue
        if name in _BUFFER_OPCODES:
            return f"it uses the out-of-band buffer opcode {name}, which torch never writes"
        below, to_mark, pushes = _STACK_EFFECTS[name]
        total = 1  # the result itself, plus everything it takes in
        if to_mark:
            while True:
                if not stack:
                    return f"{name} finds no MARK"
                item = stack.pop()
                if item is None:
                    break
                total += item[0]
        cell = None
        for _ in range(below):
            cell = stack.pop() if stack else None
            if cell is None:
                return f"{name} finds too few objects on the stack"
            total += cell[0]
        if name in _MUTATING_OPCODES and cell is not None:
            cell[0] = total - 1  # the container (popped last) now also holds the rest
        else:
            cell = [total]
        if cell[0] > max_nodes:
            return (
                f"its objects expand to more than {max_nodes} nodes through shared "
                "references (a 'billion laughs' pickle)"
            )
        if pushes:
            stack.append(cell)
    return None


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
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
        self.unpickler = _RestrictedUnpickler(io.BytesIO(), legacy=False)

    def fail(self, kind: str, message: str, tensor: str | None = None) -> None:
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
            self.fail("truncated-file", "file is empty; a PyTorch checkpoint cannot be")
            return self.result()
        if head.startswith(_ZIP_LOCAL_MAGIC):
            return self._read_zip()
        if len(head) >= 262 and head[257:262] == b"ustar":
            self.fail(
                "invalid-torch-bin",
                "file is a tar archive: the tar checkpoint layout of torch < 0.4 is not supported",
            )
            return self.result()
        return self._read_legacy()

    # ----------------------------------------------------------------- zip (torch >= 1.6)

    def _read_zip(self) -> TorchBinResult:
        try:
            archive = zipfile.ZipFile(self.handle)
        except zipfile.BadZipFile as exc:
            if not self._has_end_record():
                self.fail(
                    "truncated-file",
                    f"file starts like a zip archive (torch >= 1.6 layout) but has no "
                    f"end-of-central-directory record; it is probably truncated "
                    f"({self.size} bytes)",
                )
            else:
                self.fail("invalid-torch-bin", f"not a valid zip archive: {exc}")
            return self.result(layout="zip")
        except (OSError, ValueError, EOFError) as exc:
            return self._corrupt_zip(exc)
        with archive:
            try:
                return self._read_zip_archive(archive)
            except (zipfile.BadZipFile, EOFError, ValueError, NotImplementedError) as exc:
                self.fail("invalid-torch-bin", f"corrupt zip archive: {exc}")
                return self.result(layout="zip")
            except OSError as exc:
                return self._corrupt_zip(exc)

    def _corrupt_zip(self, exc: Exception) -> TorchBinResult:
        if isinstance(exc, OSError) and exc.errno not in (errno.EINVAL, None):
            raise exc  # a real I/O error: `unreadable-file`
        self.fail("invalid-torch-bin", f"corrupt zip archive: {exc}")
        return self.result(layout="zip")

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
                "invalid-torch-bin",
                "zip archive has no `<prefix>/data.pkl` record, so it is not a torch.save "
                f"checkpoint (members: {shown or 'none'})",
            )
            return self.result(layout="zip")
        info = archive.getinfo(f"{prefix}/data.pkl")
        if info.file_size > MAX_PICKLE_BYTES:
            self.fail(
                "invalid-torch-bin",
                f"`{prefix}/data.pkl` is {info.file_size} bytes, above the "
                f"{MAX_PICKLE_BYTES}-byte limit for a state dict's pickle",
            )
            return self.result(layout="zip")
        pickled = archive.read(info)
        little_endian = True
        byteorder_name = f"{prefix}/byteorder"
        if byteorder_name in names:
            with archive.open(byteorder_name) as record:
                order = record.read(16).strip()
            if order not in (b"little", b"big"):
                self.fail(
                    "invalid-torch-bin",
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
        self, archive: zipfile.ZipFile, prefix: str, storages: dict[str, _Storage]
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
                    "truncated-file",
                    f"file is {self.size} bytes, cut inside the magic number of a legacy torch "
                    "pickle stream",
                )
            else:
                self.fail(
                    "invalid-torch-bin",
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
                "invalid-torch-bin",
                f"legacy protocol version is {_short_repr(preamble[0])}, expected "
                f"{LEGACY_PROTOCOL_VERSION}",
            )
            return self.result(layout="legacy")
        if not isinstance(preamble[1], dict):
            self.fail("invalid-torch-bin", "legacy system info is not a dict")
            return self.result(layout="legacy")

        loaded = self._unpickle(self.handle, True, "the main pickle")
        unpickler = self.unpickler
        if loaded is _FAILED:
            return self.result(layout="legacy")
        keys = self._unpickle(self.handle, True, "the storage key list")
        if keys is _FAILED:
            return self.result(layout="legacy")
        if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
            self.fail("invalid-torch-bin", "the legacy storage key list is not a list of strings")
            return self.result(layout="legacy")
        located = self._locate_legacy_storages(keys, unpickler.storages)
        if located is None:
            return self.result(layout="legacy")
        # The legacy writer stores every storage little-endian, whatever the machine.
        return self._collect(loaded, unpickler, located, "legacy", little_endian=True)

    def _locate_legacy_storages(
        self, keys: list[str], storages: dict[str, _Storage]
    ) -> dict[str, _StorageBytes | str] | None:
        located: dict[str, _StorageBytes | str] = {}
        offset = self.handle.tell()
        for key in keys:
            storage = storages.get(key)
            if storage is None:
                self.fail(
                    "invalid-torch-bin",
                    f"storage key `{key}` is listed but no tensor references it",
                )
                return None
            if offset + 8 > self.size:
                self.fail(
                    "truncated-file",
                    f"file ends at byte {self.size}, before the element count of storage "
                    f"`{key}` (at {offset})",
                )
                return None
            self.handle.seek(offset)
            (count,) = struct.unpack("<q", self.handle.read(8))
            if count < 0:
                self.fail(
                    "invalid-torch-bin", f"storage `{key}` has a negative element count {count}"
                )
                return None
            start = offset + 8
            end = start + count * storage.type.itemsize
            if end > self.size:
                self.fail(
                    "truncated-file",
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
        unpickler = self.unpickler = _RestrictedUnpickler(source, legacy=legacy)
        try:
            start = source.tell()
            refusal = _prescan_pickle(
                source, max(MIN_EXPANSION_LIMIT, MAX_EXPANSION_PER_BYTE * self.size)
            )
            if refusal is not None:
                self.fail("invalid-torch-bin", f"{what} is refused: {refusal}")
                return _FAILED
            source.seek(start)
            return unpickler.load()
        except _UnsafeGlobal as exc:
            self.fail(
                "unsafe-pickle-global",
                f"{what} references the global `{exc.qualname}`, which is not a tensor type; "
                "reading stopped without calling it (torch.load(weights_only=False) would)",
            )
        except _Malformed as exc:
            self.fail("invalid-torch-bin", f"{what} is not a torch checkpoint pickle: {exc}")
        except (pickle.UnpicklingError, EOFError, ValueError) as exc:
            # Only the legacy stream runs into the end of the file; a short data.pkl inside
            # an intact zip is a bad pickle, not a truncated file.
            if stream_is_file and (isinstance(exc, EOFError) or self.handle.tell() >= self.size):
                self.fail("truncated-file", f"{what} ends early: the file is truncated ({exc})")
            else:
                self.fail("invalid-torch-bin", f"{what} is not a valid pickle: {exc}")
        except RecursionError:
            self.fail("invalid-torch-bin", f"{what} is nested too deeply")
        except MemoryError:
            self.fail("invalid-torch-bin", f"{what} asks for more memory than is available")
        except OSError:
            raise
        except Exception as exc:  # anything a hostile opcode sequence can provoke
            self.fail(
                "invalid-torch-bin",
                f"{what} is not a valid pickle: {type(exc).__name__}: {exc}",
            )
        return _FAILED

    def _collect(
        self,
        loaded: object,
        unpickler: _RestrictedUnpickler,
        located: dict[str, _StorageBytes | str],
        layout: str,
        little_endian: bool,
    ) -> TorchBinResult:
        for message in unpickler.conflicts:
            self.fail("invalid-torch-bin", message)
        mapping, key = self._find_state_dict(loaded)
        tensors: dict[str, TensorInfo] = {}
        for name, value in (mapping or {}).items():
            if not isinstance(value, (_Tensor, _BadTensor)):
                continue  # non-tensor entries (step counters, config) are not weights
            if not isinstance(name, str):
                self.fail("invalid-torch-bin", f"a tensor is stored under the key {name!r}")
                continue
            info = self._tensor_info(name, value, located, little_endian)
            if info is not None:
                tensors[name] = info
        return self.result(tensors, layout, key)

    def _find_state_dict(self, loaded: object) -> tuple[dict[Any, Any] | None, str | None]:
        if not isinstance(loaded, dict):
            self.fail(
                "invalid-torch-bin",
                f"top-level object is {_describe(loaded)}, expected a dict of tensors "
                "(a state dict)",
            )
            return None, None
        if any(isinstance(v, (_Tensor, _BadTensor)) for v in loaded.values()):
            return loaded, None
        for key in STATE_DICT_KEYS:
            nested = loaded.get(key)
            if isinstance(nested, dict):
                return nested, key
        if loaded:
            shown = ", ".join(f"`{k}`" for k in list(loaded)[:5])
            self.fail(
                "invalid-torch-bin",
                f"top-level dict holds no tensors and no "
                f"{'/'.join(STATE_DICT_KEYS)} key (keys: {shown})",
            )
        return loaded, None

    def _tensor_info(
        self,
        name: str,
        tensor: _Tensor | _BadTensor,
        located: dict[str, _StorageBytes | str],
        little_endian: bool,
    ) -> TensorInfo | None:
        if isinstance(tensor, _BadTensor):
            self.fail("invalid-torch-bin", f"`{name}`: {tensor.reason}", name)
            return None
        storage = tensor.storage
        if tensor.dtype is None or tensor.dtype not in DTYPE_BITS:
            self.fail(
                "invalid-torch-bin",
                f"`{name}` has a torch dtype with no safetensors equivalent "
                f"(`{tensor.dtype_name}`)",
                name,
            )
            return None
        where = located.get(storage.key, f"storage `{storage.key}` was never located")
        if isinstance(where, str):
            self.fail("invalid-torch-bin", f"`{name}`: {where}", name)
            return None
        declared = storage.type.itemsize * (storage.view_offset + storage.numel)
        if where.size < declared:
            self.fail(
                "invalid-torch-bin",
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
                    "invalid-torch-bin",
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
    if isinstance(value, (_Tensor, _BadTensor)):
        return "a single tensor"
    if isinstance(value, _Inert):
        return f"a `{getattr(value, 'qualname', type(value).__name__)}`"
    return f"a {type(value).__name__}"
