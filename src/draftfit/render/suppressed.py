"""The lines a text report gives its settings file and its suppressed findings (they are
listed in JSON only)."""

from __future__ import annotations

from collections.abc import Iterable

from draftfit.escape import escape_field
from draftfit.report import Finding


def suppressed_summary(findings: Iterable[Finding]) -> str | None:
    """`Suppressed 3 findings (DF108, DF903); --format json lists them with their reasons`,
    or None when nothing is suppressed."""
    suppressed = [f for f in findings if not f.counts]
    if not suppressed:
        return None
    codes = ", ".join(sorted({f.code for f in suppressed}))
    noun = "finding" if len(suppressed) == 1 else "findings"
    return (
        f"Suppressed {len(suppressed)} {noun} ({codes}); "
        "--format json lists them with their reasons"
    )


def settings_summary(settings_file: str | None, findings: Iterable[Finding]) -> str | None:
    """`settings: proj/draftfit.toml (2 suppressed)` when a settings file applied (the
    findings it suppressed, not those of `--ignore` or `--select`), or None."""
    if settings_file is None:
        return None
    # One settings file applies to a report: every other source is an option (`--...`).
    here = [
        f
        for f in findings
        if f.suppression is not None and not f.suppression.declared_in.startswith("--")
    ]
    return f"settings: {escape_field(settings_file)} ({len(here)} suppressed)"
