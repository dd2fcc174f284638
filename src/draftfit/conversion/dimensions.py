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
    if profile is not None:
        view = build_view(BuildInputs(checkpoint, draft, target, profile, EAGLE3, True))
        if view.built:
            return view.dimension_fits
    # The first release that builds the draft does not depend on `profile`: a `matrix` plans
    # for a hundred releases, and asks this once per draft and target.
    found: list[tuple[DraftDescription, Target | None, list[DimensionFit]]]
    found = checkpoint.memo.own(("dimension fits, first building release",), list)
    for known_draft, known_target, fits in found:
        if known_draft is draft and known_target is target:
            return fits
    fits = _first_building_fits(checkpoint, draft, target)
    found.append((draft, target, fits))
    return fits


def _first_building_fits(
    checkpoint: Checkpoint,
    draft: DraftDescription,
    target: Target | None,
) -> list[DimensionFit]:
    """The dimension fits from the newest release of the first registered engine that
    builds the draft."""
    for name in engine_names():
        for candidate in parse_engine_selector(name):
            view = build_view(BuildInputs(checkpoint, draft, target, candidate, EAGLE3, True))
            if view.built:
                return view.dimension_fits
    return []
