"""The Python API: what a script calling draftfit gets, without the command line."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import draftfit
from draftfit.checker import check_path
from draftfit.errors import DraftfitError, UsageError
from draftfit.render.json import with_envelope
from draftfit.report import Report
from draftfit.schemas import load_schema
from tests import factory as f
from tests.timeouts import scaled


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    return f.specforge().write(tmp_path / "draft"), f.llama_target(tmp_path / "target")


def test_exit_code_takes_the_threshold_by_name_as_the_command_line_spells_it(
    tmp_path: Path,
) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    report = check_path(draft, engines=["vllm"])  # no target: unverified, nothing wrong
    assert report.engines[0].verdict == "unverified"
    assert report.exit_code("error") == report.exit_code() == 0
    assert report.exit_code("unverified") == 1
    with pytest.raises(ValueError, match="choose from error, warning, unverified, info"):
        report.exit_code("fatal")


def test_the_four_functions_return_what_the_commands_render_and_never_print(
    pair: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft, target = pair
    reference = f.speculators(aux=[2, 4, 5]).write(tmp_path / "reference")
    report = draftfit.check(draft, target=target, engines=["all"], recipes=True)
    comparison = draftfit.diff(draft, reference, target=target)
    matrix = draftfit.matrix(draft, target=target)
    plan = draftfit.convert(draft, "vllm", dry_run=True, target=target)
    written = draftfit.convert(draft, "vllm", tmp_path / "out", target=target)
    assert capsys.readouterr() == ("", "")
    assert [e.engine for e in report.engines] == ["vllm", "sglang", "trtllm"]
    assert report.recipes and report.exit_code("error") == 0
    assert {r.engine for r in matrix.rows} == {"vllm", "sglang", "trtllm"}
    assert plan.written is False and written.written is True
    assert (tmp_path / "out" / "config.json").is_file()
    for kind, result in (
        ("check", report),
        ("diff", comparison),
        ("matrix", matrix),
        ("convert", plan),
        ("convert", written),
    ):
        data = json.loads(json.dumps(with_envelope(result.to_dict())))
        assert not list(Draft202012Validator(load_schema(kind)).iter_errors(data)), kind


def test_bad_input_raises_a_draftfit_error(tmp_path: Path) -> None:
    with pytest.raises(DraftfitError):
        draftfit.check(tmp_path / "missing")
    with pytest.raises(UsageError, match=r"vllm==0\.10\.2"):
        draftfit.check(tmp_path, engines=["vllm=0.10.2"])


def test_import_draftfit_stays_light() -> None:
    """`import draftfit` loads no checker, rules or engine code (nor the API module) until a
    function is called; the functions are there all the same."""
    import subprocess
    import sys

    code = "import sys, draftfit; print(sorted(m for m in sys.modules if m.startswith('draftfit')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=scaled()
    ).stdout
    assert out.strip() == "['draftfit', 'draftfit.version']"
    assert draftfit.check.__module__ == "draftfit.api"
    with pytest.raises(AttributeError):
        draftfit.no_such_call  # type: ignore[attr-defined]  # noqa: B018


def test_dir_and_all_show_the_api_without_importing_it() -> None:
    import subprocess
    import sys

    code = (
        "import sys, draftfit; names = dir(draftfit); "
        "print(sorted(m for m in sys.modules if m.startswith('draftfit'))); print(names)"
    )
    lines = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=scaled()
    ).stdout.splitlines()
    assert lines[0] == "['draftfit', 'draftfit.version']"
    listed = eval(lines[1])  # a printed list of strings
    assert {"check", "diff", "matrix", "convert", "__version__"} <= set(listed)
    assert listed == sorted(listed)
    # Only the public names and the module's own attributes: no internals.
    assert [n for n in listed if not n.startswith("__")] == ["check", "convert", "diff", "matrix"]
    # Every name of __all__ is listed and resolves; the API's calls are all in __all__.
    from draftfit import api

    assert set(draftfit.__all__) <= set(listed)
    assert all(getattr(draftfit, name) is not None for name in draftfit.__all__)
    assert set(api.__all__) <= set(draftfit.__all__)
    namespace: dict[str, object] = {}
    exec("from draftfit import *", namespace)
    assert set(draftfit.__all__) <= set(namespace)


def test_one_engine_selector_may_be_a_string_and_other_parameters_take_natural_forms(
    pair: tuple[Path, Path], tmp_path: Path
) -> None:
    draft, target = pair
    as_string = draftfit.check(draft, target=target, engines="sglang==0.5.23")
    assert [e.label for e in as_string.engines] == ["sglang==0.5.23"]
    assert [e.label for e in draftfit.check(draft, target=target, engines="all").engines] == [
        e.label for e in draftfit.check(draft, target=target, engines=["all"]).engines
    ]
    comparison = draftfit.diff(draft, draft, target=target, engines="vllm==0.10.2")
    assert [e.label for e in comparison.engines] == ["vllm==0.10.2"]
    assert draftfit.convert(draft, "vllm", dry_run=True, engines="vllm==0.10.2").plan
    for call in (
        lambda: draftfit.check(draft, engines="vlm"),
        lambda: draftfit.convert(draft, "vllm", dry_run=True, engines="vlm"),
    ):
        with pytest.raises(UsageError, match="unknown engine 'vlm'"):
            call()

    # values=True is `--values` alone (sampled); a launch may be given as its words.
    def codes(report: Report) -> list[str]:
        return sorted(f.code for f in report.findings)

    sampled = codes(draftfit.check(draft, target=target, engines="vllm", values=True))
    assert sampled == codes(draftfit.check(draft, target=target, engines="vllm", values="sampled"))
    assert any(code.startswith("DF7") for code in sampled)  # the value rules ran
    assert codes(draftfit.check(draft, target=target, engines="vllm", values=False)) == codes(
        draftfit.check(draft, target=target, engines="vllm")
    )
    words = ["vllm", "serve", str(target), "--speculative-config", '{"model": "x y"}']
    launch = draftfit.check(draft, target=target, engines="vllm", serve_args=words)
    line = draftfit.check(draft, target=target, engines="vllm", serve_args=shlex.join(words))
    assert launch.to_dict()["serve"] == line.to_dict()["serve"] is not None
    config = tmp_path / "serve.json"
    config.write_text(json.dumps({"tensor_parallel_size": 2}))
    from_path = draftfit.check(draft, target=target, engines="vllm", serve_config=config)
    assert from_path.to_dict()["serve"] is not None
