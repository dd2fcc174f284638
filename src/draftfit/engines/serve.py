"""What every engine's serve recipe shares: the number of speculative tokens, how a recipe
names a checkpoint (a local path, or a Hub repository id with its revision apart, never the
`hf://` spelling only draftfit reads; whether a name can be a Hub repository id), shell
quoting, a tiny YAML writer, and the first release at which a data fact changes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from draftfit.engines.profile import Profile
from draftfit.escape import UNSAFE_IN_FIELD
from draftfit.records import frozen

if TYPE_CHECKING:
    from typing import Any

    from draftfit.draft.description import DraftDescription
    from draftfit.draft.target import Target

DEFAULT_SPECULATIVE_TOKENS = 3


def speculative_tokens(draft: DraftDescription) -> tuple[int, str]:
    """How many tokens to draft per step, and why that number."""
    tokens = draft.get("speculative_tokens")
    if isinstance(tokens, int) and tokens > 0:
        return tokens, "from `speculators_config.proposal_methods[0].speculative_tokens`"
    return DEFAULT_SPECULATIVE_TOKENS, "a common starting point; tune for your traffic"


def shell_quote(text: str) -> str:
    """`text` as one single-quoted shell word."""
    return "'" + text.replace("'", "'\\''") + "'"


def shell_word(text: str) -> str:
    """`text` as one shell word, quoted only when it needs to be (paths stay readable); a word
    holding a control character is written in ANSI-C quoting (`$'a\\nb'`), which bash and
    zsh read back as the same text, so a recipe shows it on one line."""
    if re.search(UNSAFE_IN_FIELD, text):
        return "$'" + re.sub(ANSI_C_SPECIAL, _ansi_c_escape, text) + "'"
    import shlex  # here, not at import: only a recipe quotes words

    return shlex.quote(text)


# Inside $'...': the backslash and the quote, and every character shown escaped elsewhere.
ANSI_C_SPECIAL = r"[\\']|" + UNSAFE_IN_FIELD
ANSI_C_SHORT = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _ansi_c_escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in ANSI_C_SHORT:
        return ANSI_C_SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


CONTINUATION = " \\\n  "  # joins the lines of one shell command


@frozen
class ModelSource:
    """How a recipe names a checkpoint: a local path, or a Hub repository at a revision.

    Attributes:
        name: the local path, or `OWNER/NAME` for a Hub repository (what engines take).
        revision: the Hub revision (None: the default branch; always None for a path).
        hub: whether `name` is a Hub repository id.
    """

    name: str
    revision: str | None = None
    hub: bool = False

    @property
    def local_dir(self) -> str:
        """The folder a download of this repository goes to (its name without the owner)."""
        return self.name.rsplit("/", 1)[-1] if self.hub else self.name

    def download(self) -> str:
        """The `hf download` step that makes a local copy in :attr:`local_dir`."""
        words = ["hf", "download", self.name]
        if self.revision:
            words += ["--revision", self.revision]
        words += ["--local-dir", self.local_dir]
        return " ".join(shell_word(w) for w in words)

    @property
    def for_draftfit(self) -> str:
        """How draftfit's own commands take it: a path, or `OWNER/NAME[@REVISION]`."""
        return self.name + (f"@{self.revision}" if self.revision else "")

    @property
    def local(self) -> ModelSource:
        """The local copy :meth:`download` makes (itself when it is a path)."""
        return ModelSource(self.local_dir) if self.hub else self


def model_source(source: str) -> ModelSource:
    """A checkpoint's `source` (a path, or `hf://OWNER/NAME[@REVISION]` as draftfit spells a
    Hub repository it read) as a recipe names it."""
    from draftfit.origins.hub import PREFIX, parse_hub_reference  # only a recipe names a source

    if not source.startswith(PREFIX):
        return ModelSource(source)
    ref = parse_hub_reference(source)
    return ModelSource(ref.repo_id, ref.revision, hub=True)


# A Hub repository id (`OWNER/NAME`), and a snapshot folder of the Hugging Face cache
# (`.../models--OWNER--NAME/snapshots/COMMIT`).
_HUB_ID = r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*"
_CACHE_SNAPSHOT = r"models--([^/]+?)--([^/]+)/snapshots/([0-9a-f]{40})/?"


def hub_repo_id(name: str) -> bool:
    """Whether `name` can be a Hub repository id (`name` or `namespace/name`), as the Hub
    client validates one before any lookup: letters, digits, `-`, `_` and `.`, neither
    starting nor ending with `-` or `.` (each part), at most 96 characters, without `--`
    or `..`, not ending in `.git`. An engine looks such a name up on the Hub when it is
    not a folder; anything else it refuses. (Older Hub clients also take non-ASCII
    letters: taken here too, so that no name an engine may look up is judged missing.)"""
    parts = name.split("/")
    if len(parts) > 2 or "--" in name or ".." in name or name.endswith(".git"):
        return False
    return all(_HUB_NAME_PART.fullmatch(part) for part in parts) and len(parts[-1]) <= 96


# One part of a Hub repository id: word characters, `-` and `.`, starting and ending with a
# word character.
_HUB_NAME_PART = re.compile(r"\w(?:[\w.-]*\w)?")


def target_source(
    target: Target | None, draft: DraftDescription | None = None
) -> ModelSource | None:
    """How a recipe names the target: its Hub id where it is known (an `hf://` target, a
    folder of the Hugging Face cache, read at its commit; without a target, the draft's
    `verifier.name_or_path` when that is a Hub id), else its path; None when nothing
    names it."""
    if target is None:
        verifier = draft.fields.get("verifier.name_or_path") if draft is not None else None
        named = verifier.value if verifier is not None else None
        if isinstance(named, str) and re.fullmatch(_HUB_ID, named) and ".." not in named:
            return ModelSource(named, None, hub=True)
        return None
    cached = re.search(_CACHE_SNAPSHOT, target.origin.replace("\\", "/"))
    if cached is not None and cached.end() == len(target.origin.rstrip("/\\")):
        owner, name, commit = cached.groups()
        return ModelSource(f"{owner}/{name}", commit, hub=True)
    return model_source(target.origin)


def verifier_note(target: Target | None, source: ModelSource | None) -> list[str]:
    """The note a recipe carries when it names the draft's verifier as the target (no
    target was given, so that target was not checked)."""
    if target is not None or source is None:
        return []
    return [
        f"the target is the draft's verifier, `{source.name}` (speculators_config.verifier."
        "name_or_path); it was not checked: pass --target to check the pair"
    ]


def command_word(source: ModelSource | None) -> str:
    """A checkpoint as a command names it: its path or repository id, or `<target>` for a
    target not given."""
    return shell_word(source.name) if source is not None else "<target>"


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
