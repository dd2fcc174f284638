"""Write the compiled form of the engine data: `engines/<engine>/data.json` beside each
`data.toml`, and `draft/mtp_families.json` beside the MTP family table.

The TOML files are the source of truth; draftfit loads the compiled form, which the standard
library's JSON reader reads several times faster than tomllib reads TOML (see
`draftfit.engines.compiled`). Run after editing any `engines/*/data.toml` or
`draft/mtp_families.toml`:

    python dev/compile_engine_data.py          # rewrite every compiled file that is stale
    python dev/compile_engine_data.py --check  # list the stale ones, exit 1 if any

Each TOML is validated as draftfit loads it (including the anchor count of every cited
source) before its compiled form is written; a file that fails is reported and not written.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from draftfit.draft.mtp import FAMILIES_FILE, FAMILIES_FORMAT, FAMILIES_JSON, parse_families
from draftfit.draft.stamped_json import stamped_text
from draftfit.engines.compiled import ENGINES_DIR, compile_text
from draftfit.engines.data_file import parse_engine_data
from draftfit.engines.interface import parse_toml
from draftfit.errors import EngineDataError


def compiled_for(toml: Path) -> str:
    """The compiled text for one TOML data file (EngineDataError when the data is invalid)."""
    text = toml.read_text(encoding="utf-8")
    name = toml.parent.name  # engines/<name>/data.toml
    raw = parse_toml(name, text)
    parse_engine_data(name, raw)
    return compile_text(name, text, raw)


def compiled_families(toml: Path) -> str:
    """The JSON twin of the MTP family table (EngineDataError when it has no families)."""
    text = toml.read_text(encoding="utf-8")
    raw = parse_families(text)
    if not isinstance(raw.get("family"), list) or not raw["family"]:
        raise EngineDataError(f"{toml.name}: no [[family]] tables")
    return stamped_text(FAMILIES_FORMAT, text, {"data": raw})


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` (a temporary sibling, then a rename)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument("--engines-dir", default=ENGINES_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    stale = failed = 0
    sources = [(toml, compiled_for) for toml in sorted(Path(args.engines_dir).glob("*/data.toml"))]
    sources.append((FAMILIES_FILE, compiled_families))
    for toml, compile_one in sources:
        target = FAMILIES_JSON if toml == FAMILIES_FILE else toml.with_suffix(".json")
        try:
            text = compile_one(toml)
        except EngineDataError as exc:
            print(f"{toml.parent.name}/{toml.name}: not compiled: {exc}", file=sys.stderr)
            failed += 1
            continue
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale += 1
        if args.check:
            name = f"{target.parent.name}/{target.name}"
            print(f"{name} is stale (run `python dev/compile_engine_data.py`)")
        else:
            write_atomically(target, text)
            print(f"wrote {target}")
    return 1 if failed or (args.check and stale) else 0


if __name__ == "__main__":
    raise SystemExit(main())
