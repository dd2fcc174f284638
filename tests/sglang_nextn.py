"""What the per-scheme SGLang MTP tests share: a target checked under SGLang 0.5.23's NEXTN
launch (trusting the target's code, which MiMo's config class needs), the verdict with the
quantization rules that say why, compared with those SGLang's own code gave for the same
tiny target, and a `convert` for that release that writes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Report
from tests.test_mtp_commands import run

SGL = "sglang==0.5.23"
QUANT_CODES = ("DF540", "DF541", "DF542")
# A BF16 MTP layer not excluded from a per-tensor FP8 target (ModelOpt, Quark), as SGLang
# 0.5.23 gave it: DeepSeek's MLA refuses the downcast, the rest cast it. GLM-4.7-Flash's
# backbone stores its MLA projections with per-tensor scales too, which stop the target's own
# load (DF542, run with the target's real weights). (family, verdict, rules)
UNLISTED_BF16: list[tuple[str, str, set[str]]] = [
    ("deepseek_v3", "incompatible", {"DF540"}),
    ("glm4_moe_lite", "incompatible", {"DF540", "DF542"}),
    ("glm4_moe", "drafts-garbage", {"DF540"}),
    ("qwen3_5", "drafts-garbage", {"DF540"}),
    ("mimo", "drafts-garbage", {"DF540"}),
]


def check_nextn(path: Path) -> Report:
    """The MTP check of `path` under a NEXTN launch of SGLang 0.5.23."""
    serve = settings_from(
        serve_args=f"python -m sglang.launch_server --model-path {path} "
        "--speculative-algorithm NEXTN --trust-remote-code"
    )
    return check_path(path, engines=[SGL], method="mtp", serve=serve)


def assert_sglang_gave(report: Report, verdict: str, codes: set[str]) -> None:
    """The report's verdict is `verdict` and its quantization findings are `codes`."""
    assert report.engines[0].verdict.value == verdict, [f.to_dict() for f in report.findings]
    assert {f.rule.code for f in report.findings if f.rule.code in QUANT_CODES} == codes


def convert_refused(capsys: pytest.CaptureFixture[str], path: Path, out: Path) -> str:
    """`convert --method mtp` of `path` for SGLang 0.5.23 into `out`: a usage error (exit 2)
    that writes nothing; its message."""
    code, _, err = run(
        capsys, "convert", str(path), "--method", "mtp", "--engine", SGL, "-o", str(out)
    )
    assert code == 2
    assert not out.exists()
    return err
