"""Where each rule's documentation lives: the one place its URL is built.

Every rule has a page `docs/rules/DFxxx.md` in the repository, generated from the rule
objects by `dev/gen_rule_docs.py`. `draftfit rule`, the JSON of findings' rules and SARIF's
`helpUri` all name it through :func:`rule_doc_url`.
"""

from __future__ import annotations

DOCS_BASE_URL = "https://github.com/draftfit/draftfit/blob/main/docs/rules"
"""The published folder of the rule pages (the repository's `docs/rules`)."""

RULE_DOCS_DIR = "docs/rules"
"""That folder inside the repository."""


def rule_doc_path(code: str) -> str:
    """`docs/rules/DF301.md`: the page's path inside the repository."""
    return f"{RULE_DOCS_DIR}/{code}.md"


def rule_doc_url(code: str) -> str:
    """The stable URL of the page of rule `code`."""
    return f"{DOCS_BASE_URL}/{code}.md"
