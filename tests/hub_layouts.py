"""Hugging Face download layouts built from a plain checkpoint folder, as `hf download` and
`snapshot_download` leave them: a cache snapshot (files are relative symlinks into the
repository's `blobs/`), or a `--local-dir` copy with its `.cache/huggingface/` metadata."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

REVISION = "0123456789abcdef0123456789abcdef01234567"


def cache_snapshot(plain: Path, hub_home: Path, repo_id: str, revision: str = REVISION) -> Path:
    """Put the files of `plain` into a cache under `hub_home` the way the Hub client does
    (`models--O--N/blobs/HASH`, `snapshots/REV/NAME -> ../../blobs/HASH`, `refs/main`);
    returns the snapshot folder."""
    repo = hub_home / ("models--" + repo_id.replace("/", "--"))
    blobs, snapshot = repo / "blobs", repo / "snapshots" / revision
    blobs.mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    for source in sorted(plain.iterdir()):
        data = source.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        (blobs / digest).write_bytes(data)
        os.symlink(os.path.join("..", "..", "blobs", digest), snapshot / source.name)
    return snapshot


def local_dir_download(plain: Path, out: Path, revision: str = REVISION) -> Path:
    """A copy of `plain` with the `.cache/huggingface/` folder `--local-dir` downloads
    write beside the files (one `.metadata` per file: commit, etag, time)."""
    shutil.copytree(plain, out)
    meta = out / ".cache" / "huggingface"
    (meta / "download").mkdir(parents=True)
    (meta / ".gitignore").write_text("*")
    for source in sorted(plain.iterdir()):
        etag = hashlib.sha256(source.read_bytes()).hexdigest()
        (meta / "download" / f"{source.name}.metadata").write_text(
            f"{revision}\n{etag}\n{time.time()}\n"
        )
    return out
