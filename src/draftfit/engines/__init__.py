"""Engine knowledge (versioned data) and the per-engine resolution of a draft."""

from __future__ import annotations

import importlib

from draftfit.engines.view import BuildInputs, EngineView


def build_view(inputs: BuildInputs) -> EngineView:
    """Dispatch to the engine module named by the profile (`draftfit.engines.<engine>`)."""
    module = importlib.import_module(f"draftfit.engines.{inputs.profile.engine}")
    view: EngineView = module.Builder.build(inputs)
    return view


__all__ = ["BuildInputs", "build_view"]
