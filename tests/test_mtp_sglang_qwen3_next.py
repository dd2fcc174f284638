"""Qwen3-Next's MTP layer on SGLang 0.5.23: its MTP model numbers its layer from
`model.layers.0` (`mtp.layers.0.*` is built as `model.layers.0.*`, the names of the backbone's
own layer 0), so the checkpoint's names exclude nothing and no entry leaves it unquantized
without the backbone layer. The expected verdicts are those SGLang 0.5.23's own build and
loader gave on a CPU (`dev/mtp_oracle_sglang_qwen3_next.py`; dev/mtp-oracle-results.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from
from draftfit.report import Report
from tests.mtp_factory import mtp_target
from tests.sglang_nextn import SGL, assert_sglang_gave, convert_refused


def _check(path: Path) -> Report:
    serve = settings_from(
        serve_args=f"python -m sglang.launch_server --model-path {path} "
        "--speculative-algorithm NEXTN --speculative-num-steps 1 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 2"
    )
    return check_path(path, engines=[SGL], method="mtp", serve=serve)


@pytest.mark.parametrize(
    ("variant", "verdict", "codes"),
    [
        ({}, "drafts-garbage", {"DF540"}),  # built FP8, the BF16 values cast
        ({"exclude": "checkpoint"}, "drafts-garbage", {"DF540"}),  # `mtp.*` names nothing
        ({"mtp_quantized": True}, "compatible", set()),
    ],
)
def test_a_qwen3_next_fp8_target_gets_the_verdict_sglang_gave_it(
    tmp_path: Path, variant: dict[str, Any], verdict: str, codes: set[str]
) -> None:
    path = mtp_target(tmp_path / "t", "qwen3_next", quant="fp8", engine_ready=True, **variant)
    assert_sglang_gave(_check(path), verdict, codes)


def test_the_fix_and_convert_say_no_entry_serves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = mtp_target(tmp_path / "t", "qwen3_next", quant="fp8", engine_ready=True)
    (finding,) = [f for f in _check(path).findings if f.rule.code == "DF540"]
    data = finding.to_dict()
    assert "`model.layers.0.mlp.experts.0.down_proj`" in str(data["message"])
    assert "the names of the backbone's own layer 0 too" in str(data["fix"])
    assert "names of a backbone layer too" in convert_refused(capsys, path, tmp_path / "o")


@pytest.mark.parametrize(
    ("variant", "verdict"),
    [
        ({}, "drafts-garbage"),
        ({"exclude": "checkpoint"}, "drafts-garbage"),
        ({"mtp_quantized": True}, "compatible"),
    ],
)
def test_a_qwen3_next_compressed_tensors_target_gets_the_verdict_sglang_gave_it(
    tmp_path: Path, variant: dict[str, Any], verdict: str
) -> None:
    path = mtp_target(
        tmp_path / "t", "qwen3_next", quant="fp8", compressed=True, engine_ready=True, **variant
    )
    assert _check(path).engines[0].verdict.value == verdict


@pytest.mark.parametrize(
    ("prefix", "verdict"),
    [
        ("model.mtp.layers.0.", "incompatible"),  # renamed `model.model.layers.0.*`: KeyError
        ("mtp_layers.0.", "incompatible"),  # renamed `model_layers.0.*`: KeyError
        ("model.nextn.0.", "drafts-garbage"),  # no `mtp` in the name: passed over
    ],
)
def test_an_mtp_layer_under_another_prefix_gets_the_verdict_sglang_gave_it(
    tmp_path: Path, prefix: str, verdict: str
) -> None:
    """SGLang's Qwen3-Next MTP loader renames `mtp` to `model` in every name that holds it
    and looks the result up among its parameters: a layer exported under another prefix
    that holds `mtp` stops the load. The block's own `mtp.fc` / `mtp.norm` are no strays."""
    path = mtp_target(tmp_path / "t", "qwen3_next", depth=None, rename=prefix, engine_ready=True)
    report = _check(path)
    assert_sglang_gave(report, verdict, set())
    (finding,) = [f for f in report.findings if f.rule.code == "DF220"]
    assert "mtp.fc" not in finding.message
    assert ("KeyError" in finding.message) is (verdict == "incompatible")


