"""The fake Hub answers real `huggingface_hub` calls the way the Hub does (results and errors)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.fake_hub import FakeHub, configure_hf_env

hf = pytest.importorskip("huggingface_hub")
errors = pytest.importorskip("huggingface_hub.errors")
pytest.importorskip("safetensors")
from safetensors.numpy import save_file  # noqa: E402

CONFIG = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 8}
TOKEN = "hf_test_token"


@pytest.fixture
def repo_dirs(tmp_path: Path) -> dict[str, Path]:
    """Three repos on disk: one safetensors file, a sharded checkpoint, and a nested layout."""
    single = tmp_path / "single"
    single.mkdir()
    (single / "config.json").write_text(json.dumps(CONFIG))
    save_file({"fc.weight": np.ones((8, 16), dtype=np.float16)}, str(single / "model.safetensors"))

    sharded = tmp_path / "sharded"
    sharded.mkdir()
    (sharded / "config.json").write_text(json.dumps(CONFIG))
    weight_map = {}
    for i, name in enumerate(["a.weight", "b.weight"], start=1):
        shard = f"model-0000{i}-of-00002.safetensors"
        save_file({name: np.zeros((4, 4), dtype=np.float32)}, str(sharded / shard))
        weight_map[name] = shard
    index = {"metadata": {"total_size": 128}, "weight_map": weight_map}
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))

    nested = tmp_path / "nested"
    (nested / "sub").mkdir(parents=True)
    (nested / "config.json").write_text("{}")
    (nested / "sub" / "extra.txt").write_text("hello")
    return {"single": single, "sharded": sharded, "nested": nested}


@pytest.fixture
def hub(repo_dirs: dict[str, Path]) -> Iterator[FakeHub]:
    """A started FakeHub; asserts afterwards that it left no server or handler thread behind."""
    fake = FakeHub()
    fake.add_repo("org/single", repo_dirs["single"])
    fake.add_repo("org/single", repo_dirs["nested"], revision="v2")
    fake.add_repo("org/sharded", repo_dirs["sharded"])
    fake.add_repo("org/gated", repo_dirs["single"], gated=True, token=TOKEN)
    fake.add_repo("org/private", repo_dirs["single"], private=True, token=TOKEN)
    with fake:
        yield fake
    assert not [t for t in threading.enumerate() if _is_server_thread(t)]


def _is_server_thread(thread: threading.Thread) -> bool:
    return thread.name == "FakeHub" or "process_request_thread" in thread.name


@pytest.fixture
def hf_env(hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return configure_hf_env(monkeypatch, hub.endpoint, tmp_path / "hf")


def test_model_info_lists_siblings_with_sizes(hub: FakeHub, hf_env: Path, repo_dirs) -> None:
    info = hf.HfApi().model_info("org/single", files_metadata=True)
    assert info.id == "org/single" and info.sha == hub.commit_sha("org/single")
    sizes = {s.rfilename: s.size for s in info.siblings}
    assert sizes == {p.name: p.stat().st_size for p in repo_dirs["single"].iterdir()}
    lfs = {s.rfilename: s.lfs for s in info.siblings}
    assert (
        lfs["config.json"] is None and lfs["model.safetensors"].size == sizes["model.safetensors"]
    )
    assert info.config == {"architectures": CONFIG["architectures"], "model_type": "llama"}
    # like the Hub, sizes only come with files_metadata (blobs=True)
    assert hf.HfApi().model_info("org/single").siblings[0].size is None
    # a revision by branch name or by sha
    sha = hub.commit_sha("org/single", "v2")
    for rev in ("v2", sha):
        info = hf.HfApi().model_info("org/single", revision=rev)
        assert info.sha == sha
        assert sorted(s.rfilename for s in info.siblings) == ["config.json", "sub/extra.txt"]


def test_download_then_offline(hub: FakeHub, hf_env: Path, monkeypatch, tmp_path) -> None:
    path = hf.hf_hub_download("org/single", "config.json")
    assert Path(path).is_relative_to(hf_env)
    assert json.loads(Path(path).read_text()) == CONFIG
    assert (hf_env / "models--org--single" / "refs" / "main").read_text() == hub.commit_sha(
        "org/single"
    )
    configure_hf_env(monkeypatch, hub.endpoint, tmp_path / "hf", offline=True)
    n = len(hub.requests)
    assert hf.hf_hub_download("org/single", "config.json") == path
    assert hf.hf_hub_download("org/single", "config.json", local_files_only=True) == path
    assert len(hub.requests) == n  # offline: nothing reached the server
    with pytest.raises(errors.LocalEntryNotFoundError):
        hf.hf_hub_download("org/single", "model.safetensors")


def test_snapshot_download_with_patterns(hub: FakeHub, hf_env: Path) -> None:
    folder = Path(hf.snapshot_download("org/single", allow_patterns=["*.json"]))
    assert [p.name for p in folder.iterdir()] == ["config.json"]
    nested = Path(hf.snapshot_download("org/single", revision="v2"))
    assert (nested / "sub" / "extra.txt").read_text() == "hello"
    offline = hf.snapshot_download("org/single", allow_patterns=["*.json"], local_files_only=True)
    assert Path(offline) == folder


def test_ranged_get_and_bytes_sent(hub: FakeHub, hf_env: Path, repo_dirs) -> None:
    from huggingface_hub import get_session, hf_hub_url
    from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

    data = (repo_dirs["single"] / "model.safetensors").read_bytes()
    url = hf_hub_url("org/single", "model.safetensors")
    assert url.startswith(hub.endpoint)
    before = hub.bytes_sent
    r = get_session().get(url, headers={**build_hf_headers(), "range": "bytes=0-7"}, timeout=5)
    hf_raise_for_status(r)
    assert r.status_code == 206 and r.content == data[:8]
    assert r.headers["Content-Range"] == f"bytes 0-7/{len(data)}"
    assert r.headers["X-Repo-Commit"] == hub.commit_sha("org/single")
    assert hub.bytes_sent - before == 8
    assert hub.requests[-1] == ("GET", "/org/single/resolve/main/model.safetensors", "bytes=0-7")
    tail = get_session().get(url, headers={"range": f"bytes={len(data) - 3}-"}, timeout=5)
    assert tail.status_code == 206 and tail.content == data[-3:]
    clamped = get_session().get(url, headers={"range": "bytes=4-100000000"}, timeout=5)
    assert clamped.status_code == 206 and clamped.content == data[4:]
    assert get_session().get(url, headers={"range": f"bytes={len(data)}-"}).status_code == 416
    head = get_session().head(url, timeout=5)
    assert head.headers["Content-Length"] == str(len(data)) and head.headers["ETag"]
    assert hub.bytes_sent - before == 8 + 3 + len(data) - 4  # 416 and HEAD send no body


def test_safetensors_metadata_single_and_sharded(hub: FakeHub, hf_env: Path) -> None:
    single = hf.HfApi().get_safetensors_metadata("org/single")
    assert not single.sharded
    tensor = single.files_metadata["model.safetensors"].tensors["fc.weight"]
    assert tensor.shape == [8, 16] and tensor.dtype == "F16"
    sharded = hf.HfApi().get_safetensors_metadata("org/sharded")
    assert sharded.sharded and set(sharded.weight_map) == {"a.weight", "b.weight"}
    assert len(sharded.files_metadata) == 2


def test_error_classes(hub: FakeHub, hf_env: Path) -> None:
    api = hf.HfApi()
    with pytest.raises(errors.RepositoryNotFoundError):
        api.model_info("org/missing")
    with pytest.raises(errors.RepositoryNotFoundError):
        hf.hf_hub_download("org/missing", "config.json")
    with pytest.raises(errors.RevisionNotFoundError):
        api.model_info("org/single", revision="nope")
    with pytest.raises(errors.RevisionNotFoundError):
        hf.hf_hub_download("org/single", "config.json", revision="nope")
    with pytest.raises(errors.EntryNotFoundError):
        hf.hf_hub_download("org/single", "missing.json")
    assert not api.file_exists("org/single", "missing.json")
    assert api.file_exists("org/single", "config.json")
    # gated: metadata is public, files are not
    assert api.model_info("org/gated").gated == "manual"
    with pytest.raises(errors.GatedRepoError):
        hf.hf_hub_download("org/gated", "config.json")
    with pytest.raises(errors.GatedRepoError):
        hf.hf_hub_download("org/gated", "config.json", token="hf_wrong")
    # private: invisible without the token
    with pytest.raises(errors.RepositoryNotFoundError):
        api.model_info("org/private")
    with pytest.raises(errors.RepositoryNotFoundError):
        hf.hf_hub_download("org/private", "config.json")


def test_token_unlocks_gated_and_private(hub: FakeHub, tmp_path, monkeypatch) -> None:
    configure_hf_env(monkeypatch, hub.endpoint, tmp_path / "hf", token=TOKEN)
    assert json.loads(Path(hf.hf_hub_download("org/gated", "config.json")).read_text()) == CONFIG
    assert hf.HfApi().get_safetensors_metadata("org/gated").files_metadata
    assert hf.HfApi().model_info("org/private").private is True


def test_timeout_and_injected_failure(hub: FakeHub, hf_env: Path) -> None:
    import httpx2

    hub.delay = 0.5
    with pytest.raises(httpx2.TimeoutException):
        hf.HfApi().model_info("org/single", timeout=0.1)
    hub.delay = 0.0
    hub.fail_next(1, status=503)
    with pytest.raises(errors.HfHubHTTPError) as excinfo:
        hf.HfApi().model_info("org/single")
    assert excinfo.value.response.status_code == 503
    assert hf.HfApi().model_info("org/single").id == "org/single"


def test_lfs_redirect_to_cdn(repo_dirs, tmp_path, monkeypatch) -> None:
    with FakeHub(lfs_redirect=True) as fake:
        fake.add_repo("org/single", repo_dirs["single"])
        configure_hf_env(monkeypatch, fake.endpoint, tmp_path / "hf")
        path = hf.hf_hub_download("org/single", "model.safetensors")
        data = (repo_dirs["single"] / "model.safetensors").read_bytes()
        assert Path(path).read_bytes() == data
        assert hf.HfApi().get_safetensors_metadata("org/single").files_metadata
        assert any(r.path.startswith("/cdn/") for r in fake.requests)
