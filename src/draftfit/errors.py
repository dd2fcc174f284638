"""Exceptions for problems *running* draftfit (usage, unreadable input, bad shipped data).

Problems *in a checkpoint* are never exceptions: the reader records them as damage and the
checker reports them as findings (only `convert`, which would copy the damage, refuses).
The CLI maps each exception here to one line on stderr and exit status 2, and
:class:`Interrupted` to exit status 128 + the signal number.
"""

from __future__ import annotations


class DraftfitError(Exception):
    """Base class; `str(error)` is the one-line message shown to the user."""


class CheckpointNotFoundError(DraftfitError, FileNotFoundError):
    """The path given as a checkpoint or target does not exist or is not a directory."""


class UsageError(DraftfitError, ValueError):
    """Arguments that cannot be honoured (unknown engine version, bad option values)."""


class UnknownEngineVersionError(UsageError):
    """An engine version draftfit has no data for."""


class EngineDataError(DraftfitError):
    """The shipped engine data is malformed: a draftfit bug, not a user error."""


class OutputExistsError(DraftfitError):
    """An output directory exists and may not be replaced: not empty (use --force), or
    holding files draftfit did not write (never replaced)."""


class DamagedInputError(UsageError):
    """An input is too damaged to convert (tensor bytes missing or misplaced)."""


class Interrupted(KeyboardInterrupt):
    """A terminating signal (SIGINT, SIGTERM, SIGHUP) arrived while a command ran.

    A KeyboardInterrupt, so every cleanup path (`except BaseException`, `finally`) runs and
    no `except Exception` swallows it; the CLI exits with 128 + `signum`.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class HubAccessError(DraftfitError):
    """A Hub repository cannot be read: not found, gated, offline and not cached, timed out."""
