"""Serving settings: every accepted input form, every usage error, and the DF55x rules on
real factory checkpoints next to targets with real config shapes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import draftfit
from draftfit.engines.launch import (
    MAX_SERVE_CONFIG_BYTES,
    parse_serve_args,
    parse_serve_config,
    settings_from,
)
from draftfit.errors import UsageError
from draftfit.report import SkipReason
from tests import factory as f
from tests.timeouts import scaled

AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True}
SPEC = '{"method": "eagle3", "model": "D", "num_speculative_tokens": 3}'


# ------------------------------------------------------------------------------ parsing


def test_speculative_config_alone_inline() -> None:
    s = parse_serve_config(
        '{"method": "eagle3", "model": "D", "num_speculative_tokens": 4, '
        '"draft_tensor_parallel_size": 1, "quantization": "fp8", "attention_backend": '
        '"FLASH_ATTN", "max_model_len": 2048}'
    )
    assert (s.engine, s.method, s.draft_model, s.num_speculative_tokens) == (
        "vllm",
        "eagle3",
        "D",
        4,
    )
    assert s.draft_tensor_parallel_size == 1
    assert s.draft_quantization == "fp8" and s.quantization is None
    assert s.draft_attention_backend == "FLASH_ATTN"
    assert s.ignored_flags == ("max_model_len",)


def test_engine_args_yaml_file_with_dashes_and_nested_json_string(tmp_path: Path) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text(
        "tensor-parallel-size: 8\npipeline_parallel_size: 2\nkv-cache-dtype: fp8\n"
        "enforce-eager: true\nquantization: awq\nmax-num-seqs: 64\n"
        f"speculative-config: '{SPEC}'\n"
    )
    s = parse_serve_config(str(path))
    assert (s.tensor_parallel_size, s.pipeline_parallel_size) == (8, 2)
    assert (s.kv_cache_dtype, s.cuda_graphs, s.quantization) == ("fp8", False, "awq")
    assert (s.method, s.num_speculative_tokens) == ("eagle3", 3)
    assert s.ignored_flags == ("max-num-seqs",)


def test_engine_args_json_file_nested_mapping(tmp_path: Path) -> None:
    path = tmp_path / "serve.json"
    path.write_text(json.dumps({"tensor_parallel_size": 4, "speculative_config": json.loads(SPEC)}))
    s = parse_serve_config(str(path))
    assert (s.tensor_parallel_size, s.method, s.draft_model) == (4, "eagle3", "D")


def test_vllm_command_with_aliases_underscores_and_dotted_keys() -> None:
    s = parse_serve_args(
        f"vllm serve meta-llama/Llama-3.1-8B -tp 8 --pipeline_parallel_size=2 "
        f"--speculative-config '{SPEC}' --speculative-config.draft_tensor_parallel_size 1 "
        "--enforce-eager --max-model-len 32K --max-num-seqs 8 -q awq"
    )
    assert s.engine == "vllm"
    assert (s.tensor_parallel_size, s.pipeline_parallel_size) == (8, 2)
    assert (s.draft_tensor_parallel_size, s.cuda_graphs, s.quantization) == (1, False, "awq")
    assert s.context_length == 32 * 1024
    assert s.ignored_flags == ("--max-num-seqs",)


def test_sglang_command_with_abbreviation_and_continuations() -> None:
    s = parse_serve_args(
        "python -m sglang.launch_server --model-path moonshotai/Kimi-K2.5 --tp 8 \\\n"
        "  --speculative-algorithm EAGLE3 --speculative-draft-model-path D \\\n"
        "  --speculative-num-steps 3 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 4 --attention-backend trtllm_mla "
        "--disable-cuda-graph --trust-remote-code --mem-fraction-static 0.8"
    )
    assert s.engine == "sglang"
    assert (s.tensor_parallel_size, s.attention_backend, s.cuda_graphs) == (8, "trtllm_mla", False)
    assert (s.speculative_num_steps, s.speculative_eagle_topk) == (3, 1)
    assert s.speculative_num_draft_tokens == 4 and s.draft_model == "D"
    assert s.ignored_flags == ("--mem-fraction-static",)


def test_a_dotted_json_key_is_read_only_where_the_engine_has_that_json_flag() -> None:
    # `--speculative-config.KEY` is vLLM's: SGLang and TensorRT-LLM have no such flag, so
    # their launches list it as not read (their parsers refuse it: DF559).
    for launch in (
        "python -m sglang.launch_server --speculative-config.method EAGLE3",
        "trtllm-serve M --speculative-config.method Eagle3",
    ):
        s = parse_serve_args(launch)
        assert s.method is None
        assert s.ignored_flags == ("--speculative-config.method",)


def test_engine_from_flags_alone_and_trtllm_command() -> None:
    assert parse_serve_args("--tp-size 4 --speculative-algorithm EAGLE3").engine == "sglang"
    assert parse_serve_args(f"-tp 2 --speculative-config '{SPEC}'").engine == "vllm"
    t = parse_serve_args("trtllm-serve M --tp_size 8 --pp_size 2 --backend pytorch --log_level x")
    assert t.engine == "trtllm" and t.ignored_flags == ("--log_level",)
    assert (t.tensor_parallel_size, t.pipeline_parallel_size) == (8, 2)
    bare = parse_serve_args("--tp_size 4 --pipeline_parallel_size=2")
    assert bare.engine == "trtllm" and bare.pipeline_parallel_size == 2


def test_both_inputs_describe_one_vllm_launch() -> None:
    s = settings_from(
        serve_config='{"draft_tensor_parallel_size": 1, "method": "eagle3"}',
        serve_args="vllm serve M -tp 4",
    )
    assert s is not None
    assert (s.tensor_parallel_size, s.draft_tensor_parallel_size) == (4, 1)
    assert s.given_by == "--serve-args and --serve-config"


@pytest.mark.parametrize(
    ("config", "args", "message"),
    [
        ("{not json", None, "not valid JSON"),
        ("[1, 2]", None, "expected a JSON object"),
        ('{"tensor_parallel_size": "eight"}', None, "expected an integer"),
        ('{"tensor_parallel_size": 0}', None, "positive integer"),
        ('{"num_speculative_tokens": true}', None, "expected an integer"),
        ('{"enforce_eager": "maybe", "tensor_parallel_size": 1}', None, "true or false"),
        ("/no/such/serve.yaml", None, "no such file"),
        (None, "vllm serve 'unclosed", "cannot split"),
        (None, "--max-model-len 4", "cannot tell the engine"),
        (SPEC, "python -m sglang.launch_server --tp 2", "one launch"),
    ],
)
def test_usage_errors(config: str | None, args: str | None, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        settings_from(serve_config=config, serve_args=args)


def test_yaml_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("tensor_parallel_size: [1\n")
    with pytest.raises(UsageError, match="not valid YAML"):
        parse_serve_config(str(bad))
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("just text\n")
    with pytest.raises(UsageError, match="expected a mapping"):
        parse_serve_config(str(scalar))


def test_settings_file_is_read_bounded(tmp_path: Path) -> None:
    """A FIFO is refused without blocking, an oversized file without being read whole, and
    JSON goes through the bounded reader (a deeply nested document is refused)."""
    fifo = tmp_path / "serve.fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="not a regular file"):
        parse_serve_config(str(fifo))
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_SERVE_CONFIG_BYTES + 1))
    with pytest.raises(UsageError, match="above the"):
        parse_serve_config(str(big))
    deep = "[" * 10_000 + "]" * 10_000
    with pytest.raises(UsageError, match="--serve-config"):
        parse_serve_config('{"speculative_config": ' + deep + "}")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "draftfit", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=scaled(),
    )


@pytest.mark.parametrize(
    ("args", "unreadable"),
    [
        ("vllm serve M -tp x", "-tp: expected an integer, got 'x'"),
        ("vllm serve M -tp 1e999", "-tp: expected an integer"),
        ("vllm serve M --max-model-len 9" + "9" * 5000, "--max-model-len: expected"),
        ("vllm serve M --speculative-config '{bad'", "--speculative-config: not valid JSON"),
        ("vllm serve M -tp", "-tp: expected one argument"),
        ("python -m sglang.launch_server --tp-size 2.5", "--tp-size: expected an integer"),
    ],
)
def test_a_value_the_engines_parser_cannot_read_is_kept_for_the_checks(
    args: str, unreadable: str
) -> None:
    """In the user's launch, a value the engine's parser cannot convert is the engine's
    refusal (a DF559 finding per release), not a usage error of draftfit's."""
    s = settings_from(serve_args=args)
    assert s is not None
    assert len(s.unreadable_values) == 1 and s.unreadable_values[0].startswith(unreadable)
    assert s.to_dict()["unreadable_values"] == list(s.unreadable_values)


