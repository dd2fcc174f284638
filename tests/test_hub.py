"""Hub sources against a Hub-shaped server on 127.0.0.1 (through HF_ENDPOINT), and the cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from draftfit.checker import check_path
from draftfit.cli.main import main
from draftfit.origins.reference import is_hub_reference, open_checkpoint
from draftfit.rule_ids import Severity
from tests import factory as f
from tests.fake_hub import FakeHub, StalledHub, configure_hf_env

TOKEN = "hf_test_token"


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Path]:
    return {
        "draft": f.speculators(aux=[2, 4, 5]).write(tmp_path / "repo-draft"),
        "sharded": _big_sharded(tmp_path / "repo-sharded"),
        "target": f.llama_target(tmp_path / "repo-target"),
        "target-big": f.llama_target(tmp_path / "repo-target-big", hidden=1024),
        "bin": f.eagle1().write(tmp_path / "repo-bin", fmt="bin"),
    }


def _big_sharded(path: Path) -> Path:
    """A 4-shard SpecForge draft with ~50 MB of (sparse) weights, so headers are a sliver."""
    draft = f.specforge(nested_aux=[1, 3, 6])
    draft.config.update(f.llama_layer_config(hidden=1024, heads=8, kv=8, head_dim=128, inter=4096))
    draft.tensors = f.eagle3_tensors(hidden=1024, heads=8, kv=8, head_dim=128, inter=4096)
    return draft.write(path, shards=4)


@pytest.fixture
def hub(repos: dict[str, Path], tmp_path: Path, monkeypatch) -> Iterator[FakeHub]:
    fake = FakeHub()
    fake.add_repo("org/draft", repos["draft"])
    fake.add_repo("org/sharded", repos["sharded"])
    fake.add_repo("org/target", repos["target"])
    fake.add_repo("org/target-big", repos["target-big"])
    fake.add_repo("org/bin-only", repos["bin"])
    fake.add_repo("org/gated", repos["draft"], gated=True, token=TOKEN)
    with fake:
        configure_hf_env(monkeypatch, fake.endpoint, tmp_path / "hf-home")
        yield fake


def test_references() -> None:
    assert is_hub_reference("hf://org/name@main")
    assert is_hub_reference("org/name")
    assert not is_hub_reference("./org/name")
    assert not is_hub_reference("/abs/path")
    assert not is_hub_reference("a/b/c")


def test_check_a_hub_draft_and_target(hub: FakeHub, capsys) -> None:
    code = main(["check", "hf://org/draft", "--target", "org/target", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["draft"]["source"] == "hf://org/draft"
    assert data["engines"][0]["verdict"] == "compatible"
    assert data["target"]["num_layers"] == f.TARGET_LAYERS


def test_only_headers_are_fetched(hub: FakeHub, repos: dict[str, Path]) -> None:
    report = check_path("hf://org/sharded", target="hf://org/target-big")
    # nested ids are not read by vLLM 0.34: other layers than trained, every draft wrong
    assert report.engines[0].verdict == "drafts-garbage"
    weights = sum(p.stat().st_size for p in repos["sharded"].glob("*.safetensors"))
    small = sum(p.stat().st_size for p in repos["sharded"].glob("*.json"))
    header_bytes = sum(
        8 + int.from_bytes(p.read_bytes()[:8], "little")
        for p in repos["sharded"].glob("*.safetensors")
    )
    # JSON files, at most the first 16 KB of each shard (the header is in there), and the
    # few KB of d2t/t2d the vocabulary checks read.
    shards = len(list(repos["sharded"].glob("*.safetensors")))
    assert header_bytes < hub.bytes_sent < small + shards * 16_385 + 2 * 4096
    assert hub.bytes_sent * 50 < weights
    ranged = [r for r in hub.requests if r.method == "GET" and r.range]
    assert ranged and all(r.path.endswith(".safetensors") for r in ranged)


def test_a_hub_draft_given_as_the_target_is_a_usage_error(
    hub: FakeHub, tmp_path: Path, capsys
) -> None:
    draft = f.specforge().write(tmp_path / "local-draft")
    # Its config says it is a draft: nothing beyond config.json is read.
    assert main(["check", str(draft), "--target", "hf://org/draft"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("draftfit: error: the target hf://org/draft is a draft (")
    assert f"run `draftfit check {draft} --target VERIFIER`" in captured.err
    # A plain one-layer config (the official EAGLE-1 layout): its remote headers decide.
    hub.add_repo("org/eagle1", f.eagle1().write(tmp_path / "eagle1"))
    assert main(["matrix", str(draft), "--target", "hf://org/eagle1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("draftfit: error: the target hf://org/eagle1 is a draft (official ")
    assert f"run `draftfit matrix {draft} --target VERIFIER`" in err


def test_revision_and_damage_remote(hub: FakeHub, repos: dict[str, Path]) -> None:
    checkpoint = open_checkpoint(f"hf://org/draft@{hub.commit_sha('org/draft')}")
    assert checkpoint.damage == [] and "fc.weight" in checkpoint.tensors


def test_remote_damage_is_a_finding(tmp_path: Path, monkeypatch) -> None:
    broken = f.specforge().write(tmp_path / "broken")
    path = broken / "model.safetensors"
    path.write_bytes(path.read_bytes()[:-50])
    fake = FakeHub()
    fake.add_repo("org/broken", broken)
    with fake:
        configure_hf_env(monkeypatch, fake.endpoint, tmp_path / "hf-home")
        report = check_path("hf://org/broken")
    assert "DF002" in {x.code for x in report.findings}


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        ("hf://org/missing", "not found"),
        ("hf://org/draft@nope", "revision 'nope' not found"),
        ("hf://org/gated", "gated"),
        ("hf://org/bin-only", "only PyTorch .bin weights"),
        ("hf://onlyone", "expected hf://OWNER/NAME"),
    ],
)
def test_hub_errors_are_one_line_exit_two(hub: FakeHub, capsys, source: str, needle: str) -> None:
    assert main(["check", source]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert needle in captured.err


def test_gated_repo_with_token(hub: FakeHub, monkeypatch, tmp_path: Path) -> None:
    configure_hf_env(monkeypatch, hub.endpoint, tmp_path / "hf-home2", token=TOKEN)
    result = check_path("hf://org/gated").engines[0]
    # Read through: nothing found; only the missing target keeps it from `compatible`.
    assert (result.verdict, result.unverified_reasons) == ("unverified", ["no target"])


def test_timeout_is_one_line(hub: FakeHub, monkeypatch, capsys) -> None:
    monkeypatch.setenv("DRAFTFIT_HUB_TIMEOUT", "0.2")
    hub.delay = 1.0
    assert main(["check", "hf://org/draft"]) == 2
    lines = capsys.readouterr().err.splitlines()
    # At most a progress line ("reading ... ") before the single error line.
    assert len(lines) <= 2 and lines[-1].startswith("draftfit: error:")
    assert "did not answer" in lines[-1] or "cannot reach" in lines[-1]


def test_offline_reads_the_cache(hub: FakeHub, monkeypatch, tmp_path: Path, capsys) -> None:
    from huggingface_hub import snapshot_download

    home = tmp_path / "hf-home3"
    configure_hf_env(monkeypatch, hub.endpoint, home)
    snapshot_download("org/draft")
    configure_hf_env(monkeypatch, hub.endpoint, home, offline=True)
    before = len(hub.requests)
    report = check_path("org/draft")
    assert report.engines[0].verdict == "unverified"
    assert report.engines[0].unverified_reasons == ["no target"]
    assert report.count(Severity.WARNING) == report.count(Severity.ERROR) == 0
    assert len(hub.requests) == before  # nothing fetched
    assert main(["check", "hf://org/sharded"]) == 2
    assert "not in the local Hugging Face cache" in capsys.readouterr().err


def test_diff_local_against_hub(hub: FakeHub, repos: dict[str, Path], capsys) -> None:
    code = main(["diff", str(repos["draft"]), "hf://org/draft"])
    assert code == 0 and ": unverified (0 that matter" in capsys.readouterr().out


def test_inspect_hub(hub: FakeHub, capsys) -> None:
    assert main(["inspect", "hf://org/sharded", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"] == "hf://org/sharded" and len(data["weight_files"]) == 4


def test_a_mistyped_local_folder_says_both_readings(hub: FakeHub, repos, capsys) -> None:
    """`targets/llama-3.1-8b` is first a local path; when there is no such folder and no
    such Hub repo, one line says both."""
    assert main(["check", str(repos["draft"]), "--target", "targets/llama-3.1-8b"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(
        "draftfit: error: no local folder targets/llama-3.1-8b; as a Hub repo: "
        "hf://targets/llama-3.1-8b not found (HTTP 404)"
    )
    # An explicit hf:// reference is a Hub repo only.
    assert main(["check", "hf://org/missing"]) == 2
    assert "no local folder" not in capsys.readouterr().err


def _unreachable(monkeypatch, home: Path) -> None:
    """The Hub endpoint is a closed port: every request fails to connect."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    configure_hf_env(monkeypatch, f"http://127.0.0.1:{port}", home)


