"""Tensor-name fates, the part every engine shares: the loader's walk over the stored
tensors. Each engine says which names its loader handles before renaming, how its renaming
names the rest, and what it does with a name that reaches no parameter."""

from __future__ import annotations

import re
from collections.abc import Callable

from draftfit.engines.procedure.state import BuildState
from draftfit.engines.view import FateCause
from draftfit.records import frozen


@frozen
class Mapped:
    """Where the loader's renaming takes a stored name: the parameter name (None: none),
    why it reaches none, and the cause to record when no parameter has that name."""

    canonical: str | None
    why: str = ""
    cause: FateCause = FateCause.UNKNOWN_NAME


def walk_tensors(
    state: BuildState,
    fixed: Callable[[BuildState, str], bool],
    rename: Callable[[BuildState, str], Mapped],
    unmatched: Callable[[BuildState, str, Mapped], None],
) -> None:
    """What the loader does with each stored tensor: names it handles before renaming
    (`fixed` records their fate and says True), then its renaming (`rename`): a name that
    reaches a parameter loads, any other goes to the engine's policy (`unmatched`)."""
    for raw in state.checkpoint.tensors:
        if fixed(state, raw):
            continue
        mapped = rename(state, raw)
        if mapped.canonical is not None and mapped.canonical in state.view.expectations:
            state.fate(raw, mapped.canonical, "loaded", cause=FateCause.MATCHED)
            continue
        unmatched(state, raw, mapped)


def layer_beyond(state: BuildState, canonical: str) -> int | None:
    """The number of decoder layers built, when `canonical` names a later layer."""
    n = state.view.dimensions.num_layers or 1
    m = re.match(r"^layers\.(\d+)\.", canonical)
    return n if m and int(m.group(1)) >= n else None
