"""One tensor of a module that is otherwise there: a MoE router's weight or its
score-correction bias, an attention bias. An MTP decoder layer must carry every tensor its
target's last decoder layer carries for the same module. Verdicts as the engines' own code
gave them on the same tiny targets (dev/mtp_corpus.py, run on a CPU): vLLM 0.34.0 leaves the
router out of its load check (it has a quantization method of its own) and loads it unset;
SGLang 0.5.23 loads every missing tensor unset."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Verdict
from draftfit.rule_ids import MTP_TENSOR_MISSING
from tests.mtp_factory import mtp_target

LINES = {
    "vllm==0.34.0": "vllm serve T --speculative-config "
    '\'{"method": "mtp", "num_speculative_tokens": 1}\'',
    "sglang==0.5.23": "python -m sglang.launch_server --model-path T --speculative-algorithm "
    "NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1 "
    "--speculative-num-draft-tokens 2",
}


@pytest.mark.parametrize(
    ("family", "drop", "tensor"),
    [
        ("deepseek_v3", "mlp.gate.weight", "model.layers.2.mlp.gate.weight"),
        (
            "deepseek_v3",
            "e_score_correction_bias",
            "model.layers.2.mlp.gate.e_score_correction_bias",
        ),
        ("glm4_moe", "e_score_correction_bias", "model.layers.2.mlp.gate.e_score_correction_bias"),
    ],
)
@pytest.mark.parametrize("engine", sorted(LINES))
def test_a_router_tensor_missing_drafts_garbage(
    tmp_path: Path, family: str, drop: str, tensor: str, engine: str
) -> None:
    path = mtp_target(tmp_path / "t", family, drop=(drop,), engine_ready=True)
    report = check_path(path, engines=[engine], serve=settings_from(serve_args=LINES[engine]))
    assert report.engines[0].verdict is Verdict.DRAFTS_GARBAGE
    (finding,) = [f for f in report.findings if f.rule == MTP_TENSOR_MISSING]
    assert f"`{tensor}`" in finding.message


def test_a_quantized_weight_counts_as_the_weight(tmp_path: Path) -> None:
    """An MTP layer stored FP8 like the backbone carries each weight (with its scales)."""
    path = mtp_target(tmp_path / "t", quant="fp8", mtp_quantized=True)
    report = check_path(
        path, engines=["vllm==0.34.0"], serve=settings_from(serve_args=LINES["vllm==0.34.0"])
    )
    assert report.engines[0].verdict is Verdict.COMPATIBLE
