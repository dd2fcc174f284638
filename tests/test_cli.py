"""The command line, asserted as (exit code, stdout, stderr), in process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import draftfit
from draftfit.cli.main import main
from draftfit.errors import UsageError
from tests import factory as f
from tests.timeouts import scaled


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def clean(tmp_path: Path) -> tuple[Path, Path]:
    return f.speculators(aux=[2, 4, 5]).write(tmp_path / "my-eagle3-draft"), f.llama_target(
        tmp_path / "target"
    )


def test_check_clean_draft_exits_zero(capsys, clean) -> None:
    draft, target = clean
    code, out, err = run(capsys, "check", str(draft), "--target", str(target))
    assert code == 0 and err == ""
    assert "vLLM 0.34.0: compatible" in out
    assert "speculators library (trained)" in out


def test_check_json_shape(capsys, clean) -> None:
    draft, target = clean
    code, out, _ = run(capsys, "check", str(draft), "--target", str(target), "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert data["schema_version"] == 1
    # what the verdict rests on: the facts read in vLLM 0.34.0's code, and the others
    basis = data["engines"][0].pop("basis")
    assert "eagle3_draft_architectures" in basis["read"]
    below = {item["fact"]: item["confidence"] for item in basis["below_read"]}
    assert below["verifier_eagle3_classes"] == "inferred"
    assert data["engines"] == [
        {
            "engine": "vllm",
            "version": "0.34.0",
            "verdict": "compatible",
            "counts": {"error": 0, "warning": 0, "info": 0},
            "draft_class": "Eagle3LlamaForCausalLM",
            "unverified_reasons": [],
            "unchecked_rules": [],
            "extrapolated_to": None,
            "chosen_because": "vLLM 0.34.0, the newest release draftfit has read: none of "
            "vLLM, SGLang or TensorRT-LLM is installed here; --engine chooses another",
            "aux_layers": {
                "used": [2, 4, 5],
                "read_from": "/eagle_aux_hidden_state_layer_ids",
                "keys_read": ["/eagle_aux_hidden_state_layer_ids", "/eagle_config/layer_ids"],
                "counting": "capture-before",
                "expected_count": 3,
            },
        }
    ]
    assert data["draft"]["dialect"]["name"] == "speculators"
    assert data["draft"]["method"] == "eagle3"
    assert data["target"]["num_layers"] == f.TARGET_LAYERS
    assert data["findings"] == []
    assert data["summary"]["exit_code"] == 0


def test_error_finding_exits_one_and_names_location_and_source(capsys, tmp_path) -> None:
    draft = f.specforge().add("foo.weight", "BF16", (4,)).write(tmp_path / "eagle3-x")
    code, out, _ = run(capsys, "check", str(draft), "--format", "json")
    data = json.loads(out)
    assert code == 1
    finding = next(x for x in data["findings"] if x["code"] == "DF201")
    assert finding["name"] == "unknown-tensor-name"
    assert finding["severity"] == "error"
    assert finding["location"] == {"file": "model.safetensors", "tensor": "foo.weight"}
    assert finding["engines"] == ["vllm==0.34.0"]
    assert any("@v0.34.0" in s for s in finding["sources"])
    assert finding["fix"]
    assert data["engines"][0]["verdict"] == "incompatible"


def test_fail_on_warning(capsys, tmp_path) -> None:
    """A draft whose context is shorter than the target's degrades only past it: a warning."""
    draft = f.specforge().write(tmp_path / "eagle3-x")
    target = f.llama_target(tmp_path / "t", max_position_embeddings=131072)
    args = ("check", str(draft), "--target", str(target), "--engine", "vllm==0.29.0")
    assert run(capsys, *args)[0] == 0
    code, out, _ = run(capsys, *args, "--fail-on", "warning")
    assert code == 1 and "degraded" in out


