"""The restricted unpickler for PyTorch `.bin` checkpoints, and its opcode pre-scan.

Auditable on its own: this module is the only code that sees a checkpoint's pickle
opcodes, and it never imports or calls anything a pickle names.

* **Allow-list.** `find_class` resolves only torch's tensor-rebuild functions
  (`torch._utils._rebuild_tensor*`, `_rebuild_parameter*`, `torch._tensor._rebuild_from_type_v2`),
  storage classes (`torch.FloatStorage` & co, `torch.storage.UntypedStorage`), dtypes
  (`torch.float16` & co), `torch.Size`, `torch.Tensor` / `torch.nn.parameter.Parameter` as
  rebuild types, and `collections.OrderedDict`, each to an inert stand-in defined here
  (never the real class or function). Every other global, through `GLOBAL`,
  `STACK_GLOBAL`, `INST` or `OBJ` (`os.system`, `subprocess.Popen`, `builtins.eval`,
  `importlib.import_module`, other torch internals), raises :class:`UnsafeGlobal` before
  anything is called; `REDUCE`, `BUILD`, `NEWOBJ` and `NEWOBJ_EX` can therefore only reach
  stand-ins, whose calls record their arguments and whose `__setstate__` ignores state.
* **Pre-scan.** :func:`prescan_pickle` walks the opcodes with `pickletools` (executing
  nothing) and refuses, before the unpickler runs, a pickle that would exhaust the reader
  rather than fool it: more than :data:`~draftfit.checkpoint.limits.MAX_PICKLE_OPCODES`
  opcodes; objects nested deeper than
  :data:`~draftfit.checkpoint.limits.MAX_PICKLE_DEPTH` (nested tuples or frozensets used as
  dict keys would overflow the C stack when hashed); objects shared through the memo so
  that hashing them never ends ("billion laughs"); memo slot numbers that make CPython's
  unpickler allocate gigabytes; protocol-5 buffer opcodes.
"""

from __future__ import annotations

import pickle
import pickletools
import reprlib
import warnings
from typing import TYPE_CHECKING

from draftfit.checkpoint.limits import MAX_PICKLE_DEPTH, MAX_PICKLE_OPCODES, MAX_TENSOR_DIMS

if TYPE_CHECKING:
    from typing import Any, BinaryIO

# Through its memo a pickle can share one object many times, so a few hundred bytes can
# describe a tuple of 2**40 leaves whose mere hashing never ends ("billion laughs"). The
# pre-scan refuses any object larger, fully expanded, than this many nodes per pickle byte
# (torch's own pickles stay near 1).
MAX_EXPANSION_PER_BYTE = 16
MIN_EXPANSION_LIMIT = 1_000_000
# Whatever the file's size (a sparse 1 TB file costs nothing), at most this many nodes: a
# real state dict's pickle expands to about as many nodes as it has opcodes.
MAX_EXPANSION_NODES = 16 * MAX_PICKLE_OPCODES
# Elements the stand-ins may inspect in one pickle: a hostile pickle can hand the same large
# list to many calls through its memo, which must not turn into quadratic work.
MAX_INSPECTED_ELEMENTS = 50_000_000
# torch tensors have at most this many dimensions.
MAX_DIMS = MAX_TENSOR_DIMS

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


class Malformed(Exception):
    """The pickle is well-formed pickle but not a torch checkpoint; reading stops."""


class UnsafeGlobal(Exception):
    """The pickle names a global outside the allow-list; reading stops before it is used."""

    def __init__(self, qualname: str) -> None:
        super().__init__(qualname)
        self.qualname = qualname


class Inert:
    """Base of every stand-in: `BUILD` state is ignored instead of touching attributes."""

    __slots__ = ()

    def __setstate__(self, state: object) -> None:
        return None


class StorageType(Inert):
    """Stands in for `torch.FloatStorage` & co."""

    __slots__ = ("dtype", "itemsize", "qualname")

    def __init__(self, qualname: str, dtype: str | None, itemsize: int) -> None:
        self.qualname = qualname
        self.dtype = dtype
        self.itemsize = itemsize


