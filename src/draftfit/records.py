"""`@frozen` and `@record`: dataclass-like records that are cheap to import and to define.

The standard library's `dataclasses` costs a start-up about 9 ms to import on a small
machine (it loads `inspect`, which loads `ast`, `dis` and `tokenize`), and
`@dataclass(frozen=True)` compiles up to six methods for every class when it is defined. A
command defines some eighty records before it does anything, so both were large parts of
every start-up.

This module builds the same records by itself:

* `@frozen` declares a frozen dataclass to the type checker (`mypy --strict` rejects any
  assignment to a field). At run time a generic `__init__` builds a class's first
  instances and its own `__init__` is compiled once it is used more. Equality, the hash and
  the representation are three functions shared by every record, which behave as the
  generated ones do: equal when the class is the same and the compared fields are equal,
  hashed over the same fields, shown as `Name(field=value, ...)`. A method the class
  defines itself is kept. Code that must change a field says so explicitly
  (`object.__setattr__` in `__post_init__`, or :func:`replace`).
* `@record` is the same for a mutable dataclass (`@dataclass`): equal by its fields, not
  hashable, shown by its fields.

What a record may declare is what draftfit's records use of dataclasses: annotated fields,
plain defaults, :func:`field` with `default`, `default_factory`, `compare`, `repr`, `hash`
and `kw_only`, `ClassVar` annotations (not fields), `__post_init__`, and a record that
extends another record. :func:`fields`, :func:`replace` and :func:`asdict` work as the
standard library's do on them; `tests/test_records.py` holds both side by side.
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, TypeVar, overload

    T = TypeVar("T")


class _Missing:
    """No value given (a field's default, or a default factory)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Field:
    """One field of a record: its name and how `__init__`, equality, the hash and the
    representation treat it."""

    __slots__ = ("compare", "default", "default_factory", "hash", "kw_only", "name", "repr")

    def __init__(
        self,
        default: Any = MISSING,
        default_factory: Any = MISSING,
        compare: bool = True,
        repr: bool = True,
        hash: bool | None = None,
        kw_only: bool = False,
    ) -> None:
        if default is not MISSING and default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.compare = compare
        self.repr = repr
        self.hash = hash
        self.kw_only = kw_only

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r})"


if TYPE_CHECKING:

    @overload
    def field(
        *,
        default: T,
        compare: bool = ...,
        repr: bool = ...,
        hash: bool | None = ...,
        kw_only: bool = ...,
    ) -> T: ...
    @overload
    def field(
        *,
        default_factory: Callable[[], T],
        compare: bool = ...,
        repr: bool = ...,
        hash: bool | None = ...,
        kw_only: bool = ...,
    ) -> T: ...
    @overload
    def field(
        *,
        compare: bool = ...,
        repr: bool = ...,
        hash: bool | None = ...,
        kw_only: bool = ...,
    ) -> Any: ...


def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    compare: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    kw_only: bool = False,
) -> Any:
    """A field with a default, a default factory, or other than the usual treatment (as
    `dataclasses.field`)."""
    return Field(default, default_factory, compare, repr, hash, kw_only)


if TYPE_CHECKING:
    from typing_extensions import dataclass_transform

    @dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
    def frozen(cls: type[T], /) -> type[T]:
        """A frozen dataclass, to the type checker."""

    @dataclass_transform(field_specifiers=(field, Field))
    def record(cls: type[T], /) -> type[T]:
        """A dataclass, to the type checker."""

else:

    def frozen(cls, /):
        """A frozen record: `__init__` generated; equality, hash and repr shared."""
        return _with_shared_methods(cls, hashable=True)

    def record(cls, /):
        """A mutable record: `__init__` generated; equality and repr shared; no hash."""
        return _with_shared_methods(cls, hashable=False)


