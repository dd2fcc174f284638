"""Where checkpoints come from: a local directory, or a Hugging Face Hub repository.

`open_checkpoint("./dir")` reads a local directory; `open_checkpoint("hf://owner/name@rev")`,
or a bare `owner/name` that is not a local path, reads config.json and the safetensors
headers of a Hub repository without downloading weights (see :mod:`draftfit.origins.hub`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint import Checkpoint, load_checkpoint
from draftfit.draft.target import Target, load_target
from draftfit.errors import HubAccessError, UsageError

if TYPE_CHECKING:
    from draftfit.checkpoint.scoped import QueryFor, ScopedCheckpoint, Selector

HF_PREFIX = "hf://"


def is_hub_reference(text: str) -> bool:
    """`hf://...`, or `owner/name` (exactly one slash) that is not an existing local path."""
    if text.startswith(HF_PREFIX):
        return True
    if Path(text).exists() or text.startswith((".", "/", "~")):
        return False
    parts = text.split("@", 1)[0].split("/")
    return len(parts) == 2 and all(parts)


def open_checkpoint(source: str | Path) -> Checkpoint:
    """Read a draft checkpoint from a local directory or the Hub."""
    text = str(source)
    if is_hub_reference(text):
        from draftfit.origins.hub import load_hub_checkpoint

        with _local_first(text):
            return load_hub_checkpoint(text)
    _refuse_folder_of_checkpoints(Path(source))
    return load_checkpoint(source)


def open_scoped(text: str, select: Selector, query: QueryFor | None = None) -> ScopedCheckpoint:
    """Read a Hub repository's config, its index (with `query`, only the names it picks)
    and the headers of the shards holding a tensor that `select` picks (see
    :func:`draftfit.origins.hub.load_hub_scoped`)."""
    from draftfit.origins.hub import load_hub_scoped

    with _local_first(text):
        return load_hub_scoped(text, select, query)


def open_target(source: str | Path) -> Target:
    """Read a target's config from a local directory or the Hub."""
    text = str(source)
    if is_hub_reference(text):
        from draftfit.origins.hub import load_hub_target

        with _local_first(text):
            return load_hub_target(text)
    _refuse_folder_of_checkpoints(Path(source))
    return load_target(source)


@contextmanager
def _local_first(text: str) -> Iterator[None]:
    """A bare `owner/name` is first a local path: when it is not one and the Hub has no such
    repository either, the error says both, so a mistyped folder is not taken for a repo."""
    try:
        yield
    except HubAccessError as exc:
        if text.startswith(HF_PREFIX):
            raise
        raise HubAccessError(f"no local folder {text}; as a Hub repo: {exc}") from exc


def _refuse_folder_of_checkpoints(path: Path) -> None:
    """A folder with no config.json and no weights of its own, whose subfolders hold
    checkpoints (`checkpoints/` with `epoch_3/`...), is named in one line, not checked."""
    if not path.is_dir() or (path / "config.json").exists():
        return
    if any(path.glob("*.safetensors")) or any(path.glob("*.bin")):
        return
    found = checkpoint_subfolders(path)
    if found:
        shown = ", ".join(str(p) for p in found[:SUBFOLDERS_SHOWN])
        more = len(found) - SUBFOLDERS_SHOWN
        raise UsageError(
            f"no checkpoint in {path}; these subfolders hold one: {shown}"
            + (f" and {more} more" if more > 0 else "")
        )


SUBFOLDERS_SHOWN = 5


def checkpoint_subfolders(path: Path, depth: int = 2) -> list[Path]:
    """Folders up to `depth` levels below `path` that hold a config.json, in natural order
    (`epoch_2` before `epoch_10`); hidden folders are skipped."""
    found: list[Path] = []
    level = [path]
    for _ in range(depth):
        below: list[Path] = []
        for folder in level:
            try:
                children = [
                    c for c in folder.iterdir() if c.is_dir() and not c.name.startswith(".")
                ]
            except OSError:
                continue
            for child in sorted(children, key=_natural):
                (found if (child / "config.json").is_file() else below).append(child)
        level = below
    return sorted(found, key=_natural)


def _natural(path: Path) -> list[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]
