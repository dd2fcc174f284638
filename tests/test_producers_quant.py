"""What draftfit says about quantized drafts and about producers that are not plain EAGLE-3
drafts: the fix each finding gives must be right for that engine version."""

from __future__ import annotations

from pathlib import Path

from draftfit.checker import check_path
from draftfit.draft.dialects import EAGLE4, NEMO_AUTOMODEL
from draftfit.report import Report
from tests import factory as f


def _check(draft: f.Draft, tmp: Path, *engines: str) -> Report:
    path = draft.write(tmp / "draft")
    return check_path(path, target=f.llama_target(tmp / "target"), engines=engines)


def test_fp8_draft_scales_load_on_0_34(tmp_path: Path) -> None:
    head = f.quantize_fp8(f.specforge(), ignore=[], targets=["Linear", "lm_head"])
    report = _check(head, tmp_path, "vllm==0.34.0")
    assert report.engines[0].verdict == "compatible"
    assert not [x for x in report.findings if x.code == "DF201"]


def test_fp8_draft_before_0_11_1_names_the_release_that_reads_its_config(tmp_path: Path) -> None:
    report = _check(f.quantize_fp8(f.specforge()), tmp_path, "vllm==0.11.0")
    rejected = [x for x in report.findings if x.code == "DF201"]
    # Seven quantized linear layers (q, k, v, o, gate, up, down) and fc: one scale each.
    assert len(rejected) == 8
    assert all("vLLM >= 0.11.1" in (x.fix or "") for x in rejected)
    assert all("target's quantization config" in x.message for x in rejected)


def test_quantized_lm_head_needs_0_20(tmp_path: Path) -> None:
    # 0.19.0 passes the draft's quantization config to the head, but compressed-tensors
    # returns no quantization method for a ParallelLMHead before 0.20.0.
    head = f.quantize_fp8(f.specforge(), ignore=[], targets=["Linear", "lm_head"])
    for version in ("0.18.0", "0.19.0"):
        report = _check(head, tmp_path / version, f"vllm=={version}")
        rejected = [x for x in report.findings if x.code == "DF201"]
        assert [x.message.split("`")[1] for x in rejected] == ["lm_head.weight_scale"]
        assert "vLLM >= 0.20.0" in (rejected[0].fix or "")


def test_fp8_draft_config_dtype_is_not_a_mismatch(tmp_path: Path) -> None:
    report = _check(f.quantize_fp8(f.specforge()), tmp_path, "vllm==0.34.0")
    assert not [x for x in report.findings if x.code == "DF903"]


def test_eagle4_fix_points_to_the_plugin_not_a_rename(tmp_path: Path) -> None:
    report = _check(f.eagle4(), tmp_path, "vllm==0.34.0", "sglang==0.5.23", "trtllm")
    assert report.dialect.name == EAGLE4
    fixes = [x.fix or "" for x in report.findings if x.code == "DF101"]
    assert len(fixes) == 2  # vLLM and SGLang refuse the class
    assert all("eagle-harness" in fix for fix in fixes)
    assert not any("LlamaForCausalLMEagle3" in fix for fix in fixes)


def test_xpress_is_not_an_eagle_draft(tmp_path: Path) -> None:
    report = _check(f.speculators_non_eagle(), tmp_path, "vllm==0.34.0")
    texts = [f"{x.message} {x.fix}" for x in report.findings]
    assert any("not an EAGLE draft" in t for t in texts)
    assert not any("--method eagle3" in t or '"method": "eagle3"' in t for t in texts)
    assert report.method is None


def test_nemo_export_is_recognised_and_its_aux_ids_are_unknown(tmp_path: Path) -> None:
    report = _check(f.nemo_automodel(), tmp_path, "vllm==0.34.0")
    assert report.dialect.name == NEMO_AUTOMODEL
    unknown = [x for x in report.findings if x.code == "DF315"]
    assert len(unknown) == 1 and "unknown" in unknown[0].message
    fixes = [x.fix or "" for x in report.findings if x.code == "DF101"]
    assert fixes and "strip the `model.` prefix" in fixes[0]


def test_quantization_tensors_of_linear_layers_are_known_roles() -> None:
    from draftfit.draft.tensor_names import is_known_role

    assert is_known_role("layers.0.self_attn.q_proj.weight_scale")
    assert is_known_role("fc.input_scale")
    assert is_known_role("layers.0.mlp.down_proj.weight_packed")
    assert not is_known_role("norm.weight_scale")  # a norm is never quantized
    assert not is_known_role("verifier_lm_head.weight_scale")


def test_convert_keeps_an_fp8_drafts_scales(tmp_path: Path) -> None:
    from draftfit.checkpoint.local import load_checkpoint
    from draftfit.cli.main import main

    draft = f.quantize_fp8(f.specforge()).write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "target")
    out = tmp_path / "out"
    code = main(
        ["convert", str(draft), "--to", "vllm", "-o", str(out), "--target", str(target), "--anyway"]
    )
    assert code == 0
    names = set(load_checkpoint(out).tensors)
    assert "layers.0.self_attn.q_proj.weight_scale" in names
    assert "fc.weight_scale" in names


_HEAD = {"ignore": [], "targets": ["Linear", "lm_head"]}


def test_packed_lm_head_on_mrv2_names_each_fix_its_release_offers(tmp_path: Path) -> None:
    head = f.quantize_packed(f.specforge(), **_HEAD)
    report = _check(head, tmp_path, "vllm==0.33.0")
    found = [x for x in report.findings if x.code == "DF520"]
    assert len(found) == 1
    assert "V2 model runner" in found[0].message
    assert "has no attribute 'weight'" in found[0].message
    assert found[0].location.tensor == "lm_head.weight_packed"
    fix = found[0].fix or ""
    assert "vLLM 0.34.0 or later" in fix
    assert "VLLM_USE_V2_MODEL_RUNNER=0" in fix
    assert "quantization_config.ignore" in fix


def test_nvfp4_lm_head_has_a_weight_at_the_share_check(tmp_path: Path) -> None:
    # NVFP4 stores `weight_packed` too, but renames it to `weight` after loading, before
    # the V2 runner compares the heads.
    draft = f.quantize_packed(f.specforge(), **_HEAD)
    for name in [n for n in draft.tensors if n.endswith(".weight_packed")]:
        module = name.removesuffix(".weight_packed")
        rows, words = draft.tensors[name].shape
        cols = words * 8
        draft.drop(module + ".weight_shape")
        draft.add(name, "U8", (rows, cols // 2))
        draft.add(module + ".weight_scale", "F8_E4M3", (rows, cols // 16))
        draft.add(module + ".weight_global_scale", "F32", (1,))
        draft.add(module + ".input_global_scale", "F32", (1,))
    group = draft.config["quantization_config"]["config_groups"]["group_0"]
    draft.config["quantization_config"]["format"] = "nvfp4-pack-quantized"
    group["weights"] = {
        "num_bits": 4,
        "type": "float",
        "strategy": "tensor_group",
        "group_size": 16,
    }
    report = _check(draft, tmp_path, "vllm==0.33.0")
    assert not [x for x in report.findings if x.code == "DF520"]
    assert not [x for x in report.findings if x.code == "DF201"]
