"""The syntax trees of draftfit's own source files, parsed once per test run.

Several tests read the code itself (imports, emitted rules, string literals, dataclasses);
each used to parse every module again. They share these trees and only read them.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def parsed(path: Path) -> ast.Module:
    """The syntax tree of the source file at `path` (callers must not change it)."""
    return ast.parse(path.read_text(encoding="utf-8"))
