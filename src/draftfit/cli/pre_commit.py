"""From the files a commit changes to the checkpoint folders to check (the pre-commit hook).

pre-commit passes the changed files that match the hook's `files` pattern; draftfit checks
checkpoints, which are folders. A changed file belongs to the checkpoint folder it sits in,
which is a folder holding `config.json` and weights (`*.safetensors`, a safetensors index or
`pytorch_model*.bin`); a `draftfit.toml` or `pyproject.toml` change re-checks the checkpoints
below it. Files outside any checkpoint are passed over; deleted files are too.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SETTINGS_FILES = frozenset({"draftfit.toml", "pyproject.toml"})
WEIGHT_PATTERNS = ("*.safetensors", "model.safetensors.index.json", "pytorch_model*.bin")


def is_checkpoint(folder: Path) -> bool:
    """Whether `folder` holds a config and weights, i.e. is worth `draftfit check`."""
    if not (folder / "config.json").is_file():
        return False
    return any(any(folder.glob(pattern)) for pattern in WEIGHT_PATTERNS)


def checkpoint_folders(files: Iterable[str]) -> list[str]:
    """The checkpoint folders the changed `files` belong to, in the order first named."""
    folders: list[str] = []
    for name in files:
        path = Path(name)
        if path.name in SETTINGS_FILES and path.parent.is_dir():
            found = sorted(
                str(config.parent)
                for config in path.parent.rglob("config.json")
                if ".git" not in config.parts and is_checkpoint(config.parent)
            )
            folders.extend(found)
            continue
        folder = path.parent
        if is_checkpoint(folder):
            folders.append(str(folder) if str(folder) else ".")
    return list(dict.fromkeys(folders))
