"""Run the CLI over a fixed set of commands and drafts, save every output, compare two runs.

Used to show that a change to how output is produced leaves every byte of it alone: run it
once against the citations before the change and once against the citations after, then compare::

    git archive BASE src | tar -x -C /tmp/base
    python dev/compare_cli_outputs.py save --src /tmp/base/src --out /tmp/outputs-base
    python dev/compare_cli_outputs.py save --src src --out /tmp/outputs-new
    python dev/compare_cli_outputs.py compare /tmp/outputs-base /tmp/outputs-new

The drafts (tests/factory.py: a clean speculators EAGLE-3 draft with a llama target, a
SpecForge draft, an EAGLE-1 draft) are written under `--work` (default: a fixed folder in the
system temporary directory) so that paths printed in the output are the same in both runs.
Each case saves stdout, stderr and the exit status as `<case>.out`, `<case>.err`, `<case>.rc`.
Run it from the repository root (it imports `tests.factory`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_WORK = Path(tempfile.gettempdir()) / "draftfit-compare-cli-work"
WRITTEN_MARK = ".draftfit-compare-cli"


def _write_inputs(work: Path) -> dict[str, Path]:
    """The drafts and target every case reads, written fresh under `work`."""
    sys.path.insert(0, str(REPO))
    from tests import factory as f

    if work.exists():
        if not (work / WRITTEN_MARK).exists():
            raise SystemExit(f"{work} exists and was not written by this script; pick --work")
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / WRITTEN_MARK).write_text("")
    return {
        "clean": f.speculators(aux=[2, 4, 5]).write(work / "my-eagle3-draft"),
        "target": f.llama_target(work / "target"),
        "specforge": f.specforge(nested_aux=[1, 3, 6]).write(work / "specforge-draft"),
        "eagle1": f.eagle1().write(work / "eagle1-draft"),
    }


def _cases(p: dict[str, Path], work: Path) -> dict[str, list[str]]:
    clean, target, specforge, eagle1 = (
        str(p[k]) for k in ("clean", "target", "specforge", "eagle1")
    )
    cases: dict[str, list[str]] = {}
    for fmt in ("text", "json"):
        cases |= {
            f"check-clean-{fmt}": ["check", clean, "--target", target],
            f"check-clean-notarget-{fmt}": ["check", clean],
            f"check-clean-all-recipe-{fmt}": [
                "check",
                clean,
                "--target",
                target,
                "--engine",
                "all",
                "--recipe",
            ],
            f"check-specforge-all-recipe-{fmt}": [
                "check",
                specforge,
                "--target",
                target,
                "--engine",
                "all",
                "--recipe",
            ],
            f"check-eagle1-{fmt}": ["check", eagle1, "--engine", "all"],
            f"check-eagle1-target-{fmt}": ["check", eagle1, "--target", target],
            f"diff-{fmt}": ["diff", specforge, clean, "--target", target],
            f"diff-all-{fmt}": ["diff", clean, specforge, "--engine", "all"],
            f"inspect-clean-{fmt}": ["inspect", clean],
            f"inspect-specforge-{fmt}": ["inspect", specforge],
            f"inspect-eagle1-{fmt}": ["inspect", eagle1],
            f"rules-{fmt}": ["rules"],
            f"rule-DF301-{fmt}": ["rule", "DF301"],
            f"engines-{fmt}": ["engines"],
            f"engines-sglang-{fmt}": ["engines", "sglang"],
            f"engines-trtllm-{fmt}": ["engines", "trtllm"],
            f"convert-dry-{fmt}": ["convert", specforge, "--to", "vllm", "--dry-run"],
            f"convert-dry-out-{fmt}": [
                "convert",
                specforge,
                "--to",
                "sglang",
                "-o",
                "./never/",
                "--dry-run",
            ],
            f"convert-write-{fmt}": [
                "convert",
                specforge,
                "--to",
                "vllm",
                "-o",
                str(work / f"out-{fmt}"),
                "--target",
                target,
            ],
            f"demo-{fmt}": ["demo"],
        }
        for name in ("clean", "specforge", "eagle1"):
            extra = ["--target", target] if name != "eagle1" else []
            cases[f"matrix-{name}-{fmt}"] = ["matrix", str(p[name]), *extra]
        for name, argv in list(cases.items()):
            if name.endswith(f"-{fmt}"):
                cases[name] = [*argv, "--format", fmt]
    for name in ("clean", "specforge"):
        cases[f"matrix-{name}-markdown"] = [
            "matrix",
            str(p[name]),
            "--target",
            target,
            "--format",
            "markdown",
        ]
    cases["usage-bad-format"] = ["check", clean, "--format", "nope"]
    cases["usage-unknown-engine"] = ["engines", "nope"]
    cases["usage-unknown-rule"] = ["rule", "DF000"]
    return cases


def save(src: Path, out: Path, work: Path) -> None:
    """Run every case against the package in `src`; write the outputs under `out`."""
    paths = _write_inputs(work)
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(src.resolve()), "NO_COLOR": "1"}
    env.pop("DRAFTFIT_DEBUG", None)
    for name, argv in _cases(paths, work).items():
        done = subprocess.run(
            [sys.executable, "-m", "draftfit", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=work,
            check=False,
        )
        (out / f"{name}.out").write_text(done.stdout)
        (out / f"{name}.err").write_text(done.stderr)
        (out / f"{name}.rc").write_text(f"{done.returncode}\n")
    print(f"{len(list(out.glob('*.out')))} cases saved to {out}")


def compare(a: Path, b: Path) -> int:
    """Print each file that differs between two saved runs; 0 when none does."""
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differ = [n for n in names if not (a / n).exists() or not (b / n).exists()]
    differ += [
        n
        for n in names
        if (a / n).exists() and (b / n).exists() and (a / n).read_bytes() != (b / n).read_bytes()
    ]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(names)} files compared, {len(differ)} differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("save", help="run every case and save the outputs")
    run.add_argument("--src", type=Path, default=REPO / "src", help="folder holding draftfit/")
    run.add_argument("--out", type=Path, required=True, help="folder for the outputs")
    run.add_argument("--work", type=Path, default=DEFAULT_WORK, help="folder for the drafts")
    cmp = sub.add_parser("compare", help="compare two saved runs")
    cmp.add_argument("a", type=Path)
    cmp.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "save":
        save(args.src, args.out, args.work)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    raise SystemExit(main())