def test_text_and_junit_name_the_line_of_a_config_key(capsys, tmp_path) -> None:
    """The `-->` line names the line of the key, as the GitHub annotation and SARIF do."""
    draft = f.specforge().write(tmp_path / "eagle3-x")
    target = f.llama_target(tmp_path / "t", max_position_embeddings=131072)
    lines = (draft / "config.json").read_text().splitlines()
    line = 1 + next(i for i, text in enumerate(lines) if '"max_position_embeddings"' in text)
    args = ("check", str(draft), "--target", str(target), "--engine", "vllm==0.29.0")
    _, out, _ = run(capsys, *args)
    assert f"    --> config.json:{line} /max_position_embeddings\n" in out
    _, out, _ = run(capsys, *args, "--format", "junit")
    assert f"--&gt; config.json:{line} /max_position_embeddings" in out
    _, out, _ = run(capsys, *args, "--format", "github")
    assert f"eagle3-x/config.json,line={line}," in out


def test_without_target_the_report_lists_skipped_checks(capsys, clean) -> None:
    draft, _ = clean
    code, out, _ = run(capsys, "check", str(draft))
    assert code == 0
    assert "Skipped without --target:" in out and "DF303" in out
    _, out, _ = run(capsys, "check", str(draft), "--format", "json")
    skipped = {s["code"]: s["reason"] for s in json.loads(out)["skipped_rules"]}
    assert skipped["DF303"] == "needs --target"


def test_several_engine_versions(capsys, tmp_path) -> None:
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "eagle3-x")
    target = f.llama_target(tmp_path / "t")
    code, out, _ = run(
        capsys,
        "check",
        str(draft),
        "--target",
        str(target),
        "--engine",
        "vllm==0.10.1",
        "--engine",
        "vllm==0.34.0",
        "--format",
        "json",
    )
    verdicts = {e["version"]: e["verdict"] for e in json.loads(out)["engines"]}
    # 0.34.0 captures other layers than the draft was trained on: it drafts garbage
    assert verdicts == {"0.10.1": "incompatible", "0.34.0": "drafts-garbage"}
    assert code == 1


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["check", "/nonexistent/draft"], "no such directory"),
        (
            ["check", "{draft}", "--engine", "vllm==0.15.0"],
            "vLLM 0.15.0 was not read (no sdist on PyPI",
        ),
        (["check", "{draft}", "--engine", "tgi==9"], "unknown engine"),
        (["check", "{draft}", "--engine", "sglang==9"], "no data for sglang==9"),
        (["check", "{draft}", "--target", "/nonexistent/t"], "target not found"),
        (["check", "{draft}", "--method", "medusa"], "invalid choice"),
        (["check"], "required"),
        (["rule", "DF999"], "no rule"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_usage_errors_are_one_line_exit_two(capsys, clean, argv, needle) -> None:
    draft, _ = clean
    code, out, err = run(capsys, *[a.replace("{draft}", str(draft)) for a in argv])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err


def test_target_without_config_is_a_usage_error(capsys, clean, tmp_path) -> None:
    draft, _ = clean
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, "check", str(draft), "--target", str(empty))
    assert code == 2 and "has no config.json" in err


def test_damaged_checkpoint_is_findings_not_a_crash(capsys, tmp_path) -> None:
    draft = f.specforge().write(tmp_path / "eagle3-x")
    (draft / "model.safetensors").write_bytes(b"\x00" * 3)
    (draft / "config.json").write_text("{oops")
    code, out, err = run(capsys, "check", str(draft))
    assert code == 1 and err == ""
    assert "DF002" in out and "DF017" in out


def test_inspect(capsys, clean) -> None:
    draft, _ = clean
    code, out, _ = run(capsys, "inspect", str(draft))
    assert code == 0
    assert "layer 0 attention q" in out and "Parameters" in out
    code, out, _ = run(capsys, "inspect", str(draft), "--format", "json")
    data = json.loads(out)
    assert data["dims"]["head_dim"] == f.HEAD_DIM
    assert data["aux_layer_ids"][0]["capture_before"] == [2, 4, 5]
    roles = {t["name"]: t["role"] for t in data["tensors"]}
    assert roles["fc.weight"].startswith("fusion fc")
    assert data["parameters_total"] == sum(data["parameters_by_dtype"].values())


