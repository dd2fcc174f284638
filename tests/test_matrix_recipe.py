"""`draftfit matrix` ranges and the serve recipes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from draftfit.checkpoint import load_checkpoint
from draftfit.cli.main import main
from draftfit.commands.release_matrix import build_matrix
from draftfit.draft.target import load_target
from draftfit.engines.registry import ENGINES, VLLM, load_engine
from tests import factory as f


def _matrix(tmp_path: Path, draft: f.Draft):
    path = draft.write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    return build_matrix(load_checkpoint(path), load_target(target), engines=(VLLM,))


def test_ranges_cover_every_version_once_in_order(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    versions = [v for row in matrix.rows for v in row.versions]
    assert versions == list(load_engine("vllm").versions)


def test_nested_ids_ranges_follow_the_runners(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    rows = {r.range: r for r in matrix.rows}
    for early in ("0.8.0", "0.8.4"):  # no EAGLE-3 before 0.8.5
        assert next(r for r in matrix.rows if early in r.versions).verdict == "incompatible"
    assert rows["0.29.0–0.34.0"].verdict == "drafts-garbage"  # other layers than trained
    assert [x.code for x in rows["0.29.0–0.34.0"].deciding] == ["DF301"]
    # 0.22 runs a Llama target with the V1 runner, which reads the nested ids unshifted;
    # from 0.23 the V2 runner serves a dense Llama target and does not read them.
    assert "one too early" in rows["0.22.0"].deciding[0].message
    assert "does not read" in rows["0.23.0–0.28.0"].deciding[0].message


def test_recipes(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    newest = matrix.rows[-1]
    assert newest.recipe is not None
    assert newest.recipe.steps and newest.recipe.steps[0].startswith("draftfit convert")
    assert '"method": "eagle3"' in newest.recipe.command
    assert newest.recipe.config["model"].endswith("-vllm")
    # 0.11.0 reads no aux ids: no launch makes it capture the trained layers, so no recipe,
    # and the line that says so names what remains.
    old = next(r for r in matrix.rows if "0.11.0" in r.versions)
    assert old.recipe is None and old.no_recipe is not None
    assert old.no_recipe.remaining == ["DF301"]
    assert old.no_recipe.reason.startswith("DF301 aux-layers-differ-from-trained remains; fix:")
    # A range gets a recipe only when its steps and settings leave no error; every other
    # range says why it has none.
    for row in matrix.rows:
        assert (row.recipe is None) != (row.no_recipe is None), row.range
        if row.recipe is not None:
            assert row.recipe.resolves_errors
    assert next(r for r in matrix.rows if "0.8.4" in r.versions).recipe is None
    # Converting fixes the class name for 0.10.0, but the ids it writes are not read there.
    arch = next(r for r in matrix.rows if "0.10.0" in r.versions)
    assert arch.verdict == "incompatible" and arch.no_recipe is not None
    assert "DF301 aux-layers-differ-from-trained remains after `draftfit convert`" in (
        arch.no_recipe.reason
    )


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
        and "| vLLM | 0.29.0–0.34.0 | drafts-garbage |" in out
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
    assert "How to serve with vLLM 0.34.0" in capsys.readouterr().out


def _all_engines(tmp_path: Path, draft: f.Draft, **target_kw):
    path = draft.write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t", **target_kw)
    return build_matrix(load_checkpoint(path), load_target(target))


def _row(matrix, engine: str, version: str):
    return next(r for r in matrix.rows if r.engine == engine and version in r.versions)


def test_matrix_covers_every_engine_and_version(tmp_path: Path) -> None:
    matrix = _all_engines(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    for engine in ENGINES:
        versions = [v for r in matrix.rows if r.engine == engine.name for v in r.versions]
        assert versions == list(load_engine(engine.name).versions)


def test_sglang_and_trtllm_ranges_and_recipes(tmp_path: Path) -> None:
    matrix = _all_engines(tmp_path, f.specforge(nested_aux=[1, 3, 6]))
    # SGLang: no EAGLE3 before 0.4.4.post2; ids not read before 0.4.9; CUDA graphs reset the
    # ids until 0.5.10.post1; correct from 0.5.11.
    assert _row(matrix, "sglang", "0.4.4.post1").verdict == "incompatible"
    early = _row(matrix, "sglang", "0.4.8.post1")
    assert early.first == "0.4.4.post2" and "DF301" in [f.code for f in early.deciding]
    graphs = _row(matrix, "sglang", "0.5.6")
    assert (graphs.first, graphs.last) == ("0.4.9", "0.5.10.post1")
    assert [f.code for f in graphs.deciding] == ["DF309"]
    assert graphs.recipe is not None and "--disable-cuda-graph" in graphs.recipe.command
    assert "--disable-flashinfer-autotune" not in graphs.recipe.command
    assert graphs.recipe.remaining == []
    fixed = _row(matrix, "sglang", "0.5.23")
    assert fixed.first == "0.5.11" and fixed.verdict == "compatible"
    assert fixed.recipe is not None
    assert "--speculative-algorithm EAGLE3" in fixed.recipe.command
    assert f"--speculative-draft-model-path {tmp_path / 'd'}" in fixed.recipe.command
    # TensorRT-LLM never reads the ids: drafts garbage wherever it loads; from 1.1 the recipe
    # passes the trained layers in its output-of counting (nested SpecForge ids are already
    # output-of). Before 0.21 the two-model lookup keeps the Eagle3 suffix: unknown class.
    for row in (r for r in matrix.rows if r.engine == "trtllm"):
        if row.versions[-1] in ("0.19.0", "0.20.0"):
            assert row.verdict == "incompatible"
            assert [f.code for f in row.deciding] == ["DF101"]
        else:
            assert row.verdict == "drafts-garbage"
    new = _row(matrix, "trtllm", "1.4.0rc0")
    assert new.recipe is not None
    spec_config = new.recipe.config["speculative_config"]
    assert spec_config["eagle3_layers_to_capture"] == [1, 3, 6]
    assert spec_config["speculative_model"] == str(tmp_path / "d")
    assert "eagle3_layers_to_capture: [1, 3, 6]" in new.recipe.command
    assert new.recipe.remaining == []
    # Before 1.1 no setting names the layers to capture: no recipe.
    old = _row(matrix, "trtllm", "1.0.0")
    assert old.recipe is None and old.no_recipe is not None
    assert old.no_recipe.remaining == ["DF301"]


def test_trtllm_recipe_shifts_capture_before_ids(tmp_path: Path) -> None:
    """speculators' top-level ids are capture-before: TensorRT-LLM gets them minus one."""
    matrix = _all_engines(tmp_path, f.speculators(aux=[3, 5, 7], norm_before_residual=False))
    row = _row(matrix, "trtllm", "1.4.0rc0")
    assert row.verdict == "incompatible"  # speculators format is not read
    assert row.recipe is not None and row.recipe.steps[0].startswith("draftfit convert")
    assert "--to sglang" in row.recipe.steps[0]
    assert row.recipe.config["speculative_config"]["eagle3_layers_to_capture"] == [2, 4, 6]


