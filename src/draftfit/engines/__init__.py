"""Engine knowledge (versioned data) and the per-engine resolution of a draft.

Every engine implements :class:`draftfit.engines.interface.Engine` and is listed once in
:mod:`draftfit.engines.registry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.view import BuildInputs, EngineView


def build_view(inputs: BuildInputs) -> EngineView:
    """What the profile's engine builds from the draft at the profile's version."""
    from draftfit.engines.interface import engine_of

    return engine_of(inputs.profile).build_view(inputs)


def __getattr__(name: str) -> Any:
    """`BuildInputs`, loaded when asked for (listing the engines needs no view)."""
    if name == "BuildInputs":
        from draftfit.engines.view import BuildInputs

        return BuildInputs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["BuildInputs", "build_view"]