NORM = "mtp.layers.0.input_layernorm.weight"
Q_PROJ = "mtp.layers.0.self_attn.q_proj.weight"


@pytest.mark.parametrize(
    ("quant", "moved", "verdict"),
    [
        # renamed `model.model.layers.0.input_layernorm.weight`: KeyError
        (None, (NORM, "model.mtp.layers.0.input_layernorm.weight"), "incompatible"),
        ("fp8", (NORM, "model.mtp.layers.0.input_layernorm.weight"), "incompatible"),
        ("fp8", (Q_PROJ, "mtp.layer.0.self_attn.q_proj.weight"), "incompatible"),
        ("fp8", ("mtp.fc.weight", "mtp_fc.weight"), "incompatible"),  # `model_fc.weight`
        # a bias the loader has no parameter for is skipped: `q_proj` stays unloaded
        ("fp8", (Q_PROJ, "model.mtp.layers.0.self_attn.q_proj.bias"), "drafts-garbage"),
    ],
)
def test_a_tensor_moved_out_of_a_shipped_layer_gets_the_verdict_sglang_gave_it(
    tmp_path: Path, quant: str | None, moved: tuple[str, str], verdict: str
) -> None:
    """The same lookup stops the load on one tensor outside the MTP layer when the layer
    itself is shipped (DF222, which names it); without the rename the module it was meant
    for is missing (DF221), which for an FP8 target alone would only draft garbage."""
    path = mtp_target(
        tmp_path / "t",
        "qwen3_next",
        depth=None,
        quant=quant,
        exclude="checkpoint" if quant else None,
        moved=(moved,),
        engine_ready=True,
    )
    report = _check(path)
    assert report.engines[0].verdict.value == verdict, [f.to_dict() for f in report.findings]
    unmapped = [f for f in report.findings if f.rule.code == "DF222"]
    assert [moved[1] in f.message for f in unmapped] == (
        [True] if verdict == "incompatible" else []
    )


def test_a_mimo_own_module_moved_out_of_a_shipped_layer_stops_sglangs_load(
    tmp_path: Path,
) -> None:
    """SGLang's MiMo loader looks up every name holding one of its own modules: one stored
    outside `model.mtp_layers.{i}.` stops the load (KeyError), quantized target or not."""
    moved = ("model.mtp_layers.0.token_layernorm.weight", "model.mtp.token_layernorm.weight")
    path = mtp_target(
        tmp_path / "t", "mimo", quant="fp8", exclude="checkpoint", moved=(moved,), engine_ready=True
    )
    serve = settings_from(
        serve_args=f"python -m sglang.launch_server --model-path {path} --trust-remote-code "
        "--speculative-algorithm NEXTN"
    )
    report = check_path(path, engines=[SGL], method="mtp", serve=serve)
    assert report.engines[0].verdict.value == "incompatible"
    (finding,) = [f for f in report.findings if f.rule.code == "DF222"]
    assert "`model.mtp.token_layernorm.weight`" in finding.message


def test_a_declared_depth_of_zero_is_set_to_one_where_the_rewrite_was_read(tmp_path: Path) -> None:
    """SGLang's config rewrite sets a Qwen3-Next draft's `num_nextn_predict_layers` to 1
    from 0.5.3 on (run at 0.5.23: a target declaring 0 loads its one MTP layer); before,
    what it does was not read, and the verdict says so instead of a refusal."""
    path = mtp_target(tmp_path / "t", "qwen3_next", depth=0)
    line = (
        f"python -m sglang.launch_server --model-path {path} --speculative-algorithm NEXTN "
        "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2"
    )
    verdicts = {}
    for release in ("0.5.2", "0.5.3", "0.5.23"):
        report = check_path(
            path, engines=[f"sglang=={release}"], serve=settings_from(serve_args=line)
        )
        assert "DF143" not in {f.rule.code for f in report.findings}
        verdicts[release] = report.engines[0].verdict
    assert verdicts == {"0.5.2": "unverified", "0.5.3": "compatible", "0.5.23": "compatible"}
