"""`draftfit convert`: plans, byte-identical tensors, atomic writes, untouched inputs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.checkpoint import load_checkpoint
from draftfit.cli.main import main
from draftfit.commands.comparison import diff_paths
from draftfit.conversion import convert_path
from draftfit.draft.description import describe
from draftfit.errors import OutputExistsError, UsageError
from tests import factory as f
from tests.timeouts import scaled


def tree_hash(path: Path) -> dict[str, str]:
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def tensor_hashes(path: Path) -> dict[str, str]:
    """sha256 of every tensor's bytes, by canonical name."""
    checkpoint = load_checkpoint(path)
    draft = describe(checkpoint)
    out = {}
    for canonical, info in draft.tensors.items():
        start, end = info.byte_range
        out[canonical] = hashlib.sha256(checkpoint.read_range(info.file, start, end)).hexdigest()
    return out


def _random_weights(draft: f.Draft, seed: int = 3) -> f.Draft:
    """Give every hole real bytes, so byte-identity is a real test."""
    import numpy as np

    rng = np.random.default_rng(seed)
    for name, tensor in draft.tensors.items():
        if tensor.data is None:
            size = f.byte_size(tensor.dtype, tensor.shape)
            draft.tensors[name] = f.Tensor(
                tensor.dtype, tensor.shape, rng.integers(0, 256, size, dtype=np.uint8).tobytes()
            )
    return draft


