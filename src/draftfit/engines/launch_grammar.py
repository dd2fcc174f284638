"""A release's command line as its argument parser declares it (the engine data's
`launch_grammar`), read once per release by the engine's launch part
(:meth:`draftfit.engines.launch_part.EngineLaunch.judge`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.records import frozen

if TYPE_CHECKING:
    from draftfit.engines.profile import Profile


@frozen
class LaunchGrammar:
    """A release's command line as its argument parser declares it (the engine data's
    `launch_grammar`): every option string, those that take no value, and whether a unique
    prefix of a long flag stands for it."""

    flags: frozenset[str]
    switches: frozenset[str]
    abbreviations: bool

    def meaning(self, flag: str) -> list[str]:
        """The flags `flag` stands for: itself, the one flag it abbreviates, several
        (ambiguous) or none (unrecognised)."""
        if flag in self.flags:
            return [flag]
        if not self.abbreviations or not flag.startswith("--"):
            return []
        return sorted(name for name in self.flags if name.startswith(flag))


def launch_grammar(profile: Profile) -> LaunchGrammar | None:
    """`profile`'s command-line grammar, None where the release's parser was not read."""
    if "launch_grammar" not in profile.data.facts:
        return None
    value = profile.fact("launch_grammar").value
    if not isinstance(value, dict) or not value.get("flags"):
        return None
    return LaunchGrammar(
        frozenset(str(f) for f in value["flags"]),
        frozenset(str(f) for f in value.get("no_value") or ()),
        bool(value.get("abbreviations")),
    )
