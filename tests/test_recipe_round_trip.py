"""Every printed recipe serves what it promises, run as a user runs it.

For every rule case (at each engine release it names, and `--engine all` on a sample), the
demo and a few matrices: `draftfit check --recipe --format json` through the command line,
then for each recipe its `draftfit convert` steps through the command line (each must exit
0) and `draftfit check` of the draft it serves with the recipe's own launch as
`--serve-args`, continuations and all (:mod:`tests.recipe_round_trip`). That check must
find no error and no warning the recipe does not list, and `remaining` must be exactly what
it finds. Every version without a recipe must say why, naming what remains.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.commands.demo import DEMO_ENGINES, build_demo
from draftfit.engines.interface import Recipe
from tests.cases import CASES, Case
from tests.recipe_round_trip import round_trip, run_cli

# The quick run's cases: aux ids put in order by convert (each engine), conversions for
# SGLang and TensorRT-LLM, launch settings the recipe adds (context length, CUDA graphs,
# window), a method the recipe sets, a quantized draft, a given launch it edits, and
# versions that get no recipe.
QUICK = (
    "aux-ids-not-ascending",
    "aux-ids-not-ascending-sglang",
    "aux-ids-not-ascending-trtllm",
    "aux-copied-without-shift",
    "sglang-speculators-format",
    "sglang-draft-context-refused",
    "sliding-window-sglang",
    "eagle3-served-as-eagle",
    "fp8-speculators-draft",
    "serve-vllm-draft-tp-two",
    "norm-missing",
    "aux-ignored-before-0.11.1",
)
# Cases also checked against every engine's newest release.
ALL_ENGINES_EVERY = 9


def _check(case: Case | None, engines: list[str], draft: str, target: str | None) -> dict:
    """`draftfit check --recipe --format json` of `draft` as the case gives it."""
    argv = ["check", draft, "--recipe", "--format", "json", "--isolated"]
    for engine in engines:
        argv += ["--engine", engine]
    if target is not None:
        argv += ["--target", target]
    if case is not None and case.method is not None:
        argv += ["--method", case.method]
    if case is not None and case.serve_args is not None:
        argv += ["--serve-args", case.serve_args]
    code, out, err = run_cli(argv)
    assert code in (0, 1), err
    return json.loads(out)


def _problems(report: dict, draft: str, target: str | None) -> list[str]:
    """What is wrong with the recipes of `report` (empty: every recipe round-trips and every
    version without one says why)."""
    problems = []
    versions = [(e["engine"], e["version"]) for e in report["engines"]]
    given = [(r["engine"], r["version"]) for r in report["recipes"] + report["no_recipes"]]
    if sorted(given) != sorted(versions):
        problems.append(f"versions {versions}, recipes or reasons for {given}")
    for missing in report["no_recipes"]:
        named = not missing["remaining"] or any(
            code in missing["reason"] for code in missing["remaining"]
        )
        if not missing["reason"] or not named or missing["resolves_errors"]:
            problems.append(f"no recipe for {missing['version']} and no reason: {missing}")
    for shown in report["recipes"]:
        result = round_trip(Recipe(**shown), draft, target)
        problems += [f"{shown['engine']}=={shown['version']}: {p}" for p in result.problems]
    return problems


def _round_trips(case: Case, engines: list[str], tmp_path: Path, monkeypatch) -> list[str]:
    """Build `case` in `tmp_path` and round-trip its recipes at `engines`, in that folder
    (paths relative, as a user types them)."""
    monkeypatch.chdir(tmp_path)
    draft, target = case.build(Path("."))
    names = (str(draft), str(target) if target is not None else None)
    return _problems(_check(case, engines, *names), *names)


@pytest.mark.parametrize("case", [c for c in CASES if c.id in QUICK], ids=lambda c: c.id)
def test_recipes_of_a_sample_of_cases_round_trip(case: Case, tmp_path: Path, monkeypatch) -> None:
    assert not _round_trips(case, list(case.engines), tmp_path, monkeypatch)


def test_the_quick_sample_is_there() -> None:
    assert {c.id for c in CASES} >= set(QUICK)


@pytest.mark.slow
def test_recipes_of_every_case_round_trip(tmp_path: Path, monkeypatch) -> None:
    """Every rule case at the releases it names, and every ninth against every engine."""
    problems: list[str] = []
    for index, case in enumerate(CASES):
        runs = [list(case.engines)] + ([["all"]] if index % ALL_ENGINES_EVERY == 0 else [])
        for n, engines in enumerate(runs):
            folder = tmp_path / f"{index}-{n}"
            folder.mkdir()
            problems += [
                f"{case.id} {engines}: {p}"
                for p in _round_trips(case, engines, folder, monkeypatch)
            ]
    assert not problems, "\n".join(problems)


def test_the_demos_recipes_round_trip(tmp_path: Path, monkeypatch) -> None:
    """The demo's full-size sparse Kimi-K2 draft: its releases and every engine's newest."""
    monkeypatch.chdir(tmp_path)
    paths = build_demo(Path("."))
    draft, target = str(paths.draft), str(paths.target)
    for engines in (list(DEMO_ENGINES), ["all"]):
        report = _check(None, engines, draft, target)
        assert not _problems(report, draft, target)
    assert report["recipes"] and report["no_recipes"]


MATRIX_CASES = ("aux-ids-not-ascending", "sglang-speculators-format", "aux-copied-without-shift")


@pytest.mark.slow
@pytest.mark.parametrize("case_id", MATRIX_CASES)
def test_matrix_recipes_round_trip(case_id: str, tmp_path: Path, monkeypatch) -> None:
    """Each `matrix` range's recipe round-trips at the range's newest release (the one it
    was made for); each range without one says why."""
    case = next(c for c in CASES if c.id == case_id)
    monkeypatch.chdir(tmp_path)
    draft, target = case.build(Path("."))
    names = (str(draft), str(target) if target is not None else None)
    argv = ["matrix", names[0], "--format", "json", "--isolated"]
    argv += ["--target", names[1]] if names[1] else []
    code, out, err = run_cli(argv)
    assert code in (0, 1), err
    problems = []
    for row in json.loads(out)["rows"]:
        recipe, missing = row["recipe"], row["no_recipe"]
        if (recipe is None) == (missing is None):
            problems.append(f"{row['engine']} {row['range']}: recipe {recipe}, reason {missing}")
        elif recipe is not None:
            problems += round_trip(Recipe(**recipe), *names).problems
        elif not missing["reason"]:
            problems.append(f"{row['engine']} {row['range']}: no reason")
    assert not problems, "\n".join(problems)
