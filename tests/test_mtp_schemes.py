"""DF540 on quantization schemes beyond FP8 block and compressed-tensors: ModelOpt
(`hf_quant_config.json`, FP8 and NVFP4) and Quark (`exclude`: FP8, MXFP4, NVFP4), on tiny
real targets (tests/mtp_factory.py), each exclusion written as that scheme's exporter writes
it. The expected verdicts are those the engines' own code gave on a CPU where the scheme
builds there (vLLM 0.34.0: ModelOpt FP8, Quark FP8) and what the code read says elsewhere
(the engine data's `mtp_exclusion_match` and `mtp_quant_uncovered`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from draftfit.checker import check_path
from draftfit.checkpoint import load_checkpoint
from draftfit.draft.mtp import read_quant
from draftfit.engines.launch import settings_from
from draftfit.engines.name_patterns import NameList
from draftfit.engines.procedure.mtp_exclusions import MODELOPT_PARTS, excluded
from draftfit.engines.procedure.mtp_matching import FUSED_TAILS
from draftfit.errors import UsageError
from draftfit.mtp_check import mtp_target
from draftfit.report import Verdict
from tests.mtp_factory import mtp_target as write_target

V34, V0102, SGL = "vllm==0.34.0", "vllm==0.10.2", "sglang==0.5.23"


def _check(path: Path, engine: str) -> tuple[Verdict, list[dict[str, object]]]:
    report = check_path(path, engines=[engine], method="mtp")
    (result,) = report.engines
    findings = [f.to_dict() for f in report.findings if f.rule.code == "DF540"]
    return result.verdict, findings


@pytest.mark.parametrize(
    ("quant", "scheme", "source"),
    [
        ("modelopt_fp8", "modelopt-fp8", "hf_quant_config.json"),
        ("modelopt_nvfp4", "modelopt-nvfp4", "hf_quant_config.json"),
        ("quark_fp8", "quark-fp8", "config.json"),
        ("quark_mxfp4", "quark-mxfp4", "config.json"),
        ("quark_nvfp4", "quark-nvfp4", "config.json"),
        ("fp8", "fp8", "config.json"),
    ],
)
def test_the_scheme_is_read_from_the_file_the_engines_read(
    tmp_path: Path, quant: str, scheme: str, source: str
) -> None:
    path = write_target(tmp_path / "t", quant=quant, exclude="checkpoint")
    target = mtp_target(load_checkpoint(path))
    assert target.quant.scheme == scheme and target.quant.source == source
    assert "model.layers.2.self_attn.o_proj" in target.quant.exclusions


def test_a_config_json_quantization_config_is_read_before_hf_quant_config() -> None:
    quant = read_quant(
        {"quantization_config": {"quant_method": "fp8"}},
        {"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}},
    )
    assert quant.scheme == "fp8" and quant.source == "config.json"
    modelopt = read_quant({}, {"quantization": {"quant_algo": "nvfp4_awq"}})
    assert modelopt.method == "modelopt" and modelopt.scheme == "modelopt-nvfp4"


# (scheme, exclusion as the exporter writes it) -> verdict per release. vLLM 0.34.0's
# ModelOpt and Quark FP8 rows were run on a CPU (dev/mtp-schemes-oracle-results.md).
CASES = {
    # not excluded: BF16 cast into float8, scales unset (vLLM); SGLang: as FP8 per family
    ("modelopt_fp8", None): {V34: "drafts-garbage", SGL: "drafts-garbage", V0102: "unverified"},
    # ModelOpt's own `model.layers.2*`: the whole layer, head included (vLLM: run)
    ("modelopt_fp8", "glob"): {V34: "compatible", SGL: "drafts-garbage"},
    # every module by name, but not the MTP head, which vLLM's ModelOpt quantizes: 0.34.0
    # installs the target's head in its place after loading (run)
    ("modelopt_fp8", "checkpoint"): {V34: "compatible"},
    # SGLang's runtime names: its NextN layer is covered there
    ("modelopt_fp8", "runtime"): {SGL: "compatible"},
    # packed 4-bit weights: a BF16 tensor does not fit (read); SGLang's DeepSeek and GLM
    # NextN classes build the layer unquantized for `modelopt_fp4` (read): nothing to exclude
    ("modelopt_nvfp4", None): {V34: "incompatible", SGL: "compatible"},
    ("modelopt_nvfp4", "glob"): {V34: "compatible"},
    # Quark: exact names and `re:` honoured; a `*` wildcard is not (run for FP8)
    ("quark_fp8", None): {V34: "drafts-garbage", SGL: "drafts-garbage"},
    ("quark_fp8", "checkpoint"): {V34: "compatible"},
    ("quark_fp8", "glob"): {V34: "drafts-garbage"},
    ("quark_fp8", "regex"): {V34: "compatible"},
    ("quark_mxfp4", None): {V34: "incompatible"},
    ("quark_mxfp4", "glob"): {V34: "incompatible"},
    ("quark_mxfp4", "regex"): {V34: "compatible"},
    ("quark_nvfp4", None): {V34: "incompatible"},
    # GPTQ (vLLM 0.34.0, run): the BF16 experts are built GPTQ (tests/test_mtp_gptq.py) and
    # have no parameter for a BF16 weight; SGLang 0.5.23 (run): DeepSeek's loader refuses the
    # BF16 shared experts built GPTQ, GLM-4.5's block refuses GPTQ shared experts
    # (tests/test_mtp_sglang_wna16.py)
    ("gptq_int4", None): {V34: "incompatible", SGL: "incompatible", V0102: "unverified"},
}


@pytest.mark.parametrize(
    ("quant", "exclude", "engine"),
    [(q, x, e) for (q, x), by in CASES.items() for e in by],
)
@pytest.mark.parametrize("family", ["deepseek_v3", "glm4_moe"])
def test_each_scheme_gets_the_verdict_of_its_matching_and_loading(
    tmp_path: Path, family: str, quant: str, exclude: str | None, engine: str
) -> None:
    path = write_target(tmp_path / "t", family, quant=quant, exclude=exclude)
    verdict, findings = _check(path, engine)
    expected = CASES[(quant, exclude)][engine]
    if engine == SGL and quant in ("modelopt_fp8", "quark_fp8") and expected == "drafts-garbage":
        # SGLang's FP8 loaders: DeepSeek's MLA refuses the downcast, GLM casts silently
        expected = "incompatible" if family == "deepseek_v3" else "drafts-garbage"
    assert verdict.value == expected, findings


def test_sglang_builds_a_modelopt_nvfp4_mtp_layer_unquantized(tmp_path: Path) -> None:
    """SGLang 0.5.23's DeepSeek / GLM NextN classes drop a `modelopt_fp4` quantization: a BF16
    MTP layer needs no exclusion there (vLLM refuses it), and an MTP layer stored in NVFP4 is
    loaded into the unquantized layer, which was not read: unverified, never compatible."""
    bf16 = write_target(tmp_path / "bf16", quant="modelopt_nvfp4")
    assert _check(bf16, SGL) == (Verdict.COMPATIBLE, [])
    assert _check(bf16, V34)[0] is Verdict.INCOMPATIBLE
    packed = write_target(tmp_path / "nvfp4", quant="modelopt_nvfp4", mtp_quantized=True)
    verdict, findings = _check(packed, SGL)
    assert verdict is Verdict.UNVERIFIED and findings == []
    report = check_path(packed, engines=[SGL], method="mtp")
    assert any("stores it quantized" in reason for reason in report.engines[0].unverified_reasons)


def test_the_fix_names_the_entry_of_each_scheme_and_the_file_it_goes_in(tmp_path: Path) -> None:
    modelopt = write_target(tmp_path / "mo", quant="modelopt_fp8")
    _, (vllm,) = _check(modelopt, V34)
    assert "add `model.layers.2*` to `exclude_modules` of hf_quant_config.json" in str(vllm["fix"])
    assert vllm["location"]["file"] == "hf_quant_config.json"
    _, (sglang,) = _check(modelopt, SGL)
    assert "add `model.decoder*`" in str(sglang["fix"])
    quark = write_target(tmp_path / "qk", quant="quark_mxfp4", exclude="glob")
    _, (finding,) = _check(quark, V34)
    assert "add `re:model\\.layers\\.2\\..*` to `exclude` of config.json" in str(finding["fix"])
    assert "shape error" in str(finding["message"])


def test_the_fix_entry_written_in_clears_the_finding(tmp_path: Path) -> None:
    """The entry DF540's fix names, added to the file it names, leaves nothing to report."""
    path = write_target(tmp_path / "t", "glm4_moe", quant="modelopt_nvfp4")
    assert _check(path, V34)[0] is Verdict.INCOMPATIBLE
    quant_file = path / "hf_quant_config.json"
    data = json.loads(quant_file.read_text())
    data["quantization"]["exclude_modules"].append("model.layers.2*")
    quant_file.write_text(json.dumps(data))
    assert _check(path, V34)[0] is Verdict.COMPATIBLE
    quark = write_target(tmp_path / "q", "deepseek_v3", quant="quark_fp8")
    config = json.loads((quark / "config.json").read_text())
    config["quantization_config"]["exclude"].append(r"re:model\.layers\.2\..*")
    (quark / "config.json").write_text(json.dumps(config))
    assert _check(quark, V34)[0] is Verdict.COMPATIBLE


