"""Run every serve recipe draftfit prints for a folder of drafts, as a user would.

For each draft (each sub-folder of DRAFTS holding a config.json, or DRAFTS itself):
`draftfit check DRAFT --recipe --format json` at the chosen engines, then, for each recipe,
its `draftfit convert` steps through the command line (each must exit 0) and `draftfit
check` of the draft it serves with the recipe's own launch as `--serve-args`, continuations
and all (`tests/recipe_round_trip.py`, what `tests/test_recipe_round_trip.py` runs over the
rule cases). A recipe passes when that check finds no error, no warning the recipe does not
list, and exactly the `remaining` it promises; a version without a recipe passes when it
says why.

The drafts are linked (not copied) into a temporary folder and every command runs there, so
a convert step writes its output there, never beside your draft; it takes as much room as
the draft's written bytes (holes stay holes). Nothing is downloaded: a recipe with an
`hf download` step (a Hub draft) is reported as not run.

Usage (from the repository root):

    PYTHONPATH=src python dev/recipe_round_trip.py DRAFTS [--target DIR] [--engine E]...

`--engine` defaults to `all` (every engine's newest release). Prints one line per version
and exits 1 when any recipe does not round-trip.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.recipe_round_trip import round_trip, run_cli

from draftfit.engines.interface import Recipe


def drafts_in(folder: Path) -> list[Path]:
    """`folder` itself when it is a draft, else its sub-folders that are."""
    if (folder / "config.json").is_file():
        return [folder]
    return sorted(p for p in folder.iterdir() if (p / "config.json").is_file())


def run_draft(draft: Path, target: Path | None, engines: list[str], work: Path) -> int:
    """Round-trip the recipes of one draft in `work`; the number of failures."""
    os.chdir(work)
    link = work / draft.name
    if not link.exists():
        link.symlink_to(draft.resolve(), target_is_directory=True)
    argv = ["check", draft.name, "--recipe", "--format", "json", "--isolated"]
    for engine in engines:
        argv += ["--engine", engine]
    target_name = str(target.resolve()) if target is not None else None
    if target_name is not None:
        argv += ["--target", target_name]
    code, out, err = run_cli(argv)
    if code not in (0, 1):
        print(f"{draft.name}: the check exits {code}: {err.strip()}")
        return 1
    import json

    report = json.loads(out)
    failures = 0
    for shown in report.get("recipes", []):
        result = round_trip(Recipe(**shown), draft.name, target_name)
        label = f"{draft.name} {shown['engine']}=={shown['version']}"
        if result.problems:
            failures += 1
            for problem in result.problems:
                print(f"{label}: FAIL {problem}")
        else:
            steps = len(result.converts)
            warned = ", ".join(sorted(result.warnings)) or "none"
            print(f"{label}: ok ({steps} convert step(s), warnings {warned})")
    for missing in report.get("no_recipes", []):
        label = f"{draft.name} {missing['engine']}=={missing['version']}"
        if not missing["reason"]:
            failures += 1
            print(f"{label}: FAIL no recipe and no reason")
        else:
            print(f"{label}: no recipe: {missing['reason']}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("drafts", type=Path, help="a draft folder, or a folder of drafts")
    parser.add_argument("--target", type=Path, help="the target (verifier) folder")
    parser.add_argument("--engine", action="append", help="engine[==version] or all")
    args = parser.parse_args()
    drafts = drafts_in(args.drafts)
    if not drafts:
        print(f"no draft (a folder with config.json) in {args.drafts}", file=sys.stderr)
        return 2
    home = Path.cwd()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="draftfit-recipes-") as tmp:
        try:
            for draft in drafts:
                failures += run_draft(draft, args.target, args.engine or ["all"], Path(tmp))
        finally:
            os.chdir(home)
    print(f"{len(drafts)} draft(s), {failures} recipe(s) that do not round-trip")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