def test_rules_and_rule(capsys) -> None:
    code, out, _ = run(capsys, "rules")
    assert code == 0 and "DF301" in out and "aux-layers-differ-from-trained" in out
    code, out, _ = run(capsys, "rule", "aux-layers-differ-from-trained")
    assert code == 0 and out.startswith("DF301 aux-layers-differ-from-trained")
    for section in ("## What it checks", "## Why it matters", "## Example", "## Fix"):
        assert section in out
    code, out, _ = run(capsys, "rules", "--format", "json")
    rules = json.loads(out)["rules"]
    assert all(r["doc"] and r["code"].startswith("DF") for r in rules)


def test_engines(capsys) -> None:
    code, out, _ = run(capsys, "engines")
    assert code == 0 and "0.34.0" in out and "refused" in out


def test_python_dash_m_entry_point(clean) -> None:
    draft, target = clean
    result = subprocess.run(
        [sys.executable, "-m", "draftfit", "check", str(draft), "--target", str(target)],
        capture_output=True,
        text=True,
        check=False,
        timeout=scaled(),
    )
    assert result.returncode == 0 and "compatible" in result.stdout


def test_every_rule_documents_every_section() -> None:
    from draftfit.rules import all_rules

    for item in all_rules():
        for section in ("## What it checks", "## Why it matters", "## Example", "## Fix"):
            assert section in item.doc, (item.code, section)
        assert item.name == item.name.lower() and " " not in item.name


def test_rules_index_lists_every_rule() -> None:
    """The manual's rules index (`docs/rules/README.md`, generated) has a row per rule."""
    from draftfit.rules import all_rules

    index = (Path(__file__).resolve().parents[1] / "docs" / "rules" / "README.md").read_text()
    for item in all_rules():
        row = f"| [{item.code}]({item.code}.md) | `{item.name}` | {item.severity} |"
        assert row in index, item.code
        assert item.summary in index, item.code


def test_no_target_is_unverified_not_compatible(capsys, clean) -> None:
    """Checks that need the target decide real verdicts (SGLang refuses a shorter draft
    context): without one, nothing found is `unverified`, with the reason and the rules."""
    draft, _target = clean
    code, out, _ = run(capsys, "check", str(draft), "--format", "json")
    result = json.loads(out)["engines"][0]
    assert code == 0
    assert result["verdict"] == "unverified"
    assert result["unverified_reasons"] == ["no target"]
    assert {"DF303", "DF502", "DF506"} <= set(result["unchecked_rules"])
    assert "DF302" not in result["unchecked_rules"]  # info only: cannot change a verdict
    code, out, _ = run(capsys, "check", str(draft))
    assert code == 0
    assert "vLLM 0.34.0: unverified (0 error, 0 warning, 0 info)" in out
    assert "· no target: DF303, DF405" in out


@pytest.mark.parametrize(
    ("with_target", "fail_on", "expected"),
    [
        (False, "error", 0),
        (False, "warning", 0),
        (False, "unverified", 1),
        (False, "info", 1),
        (True, "unverified", 0),
        (True, "info", 0),
    ],
)
def test_fail_on_unverified(capsys, clean, with_target: bool, fail_on: str, expected: int) -> None:
    draft, target = clean
    extra = ["--target", str(target)] if with_target else []
    code, out, _ = run(
        capsys, "check", str(draft), *extra, "--fail-on", fail_on, "--format", "json"
    )
    assert code == expected
    assert json.loads(out)["summary"]["exit_code"] == expected


def test_target_without_a_field_leaves_its_checks_unverified(capsys, tmp_path: Path) -> None:
    draft = f.speculators(aux=[2, 4, 5]).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    config = json.loads((target / "config.json").read_text())
    del config["num_hidden_layers"]
    (target / "config.json").write_text(json.dumps(config))
    _code, out, _ = run(capsys, "check", str(draft), "--target", str(target), "--format", "json")
    result = json.loads(out)["engines"][0]
    assert result["verdict"] == "unverified"
    assert result["unverified_reasons"] == ["the target config has no usable `num_hidden_layers`"]
    assert result["unchecked_rules"] == ["DF303"]


