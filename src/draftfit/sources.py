"""Where checkpoints come from: a local directory, or a Hugging Face Hub repository.

`open_checkpoint("./dir")` reads a local directory; `open_checkpoint("hf://owner/name@rev")`,
or a bare `owner/name` that is not a local path, reads config.json and the safetensors
headers of a Hub repository without downloading weights (see :mod:`draftfit.hub`).
"""

from __future__ import annotations

from pathlib import Path

from draftfit.checkpoint import Checkpoint, load_checkpoint
from draftfit.target import Target, load_target

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
        from draftfit.hub import load_hub_checkpoint

        return load_hub_checkpoint(text)
    return load_checkpoint(source)


def open_target(source: str | Path) -> Target:
    """Read a target's config from a local directory or the Hub."""
    text = str(source)
    if is_hub_reference(text):
        from draftfit.hub import load_hub_target

        return load_hub_target(text)
    return load_target(source)
