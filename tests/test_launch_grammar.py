"""Launch lines judged as the release's own parser reads them (flags, abbreviations,
speculative-config keys), the method the release resolves, its defaults, and whether the
launch serves the checked draft."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import draftfit
from draftfit.engines.installed import resolve_engines
from draftfit.engines.launch_grammar import launch_grammar
from draftfit.engines.profile import EngineVersion
from tests import factory as f

SG = ["sglang==0.5.23"]
V34 = ["vllm==0.34.0"]


def _findings(report: Any, code: str) -> list[Any]:
    return [x for x in report.findings if x.code == code]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    draft = f.speculators().write(tmp_path / "mydraft")
    target = f.llama_target(tmp_path / "t")
    return draft, target


@pytest.fixture
def sg_pair(tmp_path: Path) -> tuple[Path, Path]:
    draft = f.specforge().write(tmp_path / "sgdraft")
    target = f.llama_target(tmp_path / "t")
    return draft, target


def _sglang(draft: Path, extra: str = "", algorithm: str = "EAGLE3") -> str:
    return (
        f"python -m sglang.launch_server --model-path T --speculative-algorithm {algorithm} "
        f"--speculative-draft-model-path {draft} {extra}"
    )


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ("--cuda-graph-max-bs 8", "ambiguous option: --cuda-graph-max-bs could match"),
        ("--no-such-flag 3", "unrecognized arguments: --no-such-flag"),
    ],
)
def test_sglang_refuses_what_its_parser_refuses(
    sg_pair: tuple[Path, Path], extra: str, said: str
) -> None:
    draft, target = sg_pair
    report = draftfit.check(draft, target, SG, serve_args=_sglang(draft, extra))
    found = _findings(report, "DF559")
    assert found and said in found[0].message
    assert report.engines[0].verdict == "incompatible"


def test_sglang_ambiguous_draft_prefix(sg_pair: tuple[Path, Path]) -> None:
    draft, target = sg_pair
    line = (
        "python -m sglang.launch_server --model-path T --speculative-algorithm EAGLE3 "
        f"--speculative-draft {draft}"
    )
    report = draftfit.check(draft, target, SG, serve_args=line)
    (found,) = [x for x in report.findings if "ambiguous option: --speculative-draft" in x.message]
    # The fix and the parser's error name every flag the prefix matches in the release's
    # parser, the draft-path flag among them.
    grammar = launch_grammar(resolve_engines(SG)[0])
    assert grammar is not None
    matches = [flag for flag in sorted(grammar.flags) if flag.startswith("--speculative-draft")]
    assert "--speculative-draft-model-path" in matches and len(matches) > 3
    assert found.fix == "write the whole flag, one of " + ", ".join(f"`{m}`" for m in matches)
    assert found.message.endswith(f"could match {', '.join(matches)}`)")


def test_sglang_unique_abbreviation_is_read(sg_pair: tuple[Path, Path]) -> None:
    draft, target = sg_pair
    line = (
        "python -m sglang.launch_server --model-path T --speculative-algo EAGLE3 "
        f"--speculative-draft-model-path {draft} --port 30000 --mem-fraction-static 0.8"
    )
    report = draftfit.check(draft, target, SG, serve_args=line)
    assert report.serve is not None and report.serve.settings.method == "EAGLE3"
    assert not _findings(report, "DF559")
    assert report.engines[0].verdict == "compatible"


def test_sglang_without_algorithm_or_draft(sg_pair: tuple[Path, Path]) -> None:
    draft, target = sg_pair
    none = draftfit.check(
        draft, target, SG, serve_args="python -m sglang.launch_server --model-path T"
    )
    assert any("no `--speculative-algorithm`" in x.message for x in _findings(none, "DF559"))
    no_path = draftfit.check(
        draft,
        target,
        SG,
        serve_args="python -m sglang.launch_server --model-path T --speculative-algorithm EAGLE3",
    )
    assert _findings(no_path, "DF557")


@pytest.mark.parametrize("algorithm", ["NEXTN", "nextn", "EAGLE"])
def test_sglang_algorithm_aliases_run_the_worker_they_select(
    sg_pair: tuple[Path, Path], algorithm: str
) -> None:
    """`NEXTN` is SGLang's alias of the EAGLE worker: an EAGLE-3 draft served with it is
    served with the wrong worker, as with `EAGLE`."""
    draft, target = sg_pair
    report = draftfit.check(draft, target, SG, serve_args=_sglang(draft, algorithm=algorithm))
    found = _findings(report, "DF107")
    assert found and f"`--speculative-algorithm {algorithm.upper()}`" in found[0].message
    assert report.engines[0].verdict == "incompatible"


def test_sglang_zero_draft_steps_runs_but_gains_nothing(sg_pair: tuple[Path, Path]) -> None:
    """SGLang's parser and server arguments take `--speculative-num-steps 0` with top-k and
    draft tokens: not refused, but not a compatible launch either."""
    draft, target = sg_pair
    flags = "--speculative-num-steps 0 --speculative-eagle-topk 1 --speculative-num-draft-tokens 1"
    report = draftfit.check(draft, target, SG, serve_args=_sglang(draft, flags))
    found = _findings(report, "DF559")
    assert found and "`--speculative-num-steps` is 0" in found[0].message
    assert report.engines[0].verdict == "degraded"


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        # run on a CPU (0.5.23): the server arguments' hooks stop start-up
        ("--speculative-num-steps 0", "TypeError"),
        ("--speculative-num-steps 3 --speculative-num-draft-tokens 4", "TypeError"),
        ("--speculative-num-draft-tokens 4", "AssertionError"),
        ("--speculative-eagle-topk 1", "AssertionError"),
    ],
)
def test_sglang_some_step_flags_without_the_others_stop_start_up(
    sg_pair: tuple[Path, Path], flags: str, said: str
) -> None:
    draft, target = sg_pair
    report = draftfit.check(draft, target, SG, serve_args=_sglang(draft, flags))
    found = _findings(report, "DF559")
    assert found and said in found[0].message
    assert report.engines[0].verdict == "incompatible"
    # SGLang 0.4.4 gave the three flags integer defaults: nothing to refuse
    report = draftfit.check(draft, target, ["sglang==0.4.4"], serve_args=_sglang(draft, flags))
    assert not any("step flags" in f.message or said in f.message for f in report.findings)


def _vllm(spec: dict[str, Any], extra: str = "") -> str:
    return f"vllm serve T {extra} --speculative-config '{json.dumps(spec)}'"


def test_vllm_unknown_key_and_flag(pair: tuple[Path, Path]) -> None:
    draft, target = pair
    spec = {"method": "eagle3", "model": str(draft), "num_spec_tokens": 3}
    report = draftfit.check(draft, target, V34, serve_args=_vllm(spec))
    keys = _findings(report, "DF559")
    assert keys and "num_speculative_tokens" in (keys[0].fix or "")
    assert report.engines[0].verdict == "incompatible"
    # the refused key is not listed as accepted
    assert report.serve is not None and report.serve.settings.accepted_flags == ()


def test_vllm_without_method_is_what_the_release_resolves(pair: tuple[Path, Path]) -> None:
    draft, target = pair
    spec = {"model": str(draft), "num_speculative_tokens": 3}
    new = draftfit.check(draft, target, V34, serve_args=_vllm(spec))
    assert _findings(new, "DF114") and new.engines[0].verdict == "drafts-garbage"
    old = draftfit.check(draft, target, ["vllm==0.10.2"], serve_args=_vllm(spec))
    assert _findings(old, "DF107") and old.engines[0].verdict == "incompatible"


def test_vllm_draft_tp_without_target_tp(pair: tuple[Path, Path]) -> None:
    draft, target = pair
    spec = {
        "method": "eagle3",
        "model": str(draft),
        "num_speculative_tokens": 3,
        "draft_tensor_parallel_size": 2,
    }
    report = draftfit.check(draft, target, V34, serve_args=_vllm(spec))
    assert _findings(report, "DF552")


def test_vllm_launch_names_another_draft(pair: tuple[Path, Path], tmp_path: Path) -> None:
    draft, target = pair
    other = f.speculators().write(tmp_path / "other")
    spec = {"method": "eagle3", "model": str(other), "num_speculative_tokens": 3}
    report = draftfit.check(draft, target, V34, serve_args=_vllm(spec))
    assert any("is not the checked draft" in x.message for x in _findings(report, "DF559"))
    same = {"method": "eagle3", "model": os.path.relpath(draft), "num_speculative_tokens": 3}
    fine = draftfit.check(draft, target, V34, serve_args=_vllm(same))
    assert not _findings(fine, "DF559") and fine.engines[0].verdict == "compatible"


@pytest.mark.parametrize("version", ["vllm==0.34.0", "vllm==0.10.2"])
def test_vllm_launch_without_speculative_config_serves_no_draft(
    pair: tuple[Path, Path], version: str
) -> None:
    draft, target = pair
    report = draftfit.check(draft, target, [version], serve_args="vllm serve T -tp 2")
    assert any("no `--speculative-config`" in x.message for x in _findings(report, "DF559"))
    assert report.engines[0].verdict == "incompatible"
    # Flags alone (not a whole launch) say nothing of the rest of the line.
    flags_only = draftfit.check(draft, target, [version], serve_args="-tp 2")
    assert not _findings(flags_only, "DF559")


@pytest.mark.parametrize(
    ("extra", "said", "hint"),
    [
        ("--tp 2", "unrecognized arguments: --tp", "--tensor-parallel-size"),
        ("--max-num 8", "ambiguous option: --max-num could match", "--max-num-batched-tokens"),
        ("--max-num-seqz 8", "unrecognized arguments: --max-num-seqz", "--max-num-seqs"),
        ("--speculative-model D", "unrecognized arguments: --speculative-model", '"model"'),
    ],
)
@pytest.mark.parametrize("version", ["vllm==0.34.0", "vllm==0.10.2"])
def test_vllm_refuses_what_its_parser_refuses(
    pair: tuple[Path, Path], version: str, extra: str, said: str, hint: str
) -> None:
    draft, target = pair
    spec = {"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3}
    report = draftfit.check(draft, target, [version], serve_args=_vllm(spec, extra))
    found = [x for x in _findings(report, "DF559") if said in x.message]
    assert found and hint in (found[0].fix or "")
    assert report.engines[0].verdict == "incompatible"


@pytest.mark.parametrize("version", ["vllm==0.34.0", "vllm==0.10.2"])
def test_vllm_flags_it_takes_are_accepted(pair: tuple[Path, Path], version: str) -> None:
    draft, target = pair
    spec = {"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3}
    extra = (
        "-tp 1 --max-num-seq 8 --gpu_memory_utilization 0.9 --port=8000 --enforce-eager "
        "--trust-remote-code"
    )
    report = draftfit.check(draft, target, [version], serve_args=_vllm(spec, extra))
    assert not _findings(report, "DF559")
    assert report.engines[0].verdict == "compatible"
    # Listed as accepted by the release's parser (a unique prefix included), not as unread.
    assert report.serve is not None
    assert {"--max-num-seq", "--gpu-memory-utilization", "--port"} <= set(
        report.serve.settings.accepted_flags
    )
    assert not [x for x in report.serve.settings.ignored_flags if x.startswith("-")]


def test_vllm_flags_at_a_release_whose_parser_was_not_read(pair: tuple[Path, Path]) -> None:
    draft, target = pair
    spec = {"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3}
    report = draftfit.check(draft, target, ["vllm==0.20.0"], serve_args=_vllm(spec, "--tp 2"))
    result = report.engines[0]
    assert result.verdict == "unverified"
    assert any("--tp" in reason for reason in result.unverified_reasons)


def test_a_word_after_a_switch_is_refused(
    pair: tuple[Path, Path], sg_pair: tuple[Path, Path]
) -> None:
    draft, target = pair
    spec = {"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3}
    vllm = draftfit.check(draft, target, V34, serve_args=_vllm(spec, "--enforce-eager true"))
    assert any("unrecognized arguments: true" in x.message for x in _findings(vllm, "DF559"))
    fine = draftfit.check(draft, target, V34, serve_args=_vllm(spec, "--enforce-eager"))
    assert not _findings(fine, "DF559")
    sg_draft, sg_target = sg_pair
    sglang = draftfit.check(
        sg_draft, sg_target, SG, serve_args=_sglang(sg_draft, "--disable-cuda-graph true")
    )
    assert any("unrecognized arguments: true" in x.message for x in _findings(sglang, "DF559"))
    # a flag that takes a value keeps its value
    sized = draftfit.check(
        sg_draft, sg_target, SG, serve_args=_sglang(sg_draft, "--mem-fraction-static 0.8")
    )
    assert not _findings(sized, "DF559")


def test_vllm_config_file_is_part_of_the_launch(
    pair: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draft, target = pair
    monkeypatch.chdir(tmp_path)
    (tmp_path / "serve.yaml").write_text(
        f"tensor-parallel-size: 1\nspeculative-config:\n  model: {draft}\n"
        "  method: eagle3\n  num_speculative_tokens: 3\n"
    )
    report = draftfit.check(draft, target, V34, serve_args="vllm serve T --config serve.yaml")
    assert report.serve is not None and report.serve.settings.method == "eagle3"
    assert report.engines[0].verdict == "compatible"
    # A --speculative-config on the command line replaces the file's whole one.
    spec = {"method": "eagle3", "model": str(draft)}
    line = f"vllm serve T --config serve.yaml --speculative-config '{json.dumps(spec)}'"
    replaced = draftfit.check(draft, target, V34, serve_args=line)
    assert any("num_speculative_tokens" in x.message for x in _findings(replaced, "DF559"))


# ------------------------------------------------- the launch's context and the target's


def _vllm_len(draft: Path, target: Path, extra: str, env: str = "") -> str:
    spec = {"model": str(draft), "method": "eagle3", "num_speculative_tokens": 3}
    return f"{env} vllm serve {target} {extra} --speculative-config '{json.dumps(spec)}'".strip()


@pytest.mark.parametrize(
    ("release", "extra", "env", "refused"),
    [
        ("vllm==0.34.0", "--max-model-len 4096", "", True),
        ("vllm==0.34.0", "--max-model-len 4K", "", True),
        ("vllm==0.34.0", "--max_model_len=2k", "", False),
        ("vllm==0.34.0", "--max-model-len 2048", "", False),
        ("vllm==0.34.0", "--max-model-len auto", "", False),
        ("vllm==0.34.0", "--max-model-len 4096", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", False),
        ("vllm==0.34.0", "--max-model-len 4096", "VLLM_ALLOW_LONG_MAX_MODEL_LEN=yes", True),
        ("vllm==0.10.2", "--max-model-len 4096", "", True),
    ],
)
def test_vllm_max_model_len_beyond_the_target_is_refused(
    pair: tuple[Path, Path], release: str, extra: str, env: str, refused: bool
) -> None:
    """The factory's target holds 2048 positions (`max_position_embeddings`)."""
    draft, target = pair
    line = _vllm_len(draft, target, extra, env)
    report = draftfit.check(draft, target, [release], serve_args=line)
    found = [x for x in _findings(report, "DF559") if "longer than the target's" in x.message]
    assert bool(found) is refused, [x.message for x in report.findings]
    assert (report.engines[0].verdict == "incompatible") is refused
    if refused:
        assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in found[0].message and "2048" in found[0].message