def test_unreachable_hub_falls_back_to_the_cache_and_says_so(
    hub: FakeHub, monkeypatch, tmp_path: Path, capsys
) -> None:
    from huggingface_hub import hf_hub_download, snapshot_download

    home = tmp_path / "hf-home-cache"
    configure_hf_env(monkeypatch, hub.endpoint, home)
    snapshot_download("org/draft")
    hf_hub_download("org/target", "config.json")
    _unreachable(monkeypatch, home)
    code = main(["check", "org/draft", "--target", "org/target", "--format", "json"])
    captured = capsys.readouterr()
    assert code == 0
    # The target's ModelSlim description is not in the cache: whether the target is
    # rotated is unknown (DF519), so nothing is called compatible.
    report = json.loads(captured.out)
    assert report["engines"][0]["verdict"] == "unverified"
    (unchecked,) = [f for f in report["findings"] if f["code"] == "DF519"]
    assert unchecked["consequence"] == "unknown"
    lines = captured.err.splitlines()
    assert any(
        "hf://org/draft: cannot reach the Hub" in line
        and line.endswith("read hf://org/draft from the local Hugging Face cache instead")
        for line in lines
    )
    assert any("read hf://org/target from the local Hugging Face cache" in line for line in lines)
    assert not [line for line in lines if not line.startswith("draftfit: ")]


