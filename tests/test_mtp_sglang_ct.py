"""Compressed-tensors FP8 targets with MTP layers, judged as SGLang 0.5.23 builds and loads them
(`should_ignore_layer` against its runtime names: equal, a dotted suffix, or a `re:` pattern
from the start; the fused experts by expert 0's three projections; fused modules by the fused
name where the model class maps no shards). The expected verdicts are those SGLang 0.5.23's
own build and loader gave on a CPU for the same tiny targets (the compute capability answered
as on a GPU: `dev/mtp_oracle_sglang_ct.py`; dev/mtp-schemes-oracle-results.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.mtp_factory import mtp_target
from tests.sglang_nextn import assert_sglang_gave, check_nextn, convert_refused


def write_target(path: Path, family: str, **variant: Any) -> Path:
    return mtp_target(path, family, quant="fp8", compressed=True, engine_ready=True, **variant)


Q = {"mtp_quantized": True}
# (family, factory keywords) -> (SGLang 0.5.23's verdict, the rules that say why), as run
CASES: list[tuple[str, dict[str, Any], str, set[str]]] = [
    # a BF16 MTP layer not excluded: DeepSeek's MLA refuses the downcast, the rest cast it
    ("deepseek_v3", {}, "incompatible", {"DF540"}),
    ("glm4_moe", {}, "drafts-garbage", {"DF540"}),
    ("qwen3_5", {}, "drafts-garbage", {"DF540"}),
    ("mimo", {}, "drafts-garbage", {"DF540"}),
    # the checkpoint's names: not SGLang's (2-layer targets: DeepSeek's map does not apply) ...
    ("deepseek_v3", {"exclude": "checkpoint"}, "incompatible", {"DF540"}),
    ("glm4_moe", {"exclude": "checkpoint"}, "drafts-garbage", {"DF540"}),
    # ... but Qwen3.5's MTP block keeps them, and its class maps its fused modules
    ("qwen3_5", {"exclude": "checkpoint"}, "compatible", set()),
    # the runtime names, each module by name: the experts' own name reaches nothing, and the
    # shared `gate_up_proj` is matched by that name (`down_proj` alone left unquantized)
    ("deepseek_v3", {"exclude": "runtime"}, "incompatible", {"DF540", "DF542"}),
    ("glm4_moe", {"exclude": "runtime"}, "incompatible", {"DF540", "DF542"}),
    ("deepseek_v3", {"exclude": "runtime_expert0"}, "incompatible", {"DF540", "DF542"}),
    ("glm4_moe", {"exclude": "runtime_expert0"}, "incompatible", {"DF540", "DF542"}),
    # one `re:` pattern of the layer's runtime names
    ("deepseek_v3", {"exclude": "runtime_regex"}, "compatible", set()),
    ("glm4_moe", {"exclude": "runtime_regex"}, "compatible", set()),
    ("mimo", {"exclude": "runtime_regex"}, "compatible", set()),
    # stored FP8 like the backbone
    ("deepseek_v3", Q, "compatible", set()),
    ("qwen3_5", Q, "compatible", set()),
    ("mimo", {**Q, "exclude": "runtime"}, "compatible", set()),  # names nothing of MiMo's
    # ... and excluded by the pattern: built unquantized, the scales have no parameter
    ("deepseek_v3", {**Q, "exclude": "runtime_regex"}, "incompatible", {"DF541"}),
    ("glm4_moe", {**Q, "exclude": "runtime_regex"}, "drafts-garbage", {"DF541"}),
    ("mimo", {**Q, "exclude": "runtime_regex"}, "incompatible", {"DF541"}),
]


@pytest.mark.parametrize(("family", "variant", "verdict", "codes"), CASES)
def test_each_target_gets_the_verdict_sglang_gave_it(
    tmp_path: Path, family: str, variant: dict[str, Any], verdict: str, codes: set[str]
) -> None:
    assert_sglang_gave(check_nextn(write_target(tmp_path / "t", family, **variant)), verdict, codes)


def test_the_fixes_name_the_pattern_and_the_fused_name(tmp_path: Path) -> None:
    def fix(path: Path, code: str) -> str:
        (finding,) = [f for f in check_nextn(path).findings if f.rule.code == code]
        return str(finding.to_dict()["fix"])

    assert "add `re:model\\.decoder\\..*` to `ignore` of config.json" in fix(
        write_target(tmp_path / "d", "deepseek_v3"), "DF540"
    )
    mimo = fix(write_target(tmp_path / "m", "mimo"), "DF540")
    assert "`re:self_attn\\..*`" in mimo and "`re:mlp\\..*`" in mimo
    mixed = fix(write_target(tmp_path / "g", "glm4_moe", exclude="runtime_expert0"), "DF542")
    assert "fused `gate_up_proj` by that name" in mixed


def test_convert_leaves_sglangs_compressed_tensors_fix_to_the_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_target(tmp_path / "t", "deepseek_v3")
    assert "does not write SGLang 0.5.23's fix" in convert_refused(capsys, path, tmp_path / "o")
