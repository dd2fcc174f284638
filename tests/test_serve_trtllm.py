"""TensorRT-LLM launch settings: `trtllm-serve` flags, the `--extra_llm_api_options` YAML it
names, a TensorRT-LLM YAML given to `--serve-config`, and what they change in the verdicts
(the aux layers the launch captures, the one- or two-model path) on real factory
checkpoints next to real target configs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import draftfit
from draftfit.commands.recipe import recipe_for
from draftfit.engines.launch import MAX_SERVE_CONFIG_BYTES, parse_serve_config, settings_from
from draftfit.engines.registry import load_engine
from draftfit.errors import UsageError
from draftfit.rules.base import Severity
from tests import factory as f
from tests.test_json_schema import validate

LAYERS = 32  # the target's decoder layers: output-of default [1, 15, 28]
SPEC_YAML = """\
tensor_parallel_size: 4
kv_cache_config:
  dtype: fp8
  free_gpu_memory_fraction: 0.8
cuda_graph_config:
  enable_padding: true
attn_backend: TRTLLM
speculative_config:
  decoding_type: {decoding}
  max_draft_len: 3
  speculative_model_dir: /models/draft
  eagle3_one_model: {one_model}
  eagle3_layers_to_capture: {layers}
  eagle3_model_arch: llama3
