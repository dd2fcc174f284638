"""The one line a text report gives its suppressed findings (they are listed in JSON only)."""

from __future__ import annotations

from collections.abc import Iterable

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