def test_cli_usage_error_is_one_line_exit_2(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    done = _cli("check", str(draft), "--serve-config", "{oops")
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_an_unreadable_launch_value_is_df559_for_every_release(tmp_path: Path) -> None:
    draft = f.speculators().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "target")
    spec = '{"model": "' + str(draft) + '", "method": eagle3}'
    for engine in ("vllm==0.34.0", "vllm==0.10.2", "vllm==0.17.0"):
        done = _cli(
            "check",
            str(draft),
            "--target",
            str(target),
            "--engine",
            engine,
            "--serve-args",
            f"vllm serve {target} -tp 1 --speculative-config '{spec}'",
            "--format",
            "json",
        )
        assert done.returncode == 1, done.stderr
        report = json.loads(done.stdout)
        (result,) = report["engines"]
        assert result["verdict"] == "incompatible"
        found = [x for x in report["findings"] if x["code"] == "DF559"]
        assert found and "not valid JSON" in found[0]["message"], engine
        assert report["serve"]["unreadable_values"][0].startswith(
            "--speculative-config: not valid JSON"
        )


# ------------------------------------------------------------------------------ the rules


def _kimi_target(root: Path, **extra: Any) -> Path:
    """A tiny DeepSeek-V3 / Kimi-K2-shaped target config (MLA: `kv_lora_rank`)."""
    return f.kimi_mla_target(root / "target", **extra)


