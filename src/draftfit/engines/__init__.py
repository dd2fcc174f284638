"""Engine knowledge (versioned data) and the per-engine resolution of a draft."""

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
    """Dispatch to the engine module named by the profile."""
    if profile.engine == "vllm":
        from draftfit.engines import vllm

        return vllm.build_view(checkpoint, spec, target, profile, method, method_explicit)
    if profile.engine == "sglang":
        from draftfit.engines import sglang

        return sglang.build_view(checkpoint, spec, target, profile, method, method_explicit)
    if profile.engine == "trtllm":
        from draftfit.engines import trtllm

        return trtllm.build_view(checkpoint, spec, target, profile, method, method_explicit)
    raise ValueError(f"no engine module for {profile.engine}")  # pragma: no cover