def test_unreachable_hub_without_a_cached_copy_is_one_line(
    hub: FakeHub, monkeypatch, tmp_path: Path, capsys
) -> None:
    _unreachable(monkeypatch, tmp_path / "hf-home-empty")
    assert main(["check", "org/draft"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("draftfit: error: no local folder org/draft; as a Hub repo: ")
    assert "cannot reach the Hub" in lines[0]
    assert lines[0].endswith(", and hf://org/draft is not in the local Hugging Face cache")


def test_long_library_messages_are_cut_at_a_word() -> None:
    from draftfit.escape import clip

    text = "An error happened while trying to locate the file on the Hub " * 5
    short = clip(text, 160, at_word=True)
    assert len(short) <= 160 and short.endswith("…")
    assert text.startswith(short[:-1]) and text[len(short) - 1] == " "
    assert clip("short", 160, at_word=True) == "short"
    assert clip(text, 160) == text[:159] + "…"


# ---------------------------------------------------------------------- deadlines


@pytest.fixture
def stalled(monkeypatch, tmp_path: Path) -> Iterator[StalledHub]:
    """The Hub endpoint accepts connections and never answers."""
    with StalledHub() as server:
        configure_hf_env(monkeypatch, server.endpoint, tmp_path / "hf-home-stalled")
        yield server


def _one_error_line(err: str) -> str:
    """The error line; at most a progress line ("reading ...") comes before it."""
    lines = err.splitlines()
    assert 1 <= len(lines) <= 3 and lines[-1].startswith("draftfit: error: "), lines
    assert all(line.startswith("draftfit: ") for line in lines)
    return lines[-1]


@pytest.mark.parametrize(
    "argv",
    [["check", "org/draft"], ["check", "hf://org/draft"], ["inspect", "org/draft"]],
    ids=["draft", "hf-draft", "inspect"],
)
def test_a_stalled_hub_ends_at_the_request_timeout(stalled, monkeypatch, capsys, argv) -> None:
    monkeypatch.setenv("DRAFTFIT_HUB_TIMEOUT", "0.3")
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    line = _one_error_line(captured.err)
    assert "did not answer within 0.3 s (DRAFTFIT_HUB_TIMEOUT" in line
    assert stalled.connections >= 1


def test_a_stalled_hub_target_ends_at_the_request_timeout(
    stalled, repos, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("DRAFTFIT_HUB_TIMEOUT", "0.3")
    assert main(["check", str(repos["draft"]), "--target", "org/target"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "hf://org/target: the Hub did not answer within 0.3 s" in line
    assert line.endswith("is not in the local Hugging Face cache")
    assert stalled.connections == 1  # asked once, not retried


def test_the_deadline_bounds_the_whole_hub_step(stalled, repos, monkeypatch, capsys) -> None:
    """Each request may wait 30 s, but reading the repository may take 0.5 s in all."""
    monkeypatch.setenv("DRAFTFIT_HUB_TIMEOUT", "30")
    monkeypatch.setenv("DRAFTFIT_HUB_DEADLINE", "0.5")
    for argv in (
        ["check", "hf://org/draft"],
        ["check", str(repos["draft"]), "--target", "hf://org/t"],
    ):
        assert main(argv) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert "the Hub did not finish answering within 0.5 s (DRAFTFIT_HUB_DEADLINE" in line


def test_without_network_a_hub_target_fails_as_a_draft_does(
    hub: FakeHub, repos, monkeypatch, tmp_path: Path, capsys
) -> None:
    """A closed port: the target is not retried for ~24 s (the deadline, well above the
    time one refused connection takes, is not what ends it)."""
    _unreachable(monkeypatch, tmp_path / "hf-home-none")
    monkeypatch.setenv("DRAFTFIT_HUB_DEADLINE", "15")
    assert main(["check", str(repos["draft"]), "--target", "hf://org/target"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "hf://org/target: cannot reach the Hub" in line
    assert "not in the local Hugging Face cache" in line and "DEADLINE" not in line


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf"])
@pytest.mark.parametrize("name", ["DRAFTFIT_HUB_TIMEOUT", "DRAFTFIT_HUB_DEADLINE"])
def test_a_bad_deadline_setting_is_one_line(hub: FakeHub, monkeypatch, capsys, name, value) -> None:
    monkeypatch.setenv(name, value)
    assert main(["check", "hf://org/draft"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{name}=" in err and "positive number of seconds" in err


def test_the_api_never_prints_progress_or_notices(
    hub: FakeHub, monkeypatch, tmp_path: Path, capsys, caplog
) -> None:
    """A slow Hub makes the CLI print its progress line; the API logs it instead (and the
    cache notice too), and writes nothing on stdout or stderr."""
    import logging

    from huggingface_hub import snapshot_download

    import draftfit
    from draftfit.errors import HubAccessError

    hub.delay = 0.6  # past the 0.5 s after which progress is told
    assert main(["check", "org/mistyped"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "draftfit: reading hf://org/mistyped (config and safetensors headers) ..."
    )
    with caplog.at_level(logging.INFO, logger="draftfit"):
        with pytest.raises(HubAccessError):
            draftfit.check("org/mistyped")
        assert capsys.readouterr() == ("", "")
        assert any("reading hf://org/mistyped" in r.getMessage() for r in caplog.records)
        hub.delay = 0.0
        home = tmp_path / "hf-home-api"
        configure_hf_env(monkeypatch, hub.endpoint, home)
        snapshot_download("org/draft")
        _unreachable(monkeypatch, home)
        draftfit.check("org/draft")
        assert capsys.readouterr() == ("", "")
    notices = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("from the local Hugging Face cache instead" in r.getMessage() for r in notices)


def test_a_huge_deadline_setting_counts_as_a_day(hub: FakeHub, monkeypatch, capsys) -> None:
    monkeypatch.setenv("DRAFTFIT_HUB_TIMEOUT", "1e308")
    monkeypatch.setenv("DRAFTFIT_HUB_DEADLINE", "1e308")
    assert main(["check", "hf://org/draft", "--format", "json"]) == 0
    assert "error" not in capsys.readouterr().err
