"""The output registry: the parser's --format choices, and every renderer on a real result."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.cli.main import build_parser, main
from draftfit.commands.comparison import diff_paths
from draftfit.commands.demo import run_demo
from draftfit.commands.explain import RuleList
from draftfit.commands.inspection import inspect_path
from draftfit.commands.recipe import attach_recipes
from draftfit.commands.release_matrix import build_matrix
from draftfit.conversion import convert_path
from draftfit.engines.listing import list_engines
from draftfit.origins.reference import open_checkpoint, open_target
from draftfit.render import kinds as registry
from draftfit.render.kinds import KINDS, formats_for
from draftfit.render.options import Form, RenderOptions
from draftfit.render.registry import (
    RENDERERS,
    SET_RENDERERS,
    emit,
    kind_of,
    render,
    render_all,
    renderer_for,
)
from draftfit.rules import get_rule
from draftfit.rules.base import Severity
from tests import factory as f
from tests.loaded_modules import loaded_by
from tests.timeouts import scaled

COMMAND_KINDS = {
    "check": registry.CHECK,
    "diff": registry.DIFF,
    "matrix": registry.MATRIX,
    "convert": registry.CONVERT,
    "inspect": registry.INSPECT,
    "rules": registry.RULE_LIST,
    "rule": registry.RULE,
    "engines": registry.ENGINES,
    "demo": registry.DEMO,
}


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _format_choices(sub: argparse.ArgumentParser) -> tuple[str, ...]:
    action = next(a for a in sub._actions if "--format" in a.option_strings)
    assert action.default == action.choices[0]
    return tuple(action.choices)


# Commands that print one fixed document and take no --format.
FIXED_OUTPUT = {"schema", "completion"}


def test_every_command_offers_exactly_the_formats_of_its_kind() -> None:
    subcommands = {k: v for k, v in _subcommands().items() if k not in FIXED_OUTPUT}
    assert set(subcommands) == set(COMMAND_KINDS)
    for name, sub in subcommands.items():
        assert _format_choices(sub) == formats_for(COMMAND_KINDS[name]), name
    assert set(COMMAND_KINDS.values()) == set(KINDS)


def test_matrix_also_writes_markdown_and_every_kind_writes_text_and_json() -> None:
    assert formats_for(registry.MATRIX) == ("text", "json", "markdown", "junit")
    assert formats_for(registry.CHECK) == ("text", "json", "sarif", "github", "junit")
    assert formats_for(registry.DIFF) == formats_for(registry.CHECK)
    for kind in KINDS:
        assert formats_for(kind)[:2] == ("text", "json"), kind.name


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[object]]:
    """One or more real results of every kind, from tiny checkpoints on disk."""
    root = tmp_path_factory.mktemp("registry")
    target = f.llama_target(root / "target")
    clean = f.speculators(aux=[2, 4, 5]).write(root / "clean")
    specforge = f.specforge(nested_aux=[1, 3, 6]).write(root / "specforge")
    eagle1 = f.eagle1().write(root / "eagle1")
    item = get_rule("DF301")
    assert item is not None
    with_recipes = check_path(clean, target=target, engines=["all"])
    attach_recipes(with_recipes)
    return {
        "check": [
            with_recipes,
            check_path(eagle1),
            check_path(specforge, target=target, engines=["all"]),
        ],
        "diff": [diff_paths(specforge, clean, target=target, engines=["all"])],
        "matrix": [
            build_matrix(open_checkpoint(specforge), open_target(target)),
            build_matrix(open_checkpoint(eagle1), None),
        ],
        "convert": [
            convert_path(specforge, "vllm", None, dry_run=True),
            convert_path(specforge, "sglang", root / "out", target=target),
        ],
        "inspect": [inspect_path(clean), inspect_path(specforge), inspect_path(eagle1)],
        "rules": [RuleList.all()],
        "rule": [item],
        "engines": [list_engines(), list_engines("trtllm")],
        "demo": [run_demo()],
    }


def test_every_registered_renderer_renders_a_real_result(results) -> None:
    assert set(results) == {kind.name for kind in KINDS}
    for kind in KINDS:
        for result in results[kind.name]:
            assert kind_of(result) is kind
            for fmt in formats_for(kind):
                text = render(result, fmt)
                assert isinstance(text, str) and text.endswith("\n"), (kind.name, fmt)
                assert text.strip(), (kind.name, fmt)
                if fmt == "json":
                    assert isinstance(json.loads(text), dict), kind.name


def test_json_is_the_results_dictionary(results) -> None:
    """JSON is the result's dictionary plus the envelope (schema version, tool)."""
    for name in ("matrix", "convert", "inspect", "rules", "engines", "demo"):
        for result in results[name]:
            data = json.loads(render(result, "json"))
            assert data.pop("schema_version") == 1, name
            assert data.pop("tool")["name"] == "draftfit", name
            assert data == result.to_dict(), name
    report = results["check"][0]
    assert json.loads(render(report, "json")) == report.to_dict()