def test_a_graded_launch_of_a_modelopt_target(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", quant="modelopt_fp8")
    launch = 'vllm serve T --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\''
    report = check_path(path, engines=[V34], serve=settings_from(serve_args=launch))
    (result,) = report.engines
    assert result.verdict is Verdict.DRAFTS_GARBAGE
    assert result.to_dict()["mtp"]["quantization"] == "modelopt-fp8"


@pytest.mark.parametrize(
    ("quant", "engines", "file", "entries"),
    [
        ("modelopt_fp8", [V34], "hf_quant_config.json", ["model.layers.2*"]),
        ("modelopt_nvfp4", [V34], "hf_quant_config.json", ["model.layers.2*"]),
        ("modelopt_fp8", [SGL], "hf_quant_config.json", ["model.decoder*"]),
        ("modelopt_fp8", [V34, SGL], "hf_quant_config.json", ["model.layers.2*", "model.decoder*"]),
        ("quark_fp8", [V34], "config.json", [r"re:model\.layers\.2\..*"]),
        ("quark_mxfp4", [V34], "config.json", [r"re:model\.layers\.2\..*"]),
    ],
)
@pytest.mark.parametrize("family", ["deepseek_v3", "glm4_moe"])
def test_convert_writes_each_schemes_entry_in_its_file(
    tmp_path: Path, family: str, quant: str, engines: list[str], file: str, entries: list[str]
) -> None:
    """`convert --method mtp` adds the whole-layer entry of each release's rule to the list
    and file the check's fix names; the input is untouched and the output checks clean at
    every release converted for."""
    from draftfit.conversion.mtp_convert import convert_mtp_path

    path = write_target(tmp_path / "t", family, quant=quant)
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    for engine in engines:
        assert _check(path, engine)[0] is not Verdict.COMPATIBLE
    out = tmp_path / "out"
    result = convert_mtp_path(path, out, engines)
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before
    written = json.loads((out / file).read_text())
    holder = (
        written["quantization"]
        if file == "hf_quant_config.json"
        else written["quantization_config"]
    )
    key = "exclude_modules" if quant.startswith("modelopt") else "exclude"
    original = json.loads((path / file).read_text())
    kept = (
        original["quantization"]
        if file == "hf_quant_config.json"
        else original["quantization_config"]
    )[key]
    assert holder[key] == [*kept, *entries]
    assert result.report is not None
    assert all(r.verdict is Verdict.COMPATIBLE for r in result.report.engines)
    for engine in engines:
        assert _check(out, engine)[0] is Verdict.COMPATIBLE
    # every other file is the input's (tensors copied, the config as it was for ModelOpt)
    if file == "hf_quant_config.json":
        assert json.loads((out / "config.json").read_text()) == json.loads(
            (path / "config.json").read_text()
        )


def test_convert_refuses_a_scheme_a_release_has_not_read(tmp_path: Path) -> None:
    """Quark on SGLang 0.5.22 was not read: convert writes nothing and says to choose a read
    release; at 0.5.23 (run) it leaves the `exclude` entries to the hand, as the check names
    them. The input is untouched."""
    from draftfit.conversion.mtp_convert import convert_mtp_path

    path = write_target(tmp_path / "t", quant="quark_fp8")
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    with pytest.raises(UsageError, match=r"has not read how SGLang 0\.5\.22 matches `quark-fp8`"):
        convert_mtp_path(path, tmp_path / "out", ["sglang==0.5.22"])
    with pytest.raises(UsageError, match=r"does not write SGLang 0\.5\.23's fix"):
        convert_mtp_path(path, tmp_path / "out", [SGL])
    assert not (tmp_path / "out").exists()
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before


def test_an_fp8_config_with_both_exclusion_keys_is_read_as_each_engine_reads_it(
    tmp_path: Path,
) -> None:
    """vLLM's FP8 config reads `ignored_layers`, else (when empty) `modules_to_not_convert`;
    SGLang's the first key written, even an empty one. The MTP layer listed only in the
    list an engine does not read is not excluded there."""
    listed = write_target(tmp_path / "ckpt", quant="fp8", exclude="checkpoint")
    assert _check(listed, V34)[0] is Verdict.COMPATIBLE
    config = json.loads((listed / "config.json").read_text())
    config["quantization_config"]["ignored_layers"] = ["lm_head"]
    (listed / "config.json").write_text(json.dumps(config))
    verdict, findings = _check(listed, V34)
    assert verdict is Verdict.DRAFTS_GARBAGE and findings
    config["quantization_config"]["ignored_layers"] = []
    (listed / "config.json").write_text(json.dumps(config))
    assert _check(listed, V34)[0] is Verdict.COMPATIBLE
    runtime = write_target(tmp_path / "runtime", quant="fp8", exclude="runtime")
    assert _check(runtime, SGL)[0] is Verdict.COMPATIBLE
    config = json.loads((runtime / "config.json").read_text())
    config["quantization_config"]["ignored_layers"] = []
    (runtime / "config.json").write_text(json.dumps(config))
    assert _check(runtime, SGL)[0] is Verdict.INCOMPATIBLE


@given(
    entry=st.text(alphabet="ab.*", min_size=1, max_size=8),
    name=st.text(alphabet="ab.", max_size=10),
)
def test_sglang_modelopt_globs_match_as_its_regular_expressions_do(entry: str, name: str) -> None:
    """SGLang's ModelOpt reads an entry as a regular expression (`.` literal, `*` any run)
    matched against the name or one of its parts: draftfit matches globs of literals and
    `*` without a regular expression (linear whatever the number of `*`), with the same
    answers."""
    pattern = re.compile(entry.replace(".", r"\.").replace("*", ".*"))
    expected = pattern.fullmatch(name) is not None or any(
        pattern.fullmatch(part) is not None for part in name.split(".")
    )
    tail = entry.rsplit(".", 1)[-1]
    expected |= tail in FUSED_TAILS and tail in name.split(".")[-1]
    assert excluded(name, (entry,), NameList([], "x"), MODELOPT_PARTS) is expected


def test_many_stars_are_matched_in_linear_time() -> None:
    entry = "*a" * 40 + "*"
    name = "a" * 39 + "b" * 400
    assert not excluded(name, (entry,), NameList([], "x"), MODELOPT_PARTS)


def test_a_quark_pattern_draftfit_cannot_match_safely_is_not_judged(tmp_path: Path) -> None:
    path = write_target(tmp_path / "t", quant="quark_fp8", exclude="regex")
    config = json.loads((path / "config.json").read_text())
    config["quantization_config"]["exclude"].append(r"re:(.*)*x")
    (path / "config.json").write_text(json.dumps(config))
    report = check_path(path, engines=[V34], method="mtp")
    assert report.engines[0].verdict is Verdict.UNVERIFIED
    assert any("cannot bound" in r for r in report.engines[0].unverified_reasons)


@pytest.mark.parametrize(
    ("quant", "compressed", "engine", "key"),
    [
        ("fp8", False, V34, "modules_to_not_convert"),
        ("fp8", False, SGL, "modules_to_not_convert"),
        ("fp8", True, SGL, "ignore"),
        ("modelopt_fp8", False, SGL, "exclude_modules"),
        ("quark_fp8", False, SGL, "exclude"),
    ],
)
def test_the_fix_names_the_list_to_write_where_the_config_has_none(
    tmp_path: Path, quant: str, compressed: bool, engine: str, key: str
) -> None:
    """A quantized target whose config lists no module yet: DF540's fix names the key the
    release's config class reads (it named `None`)."""
    path = write_target(tmp_path / "t", quant=quant, compressed=compressed)
    _, findings = _check(path, engine)
    fixes = [str(f["fix"]) for f in findings if f["code"] == "DF540"]
    assert fixes and all("`None`" not in f for f in fixes), fixes
    assert any(f"`{key}`" in f or f".{key}`" in f for f in fixes), fixes
