"""`@frozen` and `@record`: dataclasses that are cheap to define.

The standard library's `@dataclass(frozen=True)` compiles up to six methods for every class
when the class is defined (`__init__`, `__repr__`, `__eq__`, `__hash__`, and the run-time
guards `__setattr__` and `__delattr__`). A command defines some eighty records before it
does anything, so that compiling was the largest part of every start-up.

`@frozen` declares the same record to the type checker (`mypy --strict` rejects any
assignment to a field, as for a frozen dataclass) and at run time lets `dataclasses`
compile only `__init__`. Equality, the hash and the representation are three functions
shared by every record, which behave as the generated ones do: equal when the class is the
same and the compared fields are equal, hashed over the same fields, shown as
`Name(field=value, ...)`. A method the class defines itself is kept. Code that must change
a field says so explicitly (`object.__setattr__` in `__post_init__`, or
`dataclasses.replace`).

`@record` is the same for a mutable dataclass (`@dataclass`): equal by its fields, not
hashable, shown by its fields, with only `__init__` compiled.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def frozen(cls: type[T], /) -> type[T]:
        """A frozen dataclass, to the type checker."""

    @dataclass_transform(field_specifiers=(field,))
    def record(cls: type[T], /) -> type[T]:
        """A dataclass, to the type checker."""

else:

    def frozen(cls, /):
        """A dataclass whose `__init__` alone is generated; equality, hash and repr are
        the shared functions below, over the fields a frozen dataclass would use."""
        own = {name: name in cls.__dict__ for name in ("__eq__", "__hash__", "__repr__")}
        cls = dataclass(cls, repr=False, eq=False)
        every = fields(cls)
        cls.__record_compared__ = tuple(f.name for f in every if f.compare)
        cls.__record_hashed__ = tuple(
            f.name for f in every if (f.compare if f.hash is None else f.hash)
        )
        cls.__record_shown__ = tuple(f.name for f in every if f.repr)
        if not own["__eq__"]:
            cls.__eq__ = _equal
        if not own["__hash__"]:
            cls.__hash__ = _hash
        if not own["__repr__"]:
            cls.__repr__ = _shown
        return cls

    def record(cls, /):
        """A dataclass whose `__init__` alone is generated; equality and repr are the
        shared functions below, and, as for a mutable dataclass, it has no hash."""
        own = {name: name in cls.__dict__ for name in ("__eq__", "__repr__")}
        cls = dataclass(cls, repr=False, eq=False)
        every = fields(cls)
        cls.__record_compared__ = tuple(f.name for f in every if f.compare)
        cls.__record_shown__ = tuple(f.name for f in every if f.repr)
        if not own["__eq__"]:
            cls.__eq__ = _equal
            cls.__hash__ = None
        if not own["__repr__"]:
            cls.__repr__ = _shown
        return cls


def _values(record: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(getattr(record, name) for name in names)


def _equal(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    names = self.__record_compared__
    return _values(self, names) == _values(other, names)


def _hash(self: Any) -> int:
    return hash(_values(self, self.__record_hashed__))


@reprlib.recursive_repr()
def _shown(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__record_shown__)
    return f"{self.__class__.__qualname__}({shown})"


__all__ = ["frozen", "record"]
