"""What every engine's serve recipe shares: the number of speculative tokens, shell quoting,
a tiny YAML writer, and the first release at which a data fact changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from draftfit.engines.profile import Profile

if TYPE_CHECKING:
    from draftfit.spec import DraftSpec

DEFAULT_SPECULATIVE_TOKENS = 3


def speculative_tokens(spec: DraftSpec) -> tuple[int, str]:
    """How many tokens to draft per step, and why that number."""
    tokens = spec.get("speculative_tokens")
    if isinstance(tokens, int) and tokens > 0:
        return tokens, "from `speculators_config.proposal_methods[0].speculative_tokens`"
    return DEFAULT_SPECULATIVE_TOKENS, "a common starting point; tune for your traffic"


def shell_quote(text: str) -> str:
    """`text` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"


def yaml_text(data: dict[str, Any], indent: int = 0) -> str:
    """A tiny YAML writer for the nested string/int/bool/list mapping of a recipe."""
    lines = []
    for key, value in data.items():
        pad = "  " * indent
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines.append(yaml_text(value, indent + 1).rstrip("\n"))
        else:
            lines.append(f"{pad}{key}: {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def first_release_where(profile: Profile, holds: Callable[[Profile], bool]) -> str | None:
    """The first release after `profile.version` that draftfit has data for and at which
    `holds` is true (e.g. the release that fixed a behaviour), or None."""
    versions = profile.data.versions
    for version in versions[versions.index(profile.version) + 1 :]:
        later = profile.data.resolve(version)
        if holds(later):
            return version
    return None
