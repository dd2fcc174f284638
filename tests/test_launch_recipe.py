"""Serve recipes keep the user's launch, and `convert` says when it is not needed (that every
recipe reads back as it promises is `test_recipe_round_trip.py`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from draftfit.checker import check_path
from draftfit.cli.main import main
from draftfit.commands.recipe import attach_recipes
from draftfit.conversion import convert_path
from draftfit.engines.launch import settings_from
from tests import factory as f


def test_recipe_keeps_the_users_launch(tmp_path: Path) -> None:
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    launch = (
        "vllm serve moonshotai/Kimi-K2-Instruct --tensor-parallel-size 8 --trust-remote-code "
        f'--port 8001 --speculative-config \'{{"model": "{draft}", "num_speculative_tokens": 5}}\''
    )
    report = check_path(
        draft, target=target, engines=["vllm==0.34.0"], serve=settings_from(serve_args=launch)
    )
    attach_recipes(report)
    recipe = report.recipes[0]
    command = recipe.command
    assert command.startswith("vllm serve moonshotai/Kimi-K2-Instruct")
    for kept in ("--tensor-parallel-size 8", "--trust-remote-code", "--port 8001"):
        assert kept in command
    assert '"method": "eagle3"' in command and '"num_speculative_tokens": 5' in command
    assert recipe.notes[0].startswith("your launch, edited: ")
    assert "method" in recipe.notes[0]


def test_sglang_recipe_keeps_the_users_flags_and_adds_the_env(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t", max_position_embeddings=8192)
    launch = (
        "python -m sglang.launch_server --model-path org/target --tp 4 --port 30000 "
        f"--speculative-algorithm EAGLE3 --speculative-draft-model-path {draft} "
        "--speculative-num-steps 5"
    )
    report = check_path(
        draft, target=target, engines=["sglang==0.5.23"], serve=settings_from(serve_args=launch)
    )
    assert report.engines[0].verdict == "incompatible"  # DF506 without the variable
    attach_recipes(report)
    recipe = report.recipes[0]
    assert recipe.command.startswith(
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python -m sglang.launch_server"
    )
    for kept in ("--model-path org/target", "--tp 4", "--port 30000", "--speculative-num-steps 5"):
        assert kept in recipe.command
    assert recipe.remaining == [] and recipe.resolves_errors


def test_env_prefix_and_window_flag_are_read() -> None:
    settings = settings_from(
        serve_args="SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python -m sglang.launch_server "
        "--model-path m --speculative-draft-window-size 1024 --context-length 2048"
    )
    assert settings is not None and settings.ignored_flags == ()
    assert settings.allow_longer_context is True
    assert (settings.draft_window_size, settings.context_length) == (1024, 2048)
    vllm = settings_from(serve_args="VLLM_USE_V2_MODEL_RUNNER=0 vllm serve m")
    assert vllm is not None and vllm.use_v2_model_runner is False


def test_convert_says_when_not_needed(tmp_path: Path, capsys) -> None:
    draft = f.speculators(aux=[2, 4, 5]).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    out = tmp_path / "out"
    args = ["convert", str(draft), "--to", "vllm", "-o", str(out), "--target", str(target)]
    assert main(args) == 0
    captured = capsys.readouterr()
    # Said once, as the command's report on stdout; nothing on stderr.
    assert captured.out == (
        f"{draft} already loads as is in vLLM 0.34.0: no conversion needed (pass --anyway to "
        "write it all the same)\n"
    )
    assert captured.err == ""
    assert not out.exists()
    assert main([*args, "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "no conversion needed" in json.loads(captured.out)["not_needed"]
    assert captured.err == ""
    assert main([*args, "--anyway"]) == 0
    assert out.is_dir() and "written to" in capsys.readouterr().out


def test_convert_judges_its_output_for_the_given_launch(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t", max_position_embeddings=8192)
    out = tmp_path / "o"
    plain = convert_path(draft, "sglang", out, target=target, engines=["sglang==0.5.23"])
    assert plain.exit_code() == 1  # DF506 under a default launch
    launch = (
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 python -m sglang.launch_server "
        f"--model-path {target} --speculative-algorithm EAGLE3 "
        f"--speculative-draft-model-path {out}"
    )
    judged = convert_path(
        draft,
        "sglang",
        out,
        target=target,
        engines=["sglang==0.5.23"],
        force=True,
        serve=settings_from(serve_args=launch),
    )
    assert judged.exit_code() == 0
    assert os.path.isdir(out)


def test_the_recipe_is_the_same_once_its_convert_step_has_run(tmp_path: Path, monkeypatch) -> None:
    """The launch names the converted folder: once it exists, it is the draft the recipe
    checked (not another draft), so a second check gives the same recipe."""
    monkeypatch.chdir(tmp_path)
    draft = f.specforge(nested_aux=[1, 3, 6]).write(Path("d"))
    target = f.llama_target(Path("t"))

    def recipe():
        report = check_path(draft, target=target, engines=["vllm==0.34.0"])
        attach_recipes(report)
        (shown,) = report.recipes or []
        return shown

    first = recipe()
    assert first.steps and first.steps[0].startswith("draftfit convert d ")
    assert main(first.steps[0].split()[1:]) == 0
    assert Path("d-vllm").is_dir()
    assert recipe() == first
