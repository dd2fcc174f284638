"""`@frozen`: a record whose fields the type checker keeps immutable, cheap to define.

The standard library's `@dataclass(frozen=True)` enforces immutability at run time with a
generated `__setattr__` and `__delattr__`, each compiled when the class is defined. A
command defines some seventy such records before it does anything, so that enforcement cost
a noticeable part of every start-up. `@frozen` declares the same record to the type
checker (`mypy --strict` rejects any assignment to a field, as for a frozen dataclass), and
at run time builds the dataclass without the two guards, hashable by its fields as a frozen
dataclass is. Code that must change a field still says so explicitly, with
`object.__setattr__` in `__post_init__` or `dataclasses.replace`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform

    @dataclass_transform(frozen_default=True, field_specifiers=(field,))
    def frozen(cls: type[T], /) -> type[T]:
        """A frozen dataclass, to the type checker."""

else:

    def frozen(cls, /):
        """A dataclass with value equality and a hash of its fields, without the run-time
        guards against assignment (the type checker is the guard)."""
        return dataclass(cls, unsafe_hash=True)


__all__ = ["frozen"]
