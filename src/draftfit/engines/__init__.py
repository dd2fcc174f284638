"""Engine knowledge (versioned data) and the per-engine resolution of a draft.

Every engine implements :class:`draftfit.engines.interface.Engine` and is listed once in
:mod:`draftfit.engines.registry`.
"""

from __future__ import annotations

from draftfit.checkpoint.model import Checkpoint
from draftfit.engines.profile import Profile
from draftfit.engines.view import EngineView
from draftfit.spec import DraftSpec
from draftfit.target import Target


def build_view(
    checkpoint: Checkpoint,
    spec: DraftSpec,
    target: Target | None,
    profile: Profile,
    method: str | None,
    method_explicit: bool,
) -> EngineView:
    """What the profile's engine builds from the draft at the profile's version."""
    return profile.impl.build_view(checkpoint, spec, target, profile, method, method_explicit)
