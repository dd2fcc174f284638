"""Write a text file so that readers see the old content or the new, never a part.

`--output-file` reports are written to a temporary file in the same folder, flushed to disk
and renamed over the destination in one step; on any failure the temporary file is removed
and the destination is as it was. The file gets the mode a plain `open(..., "w")` would give
it (0o666 less the umask), not the private mode of a temporary file.

Only a regular file or a new path is replaced: a symbolic link, a FIFO, a socket, a device
node or a directory at `path` is refused (checked again just before the rename), because
replacing it would destroy what it stands for.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from draftfit.output.temporary import open_private_file


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomic(path: str | Path, text: str, what: str = "--output-file") -> None:
    """Replace `path` with `text` (UTF-8) atomically (a regular file or a new path only;
    `what` names it in a refusal)."""
    from draftfit.output.guard import refuse_link_or_special

    target = Path(path)
    refuse_link_or_special(target, what)
    folder = target.parent if str(target.parent) else Path(".")
    fd, temporary = open_private_file(folder, f".{target.name}.", ".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        refuse_link_or_special(target, what)  # still so, just before the swap
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
