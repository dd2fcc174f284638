"""What the engine's launch part decided about a launch: once per release
(:class:`ReleaseLaunch`, made by :meth:`draftfit.engines.launch_part.EngineLaunch.judge`
before the draft is built, and read by that release's launch checks), and for the whole
check (:class:`JudgedLaunch`, carried on :attr:`draftfit.report.Report.serve`).

The checker reads these records; it does not read a release's grammar or a launch's method
names itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.engines.launch_grammar import LaunchGrammar
from draftfit.records import frozen, replace
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.profile import EngineVersion

# The method a launch leaves to the release: it resolves it itself (from the draft path).
METHOD_LEFT_TO_ENGINE = "auto"


@frozen
class FlagMeaning:
    """A flag of the launch (as the release's parser reads it, before any `.key`) and the
    flags of the release's parser it stands for: itself or the one it abbreviates (taken),
    several (ambiguous) or none (unrecognised)."""

    flag: str
    meant: tuple[str, ...]

    @property
    def taken(self) -> bool:
        """Whether the release's parser takes the flag."""
        return len(self.meant) == 1


@frozen
class ReleaseLaunch:
    """What one release makes of a launch, decided once by the engine's launch part.

    Attributes:
        key: the release.
        settings: the launch's settings, as read.
        grammar: the release's command line (None: its argument parser was not read).
        written: each flag the launch writes (once each, in order) and what the release's
            parser makes of it; empty where its parser was not read.
        accepted_flags: the flags draftfit does not read (`settings.ignored_flags`) that
            the release's parser takes: accepted, not judged.
        refused_flags: the flags draftfit does not read that the release's parser refuses
            (unknown, or an abbreviation of more than one flag): a DF559 finding each.
        method: the draftfit method (`eagle3`, `eagle`) that the method the launch names
            selects at this release; None when it names none of them (no method, or
            another kind: the checked method then stays the draft's own).
        method_left_to_engine: the launch names a draft (or a token count) but no method,
            and the release resolves the method itself: the check is of `auto`.
        unjudged: why the launch is not all judged at this release (flags draftfit does not
            read at a release whose parser was not read): its verdict is not `compatible`.
        other_target: why the verdict is not proof when the launch serves another target
            than the checked one.
    """

    key: EngineVersion
    settings: ServeSettings
    grammar: LaunchGrammar | None = None
    written: tuple[FlagMeaning, ...] = ()
    accepted_flags: tuple[str, ...] = ()
    refused_flags: tuple[str, ...] = ()
    method: str | None = None
    method_left_to_engine: bool = False
    unjudged: tuple[str, ...] = ()
    other_target: tuple[str, ...] = ()

    def served_method(self, asked: str | None, own: str | None) -> tuple[str | None, bool]:
        """The method this release is checked with, and whether it was given rather than
        read from the checkpoint: `asked` (`--method`) first, then the method the launch
        selects, then `auto` where the launch leaves it to the release, else `own` (the
        draft's)."""
        if asked is not None:
            return asked, True
        if self.method:
            return self.method, True
        chosen = METHOD_LEFT_TO_ENGINE if self.method_left_to_engine else own
        return chosen, self.method is not None


@frozen
class JudgedLaunch:
    """The launch a check was given, as its engine's launch part judged it at each checked
    release of that engine (:attr:`draftfit.report.Report.serve`).

    Attributes:
        settings: the launch's settings, with the flags draftfit does not read sorted by
            what the checked releases' parsers make of them (`accepted_flags`: taken by
            every one; `refused_flags`: refused by some); the rest stay listed as not read
            (a release whose parser was not read cannot say).
        releases: each checked release's judgement, in the order checked.
    """

    settings: ServeSettings
    releases: tuple[ReleaseLaunch, ...] = ()

    @classmethod
    def of(cls, given: ServeSettings, releases: tuple[ReleaseLaunch, ...]) -> JudgedLaunch:
        """The launch `given`, judged at `releases` (those of its engine)."""
        read = [r for r in releases if r.grammar is not None]
        if not given.ignored_flags or not read:
            return cls(given, releases)
        refused = tuple(f for f in given.ignored_flags if any(f in r.refused_flags for r in read))
        every = len(read) == len(releases)
        accepted = tuple(
            f
            for f in given.ignored_flags
            if every and f not in refused and all(f in r.accepted_flags for r in read)
        )
        if not accepted and not refused:
            return cls(given, releases)
        sorted_settings = replace(
            given,
            accepted_flags=given.accepted_flags + accepted,
            refused_flags=given.refused_flags + refused,
            ignored_flags=tuple(f for f in given.ignored_flags if f not in accepted + refused),
        )
        return cls(sorted_settings, releases)

    def at(self, key: EngineVersion) -> ReleaseLaunch | None:
        """The judgement at release `key`, None where the launch is another engine's."""
        return next((r for r in self.releases if r.key == key), None)

    def summary(self) -> str:
        """One line for the text report (:meth:`ServeSettings.summary`)."""
        return self.settings.summary()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the settings' (:meth:`ServeSettings.to_dict`)."""
        return self.settings.to_dict()