def test_sglang_recipe_converts_speculators_drafts(tmp_path: Path) -> None:
    matrix = _all_engines(tmp_path, f.speculators(aux=[2, 4, 5], norm_before_residual=False))
    row = _row(matrix, "sglang", "0.5.23")
    assert row.verdict == "incompatible" and [f.code for f in row.deciding] == ["DF105"]
    assert row.recipe is not None and row.recipe.resolves_errors
    assert row.recipe.steps == [
        f"draftfit convert {tmp_path / 'd'} --to sglang -o {tmp_path / 'd'}-sglang "
        f"--engine sglang==0.5.23 --target {tmp_path / 't'} --anyway"
    ]
    assert "then finds the converted draft compatible" in row.recipe.notes[0]


def test_sglang_context_boundaries_and_recipes(tmp_path: Path) -> None:
    """A 2048-position draft next to an 8192-position target: SGLang raised the context
    silently before 0.5.1 (the draft's rotary cache stays short), refuses it from 0.5.1
    unless an environment variable is set, and enlarges the rotary cache with it from 0.5.3."""
    matrix = _all_engines(tmp_path, f.specforge(), max_position_embeddings=8192)
    silent = _row(matrix, "sglang", "0.4.10.post2")
    assert silent.verdict == "degraded" and [x.code for x in silent.deciding] == ["DF504"]
    assert silent.recipe is not None and "--context-length 2048" in silent.recipe.command
    refused = _row(matrix, "sglang", "0.5.2")
    assert (refused.first, refused.last) == ("0.5.1", "0.5.2")
    assert refused.verdict == "incompatible" and [x.code for x in refused.deciding] == ["DF506"]
    assert refused.recipe is not None and "--context-length 2048" in refused.recipe.command
    raised = _row(matrix, "sglang", "0.5.23")
    assert raised.first == "0.5.3" and raised.verdict == "incompatible"
    assert raised.recipe is not None
    assert raised.recipe.command.startswith("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python")
    assert raised.recipe.resolves_errors and raised.recipe.remaining == []


