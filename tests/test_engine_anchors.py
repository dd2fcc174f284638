"""Every cited engine location carries an anchor (or the reason it has none), so that the
refresh script can find the cited code again in a newer release; the data's date and its
list of releases that exist but were not read are loaded and validated."""

from __future__ import annotations

import pytest

from draftfit.engines.citation import parse_locations
from draftfit.engines.data_file import parse_engine_data
from draftfit.engines.registry import engine_names, load_engine
from draftfit.errors import EngineDataError


@pytest.mark.parametrize("engine", engine_names())
def test_every_source_has_an_anchor_per_location_or_a_reason(engine: str) -> None:
    data = load_engine(engine)
    for fact in data.facts.values():
        for entry in fact.entries:
            where = (fact.key, entry.source)
            locations = parse_locations(entry.source)
            assert locations, where
            if entry.anchors:
                assert len(entry.anchors) == len(locations), where
            anchored = [a for a in entry.anchors if a]
            if len(anchored) < len(locations):
                assert entry.anchor_missing, where
            else:
                assert entry.anchor_missing is None, where


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_cited_line_of_a_readable_engine_is_anchored(engine: str) -> None:
    """vLLM and SGLang wheels are readable from the package index: a location that cites
    lines lacks an anchor only for a recorded reason other than "not read"."""
    data = load_engine(engine)
    lined = anchored = 0
    for fact in data.facts.values():
        for entry in fact.entries:
            for location, anchor in zip(
                parse_locations(entry.source), entry.anchors or (), strict=False
            ):
                if location.ranges and location.tag:
                    lined += 1
                    anchored += bool(anchor)
    assert lined > 100
    assert anchored == lined


def test_trtllm_records_why_its_sources_were_not_read() -> None:
    """An entry without anchors says why: its release is not pinned to a commit."""
    data = load_engine("trtllm")
    reasons = {e.anchor_missing for f in data.facts.values() for e in f.entries if not e.anchors}
    assert reasons and all(reasons)
    assert any("no commit" in (r or "") for r in reasons)
    assert "1.3.0rc26" in {n.version for n in data.not_read}  # no page: not in versions
    for known_by_pages in ("1.3.0rc7", "1.3.0rc27", "1.4.0rc1"):
        assert known_by_pages in data.versions and data.commit_for(known_by_pages) is None


@pytest.mark.parametrize("engine", engine_names())
def test_the_data_states_its_date_and_the_releases_not_read(engine: str) -> None:
    data = load_engine(engine)
    assert data.data_date is not None and data.data_date.startswith("20")
    for item in data.not_read:
        assert item.version not in data.versions and item.reason


def test_anchor_cited_location_parsing() -> None:
    locations = parse_locations(
        "vllm/x.py:413@v0.10.1; :366-371,449@v0.34.0 (see y.py:1@v0.1.0); vllm/z.py@v0.9.0"
    )
    assert [str(loc) for loc in locations] == [
        "vllm/x.py:413@v0.10.1",
        "vllm/x.py:366-371,449@v0.34.0",
        "vllm/z.py@v0.9.0",
    ]
    assert locations[1].first_range == (366, 371)
    assert locations[2].ranges == ()


def _raw(**entry: object) -> dict[str, object]:
    body = {"value": 1, "source": "a.py:3@v1.0.0; b.py@v1.0.0", "confidence": "read"} | entry
    return {"versions": ["1.0"], "latest": "1.0", "fact": {"x": {"doc": "d", "values": [body]}}}


@pytest.mark.parametrize(
    "raw",
    [
        _raw(anchors=["x = 1"]),  # one anchor for two locations
        _raw(anchors=["x = 1", ""]),  # a location without anchor and no reason
        _raw(anchors=["x = 1", "y"], anchor_missing="stale"),  # reason although all anchored
        _raw(anchors="x = 1"),
        _raw(anchor_missing=""),
        {"versions": ["1.0"], "latest": "1.0", "fact": {}, "data_date": "December"},
        {"versions": ["1.0"], "latest": "1.0", "fact": {}, "not_read": [{"version": "1.0"}]},
        {
            "versions": ["1.0"],
            "latest": "1.0",
            "fact": {},
            "not_read": [{"version": "1.0", "reason": "read after all"}],
        },
    ],
)
def test_malformed_anchor_data_is_rejected(raw: dict[str, object]) -> None:
    with pytest.raises(EngineDataError):
        parse_engine_data("test", raw)


def test_well_formed_anchor_data_loads() -> None:
    raw = _raw(anchors=["x = 1", ""], anchor_missing="b.py: cites a file, not a line")
    raw |= {"data_date": "2026-12-03", "not_read": [{"version": "1.1", "reason": "stub"}]}
    data = parse_engine_data("test", raw)
    entry = data.facts["x"].entries[0]
    assert entry.anchors == ("x = 1", "")
    assert entry.anchor_missing == "b.py: cites a file, not a line"
    assert data.data_date == "2026-12-03"
    assert [(n.version, n.reason) for n in data.not_read] == [("1.1", "stub")]


def test_engines_listing_shows_newest_read_not_read_and_date(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from draftfit.cli.main import main

    assert main(["engines", "trtllm"]) == 0
    out = capsys.readouterr().out
    assert "newest read 1.4.0rc4" in out
    assert "1.3.0rc26, 1.3.0rc28, 1.3.0rc29: TensorRT-LLM's PyPI package is a stub" in out
    assert "1.3.0rc7, 1.3.0rc15, 1.3.0rc24, 1.3.0rc27, 1.4.0rc0" in out  # releases with data
    assert "data checked against the package index on 20" in out
    assert main(["engines", "vllm", "--format", "json"]) == 0
    (data,) = json.loads(capsys.readouterr().out)["engines"]
    assert data["newest_read"] == data["latest"] == "0.34.0"
    assert {"version": "0.15.0", "reason": data["not_read"][2]["reason"]} in data["not_read"]
    assert data["data_date"] == load_engine("vllm").data_date
    assert main(["engines", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["engines"]
    assert [e["engine"] for e in listed] == list(engine_names())
    assert all("not_read" in e and "data_date" in e for e in listed)
