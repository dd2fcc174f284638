"""`@frozen` and `@record` behave as the dataclasses they stand for: built, equal, hashed and
shown by the same fields, with the type checker keeping `@frozen` fields immutable; and
`records.fields`, `replace` and `asdict` answer as `dataclasses`' do."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from draftfit import records
from draftfit.records import frozen, record
from tests.timeouts import scaled


@dataclass(frozen=True)
class StdPoint:
    """The standard library's frozen dataclass."""

    x: int
    y: tuple[int, ...] = ()
    note: str = field(default="", compare=False)
    hidden: int = field(default=0, repr=False)


@frozen
class Point:
    """The same record, built by @frozen."""

    x: int
    y: tuple[int, ...] = ()
    note: str = records.field(default="", compare=False)
    hidden: int = records.field(default=0, repr=False)


@frozen
class OtherPoint:
    """Another record with the same fields: never equal to a Point."""

    x: int
    y: tuple[int, ...] = ()
    note: str = records.field(default="", compare=False)
    hidden: int = records.field(default=0, repr=False)


@dataclass
class StdBox:
    """The standard library's mutable dataclass."""

    items: list[int] = field(default_factory=list)
    label: str = ""


@record
class Box:
    """The same, built by @record."""

    items: list[int] = records.field(default_factory=list)
    label: str = ""


@pytest.mark.parametrize(
    ("a", "b"),
    [((1, (2,), "a", 3), (1, (2,), "b", 3)), ((1, (), "", 0), (2, (), "", 0)), ((1,), (1,))],
)
def test_frozen_equality_and_hash_follow_the_frozen_dataclass(a: tuple, b: tuple) -> None:
    std = StdPoint(*a) == StdPoint(*b)
    assert (Point(*a) == Point(*b)) is std
    if std:
        assert hash(Point(*a)) == hash(Point(*b))
    assert hash(Point(*a)) == hash(StdPoint(*a))
    assert repr(Point(*a)) == repr(StdPoint(*a)).replace("StdPoint", "Point")
    assert Point(*a) != OtherPoint(*a)
    assert records.replace(Point(*a), x=9) == Point(9, *a[1:])


def test_record_is_equal_by_fields_unhashable_and_shown_like_a_dataclass() -> None:
    assert Box([1], "a") == Box([1], "a") and Box([1]) != Box([2])
    assert repr(Box([1], "a")) == repr(StdBox([1], "a")).replace("StdBox", "Box")
    with pytest.raises(TypeError):
        hash(Box())
    box = Box()
    box.items.append(1)
    box.label = "changed"
    assert box == Box([1], "changed")
    assert Box().items is not Box().items


def test_a_record_shown_inside_itself_does_not_recurse() -> None:
    box = Box()
    box.items.append(box)  # type: ignore[arg-type]
    assert repr(box) == "Box(items=[...], label='')"


@pytest.mark.slow
def test_the_type_checker_keeps_frozen_fields_immutable(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from draftfit.records import frozen\n\n"
        "@frozen\nclass P:\n    x: int\n\n"
        "p = P(1)\np.x = 2\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(snippet)],
        capture_output=True,
        text=True,
        timeout=scaled(300),
        check=False,
    )
    assert done.returncode == 1
    assert 'Property "x" defined in "P" is read-only' in done.stdout


@dataclass(frozen=True)
class StdBase:
    """A standard frozen dataclass with a keyword-only field, extended below."""

    name: str
    size: int = 1
    tags: tuple[str, ...] = field(default=(), kw_only=True)


@dataclass(frozen=True)
class StdChild(StdBase):
    extra: list[int] = field(default_factory=list)
    limit: ClassVar[int] = 3


@frozen
class Base:
    """The same records, by @frozen."""

    name: str
    size: int = 1
    tags: tuple[str, ...] = records.field(default=(), kw_only=True)


@frozen
class Child(Base):
    extra: list[int] = records.field(default_factory=list)
    limit: ClassVar[int] = 3