def test_a_release_whose_length_check_was_not_read_is_not_judged(pair: tuple[Path, Path]) -> None:
    draft, target = pair
    line = _vllm_len(draft, target, "--max-model-len 4096")
    report = draftfit.check(draft, target, ["vllm==0.17.0"], serve_args=line)
    assert not [x for x in _findings(report, "DF559") if "longer than the target's" in x.message]


@pytest.mark.parametrize(
    ("release", "scaling", "length"),
    [
        ("vllm==0.34.0", {"rope_type": "linear", "factor": 4.0}, 8192),
        ("vllm==0.34.0", {"rope_type": "yarn", "factor": 4.0}, 2048),
        (
            "vllm==0.10.2",
            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
            4096,
        ),
        ("vllm==0.34.0", {"rope_type": "llama3", "factor": 8.0}, 2048),
        ("sglang==0.5.23", {"rope_type": "linear", "factor": 4.0}, 8192),
        ("sglang==0.5.23", {"rope_type": "llama3", "factor": 8.0}, 2048),
        (
            "sglang==0.5.23",
            {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024},
            2048,
        ),
    ],
)
def test_the_targets_length_is_derived_as_each_release_derives_it(
    tmp_path: Path, release: str, scaling: dict[str, Any], length: int
) -> None:
    """Just above the derived length is refused; the derived length itself is not."""
    vllm = release.startswith("vllm")
    draft = (f.speculators() if vllm else f.specforge()).write(tmp_path / "draft")
    target = f.llama_target(tmp_path / "t", rope_scaling=scaling)
    for asked, refused in ((length, False), (length + 1, True)):
        if vllm:
            line = _vllm_len(draft, target, f"--max-model-len {asked}")
        else:
            line = _sglang(draft, f"--context-length {asked}").replace(" T ", f" {target} ")
        report = draftfit.check(draft, target, [release], serve_args=line)
        found = [x for x in _findings(report, "DF559") if "longer than the target's" in x.message]
        assert bool(found) is refused, (release, asked, [x.message for x in report.findings])


