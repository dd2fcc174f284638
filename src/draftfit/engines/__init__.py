"""Engine knowledge (versioned data) and the per-engine resolution of a draft."""

from __future__ import annotations

import importlib

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
    """Dispatch to the engine module named by the profile (`draftfit.engines.<engine>`)."""
    module = importlib.import_module(f"draftfit.engines.{profile.engine}")
    return module.Builder.build(checkpoint, spec, target, profile, method, method_explicit)
