"""Folders written by Hugging Face downloads, recognised by their layout.

Two layouts are read like any plain folder:

* a cache snapshot, `…/models--OWNER--NAME/snapshots/REV/`, whose files are symlinks into the
  repository's `blobs/` folder (`../../blobs/HASH`): reads are confined to the repository's
  `models--OWNER--NAME` folder instead of the snapshot itself, so those links are followed
  and links leaving the repository are still refused;
* a `--local-dir` download, whose `.cache/huggingface/download/*.metadata` files (beside the
  weights, never read as part of the checkpoint) name the commit the files came from.

Either way the folder says which repository and revision it holds, and reports name them.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from draftfit.checkpoint.access import read_regular
from draftfit.records import frozen

REPO_PREFIX = "models--"
SNAPSHOTS = "snapshots"
LOCAL_DIR_METADATA = Path(".cache") / "huggingface" / "download"
_COMMIT = re.compile(r"[0-9a-f]{40}")
# refs files and metadata files are a few dozen bytes; anything larger is not one
_SMALL = 4096


@frozen
class HubOrigin:
    """Where a local folder came from on the Hub, as its layout says.

    Attributes:
        layout: `cache` (a cache snapshot) or `local-dir` (a `--local-dir` download).
        repo_id: `OWNER/NAME`, or None when the layout does not record it (`local-dir`).
        revision: the commit the files came from, or None when not recorded.
        ref: the branch or tag the cache's `refs/` maps to that commit (`main`), if any.
    """

    layout: str
    repo_id: str | None
    revision: str | None
    ref: str | None = None

    def describe(self) -> str:
        """`Hub cache of OWNER/NAME at REV (main)`, for the text report."""
        where = "Hub cache" if self.layout == "cache" else "Hub download (--local-dir)"
        text = where + (f" of {self.repo_id}" if self.repo_id else "")
        if self.revision:
            text += f" at {self.revision}"
        if self.ref:
            text += f" ({self.ref})"
        return text

    def to_dict(self) -> dict[str, str | None]:
        return {
            "layout": self.layout,
            "repo_id": self.repo_id,
            "revision": self.revision,
            "ref": self.ref,
        }


def repository_folder(root: Path) -> Path | None:
    """The `models--OWNER--NAME` folder when `root` is one of its snapshots, else None."""
    absolute = Path(os.path.abspath(root))
    parent = absolute.parent
    if parent.name != SNAPSHOTS or not parent.parent.name.startswith(REPO_PREFIX):
        return None
    if len(parent.parent.name) <= len(REPO_PREFIX):
        return None
    return parent.parent


def find_origin(root: Path) -> HubOrigin | None:
    """The Hub repository and revision a local folder holds, when its layout says so."""
    repo_folder = repository_folder(root)
    if repo_folder is not None:
        revision = Path(os.path.abspath(root)).name
        repo_id = repo_folder.name[len(REPO_PREFIX) :].replace("--", "/")
        return HubOrigin("cache", repo_id, revision, _ref_for(repo_folder, revision))
    return _local_dir_origin(root)


def _small_text(path: Path) -> str | None:
    """The text of a small regular file, or None (missing, not regular, too large)."""
    try:
        return read_regular(path, _SMALL).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def _ref_for(repo_folder: Path, revision: str) -> str | None:
    """The branch or tag whose `refs/` file names `revision` (`main` first)."""
    refs = repo_folder / "refs"
    try:
        names = sorted(p.name for p in refs.iterdir())
    except OSError:
        return None
    for name in sorted(names, key=lambda n: n != "main"):
        text = _small_text(refs / name)
        if text is not None and text.strip() == revision:
            return name
    return None


def _local_dir_origin(root: Path) -> HubOrigin | None:
    """A `--local-dir` download's commit, from the metadata of its config.json (else of any
    file it records)."""
    folder = root / LOCAL_DIR_METADATA
    if not folder.is_dir():
        return None
    candidates = [folder / "config.json.metadata"]
    with contextlib.suppress(OSError):
        candidates += sorted(folder.glob("*.metadata"))
    for path in candidates:
        text = _small_text(path)
        first = text.splitlines()[0].strip() if text else ""
        if _COMMIT.fullmatch(first):
            return HubOrigin("local-dir", None, first)
    return HubOrigin("local-dir", None, None)