def test_sglang_context_length_beyond_the_target(sg_pair: tuple[Path, Path]) -> None:
    draft, target = sg_pair
    refused = draftfit.check(draft, target, SG, serve_args=_sglang(draft, "--context-length 8192"))
    found = [x for x in _findings(refused, "DF559") if "longer than the target's" in x.message]
    assert found and "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in found[0].message
    allowed = draftfit.check(
        draft,
        target,
        SG,
        serve_args="SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 "
        + _sglang(draft, "--context-length 8192"),
    )
    assert not [x for x in _findings(allowed, "DF559") if "longer than" in x.message]


@pytest.mark.parametrize(("release", "refused"), [("vllm==0.10.2", True), ("vllm==0.34.0", False)])
def test_a_nested_speculative_config_in_a_config_file_is_read_as_each_release_reads_it(
    pair: tuple[Path, Path], tmp_path: Path, release: str, refused: bool
) -> None:
    """vLLM 0.10.2 passes a nested mapping of its `--config` file on as Python's str(),
    which the JSON flag cannot read; 0.34.0 passes it as JSON. A JSON string reads in both."""
    draft, target = pair
    nested = tmp_path / "nested.yaml"
    nested.write_text(
        f"speculative-config:\n  model: {draft}\n  method: eagle3\n  num_speculative_tokens: 3\n"
    )
    as_string = tmp_path / "string.yaml"
    spec = {"model": str(draft), "method": "eagle3", "num_speculative_tokens": 3}
    as_string.write_text(f"speculative-config: '{json.dumps(spec)}'\n")
    for path, expected in ((nested, refused), (as_string, False)):
        line = f"vllm serve {target} --config {path}"
        report = draftfit.check(draft, target, [release], serve_args=line)
        found = [x for x in _findings(report, "DF559") if "nested mapping" in x.message]
        assert bool(found) is expected, (path.name, [x.message for x in report.findings])
        assert (report.engines[0].verdict == "incompatible") is expected


