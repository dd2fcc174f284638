"""Sliding window, the part every engine shares: a draft trained with a sliding window
that this version does not apply to the draft's attention (DF130)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.engines.procedure.state import BuildState
from draftfit.location import config_at
from draftfit.rule_ids import Consequence

if TYPE_CHECKING:
    from typing import Any

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (rule_ids.DRAFT_SLIDING_WINDOW_IGNORED,)
EMITS_STAGE = "engine procedure (every engine): sliding window"

# What an ignored draft window does, said by every engine's DF130 message.
IGNORED_WINDOW = (
    "the draft attends over the whole context, so acceptance drops on prompts longer than "
    "the window"
)

# Why a version does not apply a draft window of `size` (given the fact's value for the
# draft's class family), and the fix.
WindowAdvice = Callable[[BuildState, int, object], tuple[str, str]]


def draft_window(config: Mapping[str, Any]) -> tuple[int, str] | None:
    """The sliding window a draft was trained with, and the JSON pointer of its size: a
    `layer_types` list naming `sliding_attention` beside a positive integer
    `sliding_window`, at the top of the config or in a speculators
    `transformer_layer_config`. None when the draft has no window."""
    places: list[tuple[Mapping[str, Any], str]] = [(config, "")]
    nested = config.get("transformer_layer_config")
    if isinstance(nested, Mapping):
        places.append((nested, "/transformer_layer_config"))
    for cfg, base in places:
        types = cfg.get("layer_types")
        size = cfg.get("sliding_window")
        if (
            isinstance(types, list)
            and "sliding_attention" in types
            and isinstance(size, int)
            and not isinstance(size, bool)
            and size > 0
        ):
            return size, f"{base}/sliding_window"
    return None


def check_sliding_window(
    state: BuildState,
    advice: WindowAdvice,
    launch_gives: Callable[[BuildState, int], bool] | None = None,
) -> None:
    """An event when the draft was trained with a sliding window (:func:`draft_window`)
    that this version does not apply to the draft's attention (fact
    `draft_sliding_window_honoured`, per class family), unless the launch gives the draft
    that window itself (`launch_gives`)."""
    found = draft_window(state.config)
    if found is None:
        return
    size, where = found
    honoured = state.family_value("draft_sliding_window_honoured", state.family)
    if honoured is None or honoured is True:
        return
    if launch_gives is not None and launch_gives(state, size):
        return
    why, fix = advice(state, size, honoured)
    state.event(
        rule_ids.DRAFT_SLIDING_WINDOW_IGNORED,
        f"the draft was trained with a sliding window of {size} positions, but "
        f"{state.profile.title} {why}",
        config_at(where),
        ("draft_sliding_window_honoured",),
        fix=fix,
        # a release that fails building the draft does not serve it at all
        consequence=Consequence.REFUSES_TO_START if honoured == "index-error" else None,
    )