def test_matrix_without_target_is_unverified_and_can_fail(capsys, clean) -> None:
    draft, target = clean
    code, out, _ = run(capsys, "matrix", str(draft), "--format", "json")
    rows = json.loads(out)["rows"]
    assert code == 0
    assert "compatible" not in {r["verdict"] for r in rows}
    assert all(
        r["unverified_reasons"] == ["no target"] for r in rows if r["verdict"] == "unverified"
    )
    code, out, _ = run(
        capsys, "matrix", str(draft), "--format", "markdown", "--fail-on", "unverified"
    )
    assert code == 1
    assert "| unverified | no target: DF303" in out
    code, out, _ = run(capsys, "matrix", str(draft), "--target", str(target), "--format", "json")
    assert "compatible" in {r["verdict"] for r in json.loads(out)["rows"]}


@pytest.mark.slow
def test_piped_tables_are_neither_wrapped_nor_padded(tmp_path: Path) -> None:
    """`draftfit matrix ./x | cat`: a row stays one line, however long, and no line ends in
    padding, so `grep` and `diff` see what a reader sees."""
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "d")
    target = f.llama_target(tmp_path / "t")
    for argv in (["matrix", str(draft), "--target", str(target)], ["rules"]):
        result = subprocess.run(
            [sys.executable, "-m", "draftfit", *argv],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": str(Path(draftfit.__file__).parents[1])},
            timeout=scaled(),
        )
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert not [line for line in lines if line != line.rstrip()]
        assert max(len(line) for line in lines) > 100
        if argv[0] == "matrix":
            row = next(line for line in lines if line.startswith("vLLM") and "0.8.5" in line)
            assert "DF301" in row and row.endswith("falls back to the default [2, 4, 5]")


def test_a_folder_of_checkpoints_names_them(capsys, tmp_path: Path) -> None:
    root = tmp_path / "checkpoints"
    for name in ("epoch_10", "epoch_2", "epoch_3"):
        f.specforge().write(root / name / "hf")
    (root / "logs").mkdir()
    code, out, err = run(capsys, "check", str(root))
    assert code == 2 and out == ""
    assert err == (
        f"draftfit: error: no checkpoint in {root}; these subfolders hold one: "
        f"{root}/epoch_2/hf, {root}/epoch_3/hf, {root}/epoch_10/hf\n"
    )
    code, _, err = run(capsys, "check", str(root / "epoch_2" / "hf"), "--target", str(root))
    assert code == 2 and err.startswith(f"draftfit: error: no checkpoint in {root}; ")
    # A folder with nothing below it is still an ordinary missing-config finding.
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, _ = run(capsys, "check", str(empty))
    assert code == 1 and "DF016" in out


def test_swapped_draft_and_target_is_one_line_with_the_fix(capsys, tmp_path: Path) -> None:
    model = f.llama_target(tmp_path / "Llama-3.1-8B")
    head = f.specforge().write(tmp_path / "eagle3-head")
    for command in ("check", "matrix"):
        code, out, err = run(capsys, command, str(model), "--target", str(head))
        assert code == 2 and out == ""
        assert err == (
            f"draftfit: error: {model} is a full model (`LlamaForCausalLM`, {f.TARGET_LAYERS} "
            f"layers) and the target {head} an EAGLE draft (`LlamaForCausalLMEagle3`): the two "
            f"look swapped; run `draftfit {command} {head} --target {model}`\n"
        )
    # The suggested command works.
    code, out, _ = run(capsys, "check", str(head), "--target", str(model))
    assert code == 0 and "vLLM 0.34.0: compatible" in out


def test_full_model_as_the_draft_is_one_line_with_the_fix(capsys, tmp_path: Path) -> None:
    model = f.llama_target(tmp_path / "Llama-3.1-8B")
    code, out, err = run(capsys, "check", str(model))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"draftfit: error: {model} is a full model (`LlamaForCausalLM`, ")
    assert "give the draft checkpoint as DRAFT and this model as --target" in err
    assert "DF113" not in err
    # Told the method, draftfit checks it as a draft (and reports what is wrong with it).
    code, out, _ = run(capsys, "check", str(model), "--method", "eagle3")
    assert code == 1 and "DF021" in out


