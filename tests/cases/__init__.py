"""Rule cases as data: each builds a tiny real checkpoint and names the codes that must fire
and the codes that must stay quiet. `test_rules.py` runs them all and checks that every
registered rule has at least one case that fires and one that stays quiet.

One module per rule family; importing them in the order below registers every case in
`CASES` in that order (which the tests, the snapshots and `dev/` scripts rely on). Cases
marked `oracle=` reproduce an experiment run against vLLM 0.34.0's own loader (see the
README's "How the vLLM data was checked"); the expected verdict is what vLLM did.
"""

from __future__ import annotations

import importlib

from tests.cases.base import CASES, Builder, Case

# The family modules, in the order their cases are registered (and listed in `CASES`).
FAMILY_NAMES = (
    "clean",
    "structure",
    "config",
    "tensors",
    "aux_layers",
    "vocabulary",
    "target",
    "kv_geometry",
    "sliding_window",
    "norms",
    "hygiene",
    "eagle1",
    "torch_bin",
    "mla",
    "other_engines",
    "aux_order",
    "serving",
    "mtp",
)


def _register() -> dict[str, str]:
    """Import each family module in order (registering its cases); each case id's family."""
    family: dict[str, str] = {}
    for name in FAMILY_NAMES:
        first = len(CASES)
        importlib.import_module(f"tests.cases.{name}")
        family.update((item.id, name) for item in CASES[first:])
    return family


FAMILY_OF: dict[str, str] = _register()


def family_of(item: Case) -> str:
    """The family module that registered `item` (its snapshot file is named after it)."""
    return FAMILY_OF[item.id]


__all__ = ["CASES", "FAMILY_NAMES", "FAMILY_OF", "Builder", "Case", "family_of"]