class _DType(Inert):
    """Stands in for a `torch.<dtype>` object."""

    __slots__ = ("dtype", "itemsize", "qualname")

    def __init__(self, qualname: str, dtype: str | None, itemsize: int) -> None:
        self.qualname = qualname
        self.dtype = dtype
        self.itemsize = itemsize


class _TypeMarker(Inert):
    """Stands in for `torch.Tensor` / `torch.nn.Parameter` as a rebuild target type."""

    __slots__ = ("qualname",)

    def __init__(self, qualname: str) -> None:
        self.qualname = qualname


class Storage(Inert):
    """A persistent-id storage reference: which record holds the bytes, and how many.

    `view_offset` is for legacy storage views: the view starts that many elements into
    storage `key` and spans `numel` elements.
    """

    __slots__ = ("key", "numel", "type", "view_offset")

    def __init__(self, key: str, type: StorageType, numel: int, view_offset: int = 0) -> None:
        self.key = key
        self.type = type
        self.numel = numel
        self.view_offset = view_offset

    @property
    def nbytes(self) -> int:
        return self.numel * self.type.itemsize


class Tensor(Inert):
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
        storage: Storage,
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


class BadTensor(Inert):
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
            raise Malformed(
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


class _OrderedDictFactory(Inert):
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
                    raise Malformed("OrderedDict built from something other than pairs")
                key, value = pair
                try:
                    result[key] = value
                except TypeError as exc:
                    raise Malformed(f"OrderedDict key is not hashable: {exc}") from None
            return result
        raise Malformed(f"OrderedDict called with {len(args)} unexpected arguments")


class _SizeFactory(Inert):
    """Stands in for `torch.Size`: returns the tuple of dimensions."""

    __slots__ = ()

    def __call__(self, *args: object) -> tuple[int, ...]:
        dims = _int_tuple(args[0]) if len(args) == 1 and _dims_ok(args[0]) else None
        if dims is None:
            raise Malformed("torch.Size called with something other than a list of integers")
        return dims


class _Rebuild(Inert):
    """Stands in for one of torch's tensor rebuild functions; calling it validates the
    arguments and returns a :class:`Tensor` (or a :class:`BadTensor` saying why not)."""

    __slots__ = ("kind", "qualname")

    def __init__(self, qualname: str, kind: str) -> None:
        self.qualname = qualname
        self.kind = kind

    def __call__(self, *args: object) -> Tensor | BadTensor:
        if self.kind == "parameter":
            # _rebuild_parameter(data, requires_grad, backward_hooks[, state])
            if not args or not isinstance(args[0], (Tensor, BadTensor)):
                return BadTensor(f"{self.qualname} was not given a tensor")
            return args[0]
        if self.kind == "from_type_v2":
            # _rebuild_from_type_v2(func, new_type, args, state)
            if len(args) != 4:
                return BadTensor(f"{self.qualname} takes 4 arguments, got {len(args)}")
            func, new_type, inner_args = args[0], args[1], args[2]
            if not (isinstance(func, _Rebuild) and isinstance(new_type, _TypeMarker)):
                return BadTensor(f"{self.qualname} given no tensor rebuild function and type")
            if not isinstance(inner_args, tuple) or func.kind == "from_type_v2":
                return BadTensor(f"{self.qualname} given malformed arguments")
            return func(*inner_args)
        return self._tensor(args)

    def _tensor(self, args: tuple[object, ...]) -> Tensor | BadTensor:
        minimum = {"tensor": 4, "tensor_v2": 6, "tensor_v3": 7}[self.kind]
        if len(args) < minimum:
            return BadTensor(f"{self.qualname} takes {minimum} arguments, got {len(args)}")
        storage, storage_offset, size, stride = args[:4]
        if not isinstance(storage, Storage):
            return BadTensor(f"{self.qualname} was not given a storage")
        if not (_is_int(storage_offset) and storage_offset >= 0):  # type: ignore[operator]
            return BadTensor(f"storage offset {storage_offset!r} is not a non-negative integer")
        if not (_dims_ok(size) and _dims_ok(stride)):
            return BadTensor(f"size or stride is not a list of at most {MAX_DIMS} integers")
        shape = _int_tuple(size)
        strides = _int_tuple(stride)
        if shape is None or any(d < 0 for d in shape):
            return BadTensor(f"size {size!r} is not a list of non-negative integers")
        if strides is None or len(strides) != len(shape) or any(s < 0 for s in strides):
            return BadTensor(
                f"stride {stride!r} is not a list of {len(shape)} non-negative integers"
            )
        if self.kind == "tensor_v3":
            dtype = args[6]
            if not isinstance(dtype, _DType):
                return BadTensor(f"{self.qualname} was not given a dtype")
            return Tensor(
                storage,
                storage_offset,  # type: ignore[arg-type]
                shape,
                strides,
                dtype.dtype,
                dtype.itemsize,
                dtype.qualname,
            )
        return Tensor(
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
        return StorageType(qualname, dtype, itemsize)
    if module == "torch" and name == "Size":
        return _SIZE
    if module == "torch" and name in _TORCH_DTYPES:
        dtype, itemsize = _TORCH_DTYPES[name]
        return _DType(qualname, dtype, itemsize)
    return None


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only allow-listed globals, to stand-ins.

    `persistent_load` turns torch's storage references into :class:`Storage` records,
    collected in `storages` by key (the first reference to a key defines its type and size).
    """

    def __init__(self, data: BinaryIO, legacy: bool) -> None:
        super().__init__(data, encoding="utf-8")
        self.legacy = legacy
        self.storages: dict[str, Storage] = {}
        self.conflicts: list[str] = []
        self.budget = _Budget()

    def find_class(self, module: str, name: str) -> Any:
        found = _allowed_global(module, name, self.budget)
        if found is None:
            raise UnsafeGlobal(f"{module}.{name}")
        return found

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and pid and pid[0] in ("storage", b"storage")):
            raise Malformed(f"unexpected persistent id {short_repr(pid)}")
        expected = 6 if self.legacy else 5
        if len(pid) != expected:
            raise Malformed(
                f"storage reference has {len(pid)} fields, expected {expected}: {short_repr(pid)}"
            )
        storage_type, key, _location, numel = pid[1:5]
        if not isinstance(storage_type, StorageType):
            raise Malformed(f"storage reference names no storage type: {short_repr(pid)}")
        if isinstance(key, int) and not isinstance(key, bool):
            key = str(key)
        if not isinstance(key, str) or not _is_int(numel) or numel < 0:
            raise Malformed(f"storage reference is malformed: {short_repr(pid)}")
        storage = Storage(key, storage_type, numel)
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
                raise Malformed(f"storage view metadata is malformed: {short_repr(pid)}")
            _view_key, offset, view_size = view
            if offset + view_size > numel:
                raise Malformed(
                    f"storage view [{offset}, {offset + view_size}) exceeds storage `{key}` "
                    f"of {numel} elements"
                )
            return Storage(key, storage_type, view_size, view_offset=offset)
        return storage


_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxlevel = 3
_SHORT_REPR.maxstring = 60
_SHORT_REPR.maxother = 60


def short_repr(value: object, limit: int = 120) -> str:
    """A bounded repr: pickled values can be huge or deeply shared."""
    text = _SHORT_REPR.repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Protocol-5 out-of-band buffers: torch never writes them, and they only widen the surface.
_BUFFER_OPCODES = frozenset({"BYTEARRAY8", "NEXT_BUFFER", "READONLY_BUFFER"})
# Opcodes that add their operands to an object further down the stack.
_MUTATING_OPCODES = frozenset({"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"})
_MEMO_PUT = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_MEMO_GET = frozenset({"GET", "BINGET", "LONG_BINGET"})


class PickleLimitError(Exception):
    """The pickle exceeds a reader cap (opcodes, nesting depth): DF022."""


def prescan_pickle(stream: BinaryIO, max_nodes: int) -> str | None:
    """Walk one pickle's opcodes without running any; return why to refuse it, or None.

    Each stack entry is a cell `[size, depth]`: the object's size when fully expanded and
    its nesting depth (cells are shared through the memo, so mutations are seen by every
    reference). An object above `max_nodes` would make hashing or comparing it explode; one
    nested deeper than :data:`MAX_PICKLE_DEPTH` would overflow the C stack when hashed (a
    tuple of tuples ... used as a dict key); so the pickle is refused before the real
    unpickler sees it. Memo slots must be numbered as a pickler numbers them (about one per
    opcode): CPython's unpickler allocates its memo up to twice the highest slot, so a
    six-byte `LONG_BINPUT 2**31` would otherwise ask for 32 GiB. Raises
    :class:`PickleLimitError` above :data:`MAX_PICKLE_OPCODES` opcodes or
    :data:`MAX_PICKLE_DEPTH` levels; malformed opcodes raise too; the caller reports them.
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
    stack: list[list[int] | None] = []  # cells [size, depth]; None marks a MARK
    memo: dict[object, list[int]] = {}
    start: int | None = None
    count = 0
    for opcode, arg, position in pickletools.genops(stream):
        count += 1
        if count > MAX_PICKLE_OPCODES:
            raise PickleLimitError(f"it has more than {MAX_PICKLE_OPCODES} opcodes")
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
                return f"it stores memo slot {short_repr(arg)}, beyond any pickler's numbering"
            memo[arg] = stack[-1]
            continue
        if name in _MEMO_GET:
            if arg not in memo:
                return f"it reads memo slot {short_repr(arg)} before writing it"
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
        if not below and not to_mark:  # a leaf (the common case): nothing taken in
            if pushes:
                stack.append([1, 1])
            continue
        total, deepest = 1, 0  # the result itself plus all it takes in; their max depth
        if to_mark:
            while True:
                if not stack:
                    return f"{name} finds no MARK"
                item = stack.pop()
                if item is None:
                    break
                total += item[0]
                deepest = max(deepest, item[1])
        cell = None
        for position_below in range(below):
            cell = stack.pop() if stack else None
            if cell is None:
                return f"{name} finds too few objects on the stack"
            total += cell[0]
            if position_below < below - 1 or name not in _MUTATING_OPCODES:
                deepest = max(deepest, cell[1])
        if name in _MUTATING_OPCODES and cell is not None:
            cell[0] = total - 1  # the container (popped last) now also holds the rest
            cell[1] = max(cell[1], 1 + deepest)
        elif not pushes:
            continue  # POP, POP_MARK, STOP: nothing is built
        else:
            cell = [total, 1 + deepest]
        if cell[1] > MAX_PICKLE_DEPTH:
            raise PickleLimitError(f"its objects are nested more than {MAX_PICKLE_DEPTH} deep")
        if cell[0] > max_nodes:
            return (
                f"its objects expand to more than {max_nodes} nodes through shared "
                "references (a 'billion laughs' pickle)"
            )
        if pushes:
            stack.append(cell)
    return None


class BoundedStream:
    """A read-only view of `handle` that never reads past byte `size` nor a line longer than
    :data:`MAX_PICKLE_LINE`: a pickle opcode declaring a 2**60-byte string then asks for
    what is there, not for an allocation of its declared length."""

    def __init__(self, handle: BinaryIO, size: int) -> None:
        self.handle = handle
        self.size = size

    def read(self, n: int = -1) -> bytes:
        left = max(self.size - self.handle.tell(), 0)
        return self.handle.read(left if n is None or n < 0 else min(n, left))

    def readline(self, limit: int = -1) -> bytes:
        cap = MAX_PICKLE_LINE if limit is None or limit < 0 else min(limit, MAX_PICKLE_LINE)
        return self.handle.readline(min(cap, max(self.size - self.handle.tell(), 0)))

    def tell(self) -> int:
        return self.handle.tell()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.handle.seek(offset, whence)


#: Longest protocol-0 text line a pickle may hold (a tensor name or a decimal number).
MAX_PICKLE_LINE = 1024 * 1024