def test_inspect_says_a_full_model_is_a_target(capsys, tmp_path: Path) -> None:
    config_only = f.llama_target(tmp_path / "Llama-3.1-8B")
    with_weights = f.llama_target(tmp_path / "Llama-with-weights")
    f.write_checkpoint(with_weights, None, {"model.embed_tokens.weight": f.Tensor("BF16", (8, 8))})
    for model in (config_only, with_weights):
        for fmt in ("text", "json"):
            code, out, err = run(capsys, "inspect", str(model), "--format", fmt)
            assert code == 2 and out == ""
            assert err == (
                f"draftfit: error: {model} is a full model (`LlamaForCausalLM`, "
                f"{f.TARGET_LAYERS} layers), not an EAGLE draft (no `fc` projection, no EAGLE "
                "architecture): `draftfit inspect` describes drafts; give this model as the "
                f"target (`draftfit check DRAFT --target {model}`)\n"
            )
    # A one-layer EAGLE-1 draft with a plain config is still a draft.
    code, out, _ = run(capsys, "inspect", str(f.eagle1().write(tmp_path / "eagle1")))
    assert code == 0 and "official EAGLE repository" in out


def test_diff_refuses_a_full_model_on_either_side(capsys, tmp_path: Path) -> None:
    model = f.llama_target(tmp_path / "Llama-3.1-8B")
    head = f.specforge().write(tmp_path / "eagle3-head")
    code, out, err = run(capsys, "diff", str(head), str(model))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"draftfit: error: the reference {model} is a full model (")
    assert "`draftfit diff` compares two drafts; give this model as --target" in err
    code, out, err = run(capsys, "diff", str(model), str(head), "--target", str(head))
    assert code == 2 and out == ""
    assert err.startswith(f"draftfit: error: the draft {model} is a full model (")
    assert "look swapped; give the model as --target" in err
    # Two drafts next to the model as the target compare as usual.
    code, _, err = run(capsys, "diff", str(head), str(head), "--target", str(model))
    assert code == 0, err


def test_convert_refuses_a_full_model_and_names_the_swap(capsys, tmp_path: Path) -> None:
    config_only = f.llama_target(tmp_path / "Llama-3.1-8B")
    with_weights = f.llama_target(tmp_path / "Llama-with-weights")
    f.write_checkpoint(with_weights, None, {"model.embed_tokens.weight": f.Tensor("BF16", (8, 8))})
    head = f.specforge().write(tmp_path / "eagle3-head")
    out_dir = tmp_path / "out"
    for model in (config_only, with_weights):
        # Alone: not a draft (a config-only model is not called damaged, the weights are not
        # copied into a "draft").
        code, out, err = run(capsys, "convert", str(model), "--to", "vllm", "-o", str(out_dir))
        assert code == 2 and out == ""
        assert err == (
            f"draftfit: error: {model} is a full model (`LlamaForCausalLM`, {f.TARGET_LAYERS} "
            "layers), not an EAGLE draft (no `fc` projection, no EAGLE architecture): "
            "`draftfit convert` rewrites drafts; give the draft checkpoint as DRAFT and this "
            f"model as --target (`draftfit convert DRAFT --to vllm -o {out_dir} --target "
            f"{model}`)\n"
        )
        # Swapped with the draft: the command the user meant.
        argv = ("convert", str(model), "--to", "sglang", "--dry-run", "--target", str(head))
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == ""
        assert err == (
            f"draftfit: error: {model} is a full model (`LlamaForCausalLM`, {f.TARGET_LAYERS} "
            f"layers) and the target {head} an EAGLE draft: the two look swapped; run "
            f"`draftfit convert {head} --to sglang --dry-run --target {model}`\n"
        )
        with pytest.raises(UsageError, match="is a full model"):
            draftfit.convert(model, "vllm", out_dir)
    assert not out_dir.exists()
    # The suggested order converts.
    code, _, err = run(
        capsys,
        "convert",
        str(head),
        "--to",
        "vllm",
        "-o",
        str(out_dir),
        "--target",
        str(config_only),
        "--anyway",
    )
    assert code == 0, err


