"""TensorRT-LLM's MTP check on real tiny targets: the `decoding_type: MTP` launch, the MTP
mode it selects (MTP-Eagle or vanilla), the releases read (1.2.0rc2 at its pinned commit;
1.4.0rc0-1.4.0rc4 from undated main-branch code, where the depth is `max_draft_len` and a
vanilla launch deeper than the checkpoint is shared or capped) and those not read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.cli.main import main
from draftfit.engines.launch import settings_from
from draftfit.mtp_check import selects_mtp
from draftfit.report import Report, Verdict
from draftfit.rule_ids import (
    MTP_DEPTH_TOKENS,
    MTP_DEPTH_ZERO,
    MTP_FAMILY_UNSERVED,
    MTP_LAUNCH_KIND,
    MTP_METHOD_NAME,
    Severity,
)
from tests.mtp_factory import mtp_target

READ = "trtllm==1.2.0rc2"
# the releases whose MTP entries rest on undated main-branch code (unpinned)
CLAMPS = ("trtllm==1.4.0rc0", "trtllm==1.4.0rc4")


def options(tmp: Path, **spec: object) -> Path:
    """An `--extra_llm_api_options` YAML with `speculative_config` = `spec`."""
    import yaml

    path = tmp / "mtp.yaml"
    path.write_text(yaml.safe_dump({"speculative_config": {"decoding_type": "MTP", **spec}}))
    return path


def check(target: Path, yaml_path: Path, engine: str = READ) -> Report:
    launch = f"trtllm-serve {target} --extra_llm_api_options {yaml_path}"
    return check_path(target, engines=[engine], serve=settings_from(serve_args=launch))


def codes(report: Report) -> set[str]:
    return {f.code for f in report.findings}


def test_an_mtp_decoding_type_selects_the_mtp_check_with_no_target(tmp_path: Path) -> None:
    target = mtp_target(tmp_path / "t")
    launch = f"trtllm-serve {target} --extra_llm_api_options {options(tmp_path)}"
    serve = settings_from(serve_args=launch)
    assert serve.method == "MTP" and selects_mtp(None, serve)
    report = check_path(target, engines=[READ], serve=serve)
    assert report.method == "mtp" and report.target is None
    assert report.engines[0].verdict is Verdict.COMPATIBLE


def test_one_checkpoint_layer_is_run_once_per_draft_token(tmp_path: Path) -> None:
    """MTP-Eagle: a checkpoint with one MTP layer and `use_mtp_vanilla` off builds that one
    layer, whatever `num_nextn_predict_layers` asks."""
    target = mtp_target(tmp_path / "t")
    report = check(target, options(tmp_path, num_nextn_predict_layers=3))
    (result,) = report.engines
    assert result.verdict is Verdict.COMPATIBLE, report.findings
    facts = result.to_dict()["mtp"]
    assert facts["layers_built"] == [0] and facts["layer_reused"] is True
    assert facts["num_speculative_tokens"] == 3


def test_vanilla_mtp_asking_more_layers_than_shipped_is_refused(tmp_path: Path) -> None:
    target = mtp_target(tmp_path / "t")
    report = check(target, options(tmp_path, num_nextn_predict_layers=3, use_mtp_vanilla=True))
    assert report.engines[0].verdict is Verdict.INCOMPATIBLE
    (finding,) = [f for f in report.findings if f.code == MTP_DEPTH_TOKENS.code]
    assert "model.layers.3." in finding.message and "at most 1" in (finding.fix or "")
    # the same launch within the checkpoint's layers builds them all
    quiet = check(target, options(tmp_path, num_nextn_predict_layers=1, use_mtp_vanilla=True))
    assert quiet.engines[0].verdict is Verdict.COMPATIBLE
    assert quiet.engines[0].to_dict()["mtp"]["layers_built"] == [0]


def test_two_checkpoint_layers_take_vanilla_mtp_up_to_two(tmp_path: Path) -> None:
    target = mtp_target(tmp_path / "t", depth=2, ship=2)
    two = check(target, options(tmp_path, num_nextn_predict_layers=2))
    assert two.engines[0].verdict is Verdict.COMPATIBLE
    assert two.engines[0].to_dict()["mtp"]["layers_built"] == [0, 1]
    three = check(target, options(tmp_path, num_nextn_predict_layers=3))
    assert MTP_DEPTH_TOKENS.code in codes(three)
    # no num_nextn_predict_layers: the release's default (1), one layer built
    default = check(target, options(tmp_path))
    assert default.engines[0].to_dict()["mtp"]["layers_built"] == [0]


def test_depth_zero_is_refused(tmp_path: Path) -> None:
    target = mtp_target(tmp_path / "t", depth=0)
    report = check(target, options(tmp_path))
    assert MTP_DEPTH_ZERO.code in codes(report)
    assert report.engines[0].verdict is Verdict.INCOMPATIBLE


def test_another_spelling_of_the_decoding_type_is_refused(tmp_path: Path) -> None:
    target = mtp_target(tmp_path / "t")
    report = check(target, options(tmp_path, decoding_type="mtp"))
    assert MTP_METHOD_NAME.code in codes(report)
    assert report.engines[0].verdict is Verdict.INCOMPATIBLE


def test_an_eagle_decoding_type_on_the_target_is_a_launch_of_the_wrong_kind(
    tmp_path: Path,
) -> None:
    target = mtp_target(tmp_path / "t")
    report = check(target, options(tmp_path, decoding_type="Eagle3", max_draft_len=3))
    assert MTP_LAUNCH_KIND.code in codes(report)
    assert report.engines[0].verdict is not Verdict.COMPATIBLE


def test_a_family_not_read_is_unverified_not_refused(tmp_path: Path) -> None:
    target = mtp_target(tmp_path / "t", "glm4_moe")
    report = check(target, options(tmp_path))
    assert report.engines[0].verdict is Verdict.UNVERIFIED
    assert MTP_FAMILY_UNSERVED.code not in codes(report)
    assert "GLM-4.5" in report.engines[0].unverified_reasons[0]


@pytest.mark.parametrize(
    "engine", ["trtllm==1.1.0", "trtllm==1.2.0", "trtllm==1.2.1", "trtllm==1.3.0rc27"]
)
def test_releases_whose_mtp_loading_was_not_read_stay_unverified(
    tmp_path: Path, engine: str
) -> None:
    """Both neighbours of the releases read: before 1.2.0rc2, and between it and 1.4.0rc0
    (1.3.0rc27 documents the launch keys and the decoding type, not the model loading)."""
    target = mtp_target(tmp_path / "t")
    report = check(target, options(tmp_path, max_draft_len=1), engine)
    assert report.engines[0].verdict is Verdict.UNVERIFIED


@pytest.mark.parametrize("engine", CLAMPS)
def test_newer_releases_read_the_depth_from_max_draft_len(tmp_path: Path, engine: str) -> None:
    """MTP-Eagle runs the one layer `max_draft_len` times; the launch's own
    `num_nextn_predict_layers` (filled from the checkpoint there) is not read as the depth."""
    target = mtp_target(tmp_path / "t")
    report = check(target, options(tmp_path, max_draft_len=3), engine)
    (result,) = report.engines
    assert result.verdict is Verdict.COMPATIBLE, report.findings
    facts = result.to_dict()["mtp"]
    assert facts["layers_built"] == [0] and facts["num_speculative_tokens"] == 3
    # the old key alone: what these releases do with it was not read
    old = check(target, options(tmp_path, num_nextn_predict_layers=3), engine)
    assert old.engines[0].verdict is Verdict.UNVERIFIED
    assert "max_draft_len" in old.engines[0].unverified_reasons[0]
    # at the release read, the same old-style launch is the depth
    assert check(target, options(tmp_path, num_nextn_predict_layers=3)).engines[0].verdict is (
        Verdict.COMPATIBLE
    )


@pytest.mark.parametrize("engine", CLAMPS)
def test_a_vanilla_launch_deeper_than_the_checkpoint_is_capped_not_refused(
    tmp_path: Path, engine: str
) -> None:
    """Two shipped layers, three asked: 1.2.0rc2 fails at load; the newer releases cap the
    draft at two tokens, a warning (fewer draft tokens than asked), not an error."""
    target = mtp_target(tmp_path / "t", depth=2, ship=2)
    old = check(target, options(tmp_path, num_nextn_predict_layers=3))
    assert old.engines[0].verdict is Verdict.INCOMPATIBLE
    report = check(target, options(tmp_path, max_draft_len=3), engine)
    (result,) = report.engines
    (finding,) = [f for f in report.findings if f.code == MTP_DEPTH_TOKENS.code]
    assert finding.severity is Severity.WARNING
    assert "silently caps the draft at 2" in finding.message
    assert "`max_draft_len` to at most 2" in (finding.fix or "")
    assert result.verdict not in (Verdict.INCOMPATIBLE, Verdict.UNVERIFIED)
    facts = result.to_dict()["mtp"]
    assert facts["layers_built"] == [0, 1] and facts["num_speculative_tokens"] == 2
    # within the checkpoint's layers nothing is said; no depth: the checkpoint's own (2)
    for spec in ({"max_draft_len": 2}, {}):
        quiet = check(target, options(tmp_path, **spec), engine)
        assert MTP_DEPTH_TOKENS.code not in codes(quiet)
        assert quiet.engines[0].to_dict()["mtp"]["layers_built"] == [0, 1]


@pytest.mark.parametrize("engine", CLAMPS)
def test_deepseek_vanilla_shares_its_one_layer_where_1_2_0rc2_failed(
    tmp_path: Path, engine: str
) -> None:
    """One shipped layer, `use_mtp_vanilla` and three asked: 1.2.0rc2 looks up layers that
    are not there; the newer releases build three layers sharing the checkpoint's one."""
    target = mtp_target(tmp_path / "t")
    spec = {"use_mtp_vanilla": True}
    refused = check(target, options(tmp_path, num_nextn_predict_layers=3, **spec))
    assert MTP_DEPTH_TOKENS.code in codes(refused)
    report = check(target, options(tmp_path, max_draft_len=3, **spec), engine)
    (result,) = report.engines
    assert result.verdict is Verdict.COMPATIBLE, report.findings
    facts = result.to_dict()["mtp"]
    assert facts["layers_built"] == [0] and facts["layer_reused"] is True
    assert facts["num_speculative_tokens"] == 3


