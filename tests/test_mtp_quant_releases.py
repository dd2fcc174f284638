"""How the vLLM releases between 0.11.0 and 0.34.0 quantize a target's MTP layers, read at
each release: checked on tiny real targets at releases inside the ranges and on either side
of each boundary (FP8 read from 0.11.0; compressed-tensors from 0.12.0, whose fused MoE
honours `ignore` only from there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Verdict
from draftfit.rule_ids import MTP_QUANT_EXCLUDED_STORED, MTP_QUANT_UNCOVERED
from tests.mtp_factory import mtp_target as write_target

SPEC = 'vllm serve T --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\''


def verdict(path: Path, version: str) -> tuple[Verdict, set[str]]:
    serve = settings_from(serve_args=SPEC)
    report = check_path(path, engines=[f"vllm=={version}"], serve=serve)
    (result,) = report.engines
    return result.verdict, {f.rule.code for f in report.findings}


@pytest.mark.parametrize("version", ["0.11.0", "0.20.0", "0.33.0"])
def test_the_official_fp8_release_shape_is_compatible_at_the_releases_read(
    tmp_path: Path, version: str
) -> None:
    """DeepSeek-V3's FP8 release: the MTP layer stored FP8 like the backbone, nothing
    excluded; every MTP class builds it with the target's FP8 config."""
    for family in ("deepseek_v3", "glm4_moe"):
        path = write_target(tmp_path / family, family, quant="fp8", mtp_quantized=True)
        assert verdict(path, version) == (Verdict.COMPATIBLE, set()), (family, version)


def test_fp8_is_read_from_0_11_0_and_unverified_before(tmp_path: Path) -> None:
    path = write_target(tmp_path / "bf16", quant="fp8")
    assert verdict(path, "0.10.1.1")[0] is Verdict.UNVERIFIED
    assert verdict(path, "0.11.0") == (Verdict.DRAFTS_GARBAGE, {MTP_QUANT_UNCOVERED.code})
    assert verdict(path, "0.33.0") == (Verdict.DRAFTS_GARBAGE, {MTP_QUANT_UNCOVERED.code})


@pytest.mark.parametrize("version", ["0.11.0", "0.26.0", "0.33.0"])
def test_fp8_matches_the_checkpoint_names_across_the_range(tmp_path: Path, version: str) -> None:
    covered = write_target(tmp_path / "covered", quant="fp8", exclude="checkpoint")
    assert verdict(covered, version) == (Verdict.COMPATIBLE, set())
    runtime = write_target(tmp_path / "runtime", quant="fp8", exclude="runtime")
    assert verdict(runtime, version) == (Verdict.DRAFTS_GARBAGE, {MTP_QUANT_UNCOVERED.code})
    stored = write_target(
        tmp_path / "stored", quant="fp8", mtp_quantized=True, exclude="checkpoint"
    )
    assert verdict(stored, version) == (
        Verdict.INCOMPATIBLE,
        {MTP_QUANT_EXCLUDED_STORED.code},
    )


def test_compressed_tensors_is_read_from_0_12_0(tmp_path: Path) -> None:
    """0.11.x builds a compressed-tensors fused MoE quantized whatever `ignore` says: not a
    matching draftfit models, so those releases stay unverified; 0.12.0 ignores it as
    0.34.0 does."""
    quantized = write_target(tmp_path / "q", quant="fp8", mtp_quantized=True, compressed=True)
    covered = write_target(tmp_path / "c", quant="fp8", compressed=True, exclude="checkpoint")
    bare = write_target(tmp_path / "b", quant="fp8", compressed=True)
    for path in (quantized, covered, bare):
        assert verdict(path, "0.11.2")[0] is Verdict.UNVERIFIED
    assert verdict(quantized, "0.12.0") == (Verdict.COMPATIBLE, set())
    assert verdict(covered, "0.12.0") == (Verdict.COMPATIBLE, set())
    assert verdict(bare, "0.12.0") == (Verdict.DRAFTS_GARBAGE, {MTP_QUANT_UNCOVERED.code})
    assert verdict(bare, "0.33.0") == (Verdict.DRAFTS_GARBAGE, {MTP_QUANT_UNCOVERED.code})


SGLANG = (
    "python -m sglang.launch_server --model-path T --speculative-algorithm NEXTN "
    "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2"
)


def sglang_verdict(path: Path, version: str) -> Verdict:
    report = check_path(
        path, engines=[f"sglang=={version}"], serve=settings_from(serve_args=SGLANG)
    )
    (result,) = report.engines
    return result.verdict


def test_sglang_fp8_names_are_read_from_0_5_20_and_the_outcomes_only_at_0_5_23(
    tmp_path: Path,
) -> None:
    """0.5.20-0.5.22 name and match FP8 exclusions as 0.5.23 does: the official FP8 shape and
    a BF16 MTP layer excluded under the runtime names get a verdict; what an uncovered one
    does was not read there (unverified); 0.5.19 stays unverified throughout."""
    official = write_target(tmp_path / "q", quant="fp8", mtp_quantized=True)
    covered = write_target(tmp_path / "rt", quant="fp8", exclude="runtime")
    bare = write_target(tmp_path / "bf", quant="fp8")
    for path in (official, covered, bare):
        assert sglang_verdict(path, "0.5.19") is Verdict.UNVERIFIED
    for version in ("0.5.20", "0.5.22"):
        assert sglang_verdict(official, version) is Verdict.COMPATIBLE
        assert sglang_verdict(covered, version) is Verdict.COMPATIBLE
        assert sglang_verdict(bare, version) is Verdict.UNVERIFIED
    assert sglang_verdict(bare, "0.5.23") is Verdict.INCOMPATIBLE