# Every convention the draft recogniser knows, written as a real checkpoint.
DRAFTS_AS_TARGETS = {
    "speculators-trained": lambda: f.speculators(),
    "speculators-converted": lambda: f.speculators(variant="converted"),
    "speculators-xpress": lambda: f.speculators_non_eagle(),
    "specforge": lambda: f.specforge(),
    "eagle-official-eagle3": lambda: f.eagle_official(),
    "eagle-official-eagle1": lambda: f.eagle1(),
    "modelopt": lambda: f.modelopt(),
    "modelopt-mla": lambda: f.mla_draft(),
    "nemo-automodel": lambda: f.nemo_automodel(),
    "eagle4": lambda: f.eagle4(),
    "dflash": lambda: f.dflash_draft(),
}


@pytest.mark.parametrize("kind", sorted(DRAFTS_AS_TARGETS))
def test_a_draft_given_as_the_target_is_one_line_naming_the_swap(
    capsys, tmp_path: Path, kind: str
) -> None:
    draft = f.specforge().write(tmp_path / "my-draft")
    other = DRAFTS_AS_TARGETS[kind]().write(tmp_path / "given-as-target")
    out_dir = tmp_path / "out"
    commands = {
        "check": (["check", str(draft)], f"draftfit check {draft} --target VERIFIER"),
        "matrix": (["matrix", str(draft)], f"draftfit matrix {draft} --target VERIFIER"),
        "diff": (
            ["diff", str(draft), str(draft)],
            f"draftfit diff {draft} {draft} --target VERIFIER",
        ),
        "convert": (
            ["convert", str(draft), "--to", "vllm", "-o", str(out_dir)],
            f"draftfit convert {draft} --to vllm -o {out_dir} --target VERIFIER",
        ),
    }
    for words, right in commands.values():
        code, out, err = run(capsys, *words, "--target", str(other))
        assert code == 2 and out == "" and err.count("\n") == 1, (words, err)
        assert err.startswith(f"draftfit: error: the target {other} is a draft ("), err
        assert "a draft was given as --target" in err
        assert f"run `{right}`" in err
    assert not out_dir.exists()
    # With --method the draft is what the user said it is; the target is still refused.
    code, _, err = run(capsys, "check", str(draft), "--target", str(other), "--method", "eagle3")
    assert code == 2 and "a draft was given as --target" in err
    # The Python API raises its usage error, with the same line.
    for call in (
        lambda: draftfit.check(draft, target=other),
        lambda: draftfit.matrix(draft, target=other),
        lambda: draftfit.diff(draft, draft, target=other),
        lambda: draftfit.convert(draft, "vllm", out_dir, target=other),
    ):
        with pytest.raises(UsageError, match="a draft was given as --target"):
            call()
    assert not out_dir.exists()


def test_a_draft_as_the_target_of_several_drafts_is_said_once(capsys, tmp_path: Path) -> None:
    drafts = [f.specforge().write(tmp_path / "drafts" / name) for name in ("a", "b")]
    head = f.speculators(variant="converted").write(tmp_path / "eagle3-head")
    code, out, err = run(capsys, "check", *map(str, drafts), "--target", str(head))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"draftfit: error: the target {head} is a draft (")
    assert f"run `draftfit check {drafts[0]} {drafts[1]} --target VERIFIER`" in err


def test_a_draft_as_the_target_names_the_verifier_and_the_swap(capsys, tmp_path: Path) -> None:
    model = f.llama_target(tmp_path / "Llama-3.1-8B")
    head = f.speculators(variant="converted").write(tmp_path / "eagle3-head")
    # A full model as the draft and a draft as the target: swapped, and the fix says so.
    code, out, err = run(capsys, "check", str(model), "--target", str(head))
    assert code == 2 and out == ""
    assert "the two look swapped; run `draftfit check " + f"{head} --target {model}`" in err
    # The official EAGLE-1 layout has a plain one-layer config: its tensor names tell.
    eagle1 = f.eagle1().write(tmp_path / "eagle1-head")
    code, _, err = run(capsys, "check", str(model), "--target", str(eagle1))
    assert code == 2 and f"the two look swapped; run `draftfit check {eagle1} " in err
    # A speculators draft names its verifier: the fix offers it.
    other = f.specforge().write(tmp_path / "other-draft")
    code, _, err = run(capsys, "check", str(other), "--target", str(head))
    assert code == 2
    assert err == (
        f"draftfit: error: the target {head} is a draft (speculators library (converted): "
        "`speculators_model_type` is `eagle3`), not a target model: a draft was given as "
        "--target, which takes the model the draft serves next to (the verifier); run "
        f"`draftfit check {other} --target VERIFIER` (its config names the verifier "
        "hf://meta-llama/Llama-3.1-8B-Instruct); to compare the two drafts, `draftfit diff "
        f"{other} {head}`\n"
    )
    # The same draft given twice.
    code, _, err = run(capsys, "check", str(head), "--target", str(head))
    assert code == 2 and err.startswith(
        f"draftfit: error: {head} was given as the draft and as --target; it is a draft ("
    )


