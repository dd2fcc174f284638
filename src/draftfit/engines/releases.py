"""Release numbers of an engine's data, ordered once, compared as small integers.

Every version text in an engine's data (its releases, the `since` / `until` of each entry,
the releases not read) is ordered by `packaging.version` when the compiled form is built
(:mod:`draftfit.engines.compiled` ships the order), so a check compares ranks and never
imports `packaging` (~3 ms of every start) for the data's own versions. Data parsed from
its TOML is ordered the same way at load. A version the user types (`--engine vllm~=0.11`,
an installed release) is read with `packaging` where it is compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from draftfit.errors import EngineDataError

if TYPE_CHECKING:
    from typing import Any


class Release:
    """A version text of one engine's data, ordered by its rank in that data's order (the
    order `packaging.version.Version` gives). Prints as its text."""

    __slots__ = ("rank", "text")

    def __init__(self, text: str, rank: int) -> None:
        self.text = text
        self.rank = rank

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Release({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Release) and other.rank == self.rank

    def __hash__(self) -> int:
        return hash(self.rank)

    def __lt__(self, other: Release) -> bool:
        return self.rank < other.rank

    def __le__(self, other: Release) -> bool:
        return self.rank <= other.rank

    def __gt__(self, other: Release) -> bool:
        return self.rank > other.rank

    def __ge__(self, other: Release) -> bool:
        return self.rank >= other.rank


def releases(ranks: dict[str, int]) -> dict[str, Release]:
    """Each version text of `ranks` as a Release of its rank."""
    return {text: Release(text, rank) for text, rank in ranks.items()}


def version_texts(raw: dict[str, Any]) -> Iterator[tuple[Any, str]]:
    """Every version text in an engine's tables, with where it stands (for the message
    when one is no version)."""
    for text in raw.get("versions", ()):
        yield text, "versions"
    facts = raw.get("fact")
    for key, body in (facts if isinstance(facts, dict) else {}).items():
        if not isinstance(body, dict):
            continue
        entries = body.get("values", body.get("items", ()))
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, dict):
                for bound in ("since", "until"):
                    if bound in entry:
                        yield entry[bound], f"fact {key}"
    not_read = raw.get("not_read", ())
    for item in not_read if isinstance(not_read, list) else ():
        if isinstance(item, dict) and "version" in item:
            yield item["version"], "not_read"


def rank_versions(engine: str, raw: dict[str, Any]) -> dict[str, int]:
    """The rank of every version text of `raw` in the order `packaging` gives them (texts
    of the same version, `1.0` and `1.0.0`, share one); EngineDataError naming the first text
    that is no version."""
    from packaging.version import InvalidVersion, Version

    parsed: dict[str, Version] = {}
    for text, where in version_texts(raw):
        if isinstance(text, str) and text in parsed:
            continue
        try:
            parsed[text] = Version(text)
        except (InvalidVersion, TypeError) as exc:
            raise EngineDataError(
                f"engines/{engine}/data.toml: {where}: bad version {text!r}"
            ) from exc
    distinct = sorted(set(parsed.values()))
    rank_of = {version: rank for rank, version in enumerate(distinct)}
    return {text: rank_of[version] for text, version in parsed.items()}
