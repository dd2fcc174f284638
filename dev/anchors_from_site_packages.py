"""Fill `anchors` for the data entries of one section of an engine's data from installed releases.

    PYTHONPATH=src python dev/anchors_from_site_packages.py ENGINE MARKER TAG=SITE_PACKAGES ...

`dev/refresh_engine.py ENGINE --write-anchors` downloads every release the whole file cites;
this writes the anchors (same choice of line: `refresh_engine.choose_anchor`) only for the
entry lines after the comment line that contains MARKER, reading each cited file from the
site-packages folder given for its release tag (an engine venv), where that venv holds the
release's own installed wheel. A location whose tag has no folder, or whose file is not
there, gets an `anchor_missing` reason, as `--write-anchors` gives it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import refresh_engine as refresh

from draftfit.engines.citation import parse_locations


def main(argv: list[str]) -> int:
    engine, marker, *pairs = argv
    sites = {tag: Path(folder) for tag, folder in (p.split("=", 1) for p in pairs)}
    path = refresh.ENGINES_DIR / engine / "data.toml"
    lines = path.read_text("utf-8").splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("#") and marker in line)
    found: dict[object, str] = {}
    why: dict[object, str] = {}
    for line in lines[start:]:
        entry = refresh._entry(line)
        if entry is None:
            continue
        for location in parse_locations(str(entry["source"])):
            if not location.ranges or location.tag is None:
                continue
            site = sites.get(location.tag)
            file = site / location.path if site is not None else None
            if file is None or not file.is_file():
                why[location] = f"{location.path} is not in the v{location.tag} wheel read"
                continue
            text = file.read_text("utf-8", errors="replace").splitlines()
            first, last = location.ranges[0]
            anchor = refresh.choose_anchor(text, first, last)
            if anchor is None:
                why[location] = "the cited lines hold no code"
            else:
                found[location] = anchor
    out = lines[:start] + [refresh._with_anchors(line, found, why) for line in lines[start:]]  # type: ignore[arg-type]
    refresh._write_atomically(path, "".join(out))
    print(f"{path}: anchors for {len(found)} location(s), {len(why)} without one")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