def _with_shared_methods(cls: type, hashable: bool) -> type:
    """`cls` with its fields collected and its `__init__` generated, and the shared
    equality, representation and (when `hashable`) hash wherever it defines none itself;
    a record that is not hashable, as a mutable dataclass, has no hash."""
    own = {name for name in ("__eq__", "__hash__", "__repr__") if name in cls.__dict__}
    every = _build(cls)
    kept: Any = cls  # the class attributes below are draftfit's own
    kept.__record_compared__ = _getter(f.name for f in every if f.compare)
    kept.__record_shown__ = tuple(f.name for f in every if f.repr)
    if hashable:
        kept.__record_hashed__ = _getter(
            f.name for f in every if (f.compare if f.hash is None else f.hash)
        )
        if "__hash__" not in own:
            kept.__hash__ = _hash
    if "__eq__" not in own:
        kept.__eq__ = _equal
        if not hashable:
            kept.__hash__ = None
    if "__repr__" not in own:
        kept.__repr__ = _shown
    return cls


def _is_class_var(annotation: Any) -> bool:
    # annotations are strings here (`from __future__ import annotations`)
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _build(cls: type) -> tuple[Field, ...]:
    """Collect `cls`'s fields (its records' bases' first, as dataclasses orders them), give
    it an `__init__`, and return the fields."""
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        found.update(base.__dict__.get("__record_fields__", {}))
    # the class's own annotations (inspect.get_annotations would import `inspect`)
    own_annotations = cls.__dict__.get("__annotations__", {})  # noqa: RUF063
    for name, annotation in own_annotations.items():
        if _is_class_var(annotation):
            continue
        if name.startswith("_rec_") or name == "self":
            raise TypeError(f"{cls.__name__}.{name}: a record field may not be named so")
        value = cls.__dict__.get(name, MISSING)
        if type(value).__module__ == "dataclasses":
            raise TypeError(f"{cls.__name__}.{name}: use draftfit.records.field, not dataclasses'")
        spec = value if isinstance(value, Field) else Field(default=value)
        spec.name = name
        if spec.default is MISSING:
            if name in cls.__dict__:
                delattr(cls, name)
        else:
            setattr(cls, name, spec.default)
        found.pop(name, None)
        found[name] = spec
    every = tuple(found.values())
    _check_order(every)
    cls.__record_fields__ = found  # type: ignore[attr-defined]
    cls.__init__ = _init_on_first_use(cls, every)  # type: ignore[misc]
    return every


def _check_order(every: tuple[Field, ...]) -> None:
    """Refuse, as a dataclass does when it is defined, a positional field without a default
    after one with a default."""
    seen_default = False
    for spec in every:
        if spec.kw_only:
            continue
        has_default = spec.default is not MISSING or spec.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {spec.name!r} follows default argument")
        seen_default = seen_default or has_default


# A class's first instances are built by a generic `__init__`; the one compiled for its
# fields takes over from this instance on. Compiling costs ~0.1 ms; the generic one costs a
# few microseconds more per instance, and most records a command builds are built a few times.
COMPILE_AT = 8


