"""A stand-alone NextN export (`DeepseekV3ForCausalLMNextN`: a target's NextN layer stored
as layer 0 of a one-layer model) checked beside its target: each verdict is what the
release's own code did with the same export on a CPU (dev/mtp-oracle-results.md, NextN
exports), or, where marked, what its code was read to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftfit.cli.main import main
from tests.mtp_factory import mtp_target, nextn_export

V34, V0102, SGL = "vllm==0.34.0", "vllm==0.10.2", "sglang==0.5.23"
ALL = ("--engine", V34, "--engine", V0102, "--engine", SGL)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def verdicts(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[dict[str, str], set[str]]:
    code, out, err = run(capsys, "check", *argv, "--format", "json")
    assert code in (0, 1), err
    report = json.loads(out)
    by_release = {f"{e['engine']}=={e['version']}": e["verdict"] for e in report["engines"]}
    return by_release, {f["code"] for f in report["findings"]}


def _pair(tmp: Path, family: str = "deepseek_v3", **export_kw: object) -> tuple[Path, Path]:
    target = mtp_target(tmp / "target", family)
    return nextn_export(target, tmp / "nextn", **export_kw), target  # type: ignore[arg-type]


def test_a_deepseek_export_is_served_by_sglang_and_refused_by_vllm(capsys, tmp_path: Path) -> None:
    """SGLang's NextN loader reads layer 0 of a one-layer export; vLLM builds the layer after
    the decoder layers as for a target and loads nothing (oracle: sg_ds_nx, v34_ds_nx)."""
    export, target = _pair(tmp_path)
    before = sorted(p.name for p in export.iterdir())
    got, codes = verdicts(capsys, str(export), "--target", str(target), *ALL)
    assert got == {V34: "incompatible", V0102: "incompatible", SGL: "compatible"}
    assert codes == {"DF220"}
    assert sorted(p.name for p in export.iterdir()) == before


def test_the_report_shows_the_export_and_its_target(capsys, tmp_path: Path) -> None:
    export, target = _pair(tmp_path)
    code, out, _ = run(capsys, "check", str(export), "--target", str(target), "--engine", SGL)
    assert code == 0
    assert "stand-alone NextN export" in out and f"Target  {target}" in out
    assert "MTP layers shipped: model.layers.0" in out
    code, out, _ = run(
        capsys, "check", str(export), "--target", str(target), "--engine", V34, "--format", "json"
    )
    report = json.loads(out)
    assert report["mtp"]["role"] == "nextn-export" and report["mtp"]["target"] == str(target)
    assert report["draft"]["dialect"]["name"] == "nextn-export"
    assert report["engines"][0]["mtp"]["export_reading"] == "layer-index"


def test_method_mtp_with_target_checks_the_export(capsys, tmp_path: Path) -> None:
    export, target = _pair(tmp_path)
    got, _ = verdicts(capsys, str(export), "--target", str(target), "--method", "mtp", *ALL)
    assert got[SGL] == "compatible" and got[V34] == "incompatible"


def test_a_glm_export_is_refused_by_vllm_which_knows_no_nextn_class(capsys, tmp_path) -> None:
    """vLLM rewrites GLM by its target architecture, which the export no longer names
    (oracle: v34_glm_nx, v10_glm_nx; SGLang: sg_glm_nx)."""
    export, target = _pair(tmp_path, "glm4_moe")
    got, codes = verdicts(capsys, str(export), "--target", str(target), *ALL)
    assert got == {V34: "incompatible", V0102: "incompatible", SGL: "compatible"}
    assert codes == {"DF140"}


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"drop": ("eh_proj.weight",)}, "DF221"),  # oracle: sg_ds_nx_no_eh
        ({"drop": ("o_proj.weight",)}, "DF221"),  # the decoder layer's (sg_ds_nx_no_oproj)
        ({"layer": 2}, "DF220"),  # stored under the target's numbering (sg_ds_nx_l2)
    ],
)
def test_an_incomplete_export_drafts_garbage_on_sglang(
    capsys, tmp_path: Path, kw: dict[str, object], code: str
) -> None:
    export, target = _pair(tmp_path, **kw)
    got, codes = verdicts(capsys, str(export), "--target", str(target), "--engine", SGL)
    assert got == {SGL: "drafts-garbage"} and code in codes


def test_an_export_keeping_embed_and_head_is_compatible(capsys, tmp_path: Path) -> None:
    """Older exports kept `embed_tokens` and `shared_head.head`: SGLang takes the target's
    (oracle: sg_ds_nx_full)."""
    export, target = _pair(tmp_path, keep_shared=True)
    got, _ = verdicts(capsys, str(export), "--target", str(target), "--engine", SGL)
    assert got == {SGL: "compatible"}


def test_a_quantized_export_follows_its_own_quantization(capsys, tmp_path: Path) -> None:
    """An FP8 export whose layer is FP8 loads on SGLang; vLLM loads nothing and, the model
    being quantized, runs no load check (oracle: sg_ds_fp8_nx, v34_ds_fp8_nx); a BF16 layer
    in an FP8 export is refused by SGLang as for a target (sg_ds_fp8_bf16_nx)."""
    target = mtp_target(tmp_path / "t8", quant="fp8", mtp_quantized=True)
    export = nextn_export(target, tmp_path / "n8")
    got, codes = verdicts(
        capsys, str(export), "--target", str(target), "--engine", SGL, "--engine", V34
    )
    assert got == {SGL: "compatible", V34: "drafts-garbage"} and codes == {"DF220"}
    target = mtp_target(tmp_path / "t8b", quant="fp8")
    export = nextn_export(target, tmp_path / "n8b")
    got, codes = verdicts(capsys, str(export), "--target", str(target), "--engine", SGL)
    assert got == {SGL: "incompatible"} and codes == {"DF540"}


def test_an_export_of_another_width_does_not_fit_its_target(capsys, tmp_path: Path) -> None:
    """A different hidden size fails at the first draft step (read, not run)."""
    export, target = _pair(tmp_path, config={"hidden_size": 64})
    got, codes = verdicts(capsys, str(export), "--target", str(target), "--engine", SGL)
    assert got == {SGL: "incompatible"} and "DF148" in codes


def test_an_export_of_another_family_drafts_garbage(capsys, tmp_path: Path) -> None:
    """A DeepSeek-V3 export beside a GLM-4.5 target of the same width loads (oracle:
    sg_ds_nx_on_glm accepted: it runs no forward) and drafts with another model's layer."""
    target = mtp_target(tmp_path / "glm", "glm4_moe")
    export = nextn_export(mtp_target(tmp_path / "ds"), tmp_path / "nextn")
    got, codes = verdicts(capsys, str(export), "--target", str(target), "--engine", SGL)
    assert got == {SGL: "drafts-garbage"}
    assert codes == {"DF148"}  # its own decoder layer is not compared with GLM's


