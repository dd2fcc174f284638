"""Write docs/rules/DFxxx.md (and docs/rules/README.md) from the rule objects.

Also the index of where each rule is detected, compiled from the modules' declarations for
`draftfit rule` (src/draftfit/commands/detected_in.json).

    PYTHONPATH=src python dev/gen_rule_docs.py          # rewrite the pages
    PYTHONPATH=src python dev/gen_rule_docs.py --check  # exit 1 if a page is out of date

Run it from the repository root after changing a rule or what a module emits;
`tests/test_rule_docs.py` and `tests/test_emitted_by.py` fail until the pages match. Pages
of rules that no longer exist are removed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import draftfit
from draftfit.commands.detection import INDEX, detections, index_text
from draftfit.commands.rule_docs import pages
from draftfit.docs_links import RULE_DOCS_DIR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale pages")
    parser.add_argument("--root", default=".", help="repository root (default: .)")
    args = parser.parse_args(argv)
    root = Path(args.root)
    wanted = pages()
    package = Path(draftfit.__file__).resolve().parent
    index = Path("src", package.name, Path(INDEX).resolve().relative_to(package))
    wanted[index.as_posix()] = index_text(detections())
    folder = root / RULE_DOCS_DIR
    stale = sorted(path for path, text in wanted.items() if _read(root / path) != text) + sorted(
        str(p.relative_to(root))
        for p in folder.glob("*.md")
        if str(p.relative_to(root)) not in wanted
    )
    if args.check:
        for path in stale:
            print(f"out of date: {path}")
        return 1 if stale else 0
    folder.mkdir(parents=True, exist_ok=True)
    for path, text in wanted.items():
        if _read(root / path) != text:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text, encoding="utf-8")
    for page in folder.glob("*.md"):
        if str(page.relative_to(root)) not in wanted:
            page.unlink()
    print(f"{len(stale)} page(s) written or removed in {folder}")
    return 0


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
