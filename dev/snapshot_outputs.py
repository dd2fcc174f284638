"""Record draftfit's JSON outputs over the demo and every rule case, and compare two records.

A refactor that should not change what draftfit says can be checked by recording a snapshot
before and after and comparing the two:

    cd <checkout> && PYTHONPATH=src python dev/snapshot_outputs.py record OUT_DIR [--format text]
    PYTHONPATH=src python dev/snapshot_outputs.py compare DIR_A DIR_B [--allow-added-fields]
    # or, equivalently, the flag form:
    PYTHONPATH=src python dev/snapshot_outputs.py --compare DIR_A DIR_B [--allow-added-fields]

`record` (run from a checkout's root, with that checkout's `src` first on PYTHONPATH) writes
one JSON file per case x command into OUT_DIR (created; existing files of the same names are
replaced, nothing else is touched):

* `demo/demo.json` — `draftfit demo --format json`;
* for the demo checkpoints (`demo.build_demo`: the speculators Kimi-K2 draft, the AQ-MedAI
  reference, the Kimi-K2 target) and for every case of `tests/cases/` (built with the test
  factory as `tests/test_rules.py` builds them), `<case>/<command>.json` for
  - `check`         — `check --format json` with the case's engines and method (as the test
                      runs it; the demo uses its three engines),
  - `check-default` — `check --format json` with no `--engine` (newest vLLM),
  - `check-all`     — `check --engine all --format json`,
  - `check-recipe`  — `check --recipe --format json` with the case's engines and method,
  - `matrix`        — `matrix --format json`,
  - `diff`          — `diff --format json` against a reference: the AQ-MedAI draft for the
                      demo, a clean SpecForge-style EAGLE-3 draft (`factory.specforge()`)
                      for the cases; with the case's engines.
  Every command gets the case's target (`--target`) when it has one.

Each file holds `{"argv", "exit", "stdout", "stderr"}` with `stdout` parsed as JSON when it
is JSON (text otherwise), keys sorted, two-space indent. The temporary folder the
checkpoints live in is replaced by `<TMP>` everywhere (argv, output, messages), so two runs
are byte-comparable. The commands run in-process through `draftfit.cli.main.main` (with
`NO_COLOR=1`, no `DRAFTFIT_DEBUG`), two worker processes; a full run takes about a minute.

`compare` walks both folders and prints, per file, every JSON path whose value differs, that
exists only in A (`- removed`) or only in B (`+ added`), and files present on one side only;
exit status 1 when anything differs, 0 otherwise. `--allow-added-fields` ignores keys that
exist only in B (new fields in a dictionary), so a change that only adds fields compares
clean; values that changed, removed keys and list-length changes are still reported.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "<TMP>"


def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    from draftfit.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _scrub(text: str, tmp: str) -> str:
    """Replace the temporary folder (and the demo's own temporary folder) by PLACEHOLDER."""
    for form in {tmp, os.path.realpath(tmp)}:
        text = re.sub(re.escape(form) + r"(/draftfit-demo-[A-Za-z0-9_]+)?", PLACEHOLDER, text)
    return text


def _record(argv: list[str], tmp: str) -> dict[str, Any]:
    code, out, err = _run_cli(argv)
    out, err = _scrub(out, tmp), _scrub(err, tmp)
    try:
        parsed: Any = json.loads(out)
    except ValueError:
        parsed = out
    return {
        "argv": [_scrub(a, tmp) for a in argv],
        "exit": code,
        "stdout": parsed,
        "stderr": err,
    }


def _commands(
    draft: Path,
    target: Path | None,
    reference: Path,
    engines: tuple[str, ...],
    method: str | None,
    serve_args: str | None = None,
    output_format: str = "json",
) -> Iterator[tuple[str, list[str]]]:
    tgt = ["--target", str(target)] if target is not None else []
    if serve_args is not None:  # the launch's settings travel with the target
        tgt += ["--serve-args", serve_args]
    eng = [a for e in engines for a in ("--engine", e)]
    meth = ["--method", method] if method else []
    fmt = ["--format", output_format]
    d = str(draft)
    yield "check", ["check", d, *tgt, *eng, *meth, *fmt]
    yield "check-default", ["check", d, *tgt, *meth, *fmt]
    yield "check-all", ["check", d, *tgt, "--engine", "all", *meth, *fmt]
    yield "check-recipe", ["check", d, *tgt, *eng, *meth, "--recipe", *fmt]
    matrix_meth = meth if method in (None, "eagle3", "eagle") else []
    yield "matrix", ["matrix", d, *tgt, *matrix_meth, *fmt]
    diff_meth = matrix_meth
    yield "diff", ["diff", d, str(reference), *tgt, *eng, *diff_meth, *fmt]


def _write(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _record_demo(out_dir: Path, output_format: str) -> None:
    from draftfit.commands.demo import DEMO_ENGINES, build_demo

    with tempfile.TemporaryDirectory(prefix="snapshot-") as tmp:
        rec = _record(["demo", "--format", output_format], tempfile.gettempdir())
        _write(out_dir / "demo" / "demo.json", rec)
        paths = build_demo(Path(tmp))
        commands = _commands(
            paths.draft, paths.target, paths.reference, DEMO_ENGINES, None, None, output_format
        )
        for name, argv in commands:
            _write(out_dir / "demo-checkpoints" / f"{name}.json", _record(argv, tmp))


def _record_case(index: int, out_dir: str, output_format: str) -> str:
    sys.path.insert(0, str(ROOT))
    from tests import factory
    from tests.cases import CASES

    case = CASES[index]
    with tempfile.TemporaryDirectory(prefix="snapshot-") as tmp:
        root = Path(tmp)
        (root / "case").mkdir()
        draft, target = case.build(root / "case")
        reference = factory.specforge().write(root / "reference")
        commands = _commands(
            draft, target, reference, case.engines, case.method, case.serve_args, output_format
        )
        for name, argv in commands:
            _write(Path(out_dir) / case.id / f"{name}.json", _record(argv, tmp))
    return case.id


def record(out_dir: Path, output_format: str = "json") -> int:
    """Write every snapshot file into out_dir, each command's output in `output_format`;
    returns the exit status."""
    os.environ["NO_COLOR"] = "1"
    os.environ.pop("DRAFTFIT_DEBUG", None)
    sys.path.insert(0, str(ROOT))
    from tests.cases import CASES

    ids = [c.id for c in CASES]
    if len(set(ids)) != len(ids) or {"demo", "demo-checkpoints"} & set(ids):
        print("snapshot: case ids are not unique", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    _record_demo(out_dir, output_format)
    count = len(CASES)
    with ProcessPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
        for _ in pool.map(
            _record_case, range(count), [str(out_dir)] * count, [output_format] * count
        ):
            pass
    print(f"recorded {len(CASES) + 2} cases into {out_dir}")
    return 0


def _diff(a: Any, b: Any, path: str, allow_added: bool, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            sub = f"{path}.{key}"
            if key not in b:
                out.append(f"  - removed {sub}: {json.dumps(a[key], sort_keys=True)[:200]}")
            elif key not in a:
                if not allow_added:
                    out.append(f"  + added {sub}: {json.dumps(b[key], sort_keys=True)[:200]}")
            else:
                _diff(a[key], b[key], sub, allow_added, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"  ~ {path}: list length {len(a)} -> {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _diff(x, y, f"{path}[{i}]", allow_added, out)
    elif a != b or type(a) is not type(b):
        out.append(
            f"  ~ {path}: {json.dumps(a, ensure_ascii=False)[:300]}"
            f" -> {json.dumps(b, ensure_ascii=False)[:300]}"
        )


def compare(dir_a: Path, dir_b: Path, allow_added: bool) -> int:
    """Print the differences between two snapshot folders; 1 when any, else 0."""
    for d in (dir_a, dir_b):
        if not d.is_dir():
            print(f"snapshot: not a folder: {d}", file=sys.stderr)
            return 2
    files_a = {p.relative_to(dir_a) for p in dir_a.rglob("*.json")}
    files_b = {p.relative_to(dir_b) for p in dir_b.rglob("*.json")}
    differing = 0
    for rel in sorted(files_a - files_b):
        print(f"only in A: {rel}")
        differing += 1
    for rel in sorted(files_b - files_a):
        print(f"only in B: {rel}")
        differing += 1
    for rel in sorted(files_a & files_b):
        a = json.loads((dir_a / rel).read_text(encoding="utf-8"))
        b = json.loads((dir_b / rel).read_text(encoding="utf-8"))
        lines: list[str] = []
        _diff(a, b, "$", allow_added, lines)
        if lines:
            differing += 1
            print(f"{rel}:")
            print("\n".join(lines))
    total = len(files_a | files_b)
    print(f"{differing} of {total} files differ" if differing else f"all {total} files match")
    return 1 if differing else 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--compare":  # flag form of `compare`
        args[0] = "compare"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    rec = sub.add_parser("record", help="record every snapshot into OUT_DIR")
    rec.add_argument("out_dir", type=Path)
    rec.add_argument(
        "--format",
        dest="output_format",
        choices=("json", "text"),
        default="json",
        help="the output format every command is recorded in (default json)",
    )
    cmp_ = sub.add_parser("compare", help="print differences between two snapshot folders")
    cmp_.add_argument("dir_a", type=Path)
    cmp_.add_argument("dir_b", type=Path)
    cmp_.add_argument("--allow-added-fields", action="store_true")
    ns = parser.parse_args(args)
    if ns.mode == "record":
        return record(ns.out_dir, ns.output_format)
    return compare(ns.dir_a, ns.dir_b, ns.allow_added_fields)


if __name__ == "__main__":
    raise SystemExit(main())
