"""An MTP launch line is read by the release's own parser as any launch is (DF559): a flag
it does not take, a speculative-config key it has no field for, a token count below 1, some
of SGLang's step flags without the others. Verdicts as the engines' own code gave them on a
tiny DeepSeek-V3 target (dev/mtp_corpus.py, run on a CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Verdict
from draftfit.rule_ids import SERVE_SETTING_INVALID
from tests.mtp_factory import mtp_target

VLLM = 'vllm serve T{extra} --speculative-config \'{{"method": "mtp"{keys}}}\''
SGLANG = "python -m sglang.launch_server --model-path T --speculative-algorithm NEXTN{extra}"


@pytest.mark.parametrize(
    ("engine", "line", "verdict"),
    [
        ("vllm==0.34.0", VLLM.format(extra="", keys=', "num_speculative_tokens": 1'), "ok"),
        ("vllm==0.34.0", VLLM.format(extra="", keys=', "num_speculative_tokens": 0'), "refused"),
        ("vllm==0.34.0", VLLM.format(extra=" --no-such-flag 1", keys=""), "refused"),
        ("vllm==0.34.0", VLLM.format(extra="", keys=', "num_spec_tokens": 1'), "refused"),
        ("sglang==0.5.23", SGLANG.format(extra=""), "ok"),
        ("sglang==0.5.23", SGLANG.format(extra=" --speculative-num-draft-tokens 4"), "refused"),
        ("sglang==0.5.23", SGLANG.format(extra=" --speculative-num-steps 3"), "refused"),
        ("sglang==0.5.23", SGLANG.format(extra=" --no-such-flag 1"), "refused"),
    ],
)
def test_the_launch_line_is_read_as_the_release_reads_it(
    tmp_path: Path, engine: str, line: str, verdict: str
) -> None:
    path = mtp_target(tmp_path / "t")
    report = check_path(path, engines=[engine], serve=settings_from(serve_args=line))
    found = [f for f in report.findings if f.rule == SERVE_SETTING_INVALID]
    if verdict == "ok":
        assert not found and report.engines[0].verdict is Verdict.COMPATIBLE
    else:
        assert found and report.engines[0].verdict is Verdict.INCOMPATIBLE


def test_without_a_launch_the_line_checks_are_listed_as_skipped(tmp_path: Path) -> None:
    path = mtp_target(tmp_path / "t")
    report = check_path(path, engines=["sglang==0.5.23"], method="mtp")
    assert SERVE_SETTING_INVALID.code in {s.rule.code for s in report.skipped_rules}
