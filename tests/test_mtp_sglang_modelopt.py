"""ModelOpt FP8 targets with MTP layers, judged as SGLang 0.5.23 builds and loads them: a linear
module is left unquantized where `is_layer_skipped` finds its path (a fused module by its
shards' paths, all or none) or `is_layer_excluded` matches its runtime name or one part of it;
the fused experts by the second only; DeepSeek-style layers are refused where `q_b_proj` or
`kv_b_proj` is left FP8 and draft garbage where only other modules are. The expected verdicts
are those SGLang 0.5.23's own build and loader gave on a CPU for the same tiny targets (its
requantization after loading skipped: `dev/mtp_oracle_sglang_modelopt.py`;
dev/mtp-schemes-oracle-results.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draftfit.engines.procedure.mtp_matching import sglang_modelopt_match, sglang_skipped
from tests.mtp_factory import mtp_target
from tests.sglang_nextn import SGL, UNLISTED_BF16, assert_sglang_gave, check_nextn
from tests.test_mtp_commands import run


def write_target(path: Path, family: str, listed: list[str] | None = None, **variant: Any) -> Path:
    """A ModelOpt FP8 target; `listed` replaces `exclude_modules` (beside `lm_head`)."""
    entries = None if listed is None else ("exclude_modules", ["lm_head", *listed])
    return mtp_target(
        path, family, quant="modelopt_fp8", engine_ready=True, listed=entries, **variant
    )


Q = {"mtp_quantized": True}
# (family, factory keywords) -> (SGLang 0.5.23's verdict, the rules that say why), as run
CASES: list[tuple[str, dict[str, Any], str, set[str]]] = [
    # a BF16 MTP layer not excluded (DF542 on every GLM-4.7-Flash target here: its backbone's
    # scales; the MTP layer's own outcome as DF540 says)
    *((family, {}, verdict, codes) for family, verdict, codes in UNLISTED_BF16),
    ("qwen3_next", {}, "drafts-garbage", {"DF540"}),
    # the checkpoint's names: `q_b_proj` / `kv_b_proj` are reached by their last part, the
    # MLA fused module by `kv_a_proj_with_mqa`; `o_proj`, the experts and the shared
    # experts are left FP8 and cast (no refusal)
    ("deepseek_v3", {"exclude": "checkpoint"}, "drafts-garbage", {"DF540"}),
    ("glm4_moe_lite", {"exclude": "checkpoint"}, "incompatible", {"DF540", "DF542"}),
    # Qwen3.5 keeps them, but its experts, each listed by name, are reached by nothing
    ("qwen3_5", {"exclude": "checkpoint"}, "drafts-garbage", {"DF540"}),
    ("qwen3_5_dense", {"exclude": "checkpoint"}, "compatible", set()),  # no experts
    # ModelOpt's own layer glob, `model.layers.{L}*`: not SGLang's names
    ("deepseek_v3", {"exclude": "glob"}, "incompatible", {"DF540"}),
    ("qwen3_5", {"exclude": "glob"}, "compatible", set()),  # `mtp*` names its block
    # SGLang's names, each module by name; one fused shard left off
    ("deepseek_v3", {"exclude": "runtime"}, "compatible", set()),
    ("glm4_moe", {"exclude": "runtime_partial"}, "incompatible", {"DF540"}),
    ("deepseek_v3", {"exclude": "runtime_partial"}, "incompatible", {"DF540"}),
    # GLM-4.7-Flash's class maps no shards for its fused MLA module: built FP8, no refusal
    ("glm4_moe_lite", {"exclude": "runtime_partial"}, "incompatible", {"DF540", "DF542"}),
    # the layer's runtime prefix: a glob covers it all; the bare path not the experts
    ("deepseek_v3", {"listed": ["model.decoder*", "model.eh_proj"]}, "compatible", set()),
    ("glm4_moe", {"listed": ["model.decoder.*"]}, "compatible", set()),
    ("deepseek_v3", {"listed": ["model.decoder"]}, "drafts-garbage", {"DF540"}),
    # stored FP8 like the backbone ...
    ("deepseek_v3", Q, "compatible", set()),
    ("mimo", Q, "compatible", set()),
    # ... but GLM-4.7-Flash's loader concatenates the scalar scales of `q_a_proj` and
    # `kv_a_proj_with_mqa`, listed or not
    ("glm4_moe_lite", Q, "incompatible", {"DF542"}),
    ("glm4_moe_lite", {**Q, "exclude": "checkpoint"}, "incompatible", {"DF542"}),
    # ... and listed under names SGLang builds them by: unquantized, the scales skipped
    ("deepseek_v3", {**Q, "exclude": "checkpoint"}, "drafts-garbage", {"DF541"}),
    ("qwen3_5", {**Q, "exclude": "checkpoint"}, "drafts-garbage", {"DF541"}),
]


@pytest.mark.parametrize(("family", "variant", "verdict", "codes"), CASES)
def test_each_target_gets_the_verdict_sglang_gave_it(
    tmp_path: Path, family: str, variant: dict[str, Any], verdict: str, codes: set[str]
) -> None:
    assert_sglang_gave(check_nextn(write_target(tmp_path / "t", family, **variant)), verdict, codes)


def test_a_fused_module_listed_in_part_is_named_with_the_refusal(tmp_path: Path) -> None:
    report = check_nextn(write_target(tmp_path / "t", "glm4_moe", exclude="runtime_partial"))
    messages = [str(f.to_dict()["message"]) for f in report.findings if f.rule.code == "DF540"]
    assert any(
        "`model.decoder.self_attn.qkv_proj`" in m and "Detected some but not all shards" in m
        for m in messages
    ), messages


def test_the_scalar_scales_finding_names_both_modules_and_the_fix(tmp_path: Path) -> None:
    report = check_nextn(write_target(tmp_path / "t", "glm4_moe_lite", **Q))
    (finding,) = [f.to_dict() for f in report.findings if f.rule.code == "DF542"]
    assert "zero-dimensional tensor" in str(finding["message"])
    assert "q_a_proj" in str(finding["message"])
    assert "kv_a_proj_with_mqa" in str(finding["message"])
    assert "unquantized (BF16) in every layer" in str(finding["fix"])


@pytest.mark.parametrize(
    ("built", "entries", "mapped", "expected"),
    [
        # a fused module by its shards' paths, each on dotted boundaries
        ("m.decoder.self_attn.qkv_proj", ("m.decoder.self_attn",), True, (True, True, True)),
        (
            "m.decoder.self_attn.qkv_proj",
            ("m.decoder.self_attn.q_proj",),
            True,
            (True, False, False),
        ),
        # `mlp.gate` is no parent of `mlp.gate_up_proj`'s shards
        ("m.decoder.mlp.gate_up_proj", ("mlp.gate",), True, (False, False)),
        # the MLA fused module by its shards where the class maps them, else by its own name
        (
            "m.self_attn.fused_qkv_a_proj_with_mqa",
            ("m.self_attn.q_a_proj",),
            True,
            (True, False),
        ),
        ("m.self_attn.fused_qkv_a_proj_with_mqa", ("m.self_attn.q_a_proj",), False, (False,)),
        # a module under `experts` also by an entry holding its path
        ("m.mlp.experts", ("m.mlp.experts.0.gate_proj",), True, (True,)),
    ],
)
def test_is_layer_skipped_reads_paths_and_shards(
    built: str, entries: tuple[str, ...], mapped: bool, expected: tuple[bool, ...]
) -> None:
    by_name = frozenset() if mapped else frozenset({"fused_qkv_a_proj_with_mqa"})
    assert sglang_skipped(built, entries, by_name) == expected


def test_the_fused_experts_are_reached_by_the_wildcard_only() -> None:
    experts = "model.decoder.mlp.experts"
    none: frozenset[str] = frozenset()
    assert not sglang_modelopt_match(experts, ("model.decoder",), True, none)
    assert sglang_modelopt_match(experts, ("model.decoder*",), True, none)
    assert sglang_modelopt_match(experts, ("experts",), True, none)  # one part of the name
    # a linear module by its path's parent
    assert sglang_modelopt_match("model.decoder.self_attn.o_proj", ("model.decoder",), False, none)


def test_convert_names_the_fused_mla_module_sglangs_fp8_matches_by_its_own_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GLM-4.7-Flash's class maps no shards for `fused_qkv_a_proj_with_mqa`: SGLang's FP8
    `is_layer_skipped` matches the fused name, so the fix lists it by that name (DeepSeek's by
    its shards). The output for GLM-4.7-Flash was built and loaded by SGLang 0.5.23 on a CPU:
    every MTP parameter loaded, no error."""
    for family, expected, absent in (
        ("glm4_moe_lite", "fused_qkv_a_proj_with_mqa", "q_a_proj"),
        ("deepseek_v3", "q_a_proj", "fused_qkv_a_proj_with_mqa"),
    ):
        source = mtp_target(tmp_path / family, family, quant="fp8", engine_ready=True)
        out = tmp_path / f"{family}-fixed"
        code, _, err = run(
            capsys, "convert", str(source), "--method", "mtp", "--engine", SGL, "-o", str(out)
        )
        assert code == 0, err
        config = json.loads((out / "config.json").read_text())
        listed = config["quantization_config"]["modules_to_not_convert"]
        assert f"model.decoder.self_attn.{expected}" in listed
        assert f"model.decoder.self_attn.{absent}" not in listed
        assert check_nextn(out).engines[0].verdict.value == "compatible"
