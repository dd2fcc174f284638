"""Reading a shard index's names: the plain reading (no names built but those a query picks)
gives what the exact JSON reader gives, on generated indexes, valid and broken."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from draftfit import rule_ids
from draftfit.checkpoint.access import LocalAccess
from draftfit.checkpoint.index_names import (
    IndexNames,
    NameQuery,
    _read_exact,
    _read_plain,
    pick_names,
    read_index_names,
)
from draftfit.checkpoint.limits import MAX_JSON_ITEMS
from draftfit.checkpoint.model import Damage
from draftfit.draft.mtp import relevant_query
from tests.sampling import two_budgets

INDEX = "model.safetensors.index.json"
QUERY = NameQuery(
    (r"model\.layers\.60\.", r"model\.layers\.0*(?:6[1-9]|[7-9][0-9]|[1-9][0-9]{2,})\.", r"mtp\."),
    ("mtp", "nextn", "eh_proj", "shared_head"),
)
FRAGMENTS = [
    "model", "layers", "0", "7", "60", "61", "062", "100", "mtp", "MTP", "nextn", "eh_proj",
    "Shared_Head", "shared_head", "weight", "experts", "mlp", "embed_tokens", "model.layers.61",
    "model.layers.60", "mtp.layers.0", "é", " ", ":", ",", "{", "}", "[", "]", '"', "\\", "\n",
    "\t", "/", "-", "\x01",
]  # fmt: skip
SHARDS = [
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "mtp.bin",
    "x-nextn.bin",
    "",
]

names = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=5).flatmap(
    lambda parts: st.sampled_from([".", "_", ""]).map(lambda sep: sep.join(parts))
)
pairs = st.lists(st.tuples(names, st.sampled_from(SHARDS)), max_size=25)


def _string(text: str, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """An index as a tool may write it: its pairs (names may repeat), spacing, escapes,
    metadata and extra keys in any order."""
    ascii_only = draw(st.booleans())
    comma = draw(st.sampled_from([", ", ",", ",\n    ", " ,\t"]))
    colon = draw(st.sampled_from([": ", ":", " : "]))
    body = comma.join(
        f"{_string(k, ascii_only)}{colon}{_string(v, ascii_only)}" for k, v in draw(pairs)
    )
    members = [f'"weight_map"{colon}{{{body}}}']
    if draw(st.booleans()):
        members.append(f'"metadata"{colon}{{"total_size"{colon}{draw(st.integers(0, 10**12))}}}')
    if draw(st.booleans()):  # a key written twice, or a map inside the metadata
        members.append(
            draw(
                st.sampled_from(
                    [
                        f'"weight_map"{colon}{{"mtp.a"{colon}"x"}}',
                        f'"metadata"{colon}{{"weight_map"{colon}{{"mtp.b"{colon}"y"}}}}',
                        f'"metadata"{colon}{{"total_size"{colon}1}}',
                        f'"note"{colon}"weight_map"',
                        f'"list"{colon}["mtp.c", 1, null]',
                    ]
                )
            )
        )
    order = draw(st.permutations(members))
    return ("{" + comma.join(order) + "}").encode("utf-8")


@st.composite
def broken(draw: st.DrawFn) -> bytes:
    """A document with one byte taken out, put in or replaced."""
    data = draw(documents())
    at = draw(st.integers(0, len(data)))
    byte = draw(st.sampled_from([bytes([b]) for b in b'"{}[]:, \t\n\\x\x00']))
    how = draw(st.sampled_from(["drop", "insert", "replace"]))
    if how == "drop":
        return data[:at] + data[at + 1 :]
    if how == "insert":
        return data[:at] + byte + data[at:]
    return data[:at] + byte + data[at + 1 :]


def _plain(name: str) -> bool:
    return not any(char in name for char in ' :,{}[]"\\')


def _read(tmp_path: Path, data: bytes, query: NameQuery | None) -> tuple[object, list[Damage]]:
    (tmp_path / INDEX).write_bytes(data)
    damage: list[Damage] = []
    read = read_index_names(LocalAccess(tmp_path), INDEX, damage, query)
    return _shown(read), damage


def _shown(read: IndexNames | None) -> object:
    return None if read is None else (list(read.shards.items()), read.complete)


def _exact(data: bytes, query: NameQuery | None) -> tuple[object, list[Damage]]:
    damage: list[Damage] = []
    return _shown(_read_exact(data, INDEX, damage, query)), damage


def _expected(data: bytes) -> list[tuple[str, str]]:
    """The names a JSON reader finds in the index that the query picks, with their shards:
    worked out here from `json.loads` and the query's own words."""
    weight_map = json.loads(data)["weight_map"]
    starts = re.compile("|".join(QUERY.starts))
    return [
        (name, shard)
        for name, shard in weight_map.items()
        if starts.match(name) or any(word in name.lower() for word in QUERY.words)
    ]


# Each agreement property runs at the full budget (marked `slow`) and a quick run's share.
FULL = settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
QUICK = settings(FULL, max_examples=60)


def _agrees(tmp_path: Path, data: bytes) -> None:
    assert _read(tmp_path, data, QUERY) == _exact(data, QUERY)


