"""mkdocs hooks for the manual (`mkdocs.yml` names this file).

Heading anchors are spelled as GitHub spells them, so that one `#anchor` works both when a
page is read on GitHub and on the built site: lower case, punctuation other than `-` and `_`
dropped, each space a `-` (`` `--fail-on`: what makes the exit status 1 `` becomes
`--fail-on-what-makes-the-exit-status-1`). mkdocs's own default collapses runs of `-`.
"""

from __future__ import annotations

import re
from typing import Any


def github_slug(value: str, separator: str) -> str:
    """The anchor GitHub gives a heading whose text is `value`."""
    value = re.sub(r"[^\w\- ]", "", value.strip().lower())
    return value.replace(" ", separator)


def on_config(config: Any) -> Any:
    """Use `github_slug` for every heading's id."""
    config.mdx_configs.setdefault("toc", {})["slugify"] = github_slug
    return config
