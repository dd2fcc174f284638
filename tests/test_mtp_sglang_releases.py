"""The MTP facts of the SGLang releases between 0.5.1 and 0.5.23, read at each release:
checked on tiny real targets at releases on either side of each boundary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.commands.mtp_recipe import mtp_serving_for
from draftfit.engines.interface import Recipe
from draftfit.engines.launch import settings_from
from draftfit.report import Verdict
from draftfit.rule_ids import (
    MTP_DEPTH_TOKENS,
    MTP_FAMILY_UNSERVED,
    MTP_LAUNCH_KIND,
    MTP_TENSOR_MISSING,
    MTP_TENSOR_UNMAPPED,
    MTP_TOKEN_COUNT_MISSING,
)
from tests.mtp_factory import mtp_target as write_target

LAUNCH = "python -m sglang.launch_server --model-path T --speculative-algorithm {algorithm}"
STEPS = " --speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2"


def check(
    path: Path, version: str, algorithm: str = "NEXTN", extra: str = ""
) -> tuple[Verdict, dict[str, str]]:
    serve = settings_from(serve_args=LAUNCH.format(algorithm=algorithm) + extra)
    report = check_path(path, engines=[f"sglang=={version}"], serve=serve)
    (result,) = report.engines
    return result.verdict, {f.rule.code: f.message for f in report.findings}


@pytest.mark.parametrize("version", ["0.5.1", "0.5.12", "0.5.22"])
def test_deepseek_and_glm_targets_are_served_at_the_releases_read(
    tmp_path: Path, version: str
) -> None:
    for family in ("deepseek_v3", "glm4_moe"):
        path = write_target(tmp_path / family, family)
        assert check(path, version, extra=STEPS) == (Verdict.COMPATIBLE, {}), (family, version)


def test_releases_before_the_ones_read_stay_unverified(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t")
    assert check(path, "0.4.10.post2", extra=STEPS)[0] is Verdict.UNVERIFIED
    assert check(path, "0.5.1", extra=STEPS)[0] is Verdict.COMPATIBLE


def test_qwen3_next_is_served_from_0_5_2(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", "qwen3_next")
    draft = " --speculative-draft-model-path T" + STEPS
    state, findings = check(path, "0.5.1.post3", extra=draft)
    assert state is Verdict.INCOMPATIBLE and MTP_FAMILY_UNSERVED.code in findings
    assert check(path, "0.5.2", extra=draft) == (Verdict.COMPATIBLE, {})


def test_a_qwen3_next_depth_other_than_one_is_read_from_0_5_3(tmp_path: Path) -> None:
    """0.5.2's Qwen3-Next rewrite keeps the checkpoint's depth (not read further); from
    0.5.3 it sets the depth to one, whatever the checkpoint declares. Its one-layer NextN
    class then looks a second shipped layer's names up and stops (read, DF222)."""
    path = write_target(tmp_path / "t", "qwen3_next", depth=2, ship=1)
    draft = " --speculative-draft-model-path T" + STEPS
    assert check(path, "0.5.2", extra=draft)[0] is Verdict.UNVERIFIED
    assert check(path, "0.5.3", extra=draft) == (Verdict.COMPATIBLE, {})
    path = write_target(tmp_path / "two", "qwen3_next", depth=2, ship=2)
    state, findings = check(path, "0.5.3", extra=draft)
    assert state is Verdict.INCOMPATIBLE and MTP_TENSOR_UNMAPPED.code in findings


def test_deepseek_refuses_two_nextn_layers_at_every_release_read(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", depth=2, ship=2)
    for version in ("0.5.1", "0.5.8", "0.5.22"):
        state, findings = check(path, version, extra=STEPS)
        assert state is Verdict.INCOMPATIBLE and MTP_DEPTH_TOKENS.code in findings, version


def test_glm_5_is_served_from_0_5_9(tmp_path: Path) -> None:
    """GLM-5 (`glm_moe_dsa`) has DeepSeek's MLA layout; its NextN class is DeepSeek's."""
    path = write_target(tmp_path / "t")
    config = json.loads((path / "config.json").read_text())
    config.update(architectures=["GlmMoeDsaForCausalLM"], model_type="glm_moe_dsa")
    (path / "config.json").write_text(json.dumps(config))
    state, findings = check(path, "0.5.8.post1", extra=STEPS)
    assert state is Verdict.INCOMPATIBLE and MTP_FAMILY_UNSERVED.code in findings
    assert check(path, "0.5.9", extra=STEPS) == (Verdict.COMPATIBLE, {})


def test_glm_default_steps_follow_the_release(tmp_path: Path) -> None:
    """Without step flags a GLM target takes the fallback (5, 4, 8) until 0.5.6; from
    0.5.6.post1 GLM joins DeepSeek's (3, 1, 4)."""
    glm = write_target(tmp_path / "glm", "glm4_moe")
    deepseek = write_target(tmp_path / "ds")
    wanted = {"0.5.6": "5 steps, top-k 4 and 8", "0.5.6.post1": "3 steps, top-k 1 and 4"}
    for version, chosen in wanted.items():
        state, findings = check(glm, version)
        assert state is Verdict.COMPATIBLE, version
        assert chosen in findings[MTP_TOKEN_COUNT_MISSING.code], version
        state, findings = check(deepseek, version)
        assert "3 steps, top-k 1 and 4" in findings[MTP_TOKEN_COUNT_MISSING.code], version


def test_the_glm_recipe_writes_the_steps_of_its_release(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", "glm4_moe")
    commands = {}
    for version in ("0.5.6", "0.5.8"):
        report = check_path(path, engines=[f"sglang=={version}"], method="mtp")
        recipe = mtp_serving_for(report, report.engines[0])
        assert isinstance(recipe, Recipe), version
        commands[version] = " ".join(recipe.command.replace("\\\n", " ").split())
    assert "--speculative-num-steps 5 --speculative-eagle-topk 4" in commands["0.5.6"]
    assert "--speculative-num-draft-tokens 8" in commands["0.5.6"]
    assert "--speculative-num-steps 3 --speculative-eagle-topk 1" in commands["0.5.8"]


def test_eagle3_on_a_deepseek_target_is_refused_at_the_releases_read(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t")
    for version in ("0.5.1", "0.5.22"):
        state, findings = check(path, version, "EAGLE3", STEPS)
        assert state is Verdict.INCOMPATIBLE and MTP_LAUNCH_KIND.code in findings, version


def test_a_missing_glm_projection_drafts_garbage_and_its_head_is_not_needed(
    tmp_path: Path,
) -> None:
    no_head = write_target(
        tmp_path / "h", "glm4_moe", drop=("shared_head.head.weight", "embed_tokens.weight")
    )
    no_proj = write_target(tmp_path / "p", "glm4_moe", drop=("eh_proj.weight",))
    for version in ("0.5.1", "0.5.22"):
        assert check(no_head, version, extra=STEPS) == (Verdict.COMPATIBLE, {}), version
        state, findings = check(no_proj, version, extra=STEPS)
        assert state is Verdict.DRAFTS_GARBAGE and MTP_TENSOR_MISSING.code in findings, version


def test_a_quantized_target_stays_unverified_before_0_5_23(tmp_path: Path) -> None:
    """The exclusion handling of FP8 targets changed several times before 0.5.23 and was not
    read: a quantized target is unverified there, never compatible."""
    path = write_target(tmp_path / "t", quant="fp8")
    assert check(path, "0.5.22", extra=STEPS)[0] is Verdict.UNVERIFIED
    state, findings = check(path, "0.5.23", extra=STEPS)
    assert state is Verdict.INCOMPATIBLE and "DF540" in findings
