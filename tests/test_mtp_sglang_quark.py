"""Quark FP8 targets with MTP layers, judged as SGLang 0.5.23 builds and loads them
(`should_ignore_layer` on the module it builds: an `exclude` entry equal to its runtime name or
a `re:` pattern from its start; the fused experts also by one expert's name; `gate_up_proj` and
the MLA fused module by their shards' names, `qkv_proj` by its shards only where the model
class maps them; DeepSeek's NextN class builds `eh_proj` quantized, and drops the whole
layer's quantization where an entry names the layer's prefix itself). The expected verdicts
are those SGLang 0.5.23's own build and loader gave on a CPU for the same tiny targets (the
compute capability answered as on a GPU, the schemes' steps after loading skipped:
`dev/mtp_oracle_sglang_quark.py`; dev/mtp-schemes-oracle-results.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from draftfit.engines.name_patterns import NameList
from draftfit.engines.procedure.mtp_matching import sglang_quark_skipped
from tests.mtp_factory import mtp_target
from tests.sglang_nextn import UNLISTED_BF16, assert_sglang_gave, check_nextn


def write_target(path: Path, family: str, listed: list[str] | None = None, **variant: Any) -> Path:
    """A Quark FP8 target; `listed` replaces `exclude` (beside `lm_head`)."""
    entries = None if listed is None else ("exclude", ["lm_head", *listed])
    return mtp_target(path, family, quant="quark_fp8", engine_ready=True, listed=entries, **variant)


Q = {"mtp_quantized": True}
# (family, factory keywords) -> (SGLang 0.5.23's verdict, the rules that say why), as run
CASES: list[tuple[str, dict[str, Any], str, set[str]]] = [
    # a BF16 MTP layer not excluded (DF542 on every GLM-4.7-Flash target here)
    *((family, {}, verdict, codes) for family, verdict, codes in UNLISTED_BF16),
    # the checkpoint's names and patterns reach Qwen3.5's `mtp.*` block, not the NextN layers
    ("deepseek_v3", {"exclude": "checkpoint"}, "incompatible", {"DF540"}),
    ("deepseek_v3", {"exclude": "regex"}, "incompatible", {"DF540"}),
    ("glm4_moe", {"exclude": "regex"}, "drafts-garbage", {"DF540"}),
    ("qwen3_5", {"exclude": "checkpoint"}, "compatible", set()),
    ("qwen3_5", {"exclude": "regex"}, "compatible", set()),
    # Quark's `*layers.N.*` wildcard is no pattern to SGLang
    ("qwen3_5", {"exclude": "glob"}, "drafts-garbage", {"DF540"}),
    # SGLang's names: GLM-4.5's `qkv_proj` only by that name (its class maps no shards), the
    # MLA module by its shards (the loader maps them); DeepSeek's `eh_proj` is built FP8 too
    ("glm4_moe", {"exclude": "runtime"}, "drafts-garbage", {"DF540"}),
    # (GLM-4.7-Flash's MTP layer then loads clean, but the target's own loader stops on the
    # backbone's per-tensor scales of the same two modules: run with real target weights)
    ("glm4_moe_lite", {"exclude": "runtime"}, "incompatible", {"DF542"}),
    ("deepseek_v3", {"exclude": "runtime"}, "drafts-garbage", {"DF540"}),
    ("deepseek_v3", {"exclude": "runtime_regex"}, "drafts-garbage", {"DF540"}),
    ("deepseek_v3", {"listed": [r"re:model\.decoder\..*", "model.eh_proj"]}, "compatible", set()),
    ("glm4_moe", {"exclude": "runtime_regex"}, "compatible", set()),
    # one shard of a fused module left off: refused where the shards are read
    ("deepseek_v3", {"exclude": "runtime_partial"}, "incompatible", {"DF540"}),
    ("glm4_moe_lite", {"exclude": "runtime_partial"}, "incompatible", {"DF540", "DF542"}),
    ("glm4_moe", {"exclude": "runtime_partial"}, "drafts-garbage", {"DF540"}),
    # stored FP8 like the backbone: DeepSeek's BF16 `eh_proj` is still cast ...
    ("deepseek_v3", Q, "drafts-garbage", {"DF540"}),
    ("glm4_moe", Q, "compatible", set()),
    ("mimo", Q, "compatible", set()),
    # ... GLM-4.7-Flash's loader concatenates the scalar scales of its MLA projections ...
    ("glm4_moe_lite", Q, "incompatible", {"DF542"}),
    # ... and Qwen3.5's list of its experts drops the whole MTP block's quantization
    ("qwen3_5", {**Q, "exclude": "checkpoint"}, "drafts-garbage", {"DF541"}),
]


@pytest.mark.parametrize(("family", "variant", "verdict", "codes"), CASES)
def test_each_target_gets_the_verdict_sglang_gave_it(
    tmp_path: Path, family: str, variant: dict[str, Any], verdict: str, codes: set[str]
) -> None:
    assert_sglang_gave(check_nextn(write_target(tmp_path / "t", family, **variant)), verdict, codes)


def test_the_fix_names_the_pattern_and_the_own_module_it_misses(tmp_path: Path) -> None:
    report = check_nextn(write_target(tmp_path / "t", "deepseek_v3"))
    fixes = [str(f.to_dict()["fix"]) for f in report.findings if f.rule.code == "DF540"]
    assert any(r"`re:model\.decoder\..*` and `model.eh_proj` to `exclude`" in f for f in fixes)


@pytest.mark.parametrize(
    ("built", "entries", "by_name", "expected"),
    [
        ("m.decoder.self_attn.o_proj", ["m.decoder.self_attn.o_proj"], set(), (True,)),
        ("m.decoder.self_attn.o_proj", [r"re:m\.decoder\..*"], set(), (True,)),
        ("m.decoder.self_attn.o_proj", ["*decoder.*"], set(), (False,)),  # no pattern to it
        # one expert's projection names the fused experts
        ("m.decoder.mlp.experts", ["m.decoder.mlp.experts.3.up_proj"], set(), (True,)),
        # shards: all, some, or by the fused name where the class maps none
        ("m.a.qkv_proj", ["m.a.q_proj", "m.a.k_proj", "m.a.v_proj"], set(), (True, True, True)),
        ("m.a.qkv_proj", ["m.a.q_proj"], set(), (True, False, False)),
        ("m.a.qkv_proj", ["m.a.q_proj"], {"qkv_proj"}, (False,)),
        ("m.a.qkv_proj", ["m.a.qkv_proj"], {"qkv_proj"}, (True,)),
    ],
)
def test_should_ignore_layer_reads_names_patterns_and_shards(
    built: str, entries: list[str], by_name: set[str], expected: tuple[bool, ...]
) -> None:
    assert sglang_quark_skipped(built, NameList(entries, "exclude"), frozenset(by_name)) == expected


def test_glm_4_7_flash_backbone_scales_stop_the_target(tmp_path: Path) -> None:
    """The backbone of a GLM-4.7-Flash Quark FP8 target stores `q_a_proj` and
    `kv_a_proj_with_mqa` with per-tensor scales (the index names them); SGLang's own loader
    concatenates them and stops the target's load (run with the target's real weights), so
    an MTP layer excluded right does not make it `compatible`."""
    report = check_nextn(write_target(tmp_path / "t", "glm4_moe_lite", exclude="runtime"))
    (finding,) = [f.to_dict() for f in report.findings if f.rule.code == "DF542"]
    assert "the backbone layer model.layers.1" in str(finding["message"])
    assert "the target's own load stops" in str(finding["message"])