def test_models_that_are_not_drafts_are_still_targets(capsys, tmp_path: Path) -> None:
    draft = f.speculators(aux=[2, 4, 5]).write(tmp_path / "draft")
    # A one-layer model with weights and no `fc`: its headers are read, and it is a target.
    small = f.llama_target(tmp_path / "one-layer", layers=1)
    f.write_checkpoint(small, None, {"model.embed_tokens.weight": f.Tensor("BF16", (4, 4))})
    for target in (
        f.llama_target(tmp_path / "llama"),
        f.kimi_mla_target(tmp_path / "kimi"),
        small,
        f.llama_target(tmp_path / "one-layer-config-only", layers=1),
    ):
        code, _, err = run(capsys, "check", str(draft), "--target", str(target))
        assert code in (0, 1) and err == "", (target, err)


# ------------------------------------------------------------------ --output-file refusals


def _fifo(place: Path) -> Path:
    os.mkfifo(place / "pipe")  # stands for /dev/null and other special files
    return place / "pipe"


def _socket(place: Path) -> Path:
    import socket

    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(place / "sock"))
    listener.close()
    return place / "sock"


def _device(place: Path) -> Path:
    """A character device node like /dev/null's (1, 3), made in tmp_path (root only)."""
    import stat

    try:
        os.mknod(place / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError:
        pytest.skip("cannot make a device node here")
    return place / "null"


def _folder(place: Path) -> Path:
    (place / "folder").mkdir()
    return place / "folder"


def _link(place: Path) -> Path:
    (place / "report.json").write_text("the user's file")
    (place / "link").symlink_to(place / "report.json")
    return place / "link"


def _dangling(place: Path) -> Path:
    (place / "dangling").symlink_to(place / "nowhere.json")
    return place / "dangling"


def listing(place: Path) -> dict[str, tuple[int, bytes]]:
    """Each entry of `place` by its type and content: what a refusal must leave as it was."""
    entries = {}
    for path in sorted(place.iterdir()):
        mode = os.lstat(path).st_mode
        body = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        entries[path.name] = (mode, body)
    return entries


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (_fifo, "is a FIFO"),
        (_socket, "is a socket"),
        (_device, "is a character device"),
        (_folder, "is a directory"),
        (_link, "is a symbolic link"),
        (_dangling, "is a symbolic link"),
    ],
)
@pytest.mark.parametrize("command", ["check", "diff", "matrix"])
def test_output_file_refuses_what_is_not_a_regular_file(
    capsys, tmp_path: Path, make, said: str, command: str
) -> None:
    draft = f.specforge().write(tmp_path / "eagle3-x")
    place = tmp_path / "place"
    place.mkdir()
    out_path = make(place)
    before = listing(place)
    argv = [command, str(draft), *([str(draft)] if command == "diff" else [])]
    code, out, err = run(capsys, *argv, "--format", "json", "--output-file", str(out_path))
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"draftfit: error: --output-file {out_path} {said}")
    assert listing(place) == before  # not replaced, not written through, nothing beside it


def _draft_config(draft: Path, tmp: Path) -> tuple[list[str], Path]:
    return [], draft / "config.json"


def _new_file_in_draft(draft: Path, tmp: Path) -> tuple[list[str], Path]:
    return [], draft / "report.json"


def _draft_through_a_linked_folder(draft: Path, tmp: Path) -> tuple[list[str], Path]:
    (tmp / "alias").symlink_to(draft)
    return [], tmp / "alias" / "config.json"


