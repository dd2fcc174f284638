"""A config dimension that contradicts the stored tensors (DF212): one finding at the key,
the exact edit, the per-tensor shape findings folded into it, and `convert` making the edit.

The story behind it at full size: a `speculators` EAGLE-3 draft for Kimi-K2.5 (an INT4
compressed-tensors target whose config keeps the language model under `text_config`) with
`transformer_layer_config.head_dim` written 112 (7168/64) beside projections trained with
64 heads of 128. The draft is the demo's full-size sparse replica; small cases use the
factory's tiny real checkpoints.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.cli.main import main
from draftfit.commands.demo import demo_config
from draftfit.conversion import convert_path
from draftfit.draft.synth import speculators_table, write_sparse_checkpoint
from draftfit.engines import shapes
from draftfit.render.registry import render
from draftfit.report import Report
from tests import factory as f
from tests.test_ci_formats import validate_sarif
from tests.test_json_schema import validate

KIMI_HEAD_DIM, KIMI_DERIVED = 128, 112  # 64 heads of 128; 7168 / 64 = 112
ATTENTION = [f"layers.0.self_attn.{p}_proj.weight" for p in "qkvo"]


def kimi_k25_target(path: Path) -> Path:
    """Kimi-K2.5's config in the shape it is published: a multimodal wrapper with the
    DeepSeek-V3 (kimi_k2) language model under `text_config`, quantized to INT4 weights with
    compressed-tensors (group size 32), attention and dense layers left in bf16."""
    text = demo_config("kimi-k2-instruct.config.json")
    text["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {
                    "num_bits": 4,
                    "type": "int",
                    "symmetric": True,
                    "strategy": "group",
                    "group_size": 32,
                },
            }
        },
        "ignore": ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*"],
    }
    config = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": text,
        "vision_config": {"model_type": "moonvit"},
    }
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return path


def kimi_draft(path: Path, head_dim: int | None = KIMI_DERIVED) -> Path:
    """The demo's speculators Kimi-K2 draft (full-size sparse replica, 128-wide heads) with
    `transformer_layer_config.head_dim` written as `head_dim` (None: removed), trained for
    Kimi-K2.5 (its recorded verifier)."""
    config = demo_config("speculators-kimi-k2-eagle3.config.json")
    config["speculators_config"]["verifier"]["name_or_path"] = "moonshotai/Kimi-K2.5"
    table = speculators_table(config)  # the shapes the draft was trained with: head_dim 128
    layer = config["transformer_layer_config"]
    if head_dim is None:
        del layer["head_dim"]
    else:
        layer["head_dim"] = head_dim
    return write_sparse_checkpoint(
        path, config, table, vocab=layer["vocab_size"], draft_vocab=config["draft_vocab_size"]
    )


def digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def codes(report: Report) -> list[str]:
    return [x.code for x in report.findings if x.severity >= 2]


@pytest.fixture
def kimi(tmp_path: Path) -> tuple[Path, Path]:
    return kimi_draft(tmp_path / "kimi-k25-eagle3"), kimi_k25_target(tmp_path / "Kimi-K2.5")


def test_kimi_head_dim_is_one_finding_at_the_config_key(kimi: tuple[Path, Path]) -> None:
    draft, target = kimi
    report = check_path(draft, target=target, engines=["vllm==0.34.0"])
    assert codes(report) == ["DF212"]  # no DF204 per projection, no DF203
    (finding,) = [x for x in report.findings if x.code == "DF212"]
    assert finding.location.file == "config.json"
    assert finding.location.pointer == "/transformer_layer_config/head_dim"
    assert str(finding.consequence) == "drafts-garbage"
    assert finding.fix is not None
    assert finding.fix.startswith("set `/transformer_layer_config/head_dim` to 128")
    assert "`head_dim` is 112" in finding.message
    assert "[8192, 14336], whose rows are num_attention_heads·head_dim = 64·128" in (
        finding.message
    )
    assert [r.tensor for r in finding.related] == ATTENTION
    assert {r.file for r in finding.related} == {"model.safetensors"}
    assert report.engines[0].verdict == "drafts-garbage"
    assert report.exit_code() == 1
    # The multimodal target was read through its text_config.
    assert report.target_facts is not None and report.target_facts.text_config == "/text_config"


def test_kimi_finding_in_text_json_and_sarif(
    kimi: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    draft, target = kimi
    monkeypatch.chdir(draft.parent)
    report = check_path(draft.name, target=target.name, engines=["vllm==0.34.0"])
    text = render(report, "text")
    lines = (draft / "config.json").read_text().splitlines()
    key_line = 1 + next(i for i, line in enumerate(lines) if '"head_dim": 112' in line)
    assert f"--> config.json:{key_line} /transformer_layer_config/head_dim" in text
    assert "explains: `layers.0.self_attn.q_proj.weight`, `layers.0.self_attn.k_proj.weight`" in (
        text
    )
    assert "DF204" not in text
    data = json.loads(render(report, "json"))
    validate("check", data)
    (finding,) = [x for x in data["findings"] if x["code"] == "DF212"]
    assert finding["related"] == [{"file": "model.safetensors", "tensor": t} for t in ATTENTION]
    sarif = validate_sarif(render(report, "sarif"))  # against the SARIF 2.1.0 schema
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "DF212"]
    (location,) = result["locations"]
    region = location["physicalLocation"]["region"]["startLine"]
    assert region == key_line  # the line the text report names
    assert location["physicalLocation"]["artifactLocation"]["uri"] == f"{draft.name}/config.json"
    related = result["relatedLocations"]
    assert [r["logicalLocations"][0]["fullyQualifiedName"] for r in related] == ATTENTION
    assert {r["physicalLocation"]["artifactLocation"]["uri"] for r in related} == {
        f"{draft.name}/model.safetensors"
    }
    annotation = render(report, "github")
    assert "explains: `layers.0.self_attn.q_proj.weight`" in annotation
    assert f"line={key_line}," in annotation
    junit = render(report, "junit")
    assert "explains: `layers.0.self_attn.q_proj.weight`" in junit
    assert f"--&gt; config.json:{key_line} /transformer_layer_config/head_dim" in junit


def test_kimi_without_head_dim_stays_head_dim_not_declared(tmp_path: Path) -> None:
    """The missing-key case keeps its own rule (DF208, fix: add the key)."""
    draft = kimi_draft(tmp_path / "draft", head_dim=None)
    report = check_path(draft, target=kimi_k25_target(tmp_path / "t"), engines=["vllm==0.34.0"])
    assert codes(report) == ["DF208"]
    (finding,) = [x for x in report.findings if x.code == "DF208"]
    assert [r.tensor for r in finding.related] == ATTENTION


@pytest.mark.slow  # copies a 4.7 GB sparse draft twice; the tiny drafts below run quick
@pytest.mark.parametrize("unsafe", [False, True])
def test_kimi_convert_sets_head_dim_and_the_output_is_compatible(
    kimi: tuple[Path, Path], tmp_path: Path, unsafe: bool
) -> None:
    draft, target = kimi
    before = digest(draft)
    result = convert_path(
        draft, "vllm", tmp_path / "out", target=target, unsafe=unsafe, anyway=False
    )
    assert digest(draft) == before  # the input is never modified
    edits = [e for e in result.plan.edits if e.target == "/transformer_layer_config/head_dim"]
    assert [(e.action, e.safety) for e in edits] == [("set-config", "safe")]
    assert "set `head_dim` to 128 (was 112)" in edits[0].description
    written = json.loads((tmp_path / "out" / "config.json").read_text())
    assert written["head_dim"] == KIMI_HEAD_DIM
    assert result.report is not None
    assert [e.verdict for e in result.report.engines] == ["compatible"]
    assert result.exit_code() == 0
    again = check_path(tmp_path / "out", target=target, engines=["vllm==0.34.0"])
    assert again.exit_code() == 0 and codes(again) == []


def test_kimi_convert_on_the_command_line(
    kimi: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft, target = kimi
    out = tmp_path / "out"
    assert (
        main(["convert", str(draft), "--to", "vllm", "-o", str(out), "--target", str(target)]) == 0
    )
    printed = capsys.readouterr().out
    assert "set `head_dim` to 128 (was 112)" in printed
    assert "vLLM 0.34.0: compatible" in printed
    assert main(["check", str(out), "--target", str(target), "--engine", "vllm==0.34.0"]) == 0


# ------------------------------------------------------------------ tiny drafts, every engine


flat_draft = f.specforge_with_dims


@pytest.mark.parametrize(
    ("engine", "consequence", "fixed"),
    [
        ("vllm==0.34.0", "drafts-garbage", "compatible"),
        ("sglang==0.5.23", "drafts-garbage", "compatible"),
        ("trtllm", "refuses-to-start", None),
    ],
)
def test_specforge_head_dim_every_engine(
    tmp_path: Path, engine: str, consequence: str, fixed: str | None
) -> None:
    """The same derivation in every engine: one finding at `/head_dim`; loaders that narrow
    draft garbage, TensorRT-LLM's copy refuses; `convert --to sglang` (the layout
    TensorRT-LLM reads too) writes the value and the output has no error."""
    draft = flat_draft({"head_dim": 32}, head_dim=16).write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "target")
    report = check_path(draft, target=target, engines=[engine])
    assert codes(report) == ["DF212"]
    (finding,) = [x for x in report.findings if x.code == "DF212"]
    assert finding.location.pointer == "/head_dim"
    assert str(finding.consequence) == consequence
    assert finding.fix is not None and finding.fix.startswith("set `/head_dim` to 32")
    assert [r.tensor for r in finding.related] == [
        f"midlayer.self_attn.{p}_proj.weight" for p in "qkvo"
    ]
    result = convert_path(draft, "sglang", tmp_path / "out", target=target, engines=[engine])
    assert json.loads((tmp_path / "out" / "config.json").read_text())["head_dim"] == 32
    assert result.report is not None
    assert codes(result.report) == []
    if fixed is not None:
        assert result.report.engines[0].verdict == fixed


def test_ambiguous_shapes_name_both_edits_and_convert_guesses_neither(tmp_path: Path) -> None:
    """8 heads of 16 stored; 4 heads of 16 declared, no `num_key_value_heads`: 8 heads or a
    head_dim of 32 give every stored shape. One finding names both; convert edits neither."""
    draft = flat_draft({"heads": 8, "kv": 8}, num_key_value_heads=None).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "target")
    report = check_path(draft, target=target, engines=["vllm==0.34.0"])
    assert codes(report) == ["DF212"]
    (finding,) = [x for x in report.findings if x.code == "DF212"]
    assert "the shapes cannot tell which value is wrong" in finding.message
    assert finding.fix is not None
    assert "`/head_dim` to 32, or `/num_attention_heads` to 8 (one of them)" in finding.fix
    assert [r.pointer for r in finding.related if r.tensor is None] == ["/num_attention_heads"]
    result = convert_path(draft, "vllm", tmp_path / "out", target=target)
    shown = [e for e in result.plan.edits if e.target == "/head_dim"]
    assert [e.safety for e in shown] == ["display-only"]
    written = json.loads((tmp_path / "out" / "config.json").read_text())
    assert (written["head_dim"], written["num_attention_heads"]) == (16, 4)
    assert result.report is not None and codes(result.report) == ["DF212"]
    assert result.exit_code() == 1


def test_two_wrong_dimensions_are_two_findings(tmp_path: Path) -> None:
    """`head_dim` and `intermediate_size` both wrong: each explains its own tensors."""
    draft = flat_draft({"head_dim": 32}, head_dim=16, intermediate_size=96)
    report = check_path(
        draft.write(tmp_path / "d"), target=f.llama_target(tmp_path / "t"), engines=["vllm"]
    )
    fits = {
        x.location.pointer: [r.tensor for r in x.related]
        for x in report.findings
        if x.code == "DF212"
    }
    assert codes(report) == ["DF212", "DF212"]
    assert fits == {
        "/head_dim": [f"midlayer.self_attn.{p}_proj.weight" for p in "qkvo"],
        "/intermediate_size": [f"midlayer.mlp.{p}_proj.weight" for p in ("gate", "up", "down")],
    }
    result = convert_path(tmp_path / "d", "vllm", tmp_path / "out", target=tmp_path / "t")
    assert result.report is not None and codes(result.report) == []


def test_a_lone_oversized_tensor_is_no_dimension(tmp_path: Path) -> None:
    """Only q_proj wider than the config says: no config value explains it (8 heads would
    break o_proj), so it stays a per-tensor finding and convert changes no dimension."""
    draft = f.specforge().reshape("midlayer.self_attn.q_proj.weight", (96, 128))
    path = draft.write(tmp_path / "d")
    report = check_path(path, target=f.llama_target(tmp_path / "t"), engines=["vllm"])
    assert codes(report) == ["DF204"]
    result = convert_path(path, "vllm", tmp_path / "out", target=tmp_path / "t", dry_run=True)
    assert not [e for e in result.plan.edits if e.action == "set-config" and "head" in e.target]


def test_axis_solves_for_one_field() -> None:
    rows = shapes.q_proj(64, 112, 14336, 7168).axes[0]
    assert rows is not None
    assert rows.solve(shapes.HEAD_DIM, 8192) == 128
    assert rows.solve(shapes.HEADS, 8192) is None  # 8192 / 112 is no whole number of heads
    assert rows.names() == "num_attention_heads·head_dim"
    assert rows.numbers(shapes.HEAD_DIM, 128) == "64·128"
    kv_a = shapes.mla_kv_a(512, 64, 14336, 7168).axes[0]
    assert kv_a is not None and kv_a.solve(shapes.KV_LORA_RANK, 640) == 576
    assert kv_a.names() == "kv_lora_rank + qk_rope_head_dim"
    width = shapes.q_proj(64, 128, 14336, 7168).axes[1]
    assert width is not None and width.names() == "2·hidden_size"
    assert width.solve(shapes.HIDDEN, 8192) == 4096


def test_a_top_level_copy_the_engine_does_not_read_is_not_the_place(tmp_path: Path) -> None:
    """A speculators draft whose `head_dim` sits only at the top level, where vLLM does not
    look (it builds the layer from `transformer_layer_config`): the edit goes where it
    reads it."""
    draft = f.speculators(aux=[2, 4, 5], head_dim=None)
    draft.tensors = f.eagle3_tensors(naming="layers", embed=True, head_dim=32)
    draft.config["head_dim"] = 32
    path = draft.write(tmp_path / "d")
    report = check_path(path, target=f.llama_target(tmp_path / "t"), engines=["vllm==0.34.0"])
    (finding,) = [x for x in report.findings if x.code == "DF212"]
    assert finding.location.pointer == "/transformer_layer_config/head_dim"
    assert "is not written at `/transformer_layer_config/head_dim` (vLLM 0.34.0 uses 16)" in (
        finding.message
    )
