"""Recipes, convert, matrix and diff of targets carrying MTP layers, on real tiny targets.

Every printed recipe is run back through the command line as it will run (its `draftfit
convert` step written, its launch given to `check` as `--serve-args`) and must check clean;
a convert output must check clean and leave the input byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
from pathlib import Path

import pytest

from draftfit.checkpoint import load_checkpoint
from draftfit.cli.main import main
from tests.mtp_factory import mtp_target

ENGINES = ("--engine", "vllm==0.34.0", "--engine", "vllm==0.10.2", "--engine", "sglang==0.5.23")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def tensor_bytes(folder: Path) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    checkpoint = load_checkpoint(folder)
    out = {}
    for name, info in checkpoint.tensors.items():
        assert info.byte_range is not None
        start, end = info.byte_range
        with open(folder / info.file, "rb") as handle:
            handle.seek(start)
            out[name] = (info.dtype, info.shape, handle.read(end - start))
    return out


def recipes(capsys: pytest.CaptureFixture[str], target: Path) -> dict[str, object]:
    code, out, _ = run(
        capsys, "check", str(target), "--method", "mtp", "--recipe", *ENGINES, "--format", "json"
    )
    assert code in (0, 1)
    data: dict[str, object] = json.loads(out)
    return data


def replay(capsys: pytest.CaptureFixture[str], recipe: dict[str, object], tmp: Path) -> None:
    """Run the recipe's steps and check its launch: no error may remain."""
    served: str | None = None
    for step in recipe["steps"]:  # type: ignore[union-attr]
        words = shlex.split(str(step))
        assert words[:2] == ["draftfit", "convert"], step
        code, _, err = run(capsys, *words[1:])
        assert code == 0, err
        served = words[words.index("-o") + 1]
    command = str(recipe["command"]).replace("\\\n", " ")
    model = served or shlex.split(command)[2 if command.startswith("vllm") else 4]
    code, out, err = run(
        capsys,
        "check",
        model,
        "--engine",
        f"{recipe['engine']}=={recipe['version']}",
        "--serve-args",
        command,
        "--format",
        "json",
    )
    assert code == 0, out + err
    (engine,) = json.loads(out)["engines"]
    assert engine["verdict"] == "compatible"
    if served is not None:
        shutil.rmtree(served)  # the next release's recipe writes its own


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("deepseek", {}),
        ("glm", {"family": "glm4_moe"}),
        ("qwen3-next", {"family": "qwen3_next", "depth": None}),
        ("two-layers", {"depth": 2, "ship": 2}),
        ("fp8-bf16-mtp", {"quant": "fp8"}),
        ("fp8-mtp-quantized", {"quant": "fp8", "mtp_quantized": True}),
        # the convert step of each scheme's exclusion (in hf_quant_config.json for ModelOpt)
        ("modelopt-fp8", {"quant": "modelopt_fp8"}),
        ("modelopt-nvfp4", {"quant": "modelopt_nvfp4"}),
        ("quark-fp8", {"quant": "quark_fp8"}),
        ("quark-mxfp4", {"quant": "quark_mxfp4"}),
        ("gptq", {"quant": "gptq_int4", "engine_ready": True}),
        ("gptq-qwen", {"family": "qwen3_next", "quant": "gptq_int4", "engine_ready": True}),
    ],
)
def test_every_printed_recipe_checks_clean_as_it_runs(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    options: dict[str, object],
) -> None:
    monkeypatch.chdir(tmp_path)
    target = mtp_target(Path(name), **options)  # type: ignore[arg-type]
    data = recipes(capsys, target)
    shown = data["recipes"]
    assert isinstance(shown, list) and shown
    for recipe in shown:
        replay(capsys, recipe, tmp_path)


def test_recipes_name_the_method_and_draft_path_each_release_needs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    glm = recipes(capsys, mtp_target(tmp_path / "glm", "glm4_moe"))
    by_release = {(r["engine"], r["version"]): r for r in glm["recipes"]}  # type: ignore[union-attr]
    assert by_release["vllm", "0.34.0"]["config"] == {"method": "mtp", "num_speculative_tokens": 1}
    old = by_release["vllm", "0.10.2"]["config"]
    assert old["method"] == "deepseek_mtp" and old["model"] == str(tmp_path / "glm")
    assert "--speculative-algorithm NEXTN" in by_release["sglang", "0.5.23"]["command"]
    assert "--speculative-draft-model-path" not in by_release["sglang", "0.5.23"]["command"]
    qwen = recipes(capsys, mtp_target(tmp_path / "qn", "qwen3_next", depth=None))
    sglang = [r for r in qwen["recipes"] if r["engine"] == "sglang"]  # type: ignore[union-attr]
    # not a listed architecture, but the draft worker falls back to the target's path
    assert sglang and all("--speculative-draft-model-path" not in r["command"] for r in sglang)
    two = recipes(capsys, mtp_target(tmp_path / "two", depth=2, ship=2))
    vllm = [r for r in two["recipes"] if r["version"] == "0.34.0"]  # type: ignore[union-attr]
    assert vllm[0]["config"]["num_speculative_tokens"] == 2


