"""The shipped engine data: strict loading, provenance on every entry, version resolution."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from draftfit.engines.citation import parse_locations
from draftfit.engines.data_file import parse_engine_data
from draftfit.engines.registry import load_engine, parse_engine_selector
from draftfit.errors import EngineDataError, UnknownEngineVersionError, UsageError
from draftfit.rules.base import Scope

SOURCE = re.compile(r"[\w/.]+\.py(:[\d,\- ]+)?@v\d+\.\d+\.\d+")


@pytest.mark.parametrize(
    ("engine", "latest"), [("vllm", "0.34.0"), ("sglang", "0.5.23"), ("trtllm", "1.4.0rc4")]
)
def test_every_entry_names_a_versioned_source(engine: str, latest: str) -> None:
    """A code location at a release, or a page of the documentation built for one."""
    data = load_engine(engine)
    assert data.latest == latest
    for fact in data.facts.values():
        assert fact.doc
        for entry in fact.entries:
            pages = [loc for loc in parse_locations(entry.source) if loc.page and loc.tag]
            assert SOURCE.search(entry.source) or pages, (fact.key, entry.source)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_fact_the_engine_module_reads_exists(engine: str) -> None:
    folder = Path(__file__).resolve().parents[1] / "src" / "draftfit" / "engines" / engine
    # The procedure (its steps and their helpers), not the Engine's declarations.
    modules = [p for p in sorted(folder.glob("*.py")) if p.name not in ("__init__.py", "engine.py")]
    text = "\n".join(p.read_text(encoding="utf-8") for p in modules)
    used = set(re.findall(r'(?:value|fact|src|citations)\(\s*"([a-z0-9_]+)"', text))
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
    with pytest.raises(UnknownEngineVersionError, match=r"vLLM 0\.15\.1 was not read"):
        parse_engine_selector("vllm==0.15.1")
    with pytest.raises(UsageError, match="unknown engine"):
        parse_engine_selector("tgi==1.0")
    assert [p.version for p in parse_engine_selector("vllm")] == ["0.34.0"]
    assert [p.label for p in parse_engine_selector("all")] == [
        "vllm==0.34.0",
        "sglang==0.5.23",
        "trtllm==1.4.0rc4",
    ]
    assert [p.version for p in parse_engine_selector("sglang==0.5.12.post1")] == ["0.5.12.post1"]
    assert [p.version for p in parse_engine_selector("vllm==v0.10.2")] == ["0.10.2"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "vllm==0.10",
            "vllm==0.10 names no single release; draftfit has read 0.10.0, 0.10.1, 0.10.1.1, "
            "0.10.2: pass one (e.g. --engine vllm==0.10.2), or --engine vllm~=0.10 for the "
            "newest of them",
        ),
        (
            "vllm==0.34.1",
            "no data for vllm==0.34.1: it is newer than the newest release draftfit has read "
            "(0.34.0); --engine vllm~=0.34.1 checks against 0.34.0 and marks the findings "
            "extrapolated",
        ),
        (
            "vllm==0.15.1",
            "vLLM 0.15.1 was not read (no sdist on PyPI",
        ),
        ("vllm=0.10.2", "--engine 'vllm=0.10.2': did you mean --engine vllm==0.10.2?"),
        ("vllm 0.10.2", "--engine 'vllm 0.10.2': did you mean --engine vllm==0.10.2?"),
        ("sglang@v0.5.6", "--engine 'sglang@v0.5.6': did you mean --engine sglang==0.5.6?"),
        (
            "vllm==0.7.3",
            "no data for vllm==0.7.3: it is older than every release draftfit has read (the "
            "oldest is 0.8.0)",
        ),
        (
            "vllm==abc",
            "--engine 'vllm==abc': 'abc' is not a version (vLLM releases look like 0.34.0)",
        ),
        ("vllm~=0.7", "vLLM 0.7 is older than every release draftfit has read"),
        ("vllm>=0.10", "--engine 'vllm>=0.10': draftfit checks single releases; use vllm==0.10"),
    ],
)
def test_version_errors_say_why_and_what_to_pass(spec: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_engine_selector(spec)
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("spec", "checked", "requested"),
    [
        ("vllm~=0.34.1", "vllm==0.34.0", "0.34.1"),
        ("vllm~=0.34", "vllm==0.34.0", "0.34.x"),
        ("vllm~=0.10", "vllm==0.10.2", "0.10.x"),
        ("vllm~=0.15.1", "vllm==0.14.0", "0.15.1"),
        ("vllm~=0.10.2", "vllm==0.10.2", None),  # a read release: nothing extrapolated
        ("sglang~=0.5.12", "sglang==0.5.12", None),
        ("trtllm~=1.3.0rc1", "trtllm==1.2.1", "1.3.0rc1"),
    ],
)
def test_compatible_release_checks_the_nearest_read_one(
    spec: str, checked: str, requested: str | None
) -> None:
    (profile,) = parse_engine_selector(spec)
    assert (profile.label, profile.requested) == (checked, requested)


def test_extrapolated_check_marks_findings_and_verdict(tmp_path, capsys) -> None:
    import json

    from draftfit.cli.main import main
    from tests import factory as f

    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    argv = ["check", str(draft), "--target", str(target), "--engine", "vllm~=0.34.1"]
    # the nested ids are not read: other layers than trained, so it drafts garbage (exit 1)
    assert main([*argv, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["engines"][0]["extrapolated_to"] == "0.34.1"
    engine_findings = [x for x in data["findings"] if x["code"] != "DF902"]
    assert engine_findings and all(
        "(extrapolated to vLLM 0.34.1 from draftfit's data for 0.34.0)" in x["message"]
        for x in engine_findings
    )
    main(argv)
    out = capsys.readouterr().out
    assert "vLLM 0.34.0: drafts-garbage (loads, but drafts garbage: acceptance ≈ 0), " in out
    assert "extrapolated to 0.34.1 (" in out


def test_version_errors_on_the_command_line_are_one_line(capsys) -> None:
    from draftfit.cli.main import main

    assert main(["check", "/nonexistent", "--engine", "vllm=0.10.2"]) == 2
    err = capsys.readouterr().err
    assert err == "draftfit: error: --engine 'vllm=0.10.2': did you mean --engine vllm==0.10.2?\n"


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
                        {"value": 1, "source": "a.py@v1.0.0", "confidence": "read", "since": "1.0"},
                        {"value": 2, "source": "a.py@v1.0.0", "confidence": "read", "since": "0.5"},
                    ],
                }
            },
        },
        {"versions": ["1.0"], "latest": "2.0", "fact": {}},
        {
            "versions": ["1.0"],
            "latest": "1.0",
            "fact": {
                "x": {
                    "doc": "d",
                    "items": [
                        {"value": 1, "source": "a.py@v1.0.0", "confidence": "read", "colour": "red"}
                    ],
                }
            },
        },
        {"versions": ["not a version"], "latest": "1.0", "fact": {}},
        {
            "versions": ["1.0"],
            "latest": "1.0",
            "fact": {"x": {"doc": "d", "values": [{"value": 1, "source": "a.py@v1.0.0"}]}},
        },
        {
            "versions": ["1.0"],
            "latest": "1.0",
            "fact": {
                "x": {
                    "doc": "d",
                    "values": [{"value": 1, "source": "a.py@v1.0.0", "confidence": "probably"}],
                }
            },
        },
    ],
)
def test_malformed_data_is_rejected(raw) -> None:
    with pytest.raises(EngineDataError):
        parse_engine_data("test", raw)


def test_a_well_formed_entry_loads_with_its_confidence() -> None:
    entry = {"value": 1, "source": "a.py@v1.0.0", "confidence": "assumed", "note": "as 0.9"}
    raw = {"versions": ["1.0"], "latest": "1.0", "fact": {"x": {"doc": "d", "values": [entry]}}}
    loaded = parse_engine_data("test", raw).facts["x"].entries[0]
    assert (loaded.confidence, loaded.approximate, loaded.note) == ("assumed", True, "as 0.9")


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_data_entry_states_a_known_confidence(engine: str) -> None:
    """Read from the TOML text itself, so a default in the loader could not hide a gap."""
    from importlib import resources

    from draftfit.engines.interface import parse_toml
    from draftfit.engines.profile import CONFIDENCE

    text = resources.files("draftfit.engines").joinpath(engine, "data.toml").read_text()
    seen = set()
    for key, body in parse_toml(engine, text)["fact"].items():
        for entry in body.get("values", body.get("items", [])):
            assert entry.get("confidence") in CONFIDENCE, (key, entry)
            seen.add(entry["confidence"])
    assert "read" in seen


@pytest.mark.parametrize(
    ("case_id", "engine"),
    [
        ("trtllm-d2t-missing", "trtllm"),
        ("fp8-target-unquantized-draft-on-0.11.0", "vllm"),
        ("draft-context-short-0.29", "vllm"),
    ],
)
def test_an_approximate_entry_surfaces_in_the_finding_built_on_it(
    case_id: str, engine: str, tmp_path
) -> None:
    """Each finding whose citations include an approximate entry active at the checked
    version quotes that entry's note; findings on exact entries carry no caveat."""
    from draftfit.checker import check_path
    from tests.cases import CASES

    case = next(c for c in CASES if c.id == case_id)
    draft, target = case.build(tmp_path)
    report = check_path(draft, target=target, engines=case.engines, method=case.method)
    profile = parse_engine_selector(case.engines[0])[0]
    assert profile.engine == engine
    active = [
        e for fact in profile.data.facts.values() for e in fact.entries if e.applies(profile.parsed)
    ]
    caveated = 0
    for finding in report.findings:
        behind = [e for e in active if e.source in finding.citations and e.approximate]
        if behind:
            caveated += 1
            assert any(f"data here is approximate: {e.note}" in finding.message for e in behind)
        else:
            assert "data here is approximate" not in finding.message
    assert caveated >= 1