def _codes(report: Any) -> set[str]:
    return {x.code for x in report.findings}


def _json(report: Any) -> dict[str, Any]:
    out: dict[str, Any] = report.to_dict()
    return out


SGLANG_MLA = (
    "python -m sglang.launch_server --model-path K --tp 8 --speculative-algorithm EAGLE3 "
    "--speculative-draft-model-path D --attention-backend trtllm_mla"
)


@pytest.mark.parametrize("version", ["0.5.6", "0.5.23"])
def test_df553_mha_draft_on_mla_only_backend(tmp_path: Path, version: str) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    report = draftfit.check(
        draft, _kimi_target(tmp_path), [f"sglang=={version}"], serve_args=SGLANG_MLA
    )
    found = [x for x in report.findings if x.code == "DF553"]
    assert len(found) == 1 and report.engines[0].verdict == "incompatible"
    assert "trtllm_mla backend can only be used with MLA models" in found[0].message
    fix = found[0].fix or ""
    if version == "0.5.6":
        assert "arrives in SGLang 0.5.7" in fix
    else:
        assert fix.startswith("add `--speculative-draft-attention-backend`")


def test_df553_quiet_with_draft_backend_mla_draft_or_llama_target(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    kimi = _kimi_target(tmp_path)
    engines = ["sglang==0.5.23"]
    with_flag = SGLANG_MLA + " --speculative-draft-attention-backend fa3"
    assert "DF553" not in _codes(draftfit.check(draft, kimi, engines, serve_args=with_flag))
    mla = f.mla_draft().write(tmp_path / "mla")
    assert "DF553" not in _codes(draftfit.check(mla, kimi, engines, serve_args=SGLANG_MLA))
    llama = f.llama_target(tmp_path / "llama")
    assert "DF553" not in _codes(draftfit.check(draft, llama, engines, serve_args=SGLANG_MLA))
    flashinfer = SGLANG_MLA.replace("trtllm_mla", "flashinfer")
    assert "DF553" not in _codes(draftfit.check(draft, kimi, engines, serve_args=flashinfer))


def test_without_settings_serving_rules_are_skipped_not_unverified(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    report = draftfit.check(draft, f.llama_target(tmp_path / "t"), ["sglang==0.5.23"])
    skipped = {s.code: s.reason for s in report.skipped_rules}
    assert skipped["DF553"] is SkipReason.NO_LAUNCH
    said = {s["code"]: s["reason"] for s in _json(report)["skipped_rules"]}
    assert said["DF553"] == "needs --serve-config or --serve-args"
    assert report.engines[0].verdict == "compatible"
    assert "serve" not in _json(report)
    # settings for another engine leave the SGLang rules skipped too
    other = draftfit.check(
        draft, f.llama_target(tmp_path / "t2"), ["sglang==0.5.23"], serve_config=SPEC
    )
    assert "DF553" in {s.code for s in other.skipped_rules}
    assert _json(other)["serve"]["engine"] == "vllm"


def test_df554_quantization_flag_definite_with_settings(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t", quantization_config=AWQ)
    engines = ["sglang==0.5.23"]
    assert "DF515" in _codes(draftfit.check(draft, target, engines))  # the launch unknown
    base = "python -m sglang.launch_server --model-path T --speculative-algorithm EAGLE3"
    passed = draftfit.check(draft, target, engines, serve_args=base + " --quantization awq")
    assert _codes(passed) & {"DF515", "DF554"} == {"DF554"}
    assert passed.engines[0].verdict == "incompatible"
    assert "unquant" in (next(x for x in passed.findings if x.code == "DF554").fix or "")
    for quiet in (
        base,
        base + " --quantization awq --speculative-draft-model-quantization unquant",
    ):
        report = draftfit.check(draft, target, engines, serve_args=quiet)
        assert not _codes(report) & {"DF515", "DF554"}, quiet
    old = draftfit.check(draft, target, ["sglang==0.5.6"], serve_args=base + " --quantization awq")
    fix = next(x for x in old.findings if x.code == "DF554").fix or ""
    assert fix.startswith("leave --quantization out")


VLLM_TP = "vllm serve T -tp 8 --speculative-config '{}'"


def _vllm_tp(draft_tp: int | None) -> str:
    spec: dict[str, Any] = {"method": "eagle3", "model": "D", "num_speculative_tokens": 3}
    if draft_tp is not None:
        spec["draft_tensor_parallel_size"] = draft_tp
    return VLLM_TP.replace("{}", json.dumps(spec))


@pytest.mark.parametrize(
    ("draft_tp", "code", "verdict"),
    [
        (1, "DF551", "compatible"),  # slower or more memory only: info
        (2, "DF552", "incompatible"),
        (8, None, "compatible"),
        (None, None, "compatible"),
    ],
)
def test_df551_df552_draft_tensor_parallel(
    tmp_path: Path, draft_tp: int | None, code: str | None, verdict: str
) -> None:
    draft = f.speculators().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    report = draftfit.check(draft, target, ["vllm==0.34.0"], serve_args=_vllm_tp(draft_tp))
    assert _codes(report) & {"DF551", "DF552"} == ({code} if code else set())
    assert report.engines[0].verdict == verdict
    assert _json(report)["serve"]["tensor_parallel_size"] == 8


def test_text_report_shows_settings_and_skips(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    done = _cli("check", str(draft), "--target", str(target), "--engine", "sglang==0.5.23")
    assert "Skipped without serving settings" in done.stdout
    assert "default launch" in done.stdout
    done = _cli(
        "check",
        str(draft),
        "--target",
        str(target),
        "--engine",
        "sglang==0.5.23",
        "--serve-args",
        SGLANG_MLA + " --foo 1",
        "--format",
        "json",
    )
    out = json.loads(done.stdout)
    serve = out["serve"] if "serve" in out else out["reports"][0]["serve"]
    # SGLang 0.5.23's parser refuses `--foo`: listed as refused (and a DF559), not as unread
    assert serve["engine"] == "sglang" and serve["refused_flags"] == ["--foo"]
    assert serve["ignored_flags"] == []
    assert any(f["code"] == "DF559" and "--foo" in f["message"] for f in out["findings"])


def _pp(pp: int) -> str:
    return _vllm_tp(None).replace("-tp 8", f"-tp 4 -pp {pp}")


def test_df550_vllm_drops_aux_states_from_earlier_stages(tmp_path: Path) -> None:
    draft = f.speculators().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    report = draftfit.check(draft, target, ["vllm==0.20.0"], serve_args=_pp(2))
    found = [x for x in report.findings if x.code == "DF550"]
    assert len(found) == 1 and report.engines[0].verdict == "incompatible"
    assert "shape mismatch" in found[0].message
    assert "upgrade to vLLM 0.30.0" in (found[0].fix or "")
    one_stage = draftfit.check(draft, target, ["vllm==0.20.0"], serve_args=_pp(1))
    assert "DF550" not in _codes(one_stage)


@pytest.mark.parametrize("version", ["0.21.0", "0.22.0", "0.24.0", "0.29.0"])
def test_df550_vllm_v1_runner_serves_pipeline_stages_until_0_30(
    tmp_path: Path, version: str
) -> None:
    # 0.22.0-0.29.0: the newer runner declines EAGLE-3 with pipeline stages, so the V1
    # runner serves the launch even for a target it would otherwise take (0.24.0: Llama)
    draft = f.speculators().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    report = draftfit.check(draft, target, [f"vllm=={version}"], serve_args=_pp(2))
    found = [x for x in report.findings if x.code == "DF550"]
    assert len(found) == 1 and "shape mismatch" in found[0].message, version
    assert "upgrade to vLLM 0.30.0" in (found[0].fix or "")


@pytest.mark.parametrize("version", ["0.30.0", "0.33.0", "0.34.0"])
def test_df550_vllm_newer_runner_per_target_class(tmp_path: Path, version: str) -> None:
    draft = f.speculators().write(tmp_path / "draft")
    llama = f.llama_target(tmp_path / "llama")
    engines = [f"vllm=={version}"]
    assert "DF550" not in _codes(draftfit.check(draft, llama, engines, serve_args=_pp(2)))
    kimi = _kimi_target(tmp_path)
    report = draftfit.check(draft, kimi, engines, serve_args=_pp(2))
    found = [x for x in report.findings if x.code == "DF550"]
    assert len(found) == 1 and "`DeepseekV3ForCausalLM` does not" in found[0].message


def test_df550_sglang_refuses_eagle3_with_pipeline_stages(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    base = (
        "python -m sglang.launch_server --model-path T --tp-size 4 --speculative-algorithm EAGLE3"
    )
    for version in ("0.4.7", "0.5.23"):
        report = draftfit.check(
            draft, target, [f"sglang=={version}"], serve_args=base + " --pp-size 2"
        )
        found = [x for x in report.findings if x.code == "DF550"]
        assert len(found) == 1, version
        assert "--tp-size 8" in (found[0].fix or "")
    quiet = draftfit.check(draft, target, ["sglang==0.5.23"], serve_args=base + " --pp-size 1")
    assert "DF550" not in _codes(quiet)


def test_df551_df552_quiet_when_the_target_size_is_not_given(tmp_path: Path) -> None:
    draft = f.speculators().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    config = '{"method": "eagle3", "model": "D", "num_speculative_tokens": 3, '
    for draft_tp in (1, 2):
        report = draftfit.check(
            draft,
            target,
            ["vllm==0.34.0"],
            serve_config=config + f'"draft_tensor_parallel_size": {draft_tp}}}',
        )
        assert not _codes(report) & {"DF551", "DF552"}


def test_df553_vllm_mla_backend_without_a_draft_backend(tmp_path: Path) -> None:
    draft = f.speculators().write(tmp_path / "draft")
    kimi = _kimi_target(tmp_path)
    launch = _vllm_tp(None).replace("-tp 8", "-tp 8 --attention-backend flashinfer_mla")
    report = draftfit.check(draft, kimi, ["vllm==0.34.0"], serve_args=launch)
    found = [x for x in report.findings if x.code == "DF553"]
    assert len(found) == 1 and "non-MLA not supported" in found[0].message
    assert '"attention_backend": "FLASH_ATTN"' in (found[0].fix or "")
    own = launch.replace('"method"', '"attention_backend": "FLASH_ATTN", "method"')
    assert "DF553" not in _codes(draftfit.check(draft, kimi, ["vllm==0.34.0"], serve_args=own))
    # 0.20.0 builds the draft with the launch's backend and has no draft setting
    older = draftfit.check(draft, kimi, ["vllm==0.20.0"], serve_args=launch)
    found = [x for x in older.findings if x.code == "DF553"]
    assert len(found) == 1 and (found[0].fix or "").startswith("leave --attention-backend")
    # ... and no `attention_backend` key: its speculative config refuses the key itself
    unknown = draftfit.check(draft, kimi, ["vllm==0.20.0"], serve_args=own)
    assert "DF553" not in _codes(unknown)


def test_diff_and_matrix_take_the_settings(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    reference = f.mla_draft().write(tmp_path / "reference")  # an MLA draft runs on trtllm_mla
    kimi = _kimi_target(tmp_path)
    engines = ["sglang==0.5.23"]
    plain = draftfit.diff(draft, reference, kimi, engines)
    judged = draftfit.diff(draft, reference, kimi, engines, serve_args=SGLANG_MLA)
    assert "DF808" not in {x.code for x in plain.findings}
    assert "DF808" in {x.code for x in judged.findings}  # only the draft fails DF553
    matrix = draftfit.matrix(draft, kimi, serve_args=SGLANG_MLA)
    newest = next(r for r in matrix.rows if r.engine == "sglang" and r.last == "0.5.23")
    assert newest.verdict == "incompatible"
    assert "DF553" in {x.code for x in newest.deciding}
    assert any(note.startswith("serving settings, judged for sglang") for note in matrix.notes)
    done = _cli("matrix", str(draft), "--target", str(kimi), "--serve-config", "{bad")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_df108_quiet_when_the_launch_names_the_method(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    engines = ["vllm==0.34.0"]
    named = (
        'vllm serve T --speculative-config \'{"method": "eagle3", "model": "D", '
        '"num_speculative_tokens": 3}\''
    )
    unnamed = 'vllm serve T --speculative-config \'{"model": "D", "num_speculative_tokens": 3}\''
    assert "DF108" in _codes(draftfit.check(draft, target, engines))
    assert "DF108" not in _codes(draftfit.check(draft, target, engines, serve_args=named))
    # without a method, the launch runs what vLLM resolves from the path `D`: draft_model
    assert _codes(draftfit.check(draft, target, engines, serve_args=unnamed)) == {"DF114"}


# ------------------------------------------------- DF553 on vLLM before 0.34.0, per release


def test_leading_environment_assignments() -> None:
    s = parse_serve_args(
        "VLLM_ATTENTION_BACKEND=FLASHMLA CUDA_VISIBLE_DEVICES=0,1 vllm serve K -tp 8 --foo 1"
    )
    assert s.engine == "vllm" and s.tensor_parallel_size == 8
    assert s.attention_backend_env == "FLASHMLA" and s.attention_backend is None
    assert s.ignored_flags == ("CUDA_VISIBLE_DEVICES", "--foo")
    assert "attention_backend_env=FLASHMLA" in s.summary()
    with_env = parse_serve_args("env VLLM_ATTENTION_BACKEND=TRITON_MLA vllm serve K")
    assert with_env.attention_backend_env == "TRITON_MLA"
    # another engine's launch does not read vLLM's variable
    other = parse_serve_args(
        "VLLM_ATTENTION_BACKEND=FLASHMLA python -m sglang.launch_server --model-path K"
    )
    assert other.engine == "sglang" and other.attention_backend_env is None
    assert other.ignored_flags == ("VLLM_ATTENTION_BACKEND",)
    # a word with `=` after the command is not an assignment
    assert parse_serve_args("vllm serve K A=B -tp 2").ignored_flags == ()


def _mla_launch(backend: str | None = None, env: str | None = None, own: bool = False) -> str:
    spec: dict[str, Any] = {"method": "eagle3", "model": "D", "num_speculative_tokens": 3}
    if own:
        spec["attention_backend"] = "FLASH_ATTN"
    launch = f"vllm serve K -tp 8 --speculative-config '{json.dumps(spec)}'"
    if backend is not None:
        launch += f" --attention-backend {backend}"
    return (f"VLLM_ATTENTION_BACKEND={env} " if env else "") + launch


def _df553(tmp_path: Path, version: str, launch: str, target: Path | None = None) -> list[Any]:
    draft = f.speculators().write(tmp_path / "draft")
    kimi = target or _kimi_target(tmp_path)
    report = draftfit.check(draft, kimi, [f"vllm=={version}"], serve_args=launch)
    return [x for x in report.findings if x.code == "DF553"]


@pytest.mark.parametrize(
    ("version", "fires"),
    [
        ("0.11.0", False),  # a forced backend that does not fit a layer is passed over
        ("0.11.1", True),  # validated for every layer; the draft is built with the target's
        ("0.12.0", True),
        ("0.13.0", True),  # still read (deprecated) next to --attention-backend
        ("0.14.0", True),
        ("0.16.0", False),  # no longer read
    ],
)
def test_df553_vllm_environment_variable_per_release(
    tmp_path: Path, version: str, fires: bool
) -> None:
    found = _df553(tmp_path, version, _mla_launch(env="FLASHMLA"))
    assert len(found) == (1 if fires else 0), version
    if fires:
        assert "with VLLM_ATTENTION_BACKEND=FLASHMLA and no draft backend" in found[0].message
        assert "Selected backend AttentionBackendEnum.FLASHMLA is not valid" in found[0].message
        assert found[0].location.pointer == "/attention_backend_env"
        assert (found[0].fix or "").startswith("leave VLLM_ATTENTION_BACKEND out")
        assert "from vLLM 0.30.0" in (found[0].fix or "")


@pytest.mark.parametrize(
    ("version", "fires"),
    [
        ("0.12.0", False),  # no --attention-backend flag yet
        ("0.13.0", True),
        ("0.20.0", True),
        ("0.21.0", False),  # the V1 runner picks the draft's backend itself
        ("0.28.0", False),  # a DeepseekV3 (MoE) target still on the V1 runner
        ("0.29.0", True),  # the V2 runner builds the draft with the launch's backend
        ("0.30.0", True),
        ("0.33.0", True),
        ("0.34.0", True),
    ],
)
def test_df553_vllm_flag_per_release(tmp_path: Path, version: str, fires: bool) -> None:
    found = _df553(tmp_path, version, _mla_launch(backend="flashmla"))
    assert len(found) == (1 if fires else 0), version
    if fires:
        assert "with --attention-backend flashmla and no draft backend" in found[0].message
        assert "Selected backend AttentionBackendEnum.FLASHMLA is not valid" in found[0].message


def test_df553_vllm_draft_backend_setting_per_runner(tmp_path: Path) -> None:
    # 0.29.0: the V2 runner does not apply speculative_config.attention_backend to EAGLE
    found = _df553(tmp_path / "a", "0.29.0", _mla_launch(backend="FLASHMLA", own=True))
    assert len(found) == 1
    assert "which that runner does not apply to an EAGLE draft" in found[0].message
    assert "V2 model runner" in found[0].message
    assert (found[0].fix or "").startswith("leave --attention-backend out")
    assert "from vLLM 0.30.0" in (found[0].fix or "")
    without = _df553(tmp_path / "b", "0.29.0", _mla_launch(backend="FLASHMLA"))
    assert len(without) == 1 and "no draft backend of its own" in without[0].message
    # 0.30.0 applies it
    for version in ("0.30.0", "0.33.0"):
        assert not _df553(tmp_path / version, version, _mla_launch("FLASHMLA", own=True))
        fired = _df553(tmp_path / f"{version}-n", version, _mla_launch("FLASHMLA"))
        assert '"attention_backend": "FLASH_ATTN"' in (fired[0].fix or "")


def test_df553_vllm_runner_follows_the_target_and_pipeline_stages(tmp_path: Path) -> None:
    # 0.24.0 serves DeepseekV2ForCausalLM with the V2 runner (draft inherits) and
    # DeepseekV3ForCausalLM with the V1 runner (draft picks its own)
    v2 = f.llama_target(
        tmp_path / "v2",
        architectures=["DeepseekV2ForCausalLM"],
        model_type="deepseek_v2",
        kv_lora_rank=512,
        n_routed_experts=8,
    )
    found = _df553(tmp_path / "a", "0.24.0", _mla_launch("FLASHMLA"), target=v2)
    assert len(found) == 1 and "`DeepseekV2ForCausalLM` target" in found[0].message
    assert not _df553(tmp_path / "b", "0.24.0", _mla_launch("FLASHMLA"))
    # with pipeline stages 0.29.0 serves EAGLE-3 on the V1 runner: no DF553 (DF550 fires)
    staged = _mla_launch("FLASHMLA").replace("-tp 8", "-tp 4 -pp 2")
    assert not _df553(tmp_path / "c", "0.29.0", staged)
    # the variable is checked against the names as spelled: vLLM refuses `flashmla` itself
    assert not _df553(tmp_path / "f", "0.12.0", _mla_launch(env="flashmla"))
    # both the flag and the variable on 0.13.0: vLLM refuses the pair itself
    both = _mla_launch(backend="FLASHMLA", env="FLASHMLA")
    assert not _df553(tmp_path / "d", "0.13.0", both)
    assert len(_df553(tmp_path / "e", "0.16.0", both)) == 1  # the flag alone is read


def test_recipe_checks_a_planned_conversion_for_the_same_launch(tmp_path: Path) -> None:
    # converting the draft does not move aux states across pipeline stages
    draft = f.speculators().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    report = draftfit.check(draft, target, ["vllm==0.29.0"], serve_args=_pp(2), recipes=True)
    assert report.engines[0].verdict == "incompatible"
    # the recipe edits the given launch and keeps its two pipeline stages, under which
    # DF550 stays: no recipe claims to make this launch servable
    assert report.recipes == []


def test_pipeline_stages_put_eagle3_on_the_v1_runner_until_0_30(tmp_path: Path) -> None:
    # 0.24.0 serves a Llama target with its V2 runner, but not with pipeline stages
    draft = f.speculators().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")

    def runner(version: str, pp: int) -> object:
        report = draftfit.check(draft, target, [f"vllm=={version}"], serve_args=_pp(pp))
        return report.engines[0].kept().view.effective["runner"]

    assert runner("0.24.0", 1) == "mrv2"
    assert runner("0.24.0", 2) == "mrv1"
    assert runner("0.30.0", 2) == "mrv2"


def test_the_method_the_launch_names_is_the_one_checked(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    sglang = "python -m sglang.launch_server --model-path T --speculative-draft-model-path D"
    wrong = draftfit.check(
        draft, target, ["sglang==0.5.23"], serve_args=sglang + " --speculative-algorithm EAGLE"
    )
    assert "DF107" in _codes(wrong) and wrong.engines[0].verdict == "incompatible"
    right = draftfit.check(
        draft, target, ["sglang==0.5.23"], serve_args=sglang + " --speculative-algorithm EAGLE3"
    )
    assert "DF107" not in _codes(right) and right.engines[0].verdict == "compatible"
    vllm = 'vllm serve T --speculative-config \'{"method": "eagle", "model": "D"}\''
    assert "DF107" in _codes(draftfit.check(draft, target, ["vllm==0.34.0"], serve_args=vllm))
    # --method decides over the launch; a launch of another engine changes nothing here.
    told = draftfit.check(draft, target, ["vllm==0.34.0"], method="eagle3", serve_args=vllm)
    assert "DF107" not in _codes(told)
    other = draftfit.check(
        draft, target, ["vllm==0.34.0"], serve_args=sglang + " --speculative-algorithm EAGLE"
    )
    assert "DF107" not in _codes(other)


# ---------------------------------------------------------------- DF559: values, not types


def _df559(report: Any) -> list[str]:
    return [x.message for x in report.findings if x.code == "DF559"]


def test_unknown_method_names_the_known_ones_with_a_guess(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    bogus = _df559(draftfit.check(draft, serve_config='{"method": "bogus"}'))
    assert len(bogus) == 1 and "`eagle3`" in bogus[0] and "`eagle`" in bogus[0], bogus
    typo = _df559(draftfit.check(draft, serve_config='{"method": "eagle-3"}'))
    assert "Did you mean `eagle3`?" in typo[0], typo
    sglang = "python -m sglang.launch_server --model T --speculative-algorithm EAGEL3"
    report = draftfit.check(draft, engines=["sglang"], serve_args=sglang)
    assert "Did you mean `EAGLE3`?" in _df559(report)[0]
    assert any(e.verdict != "compatible" for e in report.engines)
    assert _df559(draftfit.check(draft, serve_config='{"method": "eagle3"}')) == []
    # vLLM takes the method name as written: `EAGLE3` is not one of its methods.
    upper = _df559(draftfit.check(draft, serve_config='{"method": "EAGLE3"}'))
    assert len(upper) == 1 and "Did you mean `eagle3`?" in upper[0]


def test_a_release_without_the_drafts_own_method_is_not_told_another(tmp_path: Path) -> None:
    # vLLM 0.8.4 and SGLang 0.4.4 know only EAGLE-1: naming `eagle`/`EAGLE` to an EAGLE-3
    # draft would not serve it, so the fix is the first release with the draft's method.
    draft = f.specforge().write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t")
    for written in ("eagle3", "EAGLE3"):
        config = json.dumps({"method": written, "model": str(draft)})
        found = _df559(draftfit.check(draft, target, ["vllm==0.8.4"], serve_config=config))
        assert len(found) == 1, found
        assert f"`method` is `{written}`, the draft's own method" in found[0]
        assert "Did you mean" not in found[0]
        fixes = [
            x.fix
            for x in draftfit.check(draft, target, ["vllm==0.8.4"], serve_config=config).findings
            if x.code == "DF559"
        ]
        assert fixes == ["use vLLM 0.8.5 or later, with `method` `eagle3`"]
    sglang = (
        "python -m sglang.launch_server --model-path T --speculative-draft-model-path D "
        "--speculative-algorithm eagle3"
    )
    report = draftfit.check(draft, target, ["sglang==0.4.4"], serve_args=sglang)
    fixes = [x.fix for x in report.findings if x.code == "DF559"]
    assert fixes == ["use SGLang 0.4.4.post2 or later, with `--speculative-algorithm` `EAGLE3`"]
    # A release that has the method under another case still gets the guess.
    upper = _df559(
        draftfit.check(draft, target, ["vllm==0.34.0"], serve_config='{"method": "EAGLE3"}')
    )
    assert len(upper) == 1 and "Did you mean `eagle3`?" in upper[0]


def test_quantization_and_draft_path_values_are_checked(tmp_path: Path) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    device_like = tmp_path / "weights.bin"
    device_like.write_bytes(b"\0" * 16)
    for config in (
        '{"method": "eagle3", "quantization": "-1"}',
        '{"method": "eagle3", "quantization": -1}',
        json.dumps({"method": "eagle3", "model": str(device_like), "num_speculative_tokens": 3}),
    ):
        found = _df559(draftfit.check(draft, serve_config=config))
        assert len(found) == 1, (config, found)
    with pytest.raises(UsageError, match="quantization: expected a name or a number, got inf"):
        draftfit.check(draft, serve_config='{"method": "eagle3", "quantization": 1e999}')
    fine = json.dumps(
        {
            "method": "eagle3",
            "model": str(draft),
            "quantization": "fp8",
            "num_speculative_tokens": 3,
        }
    )
    assert _df559(draftfit.check(draft, serve_config=fine)) == []
    # A path that is no folder here and no Hub id either: the engine refuses it at start-up
    # (a path on another machine too: the launch is judged as it would run here).
    elsewhere = {"method": "eagle3", "model": "/models/on/the/server", "num_speculative_tokens": 3}
    missing = _df559(draftfit.check(draft, serve_config=json.dumps(elsewhere)))
    assert len(missing) == 1 and "does not exist here" in missing[0], missing
    # A Hub id is looked up on the Hub by the engine: not judged.
    on_hub = {"method": "eagle3", "model": "org/draft-on-the-hub", "num_speculative_tokens": 3}
    assert _df559(draftfit.check(draft, serve_config=json.dumps(on_hub))) == []
    # a draft named without a token count: vLLM raises while it builds the speculative config
    del on_hub["num_speculative_tokens"]
    uncounted = _df559(draftfit.check(draft, serve_config=json.dumps(on_hub)))
    assert len(uncounted) == 1 and "num_speculative_tokens" in uncounted[0]


def test_values_in_messages_are_bounded(tmp_path: Path) -> None:
    """A huge or nested value is described, not printed whole; keys that do not look like
    setting names are not listed, and at most 20 are."""
    long = "x" * 100_000
    with pytest.raises(UsageError) as caught:
        parse_serve_config(json.dumps({"num_speculative_tokens": long}))
    assert len(str(caught.value)) < 300
    with pytest.raises(UsageError) as caught:
        parse_serve_config(json.dumps({"speculative_config": {"method": [list(range(50_000))]}}))
    assert len(str(caught.value)) < 300
    keys = {f"extra_{i}": 1 for i in range(30)} | {"root:$6$secret": 1, "a b": 2}
    settings = parse_serve_config(json.dumps({"method": "eagle3", **keys}))
    assert len(settings.ignored_flags) == 21
    assert settings.ignored_flags[-1] == "(12 more not shown)"
    assert not any("secret" in name or " " in name for name in settings.ignored_flags[:-1])


@pytest.mark.parametrize(
    ("engine", "consequence", "cited"),
    [
        ("vllm==0.34.0", "refuses-to-start", "vllm/config/speculative.py:1660@v0.34.0"),
        ("vllm==0.10.2", "refuses-to-start", "vllm/config/__init__.py:2358@v0.10.2"),
        ("vllm==0.20.0", "draft-not-served", None),
    ],
)
def test_a_token_count_below_one_is_a_finding_not_a_malformed_launch(
    tmp_path: Path, engine: str, consequence: str, cited: str | None
) -> None:
    """vLLM's parser takes `"num_speculative_tokens": 0`; its speculative config refuses it
    (read at 0.10.2 and 0.34.0). Where that was not read, no draft token is proposed: the
    checked draft does not run either way."""
    draft = f.specforge().write(tmp_path / "draft")
    launch = (
        "vllm serve T --speculative-config "
        f'\'{{"model": "{draft}", "method": "eagle3", "num_speculative_tokens": 0}}\''
    )
    report = draftfit.check(draft, engines=[engine], serve_args=launch)
    (finding,) = [x for x in report.findings if x.code == "DF559"]
    assert str(finding.consequence) == consequence
    assert report.engines[0].verdict == "incompatible"
    assert (cited in finding.citations) if cited else not finding.citations


def test_sglang_takes_an_eagle_topk_of_zero(tmp_path: Path) -> None:
    """SGLang 0.5.23's parser and server arguments take `--speculative-eagle-topk 0`: not a
    malformed launch."""
    draft = f.specforge().write(tmp_path / "draft")
    launch = (
        "python -m sglang.launch_server --model-path T --speculative-algorithm EAGLE3 "
        f"--speculative-draft-model-path {draft} --speculative-eagle-topk 0"
    )
    report = draftfit.check(draft, engines=["sglang==0.5.23"], serve_args=launch)
    assert report.serve is not None and report.serve.settings.speculative_eagle_topk == 0