test_the_plain_reading_agrees_with_the_exact_one, test_the_plain_reading_agrees_quick = two_budgets(
    FULL, QUICK, data=documents()
)(_agrees)
(
    test_a_broken_index_is_read_as_the_exact_reader_reads_it,
    test_a_broken_index_is_read_as_the_exact_reader_reads_it_quick,
) = two_budgets(FULL, QUICK, data=broken())(_agrees)


@settings(max_examples=200)
@given(body=pairs)
def test_a_plain_index_is_settled_without_the_exact_reader(
    body: list[tuple[str, str]],
) -> None:
    """Where the names are ASCII and hold no escape, space or JSON punctuation (as real
    tensor names), the plain reading takes the document (the agreement above is then about
    it, not about the exact reader twice), and it picks what a JSON reader and the query
    pick."""
    plain = [(k, v) for k, v in body if k.isascii() and k.isprintable() and _plain(k)]
    data = json.dumps({"metadata": {"total_size": 1}, "weight_map": dict(plain)}).encode()
    settled = _read_plain(data, QUERY)
    assert settled is not None
    shards, duplicates = settled
    assert list(shards.items()) == _expected(data)
    assert duplicates == ()


def test_names_written_twice_are_reported_where_the_check_reads_them(tmp_path: Path) -> None:
    data = (
        b'{"weight_map": {"model.layers.61.eh_proj.weight": "a", "model.layers.3.x": "b", '
        b'"model.layers.3.x": "c", "model.layers.61.eh_proj.weight": "d"}, '
        b'"metadata": {}, "metadata": {}}'
    )
    shown, damage = _read(tmp_path, data, QUERY)
    assert shown == ([("model.layers.61.eh_proj.weight", "d")], False)
    assert [d.rule for d in damage] == [rule_ids.DUPLICATE_JSON_KEY]
    assert "`metadata`, `model.layers.61.eh_proj.weight`" in damage[0].message
    # without a query every name is read, and every repeat reported
    shown, damage = _read(tmp_path, data, None)
    assert shown is not None and shown[1] is True
    assert "`model.layers.3.x`" in damage[0].message


def test_pick_names_keeps_the_index_order_and_takes_any_case() -> None:
    names = ["model.layers.61.a", "model.layers.2.MTP_block", "lm_head", "model.layers.60.b"]
    assert pick_names(names, QUERY) == [names[0], names[1], names[3]]
    # a name that is not plain ASCII: every name is handed over, the caller tests each
    assert pick_names(["é", "lm_head"], QUERY) == ["é", "lm_head"]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        (b'{"weight_map": {"a": 1}}', rule_ids.INVALID_INDEX),
        (b'{"weight_map": ["a"]}', rule_ids.INVALID_INDEX),
        (b'{"weight_map": {"a": "b"}', rule_ids.INVALID_INDEX),
        (b'["weight_map"]', rule_ids.INVALID_INDEX),
    ],
)
def test_an_index_that_cannot_be_used_says_why(tmp_path: Path, text: bytes, rule: object) -> None:
    shown, damage = _read(tmp_path, text, QUERY)
    assert shown is None
    assert [d.rule for d in damage] == [rule]


def test_an_index_over_a_cap_is_refused_either_way(tmp_path: Path) -> None:
    """More names than a JSON document may hold values (DF022): the plain reading does not
    take it, the exact reader says which cap."""
    count = MAX_JSON_ITEMS + 1
    body = ",".join(f'"model.layers.{i}.w":"s"' for i in range(count))
    data = ('{"weight_map":{' + body + "}}").encode()
    shown, damage = _read(tmp_path, data, QUERY)
    assert shown is None
    assert [d.rule for d in damage] == [rule_ids.READER_LIMIT_EXCEEDED]
    assert f"{count} values" in damage[0].message
    fits = ('{"weight_map":{' + ",".join(body.split(",")[:-1]) + "}}").encode()
    assert _read_plain(fits, QUERY) is not None


def test_the_mtp_query_of_a_deepseek_config() -> None:
    query = relevant_query({"model_type": "deepseek_v3", "num_hidden_layers": 61})
    assert query.words == QUERY.words
    picked = pick_names(["model.layers.60.a", "model.layers.61.b", "model.layers.7.c"], query)
    assert picked == ["model.layers.60.a", "model.layers.61.b"]


@pytest.mark.parametrize("char", [" ", "\t", "\n", "\r", "\x01", "\x7f", ":", ",", "}", "{"])
@pytest.mark.parametrize("where", ["name", "shard"])
def test_a_character_json_forbids_or_the_plain_reading_does_not_take(
    tmp_path: Path, char: str, where: str
) -> None:
    """Written raw inside a name or a shard: read as the exact reader reads it (a raw
    control character is not JSON; a space or punctuation is, and is read by it)."""
    name, shard = ("mtp.a" + char + "b", "s") if where == "name" else ("mtp.a", "s" + char)
    data = f'{{"weight_map": {{"model.layers.60.x": "s", "{name}": "{shard}"}}}}'.encode()
    assert _read(tmp_path, data, QUERY) == _exact(data, QUERY)
