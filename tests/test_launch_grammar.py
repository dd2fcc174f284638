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
    assert any("ambiguous option: --speculative-draft" in x.message for x in report.findings)


def test_sglang_unique_abbreviation_is_read(sg_pair: tuple[Path, Path]) -> None:
    draft, target = sg_pair
    line = (
        "python -m sglang.launch_server --model-path T --speculative-algo EAGLE3 "
        f"--speculative-draft-model-path {draft} --port 30000 --mem-fraction-static 0.8"
    )
    report = draftfit.check(draft, target, SG, serve_args=line)
    assert report.serve is not None and report.serve.method == "EAGLE3"
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


def _vllm(spec: dict[str, Any], extra: str = "") -> str:
    return f"vllm serve T {extra} --speculative-config '{json.dumps(spec)}'"


def test_vllm_unknown_key_and_flag(pair: tuple[Path, Path]) -> None:
    draft, target = pair
    spec = {"method": "eagle3", "model": str(draft), "num_spec_tokens": 3}
    report = draftfit.check(draft, target, V34, serve_args=_vllm(spec))
    keys = _findings(report, "DF559")
    assert keys and "num_speculative_tokens" in (keys[0].fix or "")
    assert report.engines[0].verdict == "incompatible"


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
