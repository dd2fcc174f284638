"""The human-readable `draftfit engines`: per engine the versions read, the newest one, the
releases known to exist that were not read (grouped by reason) and the data's date."""

from __future__ import annotations

from draftfit.engines.listing import EngineListing
from draftfit.engines.profile import EngineData
from draftfit.render.options import PLAIN, RenderOptions


def render_engines(listing: EngineListing, options: RenderOptions = PLAIN) -> str:
    lines = []
    for data in listing.engines:
        lines += [
            f"{data.title} (`--engine {data.engine}[==V]`): data for {len(data.versions)} "
            f"releases (newest read {data.latest})",
            "  " + ", ".join(data.versions),
            f"  facts ({len(data.facts)}): " + ", ".join(sorted(data.facts)),
        ]
        lines += _not_read_lines(data)
        if data.data_date:
            lines.append(f"  data checked against the package index on {data.data_date}")
    lines.append("Any other version is refused rather than guessed.")
    return "\n".join(lines) + "\n"


def _not_read_lines(data: EngineData) -> list[str]:
    """The releases known to exist but not read, one line per reason."""
    by_reason: dict[str, list[str]] = {}
    for item in data.not_read:
        by_reason.setdefault(item.reason, []).append(item.version)
    if not by_reason:
        return []
    lines = [f"  known to exist but not read ({len(data.not_read)}):"]
    lines += [f"    {', '.join(vs)}: {reason}" for reason, vs in by_reason.items()]
    return lines