def test_text_renderers_read_the_typed_facts(results) -> None:
    report = results["check"][0]
    text = render(report, "text")
    assert report.dialect.title in text
    assert report.target_facts is not None and report.target_facts.architecture in text
    used = {tuple(e.aux_layers.used) for e in report.engines if e.aux_layers and e.aux_layers.used}
    assert used and any(f"aux layers {list(ids)}" in text for ids in used)
    skipped = render(results["check"][1], "text")
    assert results["check"][1].skipped_rules
    assert all(s.code in skipped for s in results["check"][1].skipped_rules)
    info = results["inspect"][1]
    shown = render(info, "text")
    assert info.dialect.title in shown and all(t.name in shown for t in info.tensors)


def test_fail_on_reaches_the_json_exit_code(tmp_path: Path) -> None:
    # a draft with a shorter context than the target's: a warning only (it degrades past it)
    draft = f.specforge().write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t", max_position_embeddings=131072)
    report = check_path(draft, target=target, engines=["vllm==0.29.0"])
    assert report.count(Severity.ERROR) == 0 and report.count(Severity.WARNING)
    lenient = json.loads(render(report, "json", RenderOptions(fail_on=Severity.ERROR)))
    strict = json.loads(render(report, "json", RenderOptions(fail_on=Severity.WARNING)))
    assert (lenient["summary"]["exit_code"], strict["summary"]["exit_code"]) == (0, 1)
    out = io.StringIO()
    emit(report, "json", fail_on=Severity.WARNING, stream=out)
    assert json.loads(out.getvalue())["summary"]["exit_code"] == 1


def test_emit_colours_only_when_asked_or_on_a_terminal(results) -> None:
    report = results["check"][0]
    plain, coloured = io.StringIO(), io.StringIO()
    emit(report, "text", stream=plain)
    emit(report, "text", color=True, stream=coloured)
    assert "\x1b[" not in plain.getvalue() and "\x1b[" in coloured.getvalue()


def test_unknown_format_and_unknown_result_are_refused(results) -> None:
    with pytest.raises(ValueError, match="no format 'sarif'"):
        render(results["inspect"][0], "sarif")
    with pytest.raises(TypeError, match="no output kind"):
        render({"a": 1}, "json")


def test_the_cli_emits_what_the_registry_renders(capsys, results, tmp_path: Path) -> None:
    draft = f.eagle1().write(tmp_path / "eagle1")
    assert main(["inspect", str(draft), "--format", "json"]) == 0
    assert capsys.readouterr().out == render(inspect_path(draft), "json")
    assert main(["rule", "DF301"]) == 0
    assert capsys.readouterr().out == render(results["rule"][0], "text")


def test_building_the_parser_loads_no_renderer() -> None:
    code = (
        "import json, sys\n"
        "from draftfit.cli.main import build_parser\n"
        "build_parser()\n"
        "loaded = [m for m in sys.modules if m.startswith('draftfit.render.')]\n"
        "print(json.dumps(sorted(loaded)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=scaled()
    )
    loaded = json.loads(done.stdout)
    assert "draftfit.render.kinds" in loaded
    assert not [m for m in loaded if m not in ("draftfit.render.kinds", "draftfit.escape")]


