"""MTP families beyond the first ones: Qwen3.5 / 3.6 (a multimodal MoE: the language model's
keys in `text_config`, its decoder layers under `model.language_model.`, the MTP block
`mtp.*`), the MTP block's own `mtp.fc`, which vLLM builds with the target's quantization, and
GLM-4.7-Flash. Verdicts as the engines' own code gave them on the same tiny targets
(dev/mtp_corpus.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.checkpoint.scoped import load_scoped
from draftfit.draft.mtp import select_mtp_names
from draftfit.engines.launch import settings_from
from draftfit.mtp_check import mtp_target
from draftfit.report import Verdict
from draftfit.rule_ids import MTP_FAMILY_UNSERVED, MTP_QUANT_UNCOVERED, MTP_TENSOR_MISSING
from tests.mtp_factory import mtp_target as write_target

VLLM = 'vllm serve T --speculative-config \'{{"method": "mtp", "num_speculative_tokens": {k}}}\''
SGLANG = (
    "python -m sglang.launch_server --model-path T --speculative-algorithm NEXTN "
    "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2"
)


def verdict(path: Path, engine: str, k: int = 1) -> tuple[Verdict, set[str]]:
    line = SGLANG if engine.startswith("sglang") else VLLM.format(k=k)
    report = check_path(path, engines=[engine], serve=settings_from(serve_args=line))
    (result,) = report.engines
    return result.verdict, {f.rule.code for f in report.findings}


def test_the_facts_come_from_the_text_config_and_the_language_model(tmp_path: Path) -> None:
    path = write_target(tmp_path / "q", "qwen3_5", depth=2, ship=2)
    config = json.loads((path / "config.json").read_text())
    assert "num_hidden_layers" not in config and config["text_config"]["num_hidden_layers"] == 2
    scoped = load_scoped(path, select_mtp_names)
    target = mtp_target(scoped.checkpoint, scoped.names())
    assert target.family is not None and target.family.name == "qwen3_5"
    assert (target.num_hidden_layers, target.depth, target.depth_key) == (
        2,
        2,
        "mtp_num_hidden_layers",
    )
    assert target.shipped() == (0, 1)
    # the decoder layer an MTP layer holds, from the language model's last layer
    assert "self_attn.o_proj" in target.backbone_modules
    assert {"fc", "pre_fc_norm_hidden", "self_attn.q_proj"} <= target.layers[0].modules()


@pytest.mark.parametrize(
    ("variant", "vllm", "sglang"),
    [
        ({}, Verdict.COMPATIBLE, Verdict.COMPATIBLE),
        ({"depth": None}, Verdict.COMPATIBLE, Verdict.COMPATIBLE),
        ({"depth": 2, "ship": 2}, Verdict.COMPATIBLE, Verdict.COMPATIBLE),
        ({"drop": ("fc.weight",)}, Verdict.DRAFTS_GARBAGE, Verdict.DRAFTS_GARBAGE),
        ({"drop": ("o_proj.weight",)}, Verdict.DRAFTS_GARBAGE, Verdict.DRAFTS_GARBAGE),
        ({"drop": ("pre_fc_norm_hidden.weight",)}, Verdict.INCOMPATIBLE, Verdict.DRAFTS_GARBAGE),
        ({"ship": 0}, Verdict.INCOMPATIBLE, Verdict.DRAFTS_GARBAGE),
        # SGLang never reads `mtp_num_hidden_layers`: its one NextN layer, 0 declared or not
        ({"depth": 0}, Verdict.INCOMPATIBLE, Verdict.COMPATIBLE),
    ],
)
def test_verdicts_as_the_engines_gave_them(
    tmp_path: Path, variant: dict[str, object], vllm: Verdict, sglang: Verdict
) -> None:
    path = write_target(tmp_path / "q", "qwen3_5", **variant)  # type: ignore[arg-type]
    assert verdict(path, "vllm==0.34.0")[0] is vllm
    assert verdict(path, "sglang==0.5.23")[0] is sglang


def test_a_missing_decoder_tensor_is_named(tmp_path: Path) -> None:
    path = write_target(tmp_path / "q", "qwen3_5", drop=("o_proj.weight",))
    report = check_path(
        path, engines=["vllm==0.34.0"], serve=settings_from(serve_args=VLLM.format(k=1))
    )
    (finding,) = [f for f in report.findings if f.rule == MTP_TENSOR_MISSING]
    assert "`mtp.layers.0.self_attn.o_proj.weight`" in finding.message


def test_served_from_the_release_that_rewrites_it(tmp_path: Path) -> None:
    path = write_target(tmp_path / "q", "qwen3_5")
    state, codes = verdict(path, "vllm==0.16.0")
    assert state is Verdict.INCOMPATIBLE and MTP_FAMILY_UNSERVED.code in codes
    # served from 0.17.0 (read at each release): one MTP layer is judged as at 0.34.0
    assert verdict(path, "vllm==0.20.0")[0] is Verdict.COMPATIBLE
    missing_fc = write_target(tmp_path / "fc", "qwen3_5", drop=("fc.weight",))
    assert verdict(missing_fc, "vllm==0.25.0")[0] is Verdict.DRAFTS_GARBAGE
    # two: before 0.34.0 every draft step runs the first layer (and up to 0.29.0 the depth
    # in `text_config` is not read): not judged
    two = write_target(tmp_path / "two", "qwen3_5", depth=2, ship=2)
    assert verdict(two, "vllm==0.25.0", k=2)[0] is Verdict.UNVERIFIED
    assert verdict(two, "vllm==0.34.0", k=2)[0] is Verdict.COMPATIBLE
    # SGLang: the multimodal forms from 0.5.9, the text-only ones from 0.5.17
    assert verdict(path, "sglang==0.5.8")[0] is Verdict.INCOMPATIBLE
    assert verdict(path, "sglang==0.5.16")[0] is Verdict.COMPATIBLE
    config = json.loads((path / "config.json").read_text())
    config["architectures"] = ["Qwen3_5MoeForCausalLM"]
    (path / "config.json").write_text(json.dumps(config))
    state, codes = verdict(path, "sglang==0.5.16")
    assert state is Verdict.INCOMPATIBLE and MTP_FAMILY_UNSERVED.code in codes
    assert verdict(path, "sglang==0.5.17")[0] is Verdict.COMPATIBLE


@pytest.mark.parametrize("family", ["qwen3_5", "qwen3_next"])
@pytest.mark.parametrize(
    "variant",
    [
        {"exclude": "checkpoint"},  # the decoder layer excluded, `mtp.fc` not
        {"mtp_quantized": True},  # the decoder layer stored FP8, `mtp.fc` BF16
    ],
)
def test_vllm_builds_mtp_fc_with_the_targets_quantization(
    tmp_path: Path, family: str, variant: dict[str, object]
) -> None:
    """A BF16 `mtp.fc` left out of `modules_to_not_convert` is cast into a float8 parameter
    by vLLM (run: drafts garbage); SGLang builds it as a plain linear layer."""
    depth = None if family == "qwen3_next" else 1
    path = write_target(tmp_path / "q", family, depth=depth, quant="fp8", **variant)  # type: ignore[arg-type]
    report = check_path(
        path, engines=["vllm==0.34.0"], serve=settings_from(serve_args=VLLM.format(k=1))
    )
    (result,) = report.engines
    assert result.verdict is Verdict.DRAFTS_GARBAGE
    (finding,) = [f for f in report.findings if f.rule == MTP_QUANT_UNCOVERED]
    assert "`mtp.fc`" in finding.message
    # listing it too leaves nothing uncovered
    config = json.loads((path / "config.json").read_text())
    listed = config["quantization_config"].setdefault("modules_to_not_convert", [])
    if "mtp_quantized" not in variant:
        listed.append("mtp.fc")
        (path / "config.json").write_text(json.dumps(config))
        again = check_path(
            path, engines=["vllm==0.34.0"], serve=settings_from(serve_args=VLLM.format(k=1))
        )
        assert again.engines[0].verdict is Verdict.COMPATIBLE


def test_convert_lists_mtp_fc_for_vllm_and_the_output_checks_clean(tmp_path: Path) -> None:
    """The exclusion list convert writes for vLLM names `mtp.fc` beside the decoder layer's
    projections (the output ran clean through vLLM 0.34.0's own loader on a CPU)."""
    from draftfit.conversion.mtp_convert import convert_mtp_path

    path = write_target(tmp_path / "q", "qwen3_5", quant="fp8")
    out = tmp_path / "out"
    convert_mtp_path(path, out, engines=["vllm==0.34.0"])
    listed = json.loads((out / "config.json").read_text())["quantization_config"]
    assert "mtp.fc" in listed["modules_to_not_convert"]
    assert "mtp.layers.0.self_attn.o_proj" in listed["modules_to_not_convert"]
    again = check_path(
        out, engines=["vllm==0.34.0"], serve=settings_from(serve_args=VLLM.format(k=1))
    )
    assert again.engines[0].verdict is Verdict.COMPATIBLE


@pytest.mark.parametrize(
    ("variant", "vllm", "sglang"),
    [
        ({}, Verdict.COMPATIBLE, Verdict.COMPATIBLE),
        ({"ship": 0}, Verdict.INCOMPATIBLE, Verdict.DRAFTS_GARBAGE),
        ({"drop": ("eh_proj.weight",)}, Verdict.INCOMPATIBLE, Verdict.DRAFTS_GARBAGE),
    ],
)
def test_glm_4_7_flash_is_served_as_its_deepseek_style_layer_gives(
    tmp_path: Path, variant: dict[str, object], vllm: Verdict, sglang: Verdict
) -> None:
    """GLM-4.7-Flash (`Glm4MoeLiteForCausalLM`) ships a DeepSeek-V3-style MTP layer at
    `model.layers.{L}` (run on both releases: the verdicts are theirs)."""
    path = write_target(tmp_path / "g", "glm4_moe_lite", **variant)  # type: ignore[arg-type]
    assert verdict(path, "vllm==0.34.0")[0] is vllm
    assert verdict(path, "sglang==0.5.23")[0] is sglang
    # served from 0.16.0 on vLLM (its other facts read at 0.34.0 only)
    assert verdict(path, "vllm==0.14.0")[0] is Verdict.INCOMPATIBLE


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        ({}, Verdict.DRAFTS_GARBAGE),  # a BF16 MTP block built FP8
        ({"exclude": "checkpoint"}, Verdict.COMPATIBLE),  # listed under its own names
        ({"mtp_quantized": True}, Verdict.COMPATIBLE),  # stored FP8 like the backbone
        ({"mtp_quantized": True, "exclude": "checkpoint"}, Verdict.DRAFTS_GARBAGE),  # DF541
    ],
)
def test_sglang_matches_a_qwen3_5_mtp_block_by_its_checkpoint_names(
    tmp_path: Path, variant: dict[str, object], expected: Verdict
) -> None:
    """SGLang builds Qwen3.5's MTP block under `mtp`: its exclusion entries match the
    checkpoint's names (not DeepSeek's `model.decoder.*`); run on 0.5.23 on a CPU."""
    path = write_target(tmp_path / "q", "qwen3_5", quant="fp8", **variant)  # type: ignore[arg-type]
    assert verdict(path, "sglang==0.5.23")[0] is expected