def _facts_by_engine(code: str) -> dict[str, tuple[str, ...]]:
    """Per engine (registry order), the facts whose `rules` name `code`, where any do."""
    from draftfit.engines.registry import ENGINES

    found = {engine.name: engine.data.facts_for_rule(code) for engine in ENGINES}
    return {name: keys for name, keys in found.items() if keys}


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_rule_a_fact_names_is_a_rule_resting_on_engine_data(engine: str) -> None:
    """A fact's `rules` name registered rules that run per engine, and `facts_for_rule` gives
    back exactly the facts that name each one."""
    from draftfit.rules import get_rule

    data = load_engine(engine)
    named: dict[str, set[str]] = {}
    for fact in data.facts.values():
        assert list(fact.rules) == sorted(set(fact.rules)), fact.key
        for code in fact.rules:
            named.setdefault(code, set()).add(fact.key)
    assert len(named) > 15
    for code, keys in named.items():
        item = get_rule(code)
        assert item is not None and item.code == code, code
        assert item.scope is Scope.ENGINE, code
        listed = data.facts_for_rule(code)
        assert len(listed) == len(set(listed)) and set(listed) == keys, code
        assert set(listed) <= set(data.facts)
    assert set(data.rule_facts) == set(named)
    assert data.facts_for_rule("DF001") == ()


