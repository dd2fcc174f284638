"""MTP layers stored under another name than the family's: another family's naming, one
decoder index too far, a block prefix of its own. Verdicts as the engines' own code gave them
on the same tiny targets (dev/mtp_corpus.py, run on a CPU: vLLM 0.34.0 refuses at its load
check; SGLang 0.5.23 loads the NextN layer unset, or stops on MiMo's own names)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.conversion.mtp_convert import convert_mtp_path
from draftfit.engines.launch import settings_from
from draftfit.report import Report, Verdict
from draftfit.rule_ids import MTP_LAYER_MISSING
from tests.mtp_factory import mtp_target

VLLM = (
    'vllm serve T{trust} --speculative-config \'{{"method": "mtp", "num_speculative_tokens": 1}}\''
)
SGLANG = (
    "python -m sglang.launch_server --model-path T{trust} --speculative-algorithm NEXTN "
    "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2"
)
G, R = Verdict.DRAFTS_GARBAGE, Verdict.INCOMPATIBLE
V34, SGL = "vllm==0.34.0", "sglang==0.5.23"


def _on_both(path: Path, family: str) -> Iterator[tuple[str, Report]]:
    """The check of `path` under each engine's one-token MTP launch, by engine."""
    trust = " --trust-remote-code" if family == "mimo" else ""
    for engine, line in ((V34, VLLM), (SGL, SGLANG)):
        serve = settings_from(serve_args=line.format(trust=trust))
        yield engine, check_path(path, engines=[engine], serve=serve)


@pytest.mark.parametrize(
    ("family", "rename", "vllm", "sglang"),
    [
        ("deepseek_v3", "model.layers.3.", R, G),  # L + 1: no MTP layer at L
        ("deepseek_v3", "model.mtp_layers.0.", R, G),  # MiMo's naming
        ("glm4_moe_lite", "model.mtp_block.", R, G),
        ("qwen3_5", "model.mtp.layers.0.", R, G),
        ("mimo", "mtp.layers.0.", R, R),  # SGLang looks MiMo's own names up: KeyError
    ],
)
def test_a_renamed_mtp_layer(
    tmp_path: Path, family: str, rename: str, vllm: Verdict, sglang: Verdict
) -> None:
    path = mtp_target(tmp_path / "t", family, rename=rename)
    for engine, report in _on_both(path, family):
        assert report.engines[0].verdict is (vllm if engine == V34 else sglang), engine
        assert MTP_LAYER_MISSING.code in {f.rule.code for f in report.findings}


@pytest.mark.parametrize(
    ("family", "moved", "sglang"),
    [
        # under `mtp.` but outside `mtp.layers.`: vLLM's MTP loader has no module `layer`;
        # SGLang's Qwen3-Next loader renames `mtp` in it, its Qwen3.5 one passes it over
        (
            "qwen3_next",
            ("mtp.layers.0.self_attn.q_proj.weight", "mtp.layer.0.self_attn.q_proj.weight"),
            R,
        ),
        (
            "qwen3_5",
            ("mtp.layers.0.self_attn.q_proj.weight", "mtp.layer.0.self_attn.q_proj.weight"),
            G,
        ),
        # outside `mtp.`: vLLM's loader for the target cannot place it
        ("qwen3_next", ("mtp.fc.weight", "model.mtp.fc.weight"), R),
        (
            "mimo",
            ("model.mtp_layers.0.token_layernorm.weight", "model.mtp.token_layernorm.weight"),
            R,
        ),
        ("mimo", ("model.mtp_layers.0.input_proj.weight", "mtp_layers.0.input_proj.weight"), R),
        # SGLang's DeepSeek and GLM loaders pass it over; its DeepSeek one matches the list by
        # other names and builds the layer FP8 (DF540)
        ("deepseek_v3", ("model.layers.2.eh_proj.weight", "model.mtp.eh_proj.weight"), R),
        (
            "glm4_moe",
            ("model.layers.2.input_layernorm.weight", "model.nextn.0.input_layernorm.weight"),
            G,
        ),
    ],
)
def test_a_tensor_moved_out_of_an_fp8_targets_mtp_layer(
    tmp_path: Path, family: str, moved: tuple[str, str], sglang: Verdict
) -> None:
    """One tensor of a shipped MTP layer stored outside it, in an FP8 target whose MTP layer
    is excluded by its checkpoint names (no load check: a missing module alone drafts
    garbage). vLLM 0.34.0 refuses every one, in its MTP loader or in its loader for the
    target (run on a CPU with the target's real weights); SGLang 0.5.23 as its loaders gave
    on a CPU. DF222 names the moved tensor wherever a loader stops on it."""
    path = mtp_target(
        tmp_path / "t", family, quant="fp8", exclude="checkpoint", moved=(moved,), engine_ready=True
    )
    for engine, report in _on_both(path, family):
        expected = R if engine == V34 else sglang
        assert report.engines[0].verdict is expected, [f.to_dict() for f in report.findings]
        unmapped = [f.message for f in report.findings if f.rule.code == "DF222"]
        assert all(f"`{moved[1]}`" in m for m in unmapped)
        stopped_on_it = engine == V34 or family in ("qwen3_next", "mimo")
        assert bool(unmapped) is stopped_on_it, engine


@pytest.mark.parametrize(
    ("family", "moved"),
    [
        ("deepseek_v3", ("model.layers.2.eh_proj.weight", "model.mtp.eh_proj.weight")),
        ("glm4_moe", ("model.layers.2.input_layernorm.weight", "mtp_layers.0.norm.weight")),
        ("qwen3_next", ("mtp.fc.weight", "model.mtp.fc.weight")),
    ],
)
def test_the_targets_loader_stops_on_a_moved_tensor_from_vllm_0_29(
    tmp_path: Path, family: str, moved: tuple[str, str]
) -> None:
    """vLLM's loaders for the target look a name outside the MTP layers up from 0.29.0 on
    (read at 0.29.0 to 0.33.0, run at 0.34.0); before, not read: the missing module alone
    drafts garbage in an FP8 target, and the moved tensor is not named."""
    path = mtp_target(
        tmp_path / "t", family, quant="fp8", exclude="checkpoint", moved=(moved,), engine_ready=True
    )
    line = VLLM.format(trust="")
    for release, expected in (("0.28.0", G), ("0.29.0", R), ("0.33.0", R)):
        report = check_path(
            path, engines=[f"vllm=={release}"], serve=settings_from(serve_args=line)
        )
        assert report.engines[0].verdict is expected, release
        unmapped = [f.message for f in report.findings if f.rule.code == "DF222"]
        assert bool(unmapped) is (expected is R), release
        assert all(f"`{moved[1]}`" in m and "for the target" in m for m in unmapped)


def test_convert_names_a_module_under_mtp_by_its_own_name(tmp_path: Path) -> None:
    """A module stored under `mtp.` outside the layers is listed under that name, not under
    the layer's prefix."""
    moved = ("mtp.layers.0.self_attn.q_proj.weight", "mtp.layer.0.self_attn.q_proj.weight")
    path = mtp_target(tmp_path / "t", "qwen3_next", quant="fp8", moved=(moved,), engine_ready=True)
    out = tmp_path / "o"
    convert_mtp_path(path, out, engines=[V34])
    listed = json.loads((out / "config.json").read_text())["quantization_config"]
    assert "mtp.layer.0.self_attn.q_proj" in listed["modules_to_not_convert"]
    assert not any("layers.0.layer." in e for e in listed["modules_to_not_convert"])
