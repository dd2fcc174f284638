"""What a fresh `python -m draftfit ARGS` process has imported: `sys.modules` as it exits.

Read at exit rather than from `-X importtime`, which records only imports made by import
statements: a module the render registry loads by name (`importlib.import_module`) is
missing from it, though its own imports are listed.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

from tests.timeouts import scaled

SRC = str(Path(__file__).resolve().parents[1] / "src")
MARK = "loaded-modules:"

# Runs the program as `python -m draftfit` does (through runpy) and lists `sys.modules` on
# stderr when the process exits, whatever its exit status.
_PROBE = f"""
import atexit, runpy, sys
atexit.register(lambda: print("\\n{MARK}", *sys.modules, file=sys.stderr))
if sys.argv.pop(1) == "run":
    runpy.run_module("draftfit", run_name="__main__", alter_sys=True)
"""


def _env() -> dict[str, str]:
    return {"PYTHONPATH": SRC, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def _listed(stderr: str) -> set[str]:
    for line in reversed(stderr.splitlines()):
        if line.startswith(MARK):
            return set(line.split()[1:])
    raise AssertionError(f"no module list: {stderr[-2000:]}")


def _modules_after(run: bool, args: tuple[str, ...]) -> set[str]:
    """Every module loaded by the end of `python -m draftfit ARGS` (`run`), or of a process
    that runs nothing."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, "run" if run else "idle", *args],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=scaled(),
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return _listed(done.stderr)


@functools.cache
def interpreter_modules() -> frozenset[str]:
    """What this interpreter (its `site`, the `.pth` files of its site-packages) and the
    probe load before any code of draftfit's runs: not draftfit's doing."""
    return frozenset(_modules_after(False, ()))


def loaded_by(*args: str) -> set[str]:
    """The modules `python -m draftfit ARGS` loads beyond :func:`interpreter_modules`."""
    return _modules_after(True, args) - interpreter_modules()