def test_a_rules_facts_are_listed_ranked_first_then_by_key() -> None:
    vllm = load_engine("vllm")
    assert vllm.facts_for_rule("DF553") == (
        "mla_only_attention_backends",
        "draft_attention_backend_default",
        "draft_attention_backend_flag",
        "attention_backend_setting",
        "runner_default",
    )
    assert vllm.facts_for_rule("DF301") == (
        "aux_ids_read_from_mrv1",
        "aux_ids_read_from_mrv2",
        "runner_default",
    )
    assert load_engine("trtllm").facts_for_rule("DF102") == (
        "missing_architectures",
        "draft_class_selection",
        "one_model_default",
    )


def test_every_serve_rule_rests_on_the_data_of_the_engines_whose_launches_it_judges() -> None:
    """Without a launch the checker lists a serve rule as skipped for the engines whose data
    it rests on, so a serve rule no fact names would silently never be listed."""
    from draftfit.rules import all_rules

    serve = [item for item in all_rules() if item.needs_serve]
    assert len(serve) >= 10
    for item in serve:
        assert _facts_by_engine(item.code), item.code
    assert set(_facts_by_engine("DF555")) == {"trtllm"}
    assert set(_facts_by_engine("DF554")) == {"sglang"}
    assert set(_facts_by_engine("DF550")) == {"vllm", "sglang", "trtllm"}