def test_sglang_sticky_capture_flags_fail_loudly(tmp_path: Path) -> None:
    """Qwen3-MoE targets (0.5.4.post2+) flag capture layers and never clear them: before
    0.5.11 the CUDA-graph runner's default layers stay flagged next to the draft's, so eager
    passes capture too many states. The recipe turns CUDA graphs (and, 0.5.7-0.5.10.post1,
    FlashInfer autotune) off."""
    matrix = _all_engines(
        tmp_path, f.specforge(nested_aux=[1, 3, 6]), architectures=["Qwen3MoeForCausalLM"]
    )
    row = _row(matrix, "sglang", "0.5.8")
    assert row.verdict == "incompatible"
    assert "DF305" in {x.code for x in row.deciding}
    assert row.recipe is not None and row.recipe.resolves_errors
    assert "--disable-cuda-graph" in row.recipe.command
    assert "--disable-flashinfer-autotune" in row.recipe.command
    assert _row(matrix, "sglang", "0.5.23").verdict == "compatible"


def test_sglang_recipe_passes_the_draft_window_where_the_flag_exists(tmp_path: Path) -> None:
    matrix = _all_engines(tmp_path, f.with_sliding_window(f.specforge(), window=1024))
    with_flag = _row(matrix, "sglang", "0.5.23")
    assert with_flag.recipe is not None
    assert "--speculative-draft-window-size 1024" in with_flag.recipe.command
    assert "DF130" not in with_flag.recipe.remaining
    without = _row(matrix, "sglang", "0.5.10")
    assert without.recipe is not None
    assert "--speculative-draft-window-size" not in without.recipe.command
    assert "DF130" in without.recipe.remaining
    trtllm = _row(matrix, "trtllm", "1.2.0")
    assert trtllm.recipe is not None and "DF130" in trtllm.recipe.remaining


def test_every_version_without_a_recipe_says_why_in_each_format(tmp_path: Path, capsys) -> None:
    """One line per version (check) or range (matrix) without a recipe, in text, markdown and
    JSON alike, naming the error that remains."""
    path = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    check = ["check", str(path), "--target", str(target), "--recipe", "--engine", "all"]
    check += ["--engine", "vllm==0.11.0"]
    assert main([*check, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    (missing,) = [r for r in data["no_recipes"] if r["version"] == "0.11.0"]
    assert missing["remaining"] == ["DF301"] and not missing["resolves_errors"]
    assert {(r["engine"], r["version"]) for r in data["recipes"] + data["no_recipes"]} == {
        (e["engine"], e["version"]) for e in data["engines"]
    }
    main(check)
    text = capsys.readouterr().out
    assert f"No recipe for vLLM 0.11.0: {missing['reason']}\n" in text
    assert text.count("No recipe for ") == len(data["no_recipes"])
    assert text.count("How to serve with ") == len(data["recipes"])
    matrix = build_matrix(load_checkpoint(path), load_target(target))
    assert main(["matrix", str(path), "--target", str(target), "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert main(["matrix", str(path), "--target", str(target)]) == 0
    plain = capsys.readouterr().out
    for row in matrix.rows:
        if row.no_recipe is None:
            continue
        head = f"{row.title} {row.range}"
        assert f"* {head}: no recipe: " in markdown
        assert f"No recipe for {head}: {row.no_recipe.reason}" in plain


def test_what_the_releases_share_changes_no_recipe(tmp_path: Path) -> None:
    """A matrix finds once what depends on no release (the draft's own checks, the planned
    outputs, the recipes' launches) and shares it between releases and engines; each
    release's recipe is what a check of that release alone gives it."""
    from draftfit.checker import check_checkpoint
    from draftfit.commands.recipe import serving_for

    draft, target, _ = f.kimi_sibling_pair(tmp_path)
    shared: dict[str, Any] = {}
    together = {
        result.key: serving_for(report, result).to_dict()
        for engine in ENGINES
        for report in [
            check_checkpoint(
                load_checkpoint(draft),
                load_target(target),
                [engine.resolve(v) for v in engine.versions],
                shared=shared,
            )
        ]
        for result in report.engines
    }
    assert {"checkpoint rules", "target facts", "previews", "settings"} <= set(shared)
    # A planned output checked with the store is checked as it is, not as the draft it was
    # planned from.
    newest = [ENGINES[0].resolve(ENGINES[0].versions[-1])]
    for _, _, preview in shared["previews"]:
        kept = check_checkpoint(preview, load_target(target), newest, shared=shared)
        fresh = check_checkpoint(preview, load_target(target), newest)
        assert [x.to_dict() for x in kept.findings] == [x.to_dict() for x in fresh.findings]
    for engine in ENGINES:
        for version in engine.versions[::7]:
            alone = check_checkpoint(
                load_checkpoint(draft), load_target(target), [engine.resolve(version)]
            )
            result = alone.engines[0]
            assert serving_for(alone, result).to_dict() == together[result.key], result.key
