"""What a ToyLLM release does with the launch's settings: the checks every engine shares,
spelled as ToyLLM's launch spells them. Run by its launch step (:mod:`.procedure`) only
when settings were given for ToyLLM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.engines.launch_checks import (
    Spelling,
    launch_flags,
    quantization_names,
    unreadable_values,
    value_after_switch,
)
from draftfit.engines.launch_paths import draft_path_is_folder

if TYPE_CHECKING:
    from draftfit.engines.procedure.state import BuildState
    from draftfit.serve.settings import ServeSettings

SPELLING = Spelling(prog="toyllm serve", command=("toyllm", "serve"), model_positional=True)


def check_settings(state: BuildState, s: ServeSettings) -> None:
    """Emit the events for `s` at the state's ToyLLM version."""
    launch_flags(state, s, SPELLING)
    unreadable_values(state, s, SPELLING)
    value_after_switch(state, s, SPELLING)
    quantization_names(state, s)
    draft_path_is_folder(state, s, SPELLING)