SOURCES = {
    "specforge": lambda: f.specforge(nested_aux=[1, 3, 6]),
    "speculators": lambda: f.speculators(aux=[2, 4, 7]),
    "modelopt": lambda: f.modelopt(aux=[1, 3, 6]),
    "eagle-official": lambda: f.eagle_official(),
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_convention_converts_to_vllm(tmp_path: Path, source: str) -> None:
    draft = _random_weights(SOURCES[source]()).write(tmp_path / "in")
    target = f.llama_target(tmp_path / "target")
    before = tree_hash(draft)
    result = convert_path(draft, "vllm", tmp_path / "out", target=target)
    assert tree_hash(draft) == before, "the input was modified"
    assert result.written and result.report is not None
    assert result.report.engines[0].verdict == "compatible", [
        (x.code, x.message) for x in result.report.findings
    ]
    hashes_in, hashes_out = tensor_hashes(draft), tensor_hashes(tmp_path / "out")
    for name, digest in hashes_in.items():
        if name in hashes_out:
            assert hashes_out[name] == digest, name
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLMEagle3"]
    if source != "eagle-official":
        assert config["eagle_aux_hidden_state_layer_ids"] == [2, 4, 7]
    out_draft = describe(load_checkpoint(tmp_path / "out"))
    assert all(not raw.startswith("midlayer") for raw in out_draft.raw_names.values())


def test_modelopt_gets_top_level_ids_shifted(tmp_path: Path) -> None:
    draft = f.modelopt(aux=[1, 3, 6]).write(tmp_path / "in")
    report = check_path(draft, target=f.llama_target(tmp_path / "t"))
    assert any(x.code == "DF301" for x in report.findings)  # vLLM ignores the nested ids
    result = convert_path(draft, "vllm", tmp_path / "out", target=tmp_path / "t")
    assert not any(x.code == "DF301" for x in result.report.findings)
    aux = result.report.engines[0].aux_layers
    assert aux is not None
    assert aux.used == (2, 4, 7) and aux.read_from == "/eagle_aux_hidden_state_layer_ids"


def test_round_trip_keeps_every_tensor_byte_identical(tmp_path: Path) -> None:
    target = f.llama_target(tmp_path / "target")
    start = _random_weights(f.speculators(aux=[2, 4, 7])).write(tmp_path / "a-speculators")
    convert_path(start, "vllm", tmp_path / "b-vllm", target=target)
    convert_path(tmp_path / "b-vllm", "sglang", tmp_path / "c-sglang", target=target)
    convert_path(tmp_path / "c-sglang", "speculators", tmp_path / "d-speculators", target=target)
    original = tensor_hashes(start)
    for stage in ("b-vllm", "c-sglang", "d-speculators"):
        hashes = tensor_hashes(tmp_path / stage)
        for name, digest in original.items():
            assert hashes.get(name) == digest, (stage, name)
    sglang_raw = describe(load_checkpoint(tmp_path / "c-sglang")).raw_names
    assert sglang_raw["layers.0.self_attn.q_proj.weight"] == "midlayer.self_attn.q_proj.weight"
    diff = diff_paths(start, tmp_path / "d-speculators", target=target)
    assert diff.engines[0].verdict == "equivalent", [(x.code, x.message) for x in diff.findings]
    final = json.loads((tmp_path / "d-speculators" / "config.json").read_text())
    assert final["speculators_model_type"] == "eagle3"
    assert final["eagle_aux_hidden_state_layer_ids"] == [2, 4, 7]
    sglang = json.loads((tmp_path / "c-sglang" / "config.json").read_text())
    assert sglang["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [1, 3, 6]
    assert sglang["draft_vocab_size"] == f.DRAFT_VOCAB


def test_speculators_keeps_vocab_maps_and_derives_t2d(tmp_path: Path) -> None:
    draft = f.modelopt(aux=[1, 3, 6]).write(tmp_path / "in")  # ModelOpt writes no t2d
    result = convert_path(
        draft, "speculators", tmp_path / "out", target=f.llama_target(tmp_path / "t")
    )
    assert any(e.action == "add-tensor" and e.target == "t2d" for e in result.plan.edits)
    written = load_checkpoint(tmp_path / "out")
    assert {"d2t", "t2d"} <= set(written.tensors)
    assert result.report.engines[0].verdict == "compatible"


def test_d2t_is_derived_from_t2d(tmp_path: Path) -> None:
    reference = f.specforge()
    draft = f.specforge().drop("d2t").write(tmp_path / "in")
    result = convert_path(draft, "vllm", tmp_path / "out")
    assert any(e.action == "add-tensor" and e.target == "d2t" for e in result.plan.edits)
    out = load_checkpoint(tmp_path / "out")
    start, end = out.tensors["d2t"].byte_range
    assert out.read_range(out.tensors["d2t"].file, start, end) == reference.tensors["d2t"].data


def test_dry_run_writes_nothing_and_lists_safety(tmp_path: Path, capsys) -> None:
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "in")
    code = main(
        [
            "convert",
            str(draft),
            "--to",
            "vllm",
            "-o",
            str(tmp_path / "out"),
            "--dry-run",
            "--format",
            "json",
        ]
    )
    assert code == 0 and not (tmp_path / "out").exists()
    plan = json.loads(capsys.readouterr().out)["plan"]
    safety = {e["safety"] for e in plan["edits"]}
    assert safety == {"safe"}
    assert any(e["action"] == "move-aux-ids" for e in plan["edits"])
    code = main(["convert", str(draft), "--to", "vllm", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0 and "dry run: nothing written" in out and "safe" in out


def test_unsafe_default_aux_ids_need_the_flag(tmp_path: Path) -> None:
    draft = f.eagle_official().write(tmp_path / "in")  # writes no aux ids
    target = f.llama_target(tmp_path / "t")
    result = convert_path(draft, "vllm", None, target=target, dry_run=True)
    assert "eagle_aux_hidden_state_layer_ids" not in result.plan.config
    assert [e.safety for e in result.plan.pending] == ["unsafe"]
    result = convert_path(draft, "vllm", None, target=target, dry_run=True, unsafe=True)
    assert result.plan.config["eagle_aux_hidden_state_layer_ids"] == [2, 4, 5]


def test_hidden_mismatch_is_display_only(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "in")
    target = f.llama_target(tmp_path / "t", hidden=128)
    result = convert_path(draft, "vllm", None, target=target, dry_run=True)
    assert any(e.safety == "display-only" for e in result.plan.edits)


def test_sglang_flags_norm_before_residual_for_a_human(tmp_path: Path) -> None:
    draft = f.speculators(aux=[2, 4, 5]).write(tmp_path / "in")  # trained with true
    result = convert_path(draft, "sglang", None, dry_run=True)
    assert any(
        e.safety == "display-only" and "norm_before_residual" in e.description
        for e in result.plan.edits
    )


def test_head_dim_is_declared_when_the_tensors_imply_it(tmp_path: Path) -> None:
    source = f.speculators(aux=[2, 4, 5], head_dim=None)
    source.tensors.update(f.eagle3_tensors(naming="layers", head_dim=32, embed=True))
    draft = source.write(tmp_path / "in")
    result = convert_path(draft, "vllm", tmp_path / "out")
    assert result.plan.config["head_dim"] == 32
    assert not any(x.code in ("DF208", "DF204") for x in result.report.findings)


def test_output_rules(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "in")
    with pytest.raises(UsageError, match="inside the input"):
        convert_path(draft, "vllm", draft / "sub")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("x")
    with pytest.raises(OutputExistsError):
        convert_path(draft, "vllm", tmp_path / "busy")
    with pytest.raises(OutputExistsError, match=r"keep\.txt"):
        convert_path(draft, "vllm", tmp_path / "busy", force=True)  # not draftfit's: refused
    assert (tmp_path / "busy" / "keep.txt").read_text() == "x"
    assert not (tmp_path / "busy" / "config.json").exists()
    convert_path(draft, "vllm", tmp_path / "mine")
    with pytest.raises(OutputExistsError, match="--force"):
        convert_path(draft, "vllm", tmp_path / "mine")
    convert_path(draft, "vllm", tmp_path / "mine", force=True)
    assert (tmp_path / "mine" / "config.json").exists()
    leftovers = [p.name for p in tmp_path.iterdir() if "draftfit" in p.name]
    assert leftovers == []


def test_other_files_are_copied(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "in")
    (draft / "tokenizer.json").write_text("{}")
    (draft / "README.md").write_text("card")
    convert_path(draft, "vllm", tmp_path / "out")
    assert (tmp_path / "out" / "tokenizer.json").read_text() == "{}"
    assert (tmp_path / "out" / "README.md").read_text() == "card"


def test_sharded_input_stays_sharded(tmp_path: Path) -> None:
    draft = _random_weights(f.specforge()).write(tmp_path / "in", shards=3)
    convert_path(draft, "vllm", tmp_path / "out")
    out = load_checkpoint(tmp_path / "out")
    assert out.damage == [] and len(out.weight_files) == 3
    assert tensor_hashes(draft) == tensor_hashes(tmp_path / "out")


def test_interrupt_leaves_no_partial_output(tmp_path: Path) -> None:
    """Ctrl-C in the middle of copying ~1 GB leaves neither the output nor a temp folder."""
    source = f.specforge()
    source.tensors["lm_head.weight"] = f.Tensor("BF16", (f.DRAFT_VOCAB, f.H))
    source.add("embed_tokens.weight", "BF16", (f.VOCAB, 2 * 1024 * 1024))  # 1 GiB, sparse
    del source.config["draft_vocab_size"]
    source.config["draft_vocab_size"] = f.DRAFT_VOCAB
    draft = source.write(tmp_path / "in")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "draftfit", "convert", str(draft), "--to", "vllm", "--anyway"]
    # A loaded machine may let the copy finish before the signal is sent: then the output
    # is whole, not what this test is about, and it tries again (at most five times).
    for _ in range(5):
        proc = subprocess.Popen(
            [*argv, "-o", str(tmp_path / "out")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        deadline = time.monotonic() + scaled(60)
        while (
            time.monotonic() < deadline
            and proc.poll() is None
            and not any(p.name.startswith(".out.draftfit-") for p in tmp_path.iterdir())
        ):
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=scaled())
        if (tmp_path / "out").exists():
            # finished, or the signal landed after the output was swapped in: then it is
            # the whole conversion, never a part of one
            assert tensor_hashes(tmp_path / "out") == tensor_hashes(draft)
            shutil.rmtree(tmp_path / "out")
            continue
        break
    assert proc.returncode != 0, "every conversion finished before the signal"
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if "draftfit" in p.name] == []


def test_cli_convert_text(tmp_path: Path, capsys) -> None:
    draft = f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "in")
    out_dir = str(tmp_path / "out")
    code = main(["convert", str(draft), "--to", "vllm", "-o", out_dir, "--anyway"])
    out = capsys.readouterr().out
    assert code == 0
    assert "written to" in out and "Check of the output" in out
    # No --target: the output check cannot call the result compatible.
    assert "vLLM 0.34.0: unverified (0 error, 0 warning, 1 info)" in out
    assert "no target: DF303" in out


def test_hub_source_is_refused_for_convert(capsys) -> None:
    assert main(["convert", "hf://owner/name", "--to", "vllm", "-o", "/tmp/x"]) == 2
    assert "local checkpoint" in capsys.readouterr().err


def test_convert_to_sglang_writes_ids_in_the_targets_counting(tmp_path: Path) -> None:
    """SGLang adds 1 to the nested ids, except for DeepSeek-family targets from 0.5.13,
    which take ids not starting at 1 as they are: the same layers need different ids."""
    draft = f.speculators(aux=[3, 5, 6], norm_before_residual=False).write(tmp_path / "d")
    llama = f.llama_target(tmp_path / "llama")
    deepseek = f.llama_target(tmp_path / "ds", architectures=["DeepseekV3ForCausalLM"])

    def nested(out: Path) -> list[int]:
        config = json.loads((out / "config.json").read_text())
        return config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]

    plain = convert_path(draft, "sglang", tmp_path / "o1", target=llama)
    assert nested(tmp_path / "o1") == [2, 4, 5]
    assert plain.report is not None and plain.report.engines[0].label == "sglang==0.5.23"
    assert plain.report.engines[0].aux_layers.used == (3, 5, 6)

    new = convert_path(
        draft, "sglang", tmp_path / "o2", target=deepseek, engines=["sglang==0.5.13"]
    )
    assert nested(tmp_path / "o2") == [3, 5, 6]
    assert new.report is not None and new.report.engines[0].aux_layers.used == (3, 5, 6)

    old = convert_path(
        draft, "sglang", tmp_path / "o3", target=deepseek, engines=["sglang==0.5.12"]
    )
    assert nested(tmp_path / "o3") == [2, 4, 5]
    assert old.report is not None and old.report.engines[0].aux_layers.used == (3, 5, 6)