def test_a_family_not_read_at_the_newer_releases_is_unverified(tmp_path: Path) -> None:
    target = mtp_target(tmp_path / "t", "glm4_moe")
    report = check(target, options(tmp_path, max_draft_len=2), CLAMPS[0])
    assert report.engines[0].verdict is Verdict.UNVERIFIED
    assert MTP_FAMILY_UNSERVED.code not in codes(report)


def test_a_quantized_target_is_unverified_where_quantization_was_not_read(
    tmp_path: Path,
) -> None:
    target = mtp_target(tmp_path / "t", quant="fp8")
    report = check(target, options(tmp_path))
    assert report.engines[0].verdict is Verdict.UNVERIFIED


def test_the_recipe_and_matrix_at_the_release_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = mtp_target(tmp_path / "t", depth=2, ship=2)
    code = main(["check", str(target), "--method", "mtp", "--recipe", "--engine", READ])
    out = capsys.readouterr().out
    assert code == 0
    assert 'decoding_type: "MTP"' in out and "num_nextn_predict_layers: 2" in out
    assert f"trtllm-serve {target} --backend pytorch --extra_llm_api_options mtp.yaml" in out
    # the recipe's file, written and given back as the launch, checks clean
    (tmp_path / "mtp.yaml").write_text(out.split("<<'EOF'\n", 1)[1].split("EOF\n", 1)[0])
    replay = check(target, tmp_path / "mtp.yaml")
    assert replay.engines[0].verdict is Verdict.COMPATIBLE
    assert main(["matrix", str(target), "--method", "mtp", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    trtllm = {r["range"]: r["verdict"] for r in rows if r["engine"] == "trtllm"}
    # 1.2.0rc2's default launch builds one MTP layer; what its loader does with the second
    # layer shipped was not read
    assert trtllm == {
        "0.19.0–1.1.0": "unverified",
        "1.2.0rc2": "unverified",
        "1.2.0–1.3.0rc27": "unverified",
        "1.4.0rc0–1.4.0rc4": "compatible",
    }
    # from 1.4.0rc0 the recipe writes the depth as `max_draft_len`, and checks clean too
    assert main(["check", str(target), "--method", "mtp", "--recipe", "--engine", CLAMPS[1]]) == 0
    out = capsys.readouterr().out
    assert "max_draft_len: 2" in out and "num_nextn_predict_layers:" not in out
    (tmp_path / "mtp.yaml").write_text(out.split("<<'EOF'\n", 1)[1].split("EOF\n", 1)[0])
    assert check(target, tmp_path / "mtp.yaml", CLAMPS[1]).engines[0].verdict is (
        Verdict.COMPATIBLE
    )
