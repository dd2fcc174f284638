"""The bounded JSON reader: each cap holds exactly at its value, and nothing else raises."""

from __future__ import annotations

import pytest

from draftfit.checkpoint.jsonread import (
    CONFIG_LIMITS,
    JsonLimitError,
    JsonLimits,
    JsonSyntaxError,
    parse_json,
)
from draftfit.checkpoint.limits import MAX_JSON_DEPTH, MAX_JSON_NUMBER_DIGITS


def test_depth_cap_is_exact() -> None:
    at_cap = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert parse_json(at_cap).value is not None
    over = b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(JsonLimitError, match="nested more than 64"):
        parse_json(over)


def test_brackets_inside_strings_do_not_count() -> None:
    text = b'{"a": "' + b"[" * 10_000 + b'"}'
    assert parse_json(text).value == {"a": "[" * 10_000}


@pytest.mark.parametrize("template", [b"%s", b"-%s", b"0.%s", b"1e%s", b"[%s]"])
def test_digit_cap_is_exact(template: bytes) -> None:
    parse_json(template % (b"1" * (MAX_JSON_NUMBER_DIGITS - 1)))
    with pytest.raises(JsonLimitError, match="digits"):
        parse_json(template % (b"1" * 20_000))


def test_digits_inside_strings_do_not_count() -> None:
    assert parse_json(b'["' + b"9" * 20_000 + b'"]').value == ["9" * 20_000]


def test_size_member_container_and_string_caps() -> None:
    small = JsonLimits(max_bytes=10, max_members=2, max_containers=2, max_strings=2)
    with pytest.raises(JsonLimitError, match="bytes"):
        parse_json(b" " * 11 + b"1", small)
    with pytest.raises(JsonLimitError, match="members"):
        parse_json(b'{"a":1,"b":2,"c":3}', JsonLimits(max_members=2))
    with pytest.raises(JsonLimitError, match="objects and arrays"):
        parse_json(b"[[],[]]", JsonLimits(max_containers=2))
    with pytest.raises(JsonLimitError, match="strings"):
        parse_json(b'["a","b","c"]', JsonLimits(max_strings=2))
    parse_json(b'[1,2,"a,b,c"]', JsonLimits(max_items=3))
    with pytest.raises(JsonLimitError, match="values"):
        parse_json(b"[1,2,3,4]", JsonLimits(max_items=3))


def test_duplicate_keys_are_reported_and_the_last_value_kept() -> None:
    document = parse_json(b'{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}')
    assert document.value == {"a": 3, "b": {"c": 2}}
    assert set(document.duplicate_keys) == {"a", "c"}
    assert parse_json(b'{"a": 1}').duplicate_keys == ()


@pytest.mark.parametrize("data", [b"", b"\xff", b"{", b'{"a": 1,}', b"\xef\xbb\xbf{}", b"[1] x"])
def test_syntax_errors_keep_the_decoder_message(data: bytes) -> None:
    with pytest.raises(JsonSyntaxError) as info:
        parse_json(data, CONFIG_LIMITS)
    assert info.value.detail and info.value.detail in str(info.value)


def test_depth_is_settled_for_many_shallow_containers_and_for_unbalanced_text() -> None:
    """A header has three brackets per tensor (far more than the depth cap as a count):
    within the cap; an unclosed run deeper than the cap is refused as too deep, a shallower
    one as not JSON."""
    header = (
        b"{"
        + b",".join(b'"t%d": {"shape": [1, 2], "data_offsets": [0, 4]}' % i for i in range(2000))
        + b"}"
    )
    assert len(parse_json(header).value) == 2000
    with pytest.raises(JsonLimitError, match="nested more than 64"):
        parse_json(b"[]" * 100 + b"[" * (MAX_JSON_DEPTH + 1) + b"]" * 3)
    with pytest.raises(JsonSyntaxError):
        parse_json(b"[]" * 100 + b"[" * MAX_JSON_DEPTH + b"]" * 3)