def test_launches_that_name_the_export(capsys, tmp_path: Path) -> None:
    export, target = _pair(tmp_path)
    sglang = (
        f"python -m sglang.launch_server --model-path {target} --speculative-algorithm NEXTN "
        f"--speculative-draft-model-path {export} --speculative-num-steps 1 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 2"
    )
    got, codes = verdicts(
        capsys, str(export), "--target", str(target), "--engine", SGL, "--serve-args", sglang
    )
    assert got == {SGL: "compatible"} and not codes
    vllm = (
        f"vllm serve {target} --speculative-config "
        f'\'{{"method": "mtp", "model": "{export}", "num_speculative_tokens": 1}}\''
    )
    got, codes = verdicts(
        capsys, str(export), "--target", str(target), "--engine", V34, "--serve-args", vllm
    )
    assert got == {V34: "incompatible"} and codes == {"DF220"}


def test_a_launch_that_does_not_name_the_export_is_not_judged(capsys, tmp_path: Path) -> None:
    """Without `--speculative-draft-model-path` SGLang drafts with the target's own layers:
    said, unverified, never `compatible`."""
    export, target = _pair(tmp_path)
    line = f"python -m sglang.launch_server --model-path {target} --speculative-algorithm NEXTN"
    got, codes = verdicts(
        capsys, str(export), "--target", str(target), "--engine", SGL, "--serve-args", line
    )
    assert got == {SGL: "unverified"} and "DF147" in codes


def test_recipes_serve_the_export_where_the_release_reads_it(capsys, tmp_path: Path) -> None:
    export, target = _pair(tmp_path)
    _, out, _ = run(
        capsys,
        "check",
        str(export),
        "--target",
        str(target),
        "--engine",
        SGL,
        "--engine",
        V34,
        "--recipe",
        "--format",
        "json",
    )
    report = json.loads(out)
    (recipe,) = report["recipes"]
    assert recipe["engine"] == "sglang"
    assert f"--speculative-draft-model-path {export}" in recipe["command"]
    assert f"--model-path {target}" in recipe["command"]
    (none,) = report["no_recipes"]
    assert none["engine"] == "vllm" and "DF220" in none["reason"]


def test_matrix_of_an_export(capsys, tmp_path: Path) -> None:
    export, target = _pair(tmp_path)
    code, out, err = run(capsys, "matrix", str(export), "--target", str(target), "--format", "json")
    assert code == 0, err
    rows = {(r["engine"], r["verdict"]) for r in json.loads(out)["rows"]}
    assert ("sglang", "compatible") in rows and ("vllm", "incompatible") in rows
    assert ("trtllm", "unverified") in rows and ("trtllm", "compatible") not in rows


@pytest.mark.parametrize("extra", [(), ("--method", "mtp")])
def test_an_export_without_its_target_is_a_usage_error(capsys, tmp_path, extra) -> None:
    export, _ = _pair(tmp_path)
    code, out, err = run(capsys, "check", str(export), *extra)
    assert code == 2 and out == "" and "add --target TARGET" in err


def test_a_target_with_target_and_method_mtp_is_a_usage_error(capsys, tmp_path: Path) -> None:
    _, target = _pair(tmp_path)
    code, _, err = run(capsys, "check", str(target), "--target", str(target), "--method", "mtp")
    assert code == 2 and "drop --target" in err
