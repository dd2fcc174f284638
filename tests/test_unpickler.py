"""The restricted unpickler alone: its allow-list, and the pre-scan's opcode and depth caps."""

from __future__ import annotations

import io

import pytest

from draftfit.checkpoint.limits import MAX_PICKLE_DEPTH, MAX_PICKLE_OPCODES
from draftfit.checkpoint.unpickler import (
    Inert,
    PickleLimitError,
    RestrictedUnpickler,
    UnsafeGlobal,
    prescan_pickle,
)

LIMIT = 10**9


def nested_tuple(depth: int) -> bytes:
    """`(((1,),),)...` nested `depth` levels (TUPLE1 after TUPLE1)."""
    return b"\x80\x02K\x01" + b"\x85" * depth + b"."


def test_depth_cap_is_exact() -> None:
    # The integer is one level, each tuple around it another.
    assert prescan_pickle(io.BytesIO(nested_tuple(MAX_PICKLE_DEPTH - 1)), LIMIT) is None
    with pytest.raises(PickleLimitError, match="nested more than"):
        prescan_pickle(io.BytesIO(nested_tuple(MAX_PICKLE_DEPTH)), LIMIT)


def test_depth_counts_items_added_to_containers() -> None:
    # A list appended into a list appended into ... (APPEND), as deep as the cap allows.
    depth = MAX_PICKLE_DEPTH + 5
    data = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    with pytest.raises(PickleLimitError):
        prescan_pickle(io.BytesIO(data), LIMIT)


@pytest.mark.slow
def test_opcode_cap_is_exact() -> None:
    # PROTO + (NONE, POP) pairs + EMPTY_DICT + STOP
    pairs = (MAX_PICKLE_OPCODES - 3) // 2
    assert prescan_pickle(io.BytesIO(b"\x80\x02" + b"N0" * pairs + b"}."), LIMIT) is None
    with pytest.raises(PickleLimitError, match="opcodes"):
        prescan_pickle(io.BytesIO(b"\x80\x02" + b"N0" * (pairs + 1) + b"}."), LIMIT)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("collections", "OrderedDict"),
        ("torch._utils", "_rebuild_tensor_v2"),
        ("torch", "FloatStorage"),
        ("torch.storage", "UntypedStorage"),
        ("torch", "bfloat16"),
        ("torch", "Size"),
        ("torch.nn.parameter", "Parameter"),
    ],
)
def test_allowed_globals_resolve_to_inert_stand_ins(module: str, name: str) -> None:
    found = RestrictedUnpickler(io.BytesIO(), legacy=False).find_class(module, name)
    assert isinstance(found, Inert)


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("os", "system"),
        ("posix", "system"),
        ("subprocess", "Popen"),
        ("builtins", "eval"),
        ("builtins", "exec"),
        ("builtins", "getattr"),
        ("importlib", "import_module"),
        ("torch", "load"),
        ("torch._C", "_set_grad_enabled"),
        ("torch.storage", "FloatStorage"),
        ("collections", "defaultdict"),
        ("copyreg", "_reconstructor"),
    ],
)
def test_every_other_global_is_refused(module: str, name: str) -> None:
    with pytest.raises(UnsafeGlobal):
        RestrictedUnpickler(io.BytesIO(), legacy=False).find_class(module, name)
