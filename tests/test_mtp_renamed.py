"""MTP layers stored under another name than the family's: another family's naming, one
decoder index too far, a block prefix of its own. Verdicts as the engines' own code gave them
on the same tiny targets (dev/mtp_corpus.py, run on a CPU: vLLM 0.34.0 refuses at its load
check; SGLang 0.5.23 loads the NextN layer unset, or stops on MiMo's own names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Verdict
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
    trust = " --trust-remote-code" if family == "mimo" else ""
    for engine, line, expected in (
        ("vllm==0.34.0", VLLM, vllm),
        ("sglang==0.5.23", SGLANG, sglang),
    ):
        report = check_path(
            path, engines=[engine], serve=settings_from(serve_args=line.format(trust=trust))
        )
        assert report.engines[0].verdict is expected, engine
        assert MTP_LAYER_MISSING.code in {f.rule.code for f in report.findings}