"""


def _yaml(
    root: Path, layers: str = "[1, 15, 28]", one_model: str = "true", decoding: str = "Eagle"
) -> Path:
    """`spec.yaml` in `root`: `decoding_type: Eagle`, a name every release draftfit knows."""
    path = root / "spec.yaml"
    path.write_text(SPEC_YAML.format(layers=layers, one_model=one_model, decoding=decoding))
    return path


def _serve(root: Path, **kw: str) -> str:
    """A `trtllm-serve` command whose options file is `spec.yaml` in `root`."""
    _yaml(root, **kw)
    return "trtllm-serve T --tp_size 8 --pp_size 1 --extra_llm_api_options spec.yaml"


def _codes(report: Any) -> set[str]:
    return {x.code for x in report.findings}


def _finding(report: Any, code: str) -> Any:
    return next(x for x in report.findings if x.code == code)


# ------------------------------------------------------------------------------ parsing


def test_serve_args_read_the_options_file_relative_to_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    s = settings_from(serve_args=_serve(tmp_path, layers="[1, 15, -1]", one_model="false"))
    assert s is not None and s.engine == "trtllm" and s.given_by == "--serve-args"
    assert s.tensor_parallel_size == 4  # the YAML overwrites --tp_size, as trtllm-serve does
    assert s.pipeline_parallel_size == 1
    assert (s.method, s.draft_model, s.max_draft_len) == ("Eagle", "/models/draft", 3)
    assert s.draft_path_key == "speculative_model_dir"
    assert s.layers_to_capture == (1, 15, -1) and s.one_model is False
    assert s.ignored_flags == (
        "kv_cache_config",
        "cuda_graph_config",
        "attn_backend",
        "speculative_config.eagle3_model_arch",
    )
    assert s.to_dict()["layers_to_capture"] == [1, 15, -1]
    assert "layers_to_capture=[1, 15, -1]" in s.summary()
    # `--config` is the same option; `--opt=value` as click takes it
    again = settings_from(serve_args="trtllm-serve T --config=spec.yaml --pp_size 2")
    assert again is not None and again.layers_to_capture == (1, 15, -1)
    assert again.pipeline_parallel_size == 2


def test_serve_config_recognises_a_trtllm_yaml(tmp_path: Path) -> None:
    s = parse_serve_config(str(_yaml(tmp_path)))
    assert s.engine == "trtllm" and s.given_by == "--serve-config"
    assert s.layers_to_capture == (1, 15, 28) and s.one_model is True
    bare = tmp_path / "bare.yaml"
    bare.write_text("decoding_type: Eagle\nmax_draft_len: 4\npytorch_weights_path: D\n")
    alone = parse_serve_config(str(bare))
    assert (alone.engine, alone.method, alone.draft_model) == ("trtllm", "Eagle", "D")
    inline = parse_serve_config('{"speculative_config": {"decoding_type": "Eagle3"}}')
    assert (inline.engine, inline.method) == ("trtllm", "Eagle3")
    # a vLLM file stays vLLM's
    vllm = tmp_path / "vllm.yaml"
    vllm.write_text("tensor_parallel_size: 2\nspeculative_config:\n  method: eagle3\n")
    assert parse_serve_config(str(vllm)).engine == "vllm"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("speculative_config:\n  decoding_type: Eagle3\n  eagle3_layers_to_capture: 3\n", "list"),
        (
            "speculative_config:\n  decoding_type: Eagle3\n  eagle3_layers_to_capture: [1, true]\n",
            "integer layer ids",
        ),
        ("speculative_config:\n  decoding_type: Eagle3\n  max_draft_len: 0\n", "positive"),
        ("speculative_config:\n  decoding_type: Eagle3\n  eagle3_one_model: maybe\n", "true or"),
        ("speculative_config: [1]\n", "must be a mapping"),
        ("- not a mapping\n", "expected a mapping"),
    ],
)
def test_malformed_options_are_usage_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec.yaml").write_text(body)
    with pytest.raises(UsageError, match=message) as caught:
        settings_from(serve_args="trtllm-serve T --extra_llm_api_options spec.yaml")
    assert "--extra_llm_api_options spec.yaml" in str(caught.value)


def test_options_file_missing_or_not_regular_or_too_big(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="no such file"):
        settings_from(serve_args="trtllm-serve T --extra_llm_api_options nowhere.yaml")
    missing = settings_from(serve_args="trtllm-serve T --extra_llm_api_options")
    assert missing is not None
    assert missing.unreadable_values == ("--extra_llm_api_options: expected one argument",)
    os.mkfifo(tmp_path / "spec.fifo")
    with pytest.raises(UsageError, match="cannot read it"):
        settings_from(serve_args="trtllm-serve T --extra_llm_api_options spec.fifo")
    (tmp_path / "big.yaml").write_bytes(b"#" * (MAX_SERVE_CONFIG_BYTES + 1))
    with pytest.raises(UsageError, match="cannot read it"):
        settings_from(serve_args="trtllm-serve T --extra_llm_api_options big.yaml")


def test_a_trtllm_launch_and_a_vllm_config_are_not_one_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="holds vllm settings"):
        settings_from(serve_config='{"method": "eagle3"}', serve_args=_serve(tmp_path))


# ------------------------------------------------------------------------------ the rules


def _pair(
    root: Path, nested_aux: list[int] | None = None, arch: str | None = None
) -> tuple[Path, Path]:
    spec = f.specforge(nested_aux=nested_aux)
    if arch is not None:
        spec.config["architectures"] = [arch]
    return spec.write(root / "draft"), f.llama_target(root / "target", layers=LAYERS)


def test_launch_layers_equal_to_the_trained_ones_quiet_the_aux_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draft, target = _pair(tmp_path, nested_aux=[1, 15, 28])
    engines = ["trtllm==1.2.0", "trtllm==1.4.0rc0"]
    plain = draftfit.check(draft, target, engines)
    assert "DF302" in _codes(plain)  # not read; the default matches by coincidence
    monkeypatch.chdir(tmp_path)
    report = draftfit.check(draft, target, engines, serve_args=_serve(tmp_path))
    assert not _codes(report) & {"DF301", "DF302", "DF303", "DF304", "DF305"}
    for engine in report.to_dict()["engines"]:
        assert engine["aux_layers"]["used"] == [2, 16, 29]
        assert "eagle3_layers_to_capture: [1, 15, 28]" in engine["aux_layers"]["launch_setting"]


def test_launch_layers_other_than_the_trained_ones_fire_df301_at_the_launch(
    tmp_path: Path,
) -> None:
    draft, target = _pair(tmp_path, nested_aux=[1, 15, 28])
    report = draftfit.check(
        draft, target, ["trtllm==1.2.0"], serve_config=str(_yaml(tmp_path, layers="[2, 16, 29]"))
    )
    found = _finding(report, "DF301")
    assert found.location.file == "serving settings (--serve-config)"
    assert found.location.pointer == "/speculative_config/eagle3_layers_to_capture"
    assert "the launch passes `speculative_config.eagle3_layers_to_capture: [2, 16, 29]`" in (
        found.message
    )
    assert "captures capture-before [3, 17, 30]" in found.message
    assert (found.fix or "").startswith(
        "set `speculative_config.eagle3_layers_to_capture: [1, 15, 28]` (output-of counting) in "
        "the launch"
    )
    assert "DF302" not in _codes(report)


def test_launch_final_state_id_minus_one_is_not_compared(tmp_path: Path) -> None:
    """-1 is the final hidden state after the final norm, no layer's output: the layers
    cannot be compared with the trained ids, so the aux-layer rules stay quiet; the count
    still comes from the launch."""
    draft, target = _pair(tmp_path, nested_aux=[3, 10, 20])
    yaml = str(_yaml(tmp_path, layers="[1, 15, -1]"))
    report = draftfit.check(draft, target, ["trtllm==1.2.0"], serve_config=yaml)
    assert not _codes(report) & {"DF301", "DF302", "DF303", "DF304", "DF305"}
    aux = report.to_dict()["engines"][0]["aux_layers"]
    assert aux["used"] is None and aux["expected_count"] == 3
    assert "DF301" in _codes(draftfit.check(draft, target, ["trtllm==1.2.0"]))


def test_launch_layer_beyond_the_target_fires_df303(tmp_path: Path) -> None:
    draft, target = _pair(tmp_path, nested_aux=[1, 15, 28])
    yaml = str(_yaml(tmp_path, layers="[1, 15, 40]"))
    report = draftfit.check(draft, target, ["trtllm==1.2.0"], serve_config=yaml)
    found = _finding(report, "DF303")
    assert "output-of id(s) [40] name no layer of a 32-layer target" in found.message
    assert found.location.pointer == "/speculative_config/eagle3_layers_to_capture"
    assert report.engines[0].verdict == "incompatible"


def test_launch_layer_count_decides_fc_width_df304(tmp_path: Path) -> None:
    draft, target = _pair(tmp_path, nested_aux=[1, 15, 28])
    yaml = str(_yaml(tmp_path, layers="[1, 8, 15, 28]"))
    report = draftfit.check(draft, target, ["trtllm==1.2.0"], serve_config=yaml)
    found = _finding(report, "DF304")
    assert "N = 4 (from the launch's `eagle3_layers_to_capture`, 4 layer(s))" in found.message
    assert "DF305" not in _codes(report)  # one setting gives both the layers and the count


def test_launch_layers_before_the_setting_exists_change_nothing(tmp_path: Path) -> None:
    """1.0.0 has no `eagle3_layers_to_capture` (data: aux_ids_user_key): its fixed default
    stays the captured layers."""
    draft, target = _pair(tmp_path, nested_aux=[3, 10, 20])
    yaml = str(_yaml(tmp_path, layers="[3, 10, 20]"))
    report = draftfit.check(draft, target, ["trtllm==1.0.0"], serve_config=yaml)
    aux = report.to_dict()["engines"][0]["aux_layers"]
    assert aux["used"] == [2, 16, 29] and "launch_setting" not in aux
    found = _finding(report, "DF301")
    assert "falls back to the default [2, 16, 29]; the launch's `eagle3_layers_to_capture: " in (
        found.message
    )
    assert "[3, 10, 20]` is not a setting TensorRT-LLM (PyTorch backend) 1.0.0 has" in (
        found.message
    )


def _no_architectures(root: Path) -> Path:
    draft = f.specforge()
    del draft.config["architectures"]
    return draft.write(root / "draft")


@pytest.mark.parametrize(
    ("version", "one_model", "fires"),
    [
        ("1.2.0", "false", True),  # the two-model path looks the class up
        ("1.2.0", "true", False),
        ("1.4.0rc0", "false", False),  # eagle3_one_model=False is ignored there
    ],
)
def test_two_model_launch_decides_missing_architectures_df102(
    tmp_path: Path, version: str, one_model: str, fires: bool
) -> None:
    draft = _no_architectures(tmp_path)
    target = f.llama_target(tmp_path / "target", layers=LAYERS)
    yaml = str(_yaml(tmp_path, one_model=one_model))
    report = draftfit.check(draft, target, [f"trtllm=={version}"], serve_config=yaml)
    assert ("DF102" in _codes(report)) is fires
    if fires:
        found = _finding(report, "DF102")
        assert "as the launch sets `eagle3_one_model: false`" in found.message
        assert "leave `eagle3_one_model` out" in (found.fix or "")
        assert report.engines[0].draft_class is None
    else:
        assert report.engines[0].draft_class == "Eagle3ForCausalLM"
    assert "DF102" not in _codes(draftfit.check(draft, target, [f"trtllm=={version}"]))


@pytest.mark.parametrize(
    ("version", "one_model", "pp", "fires"),
    [
        ("1.2.0", "false", 2, True),  # two-model by the launch
        ("0.20.0", "true", 2, True),  # two-model is the only EAGLE-3 path there
        ("1.2.0", "false", 1, False),
        ("1.2.0", "true", 2, False),  # one-model: not judged
        ("1.4.0rc0", "false", 2, False),  # eagle3_one_model=False is ignored there
    ],
)
def test_pipeline_parallel_with_two_model_eagle3_df550(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    one_model: str,
    pp: int,
    fires: bool,
) -> None:
    draft, target = _pair(tmp_path, nested_aux=[1, 15, 28])
    monkeypatch.chdir(tmp_path)
    args = _serve(tmp_path, one_model=one_model).replace("--pp_size 1", f"--pp_size {pp}")
    report = draftfit.check(draft, target, [f"trtllm=={version}"], serve_args=args)
    assert report.to_dict()["serve"]["pipeline_parallel_size"] == pp
    assert ("DF550" in _codes(report)) is fires
    if not fires:
        return
    found = _finding(report, "DF550")
    assert found.location.pointer == "/pipeline_parallel_size"
    assert "NotImplementedError: Drafting is not supported for selected executor loop" in (
        found.message
    )
    assert (found.fix or "").startswith("serve with --pp_size 1 (spread the GPUs with --tp_size 8")
    assert ("leave `eagle3_one_model` out" in (found.fix or "")) is (version == "1.2.0")
    assert report.engines[0].verdict == "incompatible"


# ------------------------------------------------------------------------------ the CLI


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(draftfit.__file__).parent.parent)}
    return subprocess.run(
        [sys.executable, "-m", "draftfit", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        env=env,
    )


def test_cli_reads_the_launch_and_says_where_the_layers_come_from(tmp_path: Path) -> None:
    draft, target = _pair(tmp_path, nested_aux=[1, 15, 28])
    args = _serve(tmp_path, layers="[2, 16, 29]")
    base = ("check", str(draft), "--target", str(target), "--engine", "trtllm==1.2.0")
    text = _cli(tmp_path, *base, "--serve-args", args)
    assert text.returncode == 1, text.stderr  # DF301: other layers than trained, drafts garbage
    assert "DF301" in text.stdout
    assert "trtllm (--serve-args): tensor_parallel_size=4" in text.stdout
    assert "from `speculative_config.eagle3_layers_to_capture: [2, 16, 29]`" in text.stdout
    done = _cli(tmp_path, *base, "--serve-args", args, "--format", "json")
    data = json.loads(done.stdout)
    validate("check", data)
    assert data["serve"]["layers_to_capture"] == [2, 16, 29]
    assert data["serve"]["one_model"] is True and data["serve"]["max_draft_len"] == 3
    missing = _cli(tmp_path, *base, "--serve-args", "trtllm-serve T --config none.yaml")
    assert missing.returncode == 2 and missing.stdout == ""
    assert len(missing.stderr.strip().splitlines()) == 1 and "Traceback" not in missing.stderr
    assert "--config none.yaml: no such file" in missing.stderr


def test_the_recipes_own_spec_yaml_is_read_back_and_fixes_the_aux_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """draftfit's TensorRT-LLM recipe writes `spec.yaml` with the trained layers; given back
    as the launch, the aux-layer findings it fixes are gone."""
    draft, target = _pair(tmp_path, nested_aux=[3, 10, 20])
    engines = ["trtllm==1.2.0"]
    report = draftfit.check(draft, target, engines, recipes=True)
    assert "DF301" in _codes(report)
    recipe = next(r for r in report.recipes or [] if r.engine == "trtllm")
    command = recipe.command
    body = command.split("<<'EOF'\n", 1)[1].split("EOF\n", 1)[0]
    (tmp_path / "spec.yaml").write_text(body)
    monkeypatch.chdir(tmp_path)
    launch = command.split("EOF\n", 1)[1]
    assert launch.startswith("trtllm-serve ") and "--extra_llm_api_options spec.yaml" in launch
    served = draftfit.check(draft, target, engines, serve_args=launch)
    assert served.serve is not None and served.serve.settings.layers_to_capture == (3, 10, 20)
    assert not _codes(served) & {"DF301", "DF302", "DF303", "DF304"}
    assert served.engines[0].verdict == "compatible"


# ------------------------------------------------------------------ the speculative config itself

SPEC_CONFIG_CODES = {"DF555", "DF556", "DF557", "DF558"}
TRTLLM_VERSIONS = load_engine("trtllm").versions


def _spec_yaml(root: Path, body: str) -> str:
    """A TensorRT-LLM options file whose `speculative_config` is `body` (YAML lines)."""
    path = root / "spec.yaml"
    indented = "".join(f"  {line}\n" for line in body.strip().splitlines())
    path.write_text("tensor_parallel_size: 1\nspeculative_config:\n" + indented)
    return str(path)


def _check_spec(root: Path, version: str, body: str) -> Any:
    draft, target = _pair(root, nested_aux=[1, 15, 28])
    return draftfit.check(
        draft, target, [f"trtllm=={version}"], serve_config=_spec_yaml(root, body)
    )


@pytest.mark.parametrize("version", ["0.20.0", "1.0.0", "1.2.0", "1.4.0rc0"])
def test_speculative_config_without_max_draft_len_df555(tmp_path: Path, version: str) -> None:
    key = load_engine("trtllm").resolve(version).value("draft_path_key")
    report = _check_spec(tmp_path, version, f"decoding_type: Eagle\n{key}: /models/draft")
    found = _finding(report, "DF555")
    assert found.severity is Severity.ERROR and report.engines[0].verdict == "incompatible"
    assert "no `max_draft_len`" in found.message and f"{version}" in found.message
    assert found.location.pointer == "/speculative_config"
    assert "max_draft_len: N" in (found.fix or "")
    given = _check_spec(
        tmp_path, version, f"decoding_type: Eagle\nmax_draft_len: 3\n{key}: /models/draft"
    )
    assert not _codes(given) & SPEC_CONFIG_CODES


@pytest.mark.parametrize(
    ("version", "key", "fires", "want"),
    [
        ("0.20.0", "pytorch_eagle_weights_path", False, ""),
        ("0.20.0", "speculative_model_dir", True, "pytorch_eagle_weights_path"),
        ("0.21.0", "pytorch_weights_path", False, ""),
        ("0.21.0", "speculative_model_dir", True, "pytorch_weights_path"),
        ("1.0.0", "pytorch_weights_path", True, "speculative_model_dir"),  # renamed in 1.0
        ("1.0.0", "speculative_model_dir", False, ""),
        ("1.2.1", "speculative_model", True, "speculative_model_dir"),
        ("1.2.1", "speculative_model_dir", False, ""),
        ("1.4.0rc0", "speculative_model", False, ""),
        ("1.4.0rc0", "speculative_model_dir", False, ""),  # still accepted as an alias
        ("1.4.0rc0", "pytorch_weights_path", True, "speculative_model"),
        ("1.4.0rc4", "speculative_model_dir", False, ""),  # the alias (not documented there)
        ("1.4.0rc4", "pytorch_weights_path", True, "speculative_model"),
    ],
)
def test_draft_named_with_a_key_the_version_does_not_read_df556(
    tmp_path: Path, version: str, key: str, fires: bool, want: str
) -> None:
    body = f"decoding_type: Eagle\nmax_draft_len: 3\n{key}: /models/draft"
    report = _check_spec(tmp_path, version, body)
    assert report.serve is not None and report.serve.settings.draft_path_key == key
    assert ("DF556" in _codes(report)) is fires
    assert "DF557" not in _codes(report)
    if not fires:
        assert not _codes(report) & SPEC_CONFIG_CODES
        return
    found = _finding(report, "DF556")
    assert report.engines[0].verdict == "incompatible"
    assert f"names the draft with `{key}`" in found.message
    assert f"reads it from `{want}`" in found.message
    assert found.location.pointer == f"/speculative_config/{key}"
    assert found.fix == f"rename `{key}` to `{want}` (`{want}: /models/draft`)"
    refused = "Extra inputs are not permitted" in found.message
    # 0.19-0.20 not read; 0.21's DecodingBaseConfig is a plain BaseModel, which drops the key
    assert refused is (version not in ("0.20.0", "0.21.0"))


@pytest.mark.parametrize("version", TRTLLM_VERSIONS)
def test_speculative_config_without_a_draft_df557(tmp_path: Path, version: str) -> None:
    want = load_engine("trtllm").resolve(version).value("draft_path_key")
    report = _check_spec(tmp_path, version, "decoding_type: Eagle\nmax_draft_len: 3")
    found = _finding(report, "DF557")
    assert report.engines[0].verdict == "incompatible"
    assert "DF556" not in _codes(report)
    if want is None:  # 1.3.0rc7: between the last `speculative_model_dir` and `speculative_model`
        assert version == "1.3.0rc7"
        named = "`speculative_model_dir` or `speculative_model`"
        assert f"reads its path from {named} (the releases before and after" in found.message
        assert found.fix == f"add the draft's folder to speculative_config under {named}"
        return
    assert f"reads its path from `{want}`" in found.message
    assert found.fix == f"add `{want}: DRAFT` to speculative_config (the draft's folder)"


@pytest.mark.parametrize(
    ("version", "decoding", "fires", "use"),
    [
        ("1.2.1", "Eagle3", True, "Eagle"),  # no Eagle3 type there (data: from 1.3.0rc15)
        ("1.3.0rc15", "Eagle3", False, ""),  # its example builds Eagle3DecodingConfig
        ("1.3.0rc27", "Eagle3", False, ""),
        ("1.0.0", "Eagle3", True, "Eagle"),
        ("1.2.1", "Eagle", False, ""),
        ("1.4.0rc0", "Eagle3", False, ""),
        ("1.4.0rc0", "Eagle", False, ""),
        ("1.2.0", "MTP", True, "Eagle"),  # another method's type
        ("1.4.0rc0", "eagle3", True, "Eagle3"),  # the names are case-sensitive
    ],
)
def test_decoding_type_the_version_does_not_run_eagle3_with_df558(
    tmp_path: Path, version: str, decoding: str, fires: bool, use: str
) -> None:
    key = load_engine("trtllm").resolve(version).value("draft_path_key")
    body = f"decoding_type: {decoding}\nmax_draft_len: 3\n{key}: /models/draft"
    report = _check_spec(tmp_path, version, body)
    assert ("DF558" in _codes(report)) is fires
    if not fires:
        assert not _codes(report) & SPEC_CONFIG_CODES
        return
    found = _finding(report, "DF558")
    assert report.engines[0].verdict == "incompatible"
    assert f"`decoding_type: {decoding}`" in found.message
    assert found.location.pointer == "/speculative_config/decoding_type"
    assert found.fix == f"set `decoding_type: {use}`"
    if version == "1.2.1":
        # first seen in the 1.3.0rc15 example (not a release draftfit reads the code of)
        assert "draftfit's data has `Eagle3` from 1.3.0rc15;" in found.message
        page = (
            "https://nvidia.github.io/TensorRT-LLM/1.3.0rc15/examples/llm_speculative_decoding.html"
        )
        assert any(page in source for source in found.citations)


def test_spec_config_rules_are_skipped_without_settings_and_quiet_for_other_engines(
    tmp_path: Path,
) -> None:
    draft, target = _pair(tmp_path, nested_aux=[1, 15, 28])
    plain = draftfit.check(draft, target, ["trtllm==1.2.0"])
    assert not _codes(plain) & SPEC_CONFIG_CODES
    assert {s["code"] for s in plain.to_dict()["skipped_rules"]} >= SPEC_CONFIG_CODES
    vllm = draftfit.check(
        draft,
        target,
        ["vllm==0.11.0"],
        serve_config='{"method": "eagle3", "model": "D", "num_speculative_tokens": 3}',
    )
    assert not _codes(vllm) & SPEC_CONFIG_CODES


@pytest.mark.parametrize("version", TRTLLM_VERSIONS)
def test_the_recipes_own_spec_yaml_is_quiet_for_every_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    """draftfit's recipe names the draft with the version's key, sets `max_draft_len` and a
    decoding type the version has: read back as the launch, none of DF555-DF558 fire."""
    # before 1.1 the two-model lookup keeps "Eagle3" in the name: only LlamaForCausalLM resolves
    arch = "LlamaForCausalLM" if version in ("0.19.0", "0.20.0") else None
    draft, target = _pair(tmp_path, nested_aux=[3, 10, 20], arch=arch)
    engines = [f"trtllm=={version}"]
    report = draftfit.check(draft, target, engines)
    # Before 1.1 no setting names the trained layers (DF301 remains: the recipe is not
    # shown), but its spec.yaml is still written for the version.
    recipe = recipe_for(report, report.engines[0])
    if version == "1.3.0rc7":  # which key names the draft is not known there: no recipe
        assert recipe is None
        return
    assert recipe is not None
    body = recipe.command.split("<<'EOF'\n", 1)[1].split("EOF\n", 1)[0]
    (tmp_path / "spec.yaml").write_text(body)
    monkeypatch.chdir(tmp_path)
    served = draftfit.check(draft, target, engines, serve_args=recipe.command.split("EOF\n")[1])
    assert served.serve is not None
    read = served.serve.settings
    assert read.draft_model is not None
    assert read.max_draft_len is not None and read.method is not None
    assert not _codes(served) & (SPEC_CONFIG_CODES | {"DF559"})
    if version.startswith("1.4") or version == "1.3.0rc27":  # one model only: no switch
        assert "eagle3_one_model" not in body and "speculative_model:" in body


@pytest.mark.parametrize(
    ("version", "setting", "fires"),
    [
        ("1.4.0rc4", "num_eagle_layers: 3", True),  # gone from the 1.4.0rc4 signature
        ("1.4.0rc1", "num_eagle_layers: 3", False),  # still in the 1.4.0rc1 signature
        ("1.4.0rc2", "num_eagle_layers: 3", False),  # no page; rc1 and rc4 disagree
        ("1.4.0rc4", "eagle3_one_model: true", True),  # gone by 1.3.0rc27
        ("1.4.0rc1", "eagle3_one_model: false", True),
        ("1.4.0rc2", "eagle3_one_model: true", True),  # no page, lacking on both sides
        ("1.4.0rc0", "eagle3_one_model: true", True),  # between 1.3.0rc27 and 1.4.0rc1
        ("1.4.0rc4", "eagle_choices: [[0], [0, 0]]", True),  # gone by 1.4.0rc1
        ("1.4.0rc4", "moe_tactic: auto", False),  # new in 1.4.0rc4
        ("1.4.0rc1", "moe_tactic: auto", True),
        ("1.4.0rc4", "speculative_model_dir: /models/other", False),  # the alias: unsettled
        ("1.2.1", "eagle3_one_model: true", False),  # no signature page before 1.3.0rc27
    ],
)
def test_a_key_the_release_decoding_config_lacks_is_refused_df559(
    tmp_path: Path, version: str, setting: str, fires: bool
) -> None:
    """Where the release's documentation gives Eagle3DecodingConfig's whole signature (or the
    documented releases on both sides of it lack the key), a key outside it is refused as the
    release's StrictBaseModel refuses it."""
    data = load_engine("trtllm").resolve(version)
    decoding = "Eagle3" if "Eagle3" in data.value("decoding_types") else "Eagle"
    body = f"decoding_type: {decoding}\nmax_draft_len: 3\n{data.value('draft_path_key')}: /m/d"
    report = _check_spec(tmp_path, version, f"{body}\n{setting}")
    key = setting.split(":", 1)[0]
    found = [x for x in report.findings if x.code == "DF559" and key in x.message]
    assert bool(found) is fires
    (result,) = report.engines
    unjudged = [r for r in result.unverified_reasons if "speculative_config key" in r]
    if not fires:
        # a key that neither the release's page nor the pages around it settle: the
        # verdict says it was not checked (draftfit's own keys are judged by DF555-DF558)
        unsettled = {
            ("1.4.0rc2", "num_eagle_layers"): "TensorRT-LLM (PyTorch backend) 1.4.0rc2's "
            "Eagle3DecodingConfig signature was not read",
            # the alias is seen only in undated main-branch code, not in 1.4.0rc4's
            ("1.4.0rc4", "speculative_model_dir"): "that TensorRT-LLM (PyTorch backend) "
            "takes it as an alias of `speculative_model` is seen only in undated "
            "main-branch code, not in this release's code or documentation",
        }
        why = unsettled.get((version, key))
        assert not unjudged if why is None else result.verdict == "unverified"
        if why is not None:
            assert unjudged == [f"the launch's speculative_config key {key} was not checked: {why}"]
        return
    (finding,) = found
    assert report.engines[0].verdict == "incompatible"
    assert finding.location.pointer == f"/speculative_config/{key}"
    assert "Extra inputs are not permitted" in finding.message
    assert "draftfit's data here is approximate" in finding.message  # the policy is inferred
    assert any("nvidia.github.io/TensorRT-LLM/" in c for c in finding.citations)
    if key == "eagle3_one_model":
        assert finding.fix == (
            f"leave `eagle3_one_model` out: TensorRT-LLM (PyTorch backend) {version} runs "
            "EAGLE-3 as one model only"
        )
    if version == "1.4.0rc2":
        assert "signatures of 1.4.0rc1 and 1.4.0rc4" in finding.message
    basis = {i["fact"]: i["confidence"] for i in report.engines[0].basis["below_read"]}
    assert basis["eagle3_config_keys"] == "documented"


