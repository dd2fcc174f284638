"""DF211: a quantized draft whose layers lack the scales (or zero points) their scheme
needs loads everywhere and drafts garbage; the finding says, per release, whether the engine
copies the raw values into unquantized weights or leaves the missing scales uninitialised."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.engines.draft_quant import missing_quant_data, read_draft_quant, required_data
from draftfit.report import FAILING_VERDICTS, Report
from tests import factory as f

ENGINES = ("vllm==0.10.2", "vllm==0.11.0", "vllm==0.11.1", "vllm==0.34.0", "sglang==0.5.23")


def _without_scales(draft: f.Draft) -> f.Draft:
    return draft.drop(*[n for n in draft.tensors if n.endswith(".weight_scale")])


def _check(draft: f.Draft, tmp: Path, *engines: str) -> Report:
    path = draft.write(tmp / "draft")
    return check_path(path, target=f.llama_target(tmp / "target"), engines=list(engines))


def _df211(report: Report, label: str) -> list[str]:
    return [
        x.message
        for x in report.findings
        if x.code == "DF211" and label in [e.label for e in x.engines]
    ]


def test_fp8_draft_without_scales_is_not_compatible_on_0_10_2(tmp_path: Path) -> None:
    report = _check(_without_scales(f.quantize_fp8(f.specforge())), tmp_path, "vllm==0.10.2")
    assert report.engines[0].verdict == "drafts-garbage"
    assert report.exit_code() == 1
    [message] = _df211(report, "vllm==0.10.2")
    assert "no `weight_scale` is stored for 8 quantized layers (first `fc`)" in message
    assert (
        "vLLM 0.10.2 builds them unquantized and copies the stored F8_E4M3 values into its "
        "weights as they are, without scales" in message
    )
    assert "drafts garbage" in message
    finding = next(x for x in report.findings if x.code == "DF211")
    assert str(finding.severity) == "error"
    assert any("linear.py" in s and "@v0.10.2" in s for s in finding.citations)


@pytest.mark.parametrize("label", ["vllm==0.11.1", "vllm==0.34.0", "sglang==0.5.23"])
def test_releases_that_build_the_scheme_leave_the_scales_uninitialised(
    tmp_path: Path, label: str
) -> None:
    report = _check(_without_scales(f.quantize_fp8(f.specforge())), tmp_path, label)
    [message] = _df211(report, label)
    assert "builds them with the fp8 scheme and leaves each missing `weight_scale`" in message
    assert report.engines[0].verdict == "drafts-garbage"


def test_each_release_says_what_it_does(tmp_path: Path) -> None:
    report = _check(_without_scales(f.quantize_fp8(f.specforge())), tmp_path, *ENGINES)
    assert all(e.verdict in FAILING_VERDICTS for e in report.engines)
    assert "unquantized" in _df211(report, "vllm==0.11.0")[0]
    assert "fp8 scheme" in _df211(report, "vllm==0.34.0")[0]


def test_with_its_scales_the_finding_is_absent(tmp_path: Path) -> None:
    report = _check(f.quantize_fp8(f.specforge()), tmp_path, *ENGINES)
    assert not [x for x in report.findings if x.code == "DF211"]
    assert report.engines[3].verdict == "compatible"  # vllm==0.34.0


def test_one_layer_without_its_scale_is_named(tmp_path: Path) -> None:
    draft = f.quantize_fp8(f.specforge()).drop("midlayer.self_attn.o_proj.weight_scale")
    report = _check(draft, tmp_path, "vllm==0.34.0")
    [message] = _df211(report, "vllm==0.34.0")
    assert "for the quantized layer `midlayer.self_attn.o_proj`: vLLM 0.34.0 builds it" in message


def test_a_dequantized_copy_with_its_quantization_config_left_in(tmp_path: Path) -> None:
    """bf16 weights under an FP8 `quantization_config`: 0.10.2 builds the layers unquantized
    and loads them right; 0.34.0 builds the FP8 scheme and has no scales."""
    draft = _without_scales(f.quantize_fp8(f.specforge()))
    plain = f.specforge()
    for name, tensor in plain.tensors.items():
        draft.tensors[name] = tensor
    report = _check(draft, tmp_path, "vllm==0.10.2", "vllm==0.34.0")
    assert not _df211(report, "vllm==0.10.2")
    assert _df211(report, "vllm==0.34.0")


def test_the_scheme_decides_what_is_needed() -> None:
    fp8 = read_draft_quant(f.quantize_fp8(f.specforge()).config)
    assert fp8 is not None and required_data(fp8) == ("weight_scale",)
    packed = f.quantize_packed(f.specforge())
    q = read_draft_quant(packed.config)
    assert q is not None and "weight_scale" in required_data(q)
    dtypes = {name: t.dtype for name, t in packed.tensors.items()}
    assert missing_quant_data(q, dtypes) == []
    dtypes = {n: d for n, d in dtypes.items() if not n.endswith(".weight_scale")}
    assert missing_quant_data(q, dtypes)


def test_norms_and_embeddings_are_not_quantized_layers() -> None:
    q = read_draft_quant(f.quantize_fp8(f.specforge()).config)
    assert q is not None
    dtypes = {"midlayer.input_layernorm.weight": "BF16", "embed_tokens.weight": "BF16"}
    assert missing_quant_data(q, dtypes) == []