def _init_on_first_use(cls: type, every: tuple[Field, ...]) -> Callable[..., None]:
    """An `__init__` that binds the arguments generically for the class's first instances,
    then compiles the class's own `__init__`, puts it in its place and runs it."""
    bind = _generic_init(cls, every)
    calls = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls < COMPILE_AT:
            bind(self, args, kwargs)
            return
        init = _compile_init(cls, every)
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _generic_init(
    cls: type, every: tuple[Field, ...]
) -> Callable[[Any, tuple[Any, ...], dict[str, Any]], None]:
    """What the compiled `__init__` does, for any fields: bind the arguments as Python
    would (the same TypeErrors), fill in defaults, store, then `__post_init__`."""
    positional = tuple(spec.name for spec in every if not spec.kw_only)
    known = {spec.name for spec in every}
    post_init = hasattr(cls, "__post_init__")
    call = f"{cls.__qualname__}.__init__()"

    def bind(self: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if len(args) > len(positional):
            raise TypeError(
                f"{call} takes {len(positional) + 1} positional arguments but "
                f"{len(args) + 1} were given"
            )
        given = dict(zip(positional, args, strict=False))  # fewer args: defaults
        for key, value in kwargs.items():
            if key not in known:
                raise TypeError(f"{call} got an unexpected keyword argument {key!r}")
            if key in given:
                raise TypeError(f"{call} got multiple values for argument {key!r}")
            given[key] = value
        for spec in every:
            if spec.name in given:
                value = given[spec.name]
            elif spec.default is not MISSING:
                value = spec.default
            elif spec.default_factory is not MISSING:
                value = spec.default_factory()
            else:
                raise TypeError(f"{call} missing 1 required argument: {spec.name!r}")
            object.__setattr__(self, spec.name, value)
        if post_init:
            self.__post_init__()

    return bind


def _compile_init(cls: type, every: tuple[Field, ...]) -> Callable[..., None]:
    """`__init__(self, a, b=..., *, c=...)`: each field stored, then `__post_init__`. The
    names it needs besides the fields' start with `_rec_`, which no field name does."""
    names: dict[str, Any] = {"_rec_missing": MISSING, "_rec_set": object.__setattr__}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for spec in every:
        if spec.default is not MISSING:
            names[f"_rec_d_{spec.name}"] = spec.default
            parameter = f"{spec.name}=_rec_d_{spec.name}"
            value = spec.name
        elif spec.default_factory is not MISSING:
            names[f"_rec_f_{spec.name}"] = spec.default_factory
            parameter = f"{spec.name}=_rec_missing"
            value = f"_rec_f_{spec.name}() if {spec.name} is _rec_missing else {spec.name}"
        else:
            parameter = spec.name
            value = spec.name
        (keyword if spec.kw_only else positional).append(parameter)
        body.append(f"  _rec_set(self, {spec.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    parameters = ["self", *positional, *(["*", *keyword] if keyword else [])]
    source = f"def __init__({', '.join(parameters)}):\n" + ("\n".join(body) or "  pass") + "\n"
    exec(source, names)
    init: Callable[..., None] = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def fields(record_or_class: Any) -> tuple[Field, ...]:
    """The fields of a record (or record class), in `__init__` order."""
    found = getattr(record_or_class, "__record_fields__", None)
    if found is None:
        raise TypeError("must be called with a record or a record class")
    return tuple(found.values())


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of record `obj` with `changes` applied (as `dataclasses.replace`)."""
    for spec in fields(obj):
        if spec.name not in changes:
            changes[spec.name] = getattr(obj, spec.name)
    return obj.__class__(**changes)


def is_record(obj: Any) -> bool:
    """Whether `obj` is a record or a record class."""
    return hasattr(obj, "__record_fields__")


def asdict(obj: Any) -> Any:
    """A record as a dict, recursively through records, lists, tuples and dicts (as
    `dataclasses.asdict`)."""
    if is_record(obj) and not isinstance(obj, type):
        return {spec.name: asdict(getattr(obj, spec.name)) for spec in fields(obj)}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(asdict(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(asdict(v) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((asdict(k), asdict(v)) for k, v in obj.items())
    return obj


def _getter(names: Iterable[str]) -> staticmethod[[Any], tuple[Any, ...]]:
    """A function giving a record's values of `names` as a tuple (`attrgetter` where it can:
    records are compared and hashed often, as dictionary keys), to be stored on the class."""
    chosen = tuple(names)
    if len(chosen) > 1:
        return staticmethod(attrgetter(*chosen))
    if chosen:
        get = attrgetter(chosen[0])
        return staticmethod(lambda record: (get(record),))
    return staticmethod(lambda record: ())


def _equal(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    values = self.__record_compared__
    return values(self) == values(other)


def _hash(self: Any) -> int:
    return hash(self.__record_hashed__(self))


@reprlib.recursive_repr()
def _shown(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_shown__)
    return f"{self.__class__.__qualname__}({shown})"


__all__ = [
    "MISSING",
    "Field",
    "asdict",
    "field",
    "fields",
    "frozen",
    "is_record",
    "record",
    "replace",
]