def test_a_target_no_launch_fixes_gets_one_line_per_release(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = recipes(capsys, mtp_target(tmp_path / "none", ship=0))
    assert data["recipes"] == []
    missing = data["no_recipes"]
    assert isinstance(missing, list) and len(missing) == 3
    assert all(m["reason"].startswith("DF220 mtp-layer-missing remains") for m in missing)
    code, out, _ = run(capsys, "check", str(tmp_path / "none"), "--method", "mtp", "--recipe")
    assert code == 1 and out.count("No recipe for ") == 1
    # SGLang's single-layer limit is not a launch's to fix
    two = recipes(capsys, mtp_target(tmp_path / "two", depth=2, ship=2))
    (sglang,) = [m for m in two["no_recipes"] if m["engine"] == "sglang"]  # type: ignore[union-attr]
    assert sglang["reason"].startswith("DF145")


def test_the_exclusion_fix_is_a_convert_step_with_each_engines_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = recipes(capsys, mtp_target(tmp_path / "t", quant="fp8"))
    by_engine = {r["engine"]: r for r in data["recipes"]}  # type: ignore[union-attr]
    vllm, sglang = by_engine["vllm"], by_engine["sglang"]
    assert vllm["steps"][0].startswith("draftfit convert ")
    assert "--engine vllm==" in vllm["steps"][0] and vllm["command"].count("-mtp-vllm") == 1
    assert "--engine sglang==0.5.23" in sglang["steps"][0]


def test_convert_writes_the_exclusions_and_leaves_the_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = mtp_target(tmp_path / "t", quant="fp8")
    before = digest(source)
    out = tmp_path / "fixed"
    code, _, err = run(
        capsys,
        "convert",
        str(source),
        "--method",
        "mtp",
        "--engine",
        "vllm==0.34.0",
        "--engine",
        "sglang==0.5.23",
        "-o",
        str(out),
    )
    assert code == 0, err
    assert digest(source) == before
    config = json.loads((out / "config.json").read_text())
    listed = config["quantization_config"]["modules_to_not_convert"]
    # vLLM's checkpoint names, both shards of the fused projection; SGLang's runtime names
    assert "model.layers.2.self_attn.q_a_proj" in listed
    assert "model.layers.2.self_attn.kv_a_proj_with_mqa" in listed
    assert "model.decoder.mlp.experts" in listed
    # every tensor is the input's, byte for byte (the headers are written anew)
    assert tensor_bytes(out) == tensor_bytes(source)
    code, out_text, _ = run(
        capsys, "check", str(out), "--method", "mtp", *ENGINES, "--format", "json"
    )
    verdicts = {e["version"]: e["verdict"] for e in json.loads(out_text)["engines"]}
    # vLLM 0.10.2 builds an FP8 target's fused MoE quantized whatever the list says
    # (fp8.py:176-177@v0.10.2): the converted target is fixed for the releases converted for
    assert verdicts == {"0.34.0": "compatible", "0.10.2": "drafts-garbage", "0.5.23": "compatible"}
    assert code == 1
    # the input itself is still judged as it was
    code, _, _ = run(capsys, "check", str(source), "--method", "mtp", "--engine", "vllm==0.34.0")
    assert code == 1


def test_convert_for_one_engine_fixes_that_engine_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = mtp_target(tmp_path / "t", quant="fp8", compressed=True)
    out = tmp_path / "fixed"
    code, _, err = run(
        capsys,
        "convert",
        str(source),
        "--method",
        "mtp",
        "--engine",
        "vllm==0.34.0",
        "-o",
        str(out),
    )
    assert code == 0, err
    ignore = json.loads((out / "config.json").read_text())["quantization_config"]["ignore"]
    assert ignore[0] == "lm_head" and "model.layers.2.self_attn.q_a_proj" in ignore
    assert not any(name.startswith("model.decoder.") for name in ignore)


def test_convert_says_what_the_exporter_must_do_where_no_config_fixes_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    plain = mtp_target(tmp_path / "plain")
    code, _, err = run(capsys, "convert", str(plain), "--method", "mtp", "-o", str(tmp_path / "o"))
    assert code == 2 and "not quantized" in err and not (tmp_path / "o").exists()
    covered = mtp_target(tmp_path / "c", quant="fp8", mtp_quantized=True)
    code, _, err = run(
        capsys, "convert", str(covered), "--method", "mtp", "-o", str(tmp_path / "o")
    )
    assert code == 2 and "nothing to convert" in err and not (tmp_path / "o").exists()
    code, _, err = run(capsys, "convert", str(plain), "-o", str(tmp_path / "o"))
    assert code == 2 and "--to" in err


def test_matrix_groups_releases_and_marks_unread_ones_unverified(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = mtp_target(tmp_path / "t", quant="fp8")
    code, out, _ = run(capsys, "matrix", str(target), "--method", "mtp", "--format", "json")
    assert code == 0
    rows = json.loads(out)["rows"]
    by_range = {(r["engine"], r["range"]): r for r in rows}
    # the quantization facts were read from 0.11.0 on: one range with 0.34.0
    assert by_range["vllm", "0.11.0–0.34.0"]["verdict"] == "drafts-garbage"
    assert by_range["vllm", "0.8.0–0.10.1.1"]["verdict"] == "unverified"
    assert by_range["sglang", "0.5.23"]["verdict"] == "incompatible"
    assert by_range["sglang", "0.5.20–0.5.22"]["verdict"] == "unverified"
    assert by_range["vllm", "0.11.0–0.34.0"]["recipe"]["steps"][0].startswith("draftfit convert")
    assert all(r["verdict"] == "unverified" for r in rows if r["engine"] == "trtllm")
    code, out, _ = run(capsys, "matrix", str(target), "--method", "mtp", "--format", "markdown")
    assert "| vLLM | 0.11.0–0.34.0 | drafts-garbage |" in out
    code, out, _ = run(capsys, "matrix", str(target), "--method", "mtp", "--fail-on", "error")
    assert code == 1 and "vLLM" in out


def test_diff_of_a_quantized_export_against_its_original(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    original = mtp_target(tmp_path / "bf16")
    export = mtp_target(tmp_path / "fp8", quant="fp8")
    code, out, _ = run(
        capsys, "diff", str(export), str(original), "--method", "mtp", *ENGINES, "--format", "json"
    )
    assert code == 1
    data = json.loads(out)
    codes = {f["code"] for f in data["findings"]}
    assert "DF808" in codes and "DF812" in codes
    verdicts = {e["version"]: e["verdict"] for e in data["engines"]}
    assert verdicts["0.34.0"] == "different"
    quantized = mtp_target(tmp_path / "fp8q", quant="fp8", mtp_quantized=True)
    code, out, _ = run(
        capsys, "diff", str(quantized), str(export), "--method", "mtp", "--format", "json"
    )
    data = json.loads(out)
    assert {f["code"] for f in data["findings"]} >= {"DF808", "DF813"}
    dropped = mtp_target(tmp_path / "drop", drop=("eh_proj.weight",))
    code, out, _ = run(capsys, "diff", str(dropped), str(original), "--method", "mtp")
    assert code == 1 and "DF806" in out and "`eh_proj`" in out
    code, out, _ = run(capsys, "diff", str(original), str(original), "--method", "mtp")
    assert code == 0 and "equivalent" in out


@pytest.mark.parametrize(
    ("options", "pointer"),
    [
        ({"quant": "modelopt_fp8"}, "hf_quant_config.json:/quantization/exclude_modules"),
        ({"quant": "quark_fp8"}, "/quantization_config/exclude"),
        ({"quant": "gptq_int4", "engine_ready": True}, "/quantization_config/dynamic"),
    ],
)
def test_each_schemes_exclusion_is_the_recipes_convert_step(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, options: dict[str, object], pointer: str
) -> None:
    """A BF16 MTP layer left out of a ModelOpt, Quark or GPTQ exclusion list: vLLM 0.34.0's
    recipe converts first, and its note names where the entry is written."""
    data = recipes(capsys, mtp_target(tmp_path / "t", **options))  # type: ignore[arg-type]
    (vllm,) = [r for r in data["recipes"] if r["version"] == "0.34.0"]  # type: ignore[union-attr]
    assert vllm["steps"][0].startswith("draftfit convert ")
    assert any(f"to `{pointer}`" in note for note in vllm["notes"])
