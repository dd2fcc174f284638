"""`convert --method mtp` for DF541: an MTP layer stored quantized like the backbone whose
modules the exclusion list names. The fix takes those entries out (no tensor byte changes)
where each names no backbone module, and adds what DF540 still needs (Qwen3.5's BF16
`mtp.fc` on vLLM) in the same config. The outputs were loaded by the engines' own code on a
CPU (vLLM 0.34.0, SGLang 0.5.23: every MTP parameter loaded, no error); here each must check
clean again, keep every tensor byte and leave the input as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.mtp_factory import mtp_target
from tests.test_mtp_commands import digest, run, tensor_bytes

V34, S523 = "vllm==0.34.0", "sglang==0.5.23"


def convert(
    capsys: pytest.CaptureFixture[str], source: Path, out: Path, *engines: str
) -> tuple[int, str, str]:
    flags = [word for engine in engines for word in ("--engine", engine)]
    return run(capsys, "convert", str(source), "--method", "mtp", *flags, "-o", str(out))


def verdict(capsys: pytest.CaptureFixture[str], target: Path, engine: str) -> tuple[str, set[str]]:
    _, out, _ = run(
        capsys, "check", str(target), "--method", "mtp", "--engine", engine, "--format", "json"
    )
    report = json.loads(out)
    return report["engines"][0]["verdict"], {f["code"] for f in report["findings"]}


def quantization(folder: Path) -> dict[str, object]:
    config = json.loads((folder / "config.json").read_text())
    quant: dict[str, object] = config["quantization_config"]
    return quant


def listed_compressed(path: Path) -> Path:
    """A compressed-tensors target whose FP8-stored MTP layer `ignore` lists."""
    return mtp_target(path, quant="fp8", compressed=True, mtp_quantized=True, exclude="checkpoint")


def set_list(folder: Path, key: str, entries: list[str], **more: list[str]) -> None:
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"][key] = entries
    config["quantization_config"].update(more)
    (folder / "config.json").write_text(json.dumps(config, indent=2))


@pytest.mark.parametrize(
    ("family", "exclude", "engine", "key"),
    [
        ("deepseek_v3", "checkpoint", V34, "modules_to_not_convert"),
        ("glm4_moe", "checkpoint", V34, "modules_to_not_convert"),
        ("deepseek_v3", "runtime", S523, "modules_to_not_convert"),
        ("glm4_moe", "runtime", S523, "modules_to_not_convert"),
        # MiMo's decoder layer is built (and matched) at the decoder-layer index on vLLM
        ("mimo", "layer_index", V34, "modules_to_not_convert"),
    ],
)
def test_entries_naming_a_quantized_mtp_layer_are_taken_out(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    family: str,
    exclude: str,
    engine: str,
    key: str,
) -> None:
    source = mtp_target(tmp_path / "t", family, quant="fp8", mtp_quantized=True, exclude=exclude)
    assert verdict(capsys, source, engine)[1] == {"DF541"}
    before = digest(source)
    listed_before = quantization(source)[key]
    code, _, err = convert(capsys, source, tmp_path / "o", engine)
    assert code == 0, err
    assert digest(source) == before
    assert tensor_bytes(tmp_path / "o") == tensor_bytes(source)
    listed = quantization(tmp_path / "o")[key]
    assert isinstance(listed, list) and isinstance(listed_before, list)
    assert set(listed) < set(listed_before)
    assert verdict(capsys, tmp_path / "o", engine) == ("compatible", set())


def test_compressed_tensors_keeps_the_backbone_entries(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = listed_compressed(tmp_path / "t")
    code, _, err = convert(capsys, source, tmp_path / "o", V34)
    assert code == 0, err
    assert quantization(tmp_path / "o")["ignore"] == ["lm_head"]
    assert verdict(capsys, tmp_path / "o", V34) == ("compatible", set())


def test_taking_out_and_adding_in_one_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Qwen3.5's decoder layer stored FP8 and listed (DF541), its BF16 `mtp.fc` built
    quantized by vLLM and not listed (DF540): one config fixes both."""
    source = mtp_target(
        tmp_path / "t", "qwen3_5", quant="fp8", mtp_quantized=True, exclude="checkpoint"
    )
    assert verdict(capsys, source, V34)[1] == {"DF540", "DF541"}
    code, out, err = run(
        capsys, "convert", str(source), "--method", "mtp", "--engine", V34, "--dry-run"
    )
    assert code == 0, err
    assert "entries out of `modules_to_not_convert`" in out and "`mtp.fc`" in out
    code, _, err = convert(capsys, source, tmp_path / "o", V34)
    assert code == 0, err
    listed = quantization(tmp_path / "o")["modules_to_not_convert"]
    assert isinstance(listed, list)
    assert "mtp.fc" in listed and not any(e.startswith("mtp.layers.") for e in listed)
    assert verdict(capsys, tmp_path / "o", V34) == ("compatible", set())


def test_an_entry_that_also_names_backbone_modules_is_not_taken_out(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = listed_compressed(tmp_path / "t")
    # one pattern for every layer's attention: the MTP layer's and the backbone's
    set_list(source, "ignore", ["lm_head", r"re:.*self_attn\..*"])
    assert verdict(capsys, source, V34)[1] == {"DF541"}
    code, _, err = convert(capsys, source, tmp_path / "o", V34)
    assert code == 2 and not (tmp_path / "o").exists()
    assert "backbone" in err and r"re:.*self_attn\..*" in err


def test_a_list_left_empty_would_change_the_key_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """vLLM's FP8 config reads `ignored_layers` unless it is empty, then
    `modules_to_not_convert`: emptying the first would change what the second decides."""
    source = mtp_target(tmp_path / "t", quant="fp8", mtp_quantized=True, exclude="checkpoint")
    listed = quantization(source)["modules_to_not_convert"]
    assert isinstance(listed, list)
    set_list(source, "ignored_layers", listed, modules_to_not_convert=["lm_head"])
    assert verdict(capsys, source, V34)[1] == {"DF541"}
    code, _, err = convert(capsys, source, tmp_path / "o", V34)
    assert code == 2 and "`ignored_layers` empty" in err
    assert not (tmp_path / "o").exists()
