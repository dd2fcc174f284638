"""The library's notices and progress lines, and where they go.

The library never prints. While the command line runs it installs a sink
(:func:`notices_to`) that prints each notice on stderr; a library caller gets them as
records of the `draftfit` logger instead. `logging` is loaded only then, so a command that
has nothing to tell (a local check) never pays for it.
"""

from __future__ import annotations

from _thread import allocate_lock
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Sink = Callable[[str], None]

_sinks: list[Sink] = []
_lock = allocate_lock()  # `_thread`: the lock without loading `threading` (~1 ms)


def notice(message: str, *, warning: bool = False) -> None:
    """Tell the user `message`: through the innermost sink, else the `draftfit` logger (at
    INFO, or WARNING for something the user should act on). Safe from any thread."""
    with _lock:
        sink = _sinks[-1] if _sinks else None
    if sink is not None:
        sink(message)
        return
    import logging

    logger = logging.getLogger("draftfit")
    if not logger.handlers:
        # A library adds no handler of its own: nothing reaches stderr unless the
        # application configures logging (Python's last-resort handler would print
        # warnings otherwise).
        logger.addHandler(logging.NullHandler())
    logger.log(logging.WARNING if warning else logging.INFO, message)


@contextmanager
def notices_to(sink: Sink) -> Iterator[None]:
    """While the block runs, every notice goes to `sink` (from any thread)."""
    with _lock:
        _sinks.append(sink)
    try:
        yield
    finally:
        with _lock:
            _sinks.remove(sink)


__all__ = ["notice", "notices_to"]
