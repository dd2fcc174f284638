"""draftfit: will this speculative-decoding draft load and draft correctly in a serving engine?

The library reads a draft checkpoint without loading its weights, describes it in one
engine-neutral form, and checks it against versioned engine knowledge. From a script::

    import draftfit

    report = draftfit.check("./draft", target="./target", engines=["vllm==0.34.0"])
    comparison = draftfit.diff("./draft", "./known-good-draft", target="./target")
    matrix = draftfit.matrix("./draft", target="./target")
    result = draftfit.convert("./draft", "vllm", "./draft-vllm", target="./target")

(see :mod:`draftfit.api`). The command line (`draftfit`) is a shell over the same calls.
The library never prints: progress and notices go to the `draftfit` logger (the command
line prints them on stderr; :mod:`draftfit.output.notices`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.version import __version__

if TYPE_CHECKING:
    from typing import Any

    from draftfit.api import check, convert, diff, matrix

_API_NAMES = ("check", "convert", "diff", "matrix")


def __getattr__(name: str) -> Any:
    """`draftfit.check` and the other calls, imported when first used: the command line
    imports this package too, and `draftfit --version` should not pay for the API."""
    if name in _API_NAMES:
        from draftfit import api

        return getattr(api, name)
    raise AttributeError(f"module 'draftfit' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names (`__all__`, with the calls :func:`__getattr__` imports when first
    used) and the module's own dunder attributes, so that `dir(draftfit)` and completion show
    the API before any call (without importing it), and not the package's internals
    (`TYPE_CHECKING`, `annotations`, the import layers)."""
    own = {name for name in globals() if name.startswith("__") and name.endswith("__")}
    return sorted({*own, *__all__})


__all__ = ["__version__", "check", "convert", "diff", "matrix"]

# The layers of the package, lowest first: a module or sub-package imports only from its own
# entry or an earlier one; each sub-package declares its own order the same way
# (`tests/test_engine_interface.py` checks both, and that no import closes a circle).
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "version",
        "records",
        "errors",
        "escape",
        "location",
        "rule_ids",
        "verdicts",
        "docs_links",
        "shell_text",
    ),
    ("schemas", "output"),
    ("checkpoint",),
    ("settings_text", "draft"),
    ("origins", "serve"),
    ("values",),
    ("engines",),
    ("rules",),
    ("report",),
    ("settings",),
    ("mtp_check",),
    ("checker",),
    ("conversion",),
    ("commands",),
    ("render",),
    ("cli",),
    ("api", "__main__"),
)