@pytest.mark.parametrize("engine", ["vllm==0.34.0", "sglang==0.5.23"])
def test_a_target_config_with_its_own_code_needs_the_flag(tmp_path: Path, engine: str) -> None:
    """A target whose config names code of its own for `AutoConfig` with a model type the
    release has no class for (MiMo-7B's `mimo`): an MTP launch without `--trust-remote-code`
    is refused (run on both, DF560); with it, the MTP checks go on."""
    path = write_target(tmp_path / "t", "deepseek_v3")
    config = json.loads((path / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "configuration_custom.CustomV3Config"}
    config["model_type"] = "custom_v3"  # the architecture still selects DeepSeek-V3's family
    (path / "config.json").write_text(json.dumps(config))
    state, codes = verdict(path, engine)
    assert state is Verdict.INCOMPATIBLE and "DF560" in codes
    line = (SGLANG if engine.startswith("sglang") else VLLM.format(k=1)).replace(
        " --speculative", " --trust-remote-code --speculative", 1
    )
    report = check_path(path, engines=[engine], serve=settings_from(serve_args=line))
    assert "DF560" not in {f.rule.code for f in report.findings}


def test_the_recipe_of_such_a_target_passes_the_flag(tmp_path: Path) -> None:
    """The recipe adds `--trust-remote-code` where the release needs it (the launch it
    prints then loads: run on SGLang 0.5.23), and says why."""
    from draftfit.commands.mtp_recipe import mtp_serving_for
    from draftfit.commands.recipe import Recipe

    path = write_target(tmp_path / "t", "deepseek_v3")
    config = json.loads((path / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "configuration_custom.CustomV3Config"}
    config["model_type"] = "custom_v3"
    (path / "config.json").write_text(json.dumps(config))
    report = check_path(path, method="mtp", engines=["sglang==0.5.23"])
    recipe = mtp_serving_for(report, report.engines[0])
    assert isinstance(recipe, Recipe)
    assert "--trust-remote-code" in recipe.command
    assert any(note.startswith("--trust-remote-code:") for note in recipe.notes)
