"""The MTP facts of the vLLM releases between 0.10.2 and 0.34.0, read at each release: checked
on tiny real targets at releases inside each range, against the releases on either side."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Verdict
from draftfit.rule_ids import MTP_LAYER_MISSING, MTP_METHOD_NAME, MTP_TENSOR_MISSING
from tests.mtp_factory import mtp_target as write_target

SPEC = (
    'vllm serve T --speculative-config \'{{"method": "{method}", "num_speculative_tokens": {k}}}\''
)


def verdict(path: Path, version: str, method: str = "mtp", k: int = 1) -> tuple[Verdict, set[str]]:
    serve = settings_from(serve_args=SPEC.format(method=method, k=k))
    report = check_path(path, engines=[f"vllm=={version}"], serve=serve)
    (result,) = report.engines
    return result.verdict, {f.rule.code for f in report.findings}


@pytest.mark.parametrize("version", ["0.11.0", "0.20.0", "0.33.0"])
def test_a_whole_target_is_served_with_mtp_at_the_releases_read(
    tmp_path: Path, version: str
) -> None:
    for family in ("deepseek_v3", "glm4_moe", "qwen3_next"):
        path = write_target(tmp_path / family, family)
        assert verdict(path, version) == (Verdict.COMPATIBLE, set()), (family, version)


def test_releases_before_the_ones_read_stay_unverified(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t")
    assert verdict(path, "0.10.1.1")[0] is Verdict.UNVERIFIED
    assert verdict(path, "0.11.0")[0] is Verdict.COMPATIBLE


def test_mtp_is_a_method_from_0_11_0_and_glm4_moe_mtp_an_alias_from_0_11_1(
    tmp_path: Path,
) -> None:
    path = write_target(tmp_path / "glm", "glm4_moe")
    assert verdict(path, "0.10.2", "mtp")[0] is Verdict.INCOMPATIBLE
    assert verdict(path, "0.11.0", "mtp")[0] is Verdict.COMPATIBLE
    # in 0.11.0's MTP_MODEL_TYPES, not in its method Literal: refused
    state, codes = verdict(path, "0.11.0", "glm4_moe_mtp")
    assert state is Verdict.INCOMPATIBLE and MTP_METHOD_NAME.code in codes
    state, codes = verdict(path, "0.11.1", "glm4_moe_mtp")
    assert state is Verdict.COMPATIBLE and MTP_METHOD_NAME.code in codes  # deprecated: info
    assert verdict(path, "0.16.0", "qwen3_5_mtp")[0] is Verdict.INCOMPATIBLE
    assert verdict(path, "0.17.0", "qwen3_5_mtp")[0] is Verdict.COMPATIBLE


def test_the_token_count_must_divide_by_the_depth_between_the_releases(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", depth=2, ship=2)
    assert verdict(path, "0.25.0", k=4)[0] is Verdict.COMPATIBLE
    assert verdict(path, "0.25.0", k=3)[0] is Verdict.INCOMPATIBLE


def test_glm_takes_its_head_and_embedding_from_the_target_from_0_11_1(tmp_path: Path) -> None:
    path = write_target(
        tmp_path / "t", "glm4_moe", drop=("shared_head.head.weight", "embed_tokens.weight")
    )
    state, codes = verdict(path, "0.11.0")
    assert state is Verdict.INCOMPATIBLE and MTP_TENSOR_MISSING.code in codes
    assert verdict(path, "0.11.1") == (Verdict.COMPATIBLE, set())


def test_deepseek_head_counts_until_the_load_check_exempts_it_at_0_21_0(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", drop=("shared_head.head.weight",))
    state, codes = verdict(path, "0.20.0")
    assert state is Verdict.INCOMPATIBLE and MTP_TENSOR_MISSING.code in codes
    assert verdict(path, "0.21.0") == (Verdict.COMPATIBLE, set())


def test_a_missing_projection_loads_unset_once_the_load_check_exempts_it(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", drop=("self_attn.o_proj.weight",))
    assert verdict(path, "0.20.0")[0] is Verdict.INCOMPATIBLE
    assert verdict(path, "0.21.0")[0] is Verdict.DRAFTS_GARBAGE


def test_deepseek_refuses_a_quantized_target_without_its_mtp_layer_from_0_17_0_to_0_33_0(
    tmp_path: Path,
) -> None:
    path = write_target(tmp_path / "t", ship=0, quant="fp8", mtp_quantized=True)
    expected = {
        "0.16.0": Verdict.DRAFTS_GARBAGE,
        "0.17.0": Verdict.INCOMPATIBLE,
        "0.33.0": Verdict.INCOMPATIBLE,
        "0.34.0": Verdict.DRAFTS_GARBAGE,
    }
    for version, wanted in expected.items():
        state, codes = verdict(path, version)
        assert state is wanted and MTP_LAYER_MISSING.code in codes, version


@pytest.mark.parametrize("version", ["0.10.2", "0.20.0", "0.34.0"])
def test_a_kimi_k2_model_type_is_not_rewritten_into_vllms_mtp_draft(
    tmp_path: Path, version: str
) -> None:
    """vLLM rewrites a DeepSeek-V3-style target into its MTP draft by `model_type`
    (`deepseek_v3`): the same layers under Kimi-K2's `kimi_k2` are refused (run at 0.34.0:
    the whole model is built as the draft), while SGLang picks its NextN class by
    architecture and serves them."""
    import json

    path = write_target(tmp_path / "t")
    method = "deepseek_mtp" if version == "0.10.2" else "mtp"  # `mtp` is taken from 0.11.0
    config = json.loads((path / "config.json").read_text())
    assert verdict(path, version, method)[0] is Verdict.COMPATIBLE
    config["model_type"] = "kimi_k2"
    (path / "config.json").write_text(json.dumps(config))
    found, codes = verdict(path, version, method)
    assert found is Verdict.INCOMPATIBLE and "DF140" in codes
    report = check_path(path, engines=["sglang==0.5.23"], method="mtp")
    assert report.engines[0].verdict is Verdict.COMPATIBLE