@record
class Interned:
    """A record whose __post_init__ rewrites a field."""

    text: str

    def __post_init__(self) -> None:
        self.text = self.text.strip()


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [(("a",), {}), (("a", 2), {"tags": ("x",)}), (("a", 2, [5]), {}), ((), {"name": "b"})],
)
def test_inherited_keyword_only_and_factory_fields_build_as_dataclasses_do(
    args: tuple, kwargs: dict
) -> None:
    std, ours = StdChild(*args, **kwargs), Child(*args, **kwargs)
    assert [f.name for f in records.fields(ours)] == [f.name for f in dataclasses.fields(std)]
    assert repr(ours) == repr(std).replace("StdChild", "Child")
    assert records.asdict(ours) == dataclasses.asdict(std)
    assert records.replace(ours, size=7).size == dataclasses.replace(std, size=7).size == 7
    assert Child("a").extra is not Child("a").extra
    assert Child.limit == 3 and "limit" not in records.asdict(ours)


def test_a_record_refuses_what_a_dataclass_refuses() -> None:
    with pytest.raises(TypeError):
        Child()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Base("a", 1, ("x",))  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="non-default argument"):

        @frozen
        class Bad:
            first: int = 0
            second: int  # type: ignore[misc]

    with pytest.raises(TypeError, match=r"draftfit\.records\.field"):

        @frozen
        class Mixed:
            items: list[int] = field(default_factory=list)

    with pytest.raises(TypeError):
        records.fields(StdBase)


def test_post_init_runs_after_the_fields_are_set() -> None:
    assert Interned("  x ").text == "x"
    assert records.asdict({"a": [Interned("y ")]}) == {"a": [{"text": "y"}]}


@dataclass(frozen=True)
class StdOne:
    value: int


@frozen
class One:
    value: int


@dataclass(frozen=True)
class StdNone:
    pass


@frozen
class NoFields:
    pass


def test_records_of_one_or_no_field_compare_and_hash_as_dataclasses() -> None:
    assert One(1) == One(1) and One(1) != One(2)
    assert hash(One(5)) == hash(StdOne(5))
    assert NoFields() == NoFields() and hash(NoFields()) == hash(StdNone())
    assert repr(One(3)) == "One(value=3)" and repr(NoFields()) == "NoFields()"
    assert {One(1): "a"}[One(1)] == "a"


CALLS = [
    (("a",), {}),
    (("a", 2), {"tags": ("x",)}),
    (("a", 2, [5]), {}),
    ((), {"name": "b", "extra": [1]}),
    (("a",), {"size": 3}),
]
BAD_CALLS = [
    ((), {}),
    (("a", 2, [5], "extra"), {}),
    (("a",), {"name": "b"}),
    (("a",), {"colour": "red"}),
]


def test_the_generic_and_the_compiled_init_build_and_refuse_alike() -> None:
    """A class's first instances are built by the generic `__init__`, later ones by the
    compiled one: both agree with the dataclass over the same calls."""

    @frozen
    class Fresh(Base):
        extra: list[int] = records.field(default_factory=list)

    built: list[tuple[Any, Any]] = []
    for _ in range(2 * records.COMPILE_AT // len(CALLS) + 2):
        for args, kwargs in CALLS:
            built.append((Fresh(*args, **kwargs), StdChild(*args, **kwargs)))
        for args, kwargs in BAD_CALLS:
            with pytest.raises(TypeError):
                StdChild(*args, **kwargs)
            with pytest.raises(TypeError):
                Fresh(*args, **kwargs)
    assert len(built) > 2 * records.COMPILE_AT
    for ours, std in built:
        assert records.asdict(ours) == dataclasses.asdict(std)
    assert Fresh.__init__.__code__.co_varnames[:3] == ("self", "name", "size")  # compiled now


def test_post_init_runs_in_the_generic_and_the_compiled_init() -> None:
    @record
    class Trimmed:
        text: str

        def __post_init__(self) -> None:
            self.text = self.text.strip()

    assert all(Trimmed(f" {i} ").text == str(i) for i in range(2 * records.COMPILE_AT))