ALIAS_UNSETTLED = (
    "the launch's speculative_config key speculative_model_dir was not checked: that "
    "TensorRT-LLM (PyTorch backend) takes it as an alias of `speculative_model` is seen "
    "only in undated main-branch code, not in this release's code or documentation"
)


@pytest.mark.parametrize(
    ("version", "setting", "verdict", "refused", "reason"),
    [
        # the rename to `speculative_model` is documented from 1.3.0rc15 on; the old name as
        # an alias only in undated main-branch code: not judged, and the verdict says so
        ("1.3.0rc27", "speculative_model_dir: /m/d", "unverified", "", ALIAS_UNSETTLED),
        ("1.4.0rc4", "speculative_model_dir: /m/d", "unverified", "", ALIAS_UNSETTLED),
        ("1.3.0rc15", "speculative_model_dir: /m/d", "unverified", "", ALIAS_UNSETTLED),
        # 1.3.0rc7's pages show no speculative config: which key it reads is not known
        (
            "1.3.0rc7",
            "speculative_model_dir: /m/d",
            "unverified",
            "",
            "the launch's speculative_config key speculative_model_dir was not checked: which "
            "key TensorRT-LLM (PyTorch backend) {v} reads the draft's path from is not known",
        ),
        # gone from the 1.4.0rc4 signature (present in 1.3.0rc27's and 1.4.0rc1's)
        ("1.4.0rc4", "num_eagle_layers: 2", "incompatible", "num_eagle_layers", ""),
        ("1.3.0rc27", "num_eagle_layers: 2", "", "", ""),
        # in the 1.3.0rc15 example, gone from the 1.3.0rc27 signature on
        ("1.4.0rc4", "eagle3_one_model: true", "incompatible", "eagle3_one_model", ""),
        ("1.3.0rc27", "eagle3_one_model: true", "incompatible", "eagle3_one_model", ""),
        ("1.3.0rc15", "eagle3_one_model: true", "", "", ""),
    ],
)
def test_a_launch_is_judged_as_each_1_3_and_1_4_release_judges_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    setting: str,
    verdict: str,
    refused: str,
    reason: str,
) -> None:
    """A `trtllm-serve ... --extra_llm_api_options spec.yaml` launch at the 1.3 and 1.4
    releases draftfit knows through their documentation only."""
    draft, target = _pair(tmp_path, nested_aux=[1, 15, 28])
    key = "speculative_model_dir" if setting.startswith("speculative_model_dir") else None
    lines = ["decoding_type: Eagle3", "max_draft_len: 3", setting]
    if key is None:
        lines.insert(2, "speculative_model: /m/d")
    _spec_yaml(tmp_path, "\n".join(lines))
    monkeypatch.chdir(tmp_path)
    report = draftfit.check(
        draft,
        target,
        [f"trtllm=={version}"],
        serve_args="trtllm-serve T --backend pytorch --extra_llm_api_options spec.yaml",
    )
    assert report.serve is not None and report.serve.settings.draft_model == "/m/d"
    (result,) = report.engines
    refusals = [x for x in report.findings if x.code == "DF559"]
    assert "DF556" not in _codes(report) and "DF557" not in _codes(report)
    if refused:
        (finding,) = refusals
        assert result.verdict == verdict == "incompatible"
        assert finding.location.pointer == f"/speculative_config/{refused}"
        assert "Extra inputs are not permitted" in finding.message
        assert finding.fix and finding.fix.startswith(f"leave `{refused}` out")
        return
    assert not refusals
    keyed = [r for r in result.unverified_reasons if "speculative_config key" in r]
    if reason:
        assert result.verdict == verdict
        assert keyed == [reason.format(v=version)]
    else:
        assert not keyed
    # the model loading of 1.3 releases was not read: never `compatible` there
    assert result.verdict != "compatible"
    if version.startswith("1.3"):
        assert any(
            r.startswith("the checks resting on ") and r.endswith("its code was not read")
            for r in result.unverified_reasons
        )
