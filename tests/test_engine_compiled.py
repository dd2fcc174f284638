"""The compiled engine data: in step with the TOML it is built from, and never used stale."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

from draftfit.draft.mtp import FAMILIES_FILE, FAMILIES_FORMAT, FAMILIES_JSON, parse_families
from draftfit.draft.stamped_json import load_stamped, stamp
from draftfit.engines.compiled import ENGINES_DIR, REGENERATE, load_compiled
from draftfit.engines.data_file import parse_engine_data
from draftfit.engines.interface import parse_toml
from draftfit.engines.registry import ENGINES, engine_named
from draftfit.engines.releases import rank_versions, version_texts
from draftfit.engines.vllm.engine import VllmEngine
from draftfit.errors import EngineDataError

SCRIPT = Path(__file__).resolve().parent.parent / "dev" / "compile_engine_data.py"
TOMLS = sorted(Path(ENGINES_DIR).glob("*/data.toml"))


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("compile_engine_data", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_engine_ships_its_data_as_toml_and_compiled() -> None:
    assert {p.parent.name for p in TOMLS} == {e.name for e in ENGINES}


@pytest.mark.parametrize("toml", TOMLS, ids=lambda p: p.parent.name)
def test_the_compiled_form_is_in_step_with_its_toml(toml: Path) -> None:
    """Fails after an edit of a TOML data file until the compiled form is rebuilt."""
    text = toml.read_text(encoding="utf-8")
    name = toml.parent.name
    compiled = load_compiled(name, text)
    assert compiled is not None, (
        f"src/draftfit/engines/{name}/data.json is missing or was built from another "
        f"version of {toml.name}: run `{REGENERATE}` and commit the result"
    )
    tables, ranks = compiled
    assert tables == parse_toml(name, text), f"run `{REGENERATE}`"
    assert ranks == rank_versions(name, tables), f"run `{REGENERATE}`"
    assert toml.with_suffix(".json").read_text(encoding="utf-8") == _script().compiled_for(toml)


@pytest.mark.parametrize("name", [e.name for e in ENGINES])
def test_loading_the_compiled_form_gives_the_data_the_toml_gives(name: str) -> None:
    engine = engine_named(name)
    from_toml = parse_engine_data(name, parse_toml(name, engine.data_text()), engine)
    assert engine.data == from_toml
    assert engine.data.versions == from_toml.versions
    for key, fact in from_toml.facts.items():
        assert engine.data.facts[key] == fact


class _EditedVllm(VllmEngine):
    """vLLM with its TOML text edited, as a data file is while someone works on it."""

    def data_text(self) -> str:
        return super().data_text().replace('title = "vLLM"', 'title = "vLLM (edited)"', 1)


def test_an_edited_toml_is_read_instead_of_a_stale_compiled_form() -> None:
    edited = _EditedVllm()
    assert edited.data_text() != engine_named("vllm").data_text()
    assert load_compiled("vllm", edited.data_text()) is None
    assert edited.data.title == "vLLM (edited)"
    assert engine_named("vllm").data.title == "vLLM"


def test_the_stamp_ignores_how_the_checkout_ends_its_lines(tmp_path: Path) -> None:
    text = Path(ENGINES_DIR, "trtllm", "data.toml").read_text(encoding="utf-8")
    crlf = tmp_path / "trtllm.toml"
    crlf.write_bytes(text.replace("\n", "\r\n").encode("utf-8"))
    assert stamp(crlf.read_text(encoding="utf-8")) == stamp(text)


def test_the_script_rebuilds_a_stale_compiled_form_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script()
    (tmp_path / "trtllm").mkdir()
    shutil.copy(Path(ENGINES_DIR, "trtllm", "data.toml"), tmp_path / "trtllm" / "data.toml")
    assert script.main(["--check", "--engines-dir", str(tmp_path)]) == 1
    assert REGENERATE in capsys.readouterr().out
    assert script.main(["--engines-dir", str(tmp_path)]) == 0
    assert script.main(["--check", "--engines-dir", str(tmp_path)]) == 0
    toml = tmp_path / "trtllm" / "data.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + "\n# a comment\n", encoding="utf-8")
    assert script.main(["--check", "--engines-dir", str(tmp_path)]) == 1
    assert script.main(["--engines-dir", str(tmp_path)]) == 0
    assert (tmp_path / "trtllm" / "data.json").read_text(encoding="utf-8") == script.compiled_for(
        toml
    )


def test_the_script_refuses_invalid_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = Path(ENGINES_DIR, "trtllm", "data.toml").read_text(encoding="utf-8")
    (tmp_path / "trtllm").mkdir()
    (tmp_path / "trtllm" / "data.toml").write_text(
        text.replace('confidence = "read"', 'confidence = "guessed"', 1), encoding="utf-8"
    )
    assert _script().main(["--engines-dir", str(tmp_path)]) == 1
    assert "not compiled" in capsys.readouterr().err
    assert not (tmp_path / "trtllm" / "data.json").exists()


def test_compiled_facts_are_built_and_validated_when_first_read() -> None:
    """From the compiled form a fact is built when read (a check reads about a third), with
    the same validation as from the TOML: a damaged table fails where it is read."""
    engine = engine_named("vllm")
    compiled = load_compiled("vllm", engine.data_text())
    assert compiled is not None
    raw, ranks = compiled
    key = next(iter(raw["fact"]))
    raw["fact"][key]["values" if "values" in raw["fact"][key] else "items"][0]["confidence"] = "?"
    data = parse_engine_data("vllm", raw, engine, citations_checked=True, ranks=ranks)
    assert len(data.facts) == len(raw["fact"]) and list(data.facts) == list(raw["fact"])
    other = next(k for k in data.facts if k != key)
    assert data.facts[other] == engine.data.facts[other]
    with pytest.raises(EngineDataError, match=f"fact {key}: confidence"):
        data.facts[key]  # reading it builds it
    with pytest.raises(EngineDataError, match=f"fact {key}: confidence"):
        parse_engine_data("vllm", parse_toml("vllm", engine.data_text()) | {"fact": raw["fact"]})


@pytest.mark.parametrize("name", [e.name for e in ENGINES])
def test_the_shipped_ranks_order_every_version_as_packaging_does(name: str) -> None:
    """The ranks a check compares instead of parsing versions: one per version text of the
    data, ordered (and tied) exactly as `packaging.version.Version` orders the texts."""
    from packaging.version import Version

    engine = engine_named(name)
    compiled = load_compiled(name, engine.data_text())
    assert compiled is not None
    tables, ranks = compiled
    texts = {text for text, _ in version_texts(tables)}
    assert set(ranks) == texts
    for a in texts:
        for b in texts:
            assert (ranks[a] < ranks[b]) == (Version(a) < Version(b)), (a, b)
            assert (ranks[a] == ranks[b]) == (Version(a) == Version(b)), (a, b)
    releases = engine.data.releases
    ordered = sorted(engine.data.versions, key=releases.__getitem__)
    assert ordered == sorted(engine.data.versions, key=Version)


def test_a_version_text_the_shipped_ranks_lack_is_refused_where_it_is_read() -> None:
    engine = engine_named("vllm")
    compiled = load_compiled("vllm", engine.data_text())
    assert compiled is not None
    raw, ranks = compiled
    key = next(k for k, body in raw["fact"].items() if "values" in body)
    raw["fact"][key]["values"][0]["since"] = "9.9.9"
    data = parse_engine_data("vllm", raw, engine, citations_checked=True, ranks=ranks)
    with pytest.raises(EngineDataError, match=r"bad version '9\.9\.9'"):
        data.facts[key]


def test_the_mtp_family_table_twin_is_in_step_and_never_used_stale(tmp_path: Path) -> None:
    """The MTP family table loads from its JSON twin (no TOML parser) only while the twin
    was built from the TOML beside it; a twin of another text is ignored."""
    text = FAMILIES_FILE.read_text(encoding="utf-8")
    twin = load_stamped(str(FAMILIES_JSON), FAMILIES_FORMAT, text)
    assert twin is not None, f"src/draftfit/draft/mtp_families.json is stale: run `{REGENERATE}`"
    assert twin["data"] == parse_families(text)
    assert FAMILIES_JSON.read_text(encoding="utf-8") == _script().compiled_families(FAMILIES_FILE)
    stale = tmp_path / "mtp_families.json"
    shutil.copy(FAMILIES_JSON, stale)
    assert load_stamped(str(stale), FAMILIES_FORMAT, text + "\n# edited\n") is None
    assert load_stamped(str(stale), FAMILIES_FORMAT + 1, text) is None
