"""The engine data in a form that loads without parsing TOML.

`engines/<engine>/data.toml` is the source of truth. Beside it ships `data.json`, the
same tables as JSON (which the standard library reads several times faster than tomllib
reads TOML), stamped with the CRC-32 and length of the TOML text it was built from. A
compiled file is used only while that stamp matches the TOML beside it, so an edited TOML is
never shadowed by a stale compiled form: it is parsed instead, only more slowly, until
`python dev/compile_engine_data.py` writes the compiled form again (a test fails
meanwhile; see :mod:`draftfit.draft.stamped_json`). Nothing is written at run time. The
compiled form also holds the rank of every version text in the data
(:mod:`draftfit.engines.releases`), so loading it needs no version parser.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from draftfit.draft.stamped_json import load_stamped, stamped_text
from draftfit.engines.releases import rank_versions

if TYPE_CHECKING:
    from typing import Any

# Bumped when the layout of the compiled file changes; another format is ignored.
FORMAT = 2
ENGINES_DIR = os.path.dirname(os.path.abspath(__file__))
REGENERATE = "python dev/compile_engine_data.py"


def toml_path(name: str) -> str:
    """Where engine `name`'s TOML data ships: in the engine's own folder."""
    return os.path.join(ENGINES_DIR, name, "data.toml")


def compiled_path(name: str) -> str:
    """Where the compiled form of engine `name`'s data ships."""
    return os.path.join(ENGINES_DIR, name, "data.json")


def compile_text(name: str, toml_text: str, raw: dict[str, Any]) -> str:
    """The compiled file for `raw`, engine `name`'s tables parsed from `toml_text`, with the
    rank of each version text in it."""
    fields = {"version_ranks": rank_versions(name, raw), "data": raw}
    return stamped_text(FORMAT, toml_text, fields)


def load_compiled(name: str, toml_text: str) -> tuple[dict[str, Any], dict[str, int]] | None:
    """Engine `name`'s tables from its compiled file, and the rank of each version text in
    them, when that file was built from exactly `toml_text`; None when there is none, it is
    of another format, or it is stale."""
    document = load_stamped(compiled_path(name), FORMAT, toml_text)
    if document is None:
        return None
    data, ranks = document.get("data"), document.get("version_ranks")
    if not isinstance(data, dict) or not isinstance(ranks, dict):
        return None
    return data, ranks
