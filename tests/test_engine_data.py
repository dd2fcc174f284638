"""The shipped engine data: strict loading, provenance on every entry, version resolution."""

from __future__ import annotations

import re

import pytest

from draftfit.engines.profile import load_engine, parse_engine_data, parse_engine_spec
from draftfit.errors import SpecDataError, UnknownEngineVersionError, UsageError

SOURCE = re.compile(r"[\w/.]+\.py(:[\d,\- ]+)?@v\d+\.\d+\.\d+")


@pytest.mark.parametrize(
    ("engine", "latest"), [("vllm", "0.34.0"), ("sglang", "0.5.23"), ("trtllm", "1.4.0rc0")]
)
def test_every_entry_names_a_versioned_source(engine: str, latest: str) -> None:
    data = load_engine(engine)
    assert data.latest == latest
    for fact in data.facts.values():
        assert fact.doc
        for entry in fact.entries:
            assert SOURCE.search(entry.source), (fact.key, entry.source)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_fact_the_engine_module_reads_exists(engine: str) -> None:
    import importlib
    import inspect

    module = importlib.import_module(f"draftfit.engines.{engine}")
    text = inspect.getsource(module)
    used = set(re.findall(r'(?:value|fact|src|sources)\(\s*"([a-z0-9_]+)"', text))
    used |= set(re.findall(r'\(\s*"([a-z0-9_]+)",\s*\)', text))
    assert len(used) > 10
    known = set(load_engine(engine).facts)
    missing = {k for k in used if k not in known and not k.startswith("aux_ids_read_from_")}
    assert not missing


def test_resolution_picks_the_range_containing_the_version() -> None:
    data = load_engine("vllm")
    assert data.resolve("0.10.1").value("method_from_path")[1] == ["eagle3-", "eagle"]
    assert data.resolve("0.10.2").value("method_from_path")[1] == ["eagle3", "eagle3"]
    archs = "eagle3_draft_architectures"
    assert "LlamaForCausalLMEagle3" not in data.resolve("0.10.1").value(archs)
    assert "LlamaForCausalLMEagle3" in data.resolve("0.10.2").value(archs)
    assert data.resolve("0.21.0").value("verifier_allow_list_enforced") is True
    assert data.resolve("0.22.0").value("verifier_allow_list_enforced") is False
    assert data.resolve("0.34.0").value("aux_ids_read_from_mrv2") == [
        "eagle_aux_hidden_state_layer_ids",
        "eagle_config.layer_ids",
    ]


def test_unread_versions_are_refused() -> None:
    with pytest.raises(UnknownEngineVersionError, match=r"no data for vllm==0\.15\.1"):
        parse_engine_spec("vllm==0.15.1")
    with pytest.raises(UsageError, match="unknown engine"):
        parse_engine_spec("tgi==1.0")
    assert [p.version for p in parse_engine_spec("vllm")] == ["0.34.0"]
    assert [p.label for p in parse_engine_spec("all")] == [
        "vllm==0.34.0",
        "sglang==0.5.23",
        "trtllm==1.4.0rc0",
    ]
    assert [p.version for p in parse_engine_spec("sglang==0.5.12.post1")] == ["0.5.12.post1"]
    assert [p.version for p in parse_engine_spec("vllm==v0.10.2")] == ["0.10.2"]


def test_a_fact_outside_every_range_is_unknown() -> None:
    profile = load_engine("vllm").resolve("0.8.0")
    assert profile.fact("aux_ids_read_from_mrv2").known is False


@pytest.mark.parametrize(
    "raw",
    [
        {
            "versions": ["1.0"],
            "latest": "1.0",
            "fact": {"x": {"doc": "d", "values": [{"value": 1}]}},
        },
        {
            "versions": ["1.0"],
            "latest": "1.0",
            "fact": {
                "x": {
                    "doc": "d",
                    "values": [
                        {"value": 1, "source": "a.py@v1.0.0", "since": "1.0"},
                        {"value": 2, "source": "a.py@v1.0.0", "since": "0.5"},
                    ],
                }
            },
        },
        {"versions": ["1.0"], "latest": "2.0", "fact": {}},
        {
            "versions": ["1.0"],
            "latest": "1.0",
            "fact": {
                "x": {"doc": "d", "items": [{"value": 1, "source": "a.py@v1.0.0", "colour": "red"}]}
            },
        },
        {"versions": ["not a version"], "latest": "1.0", "fact": {}},
    ],
)
def test_malformed_data_is_rejected(raw) -> None:
    with pytest.raises(SpecDataError):
        parse_engine_data("test", raw)