def _fact(rules: object, rank: object = None) -> dict[str, object]:
    body: dict[str, object] = {
        "doc": "d",
        "values": [{"value": 1, "source": "a.py@v1.0.0", "confidence": "read"}],
        "rules": rules,
    }
    if rank is not None:
        body["rank"] = rank
    return body


@pytest.mark.parametrize(
    "facts",
    [
        {"x": _fact(["DF999"])},  # no rule has this code
        {"x": _fact(["DF301", "DF101"])},  # not sorted
        {"x": _fact(["DF301", "DF301"])},  # twice
        {"x": _fact("DF301")},  # not a list
        {"x": _fact(["DF301"], {"DF302": 1})},  # ranks a rule it does not name
        {"x": _fact(["DF301"], {"DF301": 0})},  # not a positive place
        {"x": _fact(["DF301"], {"DF301": True})},
        {"x": _fact(["DF301"], {"DF301": 1}), "y": _fact(["DF301"], {"DF301": 1})},
    ],
)
def test_malformed_rule_links_are_rejected(facts: dict[str, object]) -> None:
    with pytest.raises(EngineDataError):
        parse_engine_data("test", {"versions": ["1.0"], "latest": "1.0", "fact": facts})


def test_rule_links_load_in_order() -> None:
    facts = {
        "b": _fact(["DF301"]),
        "c": _fact(["DF301", "DF302"], {"DF301": 1}),
        "a": _fact(["DF301", "DF302"]),
    }
    data = parse_engine_data("test", {"versions": ["1.0"], "latest": "1.0", "fact": facts})
    assert data.facts_for_rule("DF301") == ("c", "a", "b")
    assert data.facts_for_rule("DF302") == ("a", "c")
    assert data.facts["c"].rules == ("DF301", "DF302")


def test_rule_explains_the_data_it_rests_on(capsys) -> None:
    """`draftfit rule CODE` lists, per engine, the facts the rule reads with every entry's
    range, source and confidence exactly as the data file holds them."""
    import json

    from draftfit.cli.main import main

    linked = _facts_by_engine("DF301")
    assert main(["rule", "DF301", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)["data"]
    assert set(shown) == set(linked) and len(shown) >= 2
    for engine, facts in shown.items():
        data = load_engine(engine)
        assert [f["fact"] for f in facts] == list(linked[engine])
        for fact in facts:
            entries = data.facts[fact["fact"]].entries
            assert [(e["source"], e["confidence"]) for e in fact["entries"]] == [
                (e.source, e.confidence) for e in entries
            ]
            assert [e["since"] for e in fact["entries"]] == [
                str(e.since) if e.since else None for e in entries
            ]
    assert main(["rule", "DF301"]) == 0
    text = capsys.readouterr().out
    facts = next(iter(shown.values()))
    entry = facts[0]["entries"][0]
    assert entry["source"] in text and f"[{entry['confidence']}]" in text
    assert text.index("## Fix") < text.index("## Engine data")


ENGINE_VERSION_IN_PROSE = re.compile(
    r"(?<!running\s)(?:vLLM|SGLang|TensorRT-LLM) \(?(?:[<>]=? ?)?\d+\.\d+"
    r"|\b(?:before|from|since|until|[<>]=?) v?\d+\.\d+"
    r"|\b\d+\.\d+(?:\.\d+)?\+"
    r"|\b\d+\.\d+(?:\.\d+)?[–-]\d+\.\d+"
)


def test_rules_resting_on_engine_data_leave_its_version_ranges_to_it() -> None:
    """The ranges live in the data (`draftfit rule CODE` prints them); a docstring that
    restated them would drift. Versions a rule was confirmed on by running are kept."""
    from draftfit.rules import all_rules

    checked = 0
    for item in all_rules():
        if not _facts_by_engine(item.code):
            continue
        checked += 1
        assert not ENGINE_VERSION_IN_PROSE.findall(item.doc), item.code
    assert checked > 40
    assert ENGINE_VERSION_IN_PROSE.search("SGLang 0.4.9-0.5.10 and vLLM >= 0.10.2")
    assert not ENGINE_VERSION_IN_PROSE.search("confirmed by running vLLM 0.34.0")