def _target_config(draft: Path, tmp: Path) -> tuple[list[str], Path]:
    target = f.llama_target(tmp / "target")
    return ["--target", str(target)], target / "config.json"


def _serve_config(draft: Path, tmp: Path) -> tuple[list[str], Path]:
    (tmp / "serve.json").write_text('{"num_speculative_tokens": 3}')
    return ["--serve-config", str(tmp / "serve.json")], tmp / "serve.json"


def _settings_file(draft: Path, tmp: Path) -> tuple[list[str], Path]:
    (tmp / "draftfit.toml").write_text('ignore = ["DF108"]\n')
    return [], tmp / "draftfit.toml"


def _config_option(draft: Path, tmp: Path) -> tuple[list[str], Path]:
    (tmp / "settings.toml").write_text('ignore = ["DF108"]\n')
    return ["--config", str(tmp / "settings.toml")], tmp / "settings.toml"


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (_draft_config, "is inside the checkpoint"),
        (_new_file_in_draft, "is inside the checkpoint"),
        (_draft_through_a_linked_folder, "is inside the checkpoint"),
        (_target_config, "is inside the target"),
        (_serve_config, "is the --serve-config file"),
        (_settings_file, "is the settings file"),
        (_config_option, "is the settings file"),
    ],
)
def test_output_file_refuses_an_input_of_the_run(capsys, tmp_path: Path, make, said: str) -> None:
    draft = f.specforge().write(tmp_path / "eagle3-x")
    extra, out_path = make(draft, tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    argv = ["check", str(draft), *extra, "--format", "json", "--output-file", str(out_path)]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"draftfit: error: --output-file {out_path} {said}")
    assert "an input; write it elsewhere" in err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("command", ["check", "check-target", "convert-target"])
def test_output_inside_the_hub_cache_of_an_input_is_refused(tmp_path: Path, command: str) -> None:
    """A draft or target named by its Hub id is read from its cache folder (offline here):
    an output there would replace the cached files, so it is refused like a local input."""
    from tests.fake_hub import hub_env
    from tests.hub_layouts import cache_snapshot

    plain = f.specforge().write(tmp_path / "plain")
    snapshot = cache_snapshot(plain, tmp_path / "home" / "hub", "org/name")
    local = f.specforge().write(tmp_path / "local")
    out_path = snapshot / "report.json"
    if command == "check":
        argv = ["check", "org/name", "--format", "json", "--output-file", str(out_path)]
    elif command == "check-target":
        argv = ["check", str(local), "--target", "hf://org/name", "--output-file", str(out_path)]
    else:
        out_path = snapshot.parent.parent / "converted"
        argv = ["convert", str(local), "--target", "org/name", "--to", "vllm", "-o", str(out_path)]
    env = {**os.environ, **hub_env("http://127.0.0.1:9", tmp_path / "home", offline=True)}
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    done = subprocess.run(
        [sys.executable, "-m", "draftfit", *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120 * float(os.environ.get("DRAFTFIT_TEST_TIMEOUT_SCALE", "1")),
    )
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "is inside the Hub cache of" in done.stderr, done.stderr
    assert not out_path.exists()
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_output_file_beside_the_inputs_is_written(capsys, tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "eagle3-x")
    (tmp_path / "serve.json").write_text('{"num_speculative_tokens": 3}')
    report = tmp_path / "eagle3-x.json"  # a sibling whose name starts like the draft's
    argv = ["check", str(draft), "--serve-config", str(tmp_path / "serve.json")]
    code, out, err = run(capsys, *argv, "--format", "json", "--output-file", str(report))
    assert code in (0, 1) and out == "" and err == ""
    assert json.loads(report.read_text())["schema_version"] == 1


def test_atomic_write_refuses_a_special_file_at_write_time(tmp_path: Path) -> None:
    from draftfit.errors import UsageError
    from draftfit.output.atomic_write import write_text_atomic

    pipe = _fifo(tmp_path)
    with pytest.raises(UsageError, match="is a FIFO"):
        write_text_atomic(pipe, "report")
    assert os.path.exists(pipe) and not Path(pipe).is_file()
    assert sorted(os.listdir(tmp_path)) == ["pipe"]
