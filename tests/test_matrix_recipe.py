"""`draftfit matrix` ranges and the serve recipes."""

from __future__ import annotations

import json
from pathlib import Path

from draftfit.checkpoint import load_checkpoint
from draftfit.cli import main
from draftfit.matrix import build_matrix
from draftfit.target import load_target
from tests import factory as f


def _matrix(tmp_path: Path, draft: f.Draft):
    path = draft.write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    return build_matrix(load_checkpoint(path), load_target(target), engines=("vllm",))


def test_ranges_cover_every_version_once_in_order(tmp_path: Path) -> None:
    from draftfit.engines.profile import load_engine

    matrix = _matrix(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    versions = [v for row in matrix.rows for v in row.versions]
    assert versions == list(load_engine("vllm").versions)


def test_nested_ids_ranges_follow_the_runners(tmp_path: Path) -> None:
    rows = {r.range: r for r in _matrix(tmp_path, f.specforge(nested_aux=[1, 3, 6])).rows}
    assert rows["0.8.0–0.8.4"].verdict == "incompatible"  # no EAGLE-3 before 0.8.5
    assert rows["0.29.0–0.34.0"].verdict == "degraded"
    assert [x.code for x in rows["0.29.0–0.34.0"].deciding] == ["DF301"]
    # 0.22-0.23 run a Llama target with the V1 runner, which reads the nested ids unshifted.
    assert "one too early" in rows["0.22.0–0.23.0"].deciding[0].message


def test_recipes(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    newest = matrix.rows[-1]
    assert newest.recipe is not None
    assert newest.recipe.steps and newest.recipe.steps[0].startswith("draftfit convert")
    assert '"method": "eagle3"' in newest.recipe.command
    assert newest.recipe.config["model"].endswith("-vllm")
    old = next(r for r in matrix.rows if r.range == "0.10.2–0.11.0")
    assert old.recipe is not None and old.recipe.steps == []
    assert any("0.11.1" in note for note in old.recipe.notes)
    assert all(r.recipe is None for r in matrix.rows if r.verdict == "incompatible")


def test_clean_speculators_draft_is_one_compatible_range_with_its_token_count(
    tmp_path: Path,
) -> None:
    draft = f.speculators(aux=[2, 4, 5])
    draft.config["speculators_config"]["proposal_methods"][0]["speculative_tokens"] = 5
    rows = _matrix(tmp_path, draft).rows
    newest = rows[-1]
    assert newest.verdict == "compatible" and newest.last == "0.34.0"
    assert newest.recipe is not None and newest.recipe.config["num_speculative_tokens"] == 5
    assert newest.recipe.steps == []


def test_cli_matrix_formats(tmp_path: Path, capsys) -> None:
    path = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    assert main(["matrix", str(path), "--target", str(target), "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert (
        "| engine | versions | verdict | why |" in out
        and "| vLLM | 0.29.0–0.34.0 | degraded |" in out
    )
    assert main(["matrix", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rows"] and data["notes"]
    assert main(["matrix", str(path)]) == 0
    assert "how to serve" in capsys.readouterr().out


def test_check_recipe(tmp_path: Path, capsys) -> None:
    path = f.speculators(aux=[2, 4, 5]).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    assert main(["check", str(path), "--target", str(target), "--recipe", "--format", "json"]) == 0
    recipes = json.loads(capsys.readouterr().out)["recipes"]
    assert recipes[0]["command"].startswith(f"vllm serve {target}")
    assert main(["check", str(path), "--target", str(target), "--recipe"]) == 0
    assert "How to serve with vllm 0.34.0" in capsys.readouterr().out
