"""Data written as TOML, shipped with a JSON twin that loads without parsing TOML.

The TOML file is the source of truth. Beside it ships the same tables as JSON (which the
standard library reads several times faster than tomllib reads TOML, and without importing
tomllib), stamped with the CRC-32 and length of the TOML text it was built from. The twin is
used only while that stamp matches the TOML beside it, so an edited TOML is never shadowed
by a stale twin: it is parsed instead, only more slowly, until
`python dev/compile_engine_data.py` writes the twin again (a test fails meanwhile). Nothing
is written at run time.
"""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any


def stamp(toml_text: str) -> dict[str, int]:
    """What identifies a TOML text: the CRC-32 and length of its UTF-8 bytes (newlines as
    Python's text mode reads them, so a checkout with CRLF line ends matches too)."""
    data = toml_text.encode("utf-8")
    return {"toml_crc32": zlib.crc32(data), "toml_bytes": len(data)}


def stamped_text(fmt: int, toml_text: str, fields: dict[str, Any]) -> str:
    """The twin of `toml_text` holding `fields`, in layout `fmt`: one value per line, so
    that changes to the data show (and merge) line by line."""
    document = {"format": fmt, **stamp(toml_text), **fields}
    return json.dumps(document, indent=0, ensure_ascii=False) + "\n"


def load_stamped(path: str, fmt: int, toml_text: str) -> dict[str, Any] | None:
    """The twin at `path` when it is of layout `fmt` and was built from exactly
    `toml_text`; None when there is none, it is of another layout, or it is stale."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != fmt:
        return None
    if any(document.get(key) != value for key, value in stamp(toml_text).items()):
        return None
    return document
