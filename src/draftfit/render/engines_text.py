"""The human-readable `draftfit engines`: versions and fact names per engine."""

from __future__ import annotations

from draftfit.engines.listing import EngineListing
from draftfit.render.options import PLAIN, RenderOptions


def render_engines(listing: EngineListing, options: RenderOptions = PLAIN) -> str:
    lines = []
    for data in listing.engines:
        lines += [
            f"{data.title} (`--engine {data.engine}[==V]`): data for {len(data.versions)} "
            f"releases (newest {data.latest})",
            "  " + ", ".join(data.versions),
            f"  facts ({len(data.facts)}): " + ", ".join(sorted(data.facts)),
        ]
    lines.append("Any other version is refused rather than guessed.")
    return "\n".join(lines) + "\n"