def test_the_launch_part_judges_each_release_once_and_the_report_carries_it(
    pair: tuple[Path, Path],
) -> None:
    """One release whose parser was read, one whose parser was not: each release's
    judgement (flags, method, what is left unjudged) is on `Report.serve`, and the verdicts
    and the settings shown follow it."""
    draft, target = pair
    spec = {"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3}
    line = _vllm(spec, "--port 8000 --no-such-flag 3")
    report = draftfit.check(draft, target, ["vllm==0.34.0", "vllm==0.20.0"], serve_args=line)
    assert report.serve is not None
    read = report.serve.at(EngineVersion("vllm", "0.34.0"))
    unread = report.serve.at(EngineVersion("vllm", "0.20.0"))
    assert read is not None and unread is not None
    assert report.serve.at(EngineVersion("sglang", "0.5.23")) is None
    # The release whose parser was read takes --port and refuses --no-such-flag.
    assert read.grammar is not None and read.method == "eagle3"
    assert read.accepted_flags == ("--port",) and read.refused_flags == ("--no-such-flag",)
    assert [m.flag for m in read.written if not m.taken] == ["--no-such-flag"]
    assert read.unjudged == ()
    # The other cannot say: its verdict is not proof, for that reason.
    assert unread.grammar is None and unread.written == ()
    assert unread.accepted_flags == unread.refused_flags == ()
    (why,) = unread.unjudged
    assert "--port" in why and "--no-such-flag" in why
    by_version = {r.version: r for r in report.engines}
    assert why in by_version["0.20.0"].unverified_reasons
    assert by_version["0.20.0"].verdict == "unverified"
    assert by_version["0.34.0"].verdict == "incompatible"
    (refused,) = _findings(report, "DF559")
    assert [k.version for k in refused.engines] == ["0.34.0"]
    # Shown: refused by one release; --port stays unread (one release could not say).
    assert report.serve.settings.refused_flags == ("--no-such-flag",)
    assert report.serve.settings.accepted_flags == ()
    assert "--port" in report.serve.settings.ignored_flags


def test_a_launch_that_leaves_the_method_to_vllm_is_checked_as_the_release_resolves_it(
    pair: tuple[Path, Path],
) -> None:
    draft, target = pair
    spec = {"model": str(draft), "num_speculative_tokens": 3}
    report = draftfit.check(draft, target, V34, serve_args=_vllm(spec))
    assert report.serve is not None
    (judged,) = report.serve.releases
    assert judged.method is None and judged.method_left_to_engine
    assert judged.served_method(None, "eagle3") == ("auto", False)
    assert judged.served_method("eagle", "eagle3") == ("eagle", True)
