"""Class resolution, the part every engine shares: record the config the class reads and
the class it resolved, or stop where none resolves."""

from __future__ import annotations

from collections.abc import Callable

from draftfit.engines.procedure.state import BuildState


def settle_class(
    state: BuildState,
    arch: str | None,
    family_of: Callable[[BuildState, str], str],
    no_class: Callable[[BuildState], None] | None = None,
) -> bool:
    """Record the visible config and the draft class `arch` with its shape family; False
    (after `no_class`, what the engine still checks without a class) when none resolved."""
    state.view.visible_config = state.visible
    if arch is None:
        if no_class is not None:
            no_class(state)
        return False
    state.view.draft_class = arch
    state.family = family_of(state, arch)
    return True


def ever_listed(state: BuildState, arch: str) -> bool:
    """Whether the data mentions target class `arch` for any version (else draftfit knows
    nothing about it)."""
    for key in ("verifier_eagle3_classes", "verifier_not_eagle3_classes"):
        fact = state.profile.data.facts.get(key)
        if fact is not None and any(e.value == arch for e in fact.entries):
            return True
    return False
