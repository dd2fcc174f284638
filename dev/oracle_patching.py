"""What the dev scripts that run the MTP oracle under a patched engine share: running the
oracle after the patch, and skipping the step after loading of an engine's quantization
classes (CUDA ops that only rearrange bytes already loaded).

A development aid only; the product never imports an engine.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable
from types import ModuleType


def run_patched(patch: Callable[[], None], usage: str | None) -> None:
    """Apply `patch`, then run the oracle at `sys.argv[1]` with the rest of the arguments
    (`usage` is printed where they are missing)."""
    if len(sys.argv) < 3:
        sys.exit(usage)
    patch()
    oracle = sys.argv[1]
    sys.argv = ["mtp_oracle.py", *sys.argv[2:]]
    runpy.run_path(oracle, run_name="__main__")


def skip_after_loading(*modules: ModuleType) -> None:
    """Make every class of `modules` that defines `process_weights_after_loading` do nothing
    there."""

    def after_loading(self: object, *args: object, **kwargs: object) -> None:
        return None

    for module in modules:
        for value in vars(module).values():
            if isinstance(value, type) and "process_weights_after_loading" in vars(value):
                value.process_weights_after_loading = after_loading
