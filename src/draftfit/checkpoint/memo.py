"""Values read from a checkpoint's small tensors, and results computed from them, kept by
the checkpoint so each is read and computed once.

A `matrix` checks one draft against a hundred engine versions, and each serve recipe checks
a planned conversion of it again: the `d2t`/`t2d` maps behind the vocabulary rules are the
same bytes every time. The checkpoint holds one :class:`ValueMemo` (`Checkpoint.memo`);
the planned checkpoint of a conversion (`draftfit.conversion.preview`) holds a child that
shares every entry read from the input's files and keeps its own for the tensors it derives
in memory. Entries are keyed by where the bytes lie (file, byte range, dtype), so a renamed
tensor shares its entry; nothing is kept between checkpoints.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")


class ValueMemo:
    """A per-checkpoint store of values computed from its tensors' bytes.

    Args:
        shared: the memo of the checkpoint this one is planned from, or None.
        private_files: files (relative names) whose bytes exist only in this checkpoint:
            entries reading them are kept here, every other entry in `shared`.
    """

    def __init__(self, shared: ValueMemo | None = None, private_files: Iterable[str] = ()) -> None:
        self._entries: dict[Hashable, object] = {}
        self._shared = shared
        self._private = frozenset(private_files)

    def child(self, private_files: Iterable[str]) -> ValueMemo:
        """A memo for a checkpoint that reads this one's files plus `private_files`."""
        return ValueMemo(self, private_files)

    def remember(
        self, key: tuple[Hashable, ...], files: Iterable[str], compute: Callable[[], T]
    ) -> T:
        """The value stored under `key`, computing it with `compute` the first time.

        `files` are the files the value is read from (they decide which memo keeps it)."""
        if self._shared is not None and not self._private.intersection(files):
            return self._shared.remember(key, files, compute)
        if key not in self._entries:
            self._entries[key] = compute()
        return self._entries[key]  # type: ignore[return-value]

    def own(self, key: tuple[Hashable, ...], compute: Callable[[], T]) -> T:
        """An entry about this checkpoint as a whole (its description, its value facts),
        computed with `compute` the first time; never shared with the checkpoint it was
        planned from, whose config and tensor names differ."""
        if key not in self._entries:
            self._entries[key] = compute()
        return self._entries[key]  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self._entries)