def test_the_registry_binds_exactly_the_declared_formats() -> None:
    assert set(RENDERERS) == set(KINDS)
    for kind in KINDS:
        assert tuple(RENDERERS[kind]) == formats_for(kind), kind.name


def test_every_registered_renderer_is_a_function_of_the_module_it_names() -> None:
    for kind in KINDS:
        for fmt, where in RENDERERS[kind].items():
            module_name, _, name = where.partition(":")
            found = renderer_for(kind, fmt)
            assert callable(found), where
            assert (found.__module__, found.__name__) == (module_name, name), where
    for by_format in SET_RENDERERS.values():
        for by_form in by_format.values():
            for where in by_form.values():
                module_name, _, name = where.partition(":")
                module = __import__(module_name, fromlist=[name])
                assert callable(getattr(module, name)), where


def test_the_set_renderers_are_of_declared_formats_and_render_real_results(results) -> None:
    """Every (format, form) of several results renders them as one document; a format
    without a form writes each result whole, one after the other."""
    for kind, by_format in SET_RENDERERS.items():
        assert set(by_format) <= set(formats_for(kind)), kind.name
        several = results[kind.name][:2]
        for fmt, by_form in by_format.items():
            for form in by_form:
                text = render_all(several, fmt, forms=[form])
                assert text.endswith("\n") and text.strip(), (kind.name, fmt, form)
    reports = results["check"][:2]
    assert render_all(reports, "text") == "\n".join(render(r, "text") for r in reports)
    assert render_all(reports[:1], "json", forms=[Form.VERDICTS]) == render(reports[0], "json")
    listed = json.loads(render_all(reports, "json", forms=[Form.VERDICTS, Form.LIST]))
    assert listed == [r.to_dict() for r in reports]
    sarif = json.loads(render_all(reports, "sarif", forms=[Form.STATISTICS]))
    assert len(sarif["runs"]) == 2
    quiet = render_all(reports, "text", forms=[Form.STATISTICS, Form.VERDICTS])
    assert quiet.startswith(f"{reports[0].draft}\n")  # statistics first: the draft heads it
    verdicts = render_all(results["matrix"][:1], "text", forms=[Form.VERDICTS]).splitlines()
    assert verdicts == [f"{r.title} {r.range}: {r.verdict}" for r in results["matrix"][0].rows]


def test_convert_text_names_the_output_as_the_user_wrote_it(tmp_path: Path) -> None:
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "specforge")
    spelled = f"{tmp_path}/./out/"
    result = convert_path(draft, "vllm", spelled, dry_run=True)
    assert f"-> {spelled}  (vllm convention)" in render(result, "text")
    assert json.loads(render(result, "json"))["output"] == str(tmp_path / "out")


def _modules_loaded_by(args: list[str]) -> set[str]:
    """The modules a fresh `draftfit ARGS` process imports."""
    return loaded_by(*args)


@pytest.mark.slow
def test_a_check_loads_only_the_renderer_of_its_format(tmp_path: Path) -> None:
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "specforge")
    heavy = {
        "rich.console",
        "xml.etree.ElementTree",
        "draftfit.conversion",
        "draftfit.commands.recipe",
    }
    as_json = _modules_loaded_by(["check", str(draft), "--format", "json"])
    assert "draftfit.render.json" in as_json and "draftfit.checker" in as_json
    assert not heavy & as_json
    as_text = _modules_loaded_by(["check", str(draft)])
    # plain text (not a terminal): the lines are written without rich
    assert "draftfit.render.text" in as_text and "rich.console" not in as_text
    assert not {"xml.etree.ElementTree", "draftfit.conversion"} & as_text
    as_junit = _modules_loaded_by(["check", str(draft), "--format", "junit"])
    assert "xml.etree.ElementTree" in as_junit
