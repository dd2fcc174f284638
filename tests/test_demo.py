"""`draftfit demo`: the built-in Kimi-K2 example, on full-size sparse checkpoints, leaving
nothing behind."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from draftfit.checkpoint import load_checkpoint
from draftfit.cli.main import main
from draftfit.commands.demo import build_demo


def _leftovers() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("draftfit-demo-*")}


def test_demo_runs_and_cleans_up(capsys) -> None:
    before = _leftovers()
    assert main(["demo"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "kimi-k2-eagle3-speculators" in out
    assert "vLLM 0.34.0: compatible" in out
    assert "vLLM 0.17.0: incompatible" in out
    assert "SGLang 0.5.23: incompatible" in out and "DF105" in out
    assert "Reference  AQ-MedAI/Kimi-K2-Instruct-eagle3" in out
    assert "DF810" in out and "`norm_before_residual` = true for the draft" in out
    assert _leftovers() == before


def test_demo_json(capsys) -> None:
    assert main(["demo", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    verdicts = {(e["engine"], e["version"]): e["verdict"] for e in data["check"]["engines"]}
    assert verdicts == {
        ("vllm", "0.17.0"): "incompatible",
        ("sglang", "0.5.23"): "incompatible",
        ("vllm", "0.34.0"): "compatible",
    }
    spelling = [x for x in data["diff"]["findings"] if x["code"] == "DF810"]
    assert any("resolves them to" in x["message"] for x in spelling)


def test_demo_checkpoints_are_full_size_and_sparse(tmp_path: Path) -> None:
    paths = build_demo(tmp_path)
    draft = load_checkpoint(paths.draft)
    assert draft.damage == []
    shapes = {n: t.shape for n, t in draft.tensors.items()}
    assert shapes["layers.0.self_attn.q_proj.weight"] == (64 * 128, 2 * 7168)
    assert shapes["fc.weight"] == (7168, 3 * 7168)
    assert shapes["embed_tokens.weight"] == (163840, 7168)
    size = (paths.draft / "model.safetensors").stat()
    assert size.st_size > 4 * 10**9
    assert size.st_blocks * 512 < 16 * 1024 * 1024
    reference = load_checkpoint(paths.reference)
    assert reference.damage == [] and "midlayer.hidden_norm.weight" in reference.tensors
