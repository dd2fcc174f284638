"""The config dimensions a conversion corrects: those that contradict the stored tensors.

Which dimension explains the stored shapes is found by an engine's procedure
(:mod:`draftfit.engines.dimension_fit`); a conversion needs it for the draft as it is,
before any convention is written, so it asks the first engine release that builds the
draft in its present layout.
"""

from __future__ import annotations

from draftfit.checkpoint.model import Checkpoint
from draftfit.draft.description import EAGLE3, DraftDescription
from draftfit.draft.target import Target
from draftfit.engines.interface import build_view
from draftfit.engines.profile import Profile
from draftfit.engines.registry import engine_names, parse_engine_selector
from draftfit.engines.view import BuildInputs, DimensionFit


def draft_fits(
    checkpoint: Checkpoint,
    draft: DraftDescription,
    target: Target | None,
    profile: Profile | None,
) -> list[DimensionFit]:
    """The dimension fits of an EAGLE-3 draft as it is: from `profile`'s view, else from
    the newest release of the first registered engine that builds the draft in its present
    layout (every engine derives the decoder layer's shapes from the same dimensions, and
    the convention being written may not be one the source's engine reads)."""
    candidates = [profile] if profile is not None else []
    for name in engine_names():
        candidates.extend(p for p in parse_engine_selector(name) if p != profile)
    for candidate in candidates:
        view = build_view(BuildInputs(checkpoint, draft, target, candidate, EAGLE3, True))
        if view.built:
            return view.dimension_fits
    return []
