"""Timeouts for the subprocesses the tests start: generous, and scaled for slow runners.

Every subprocess a test runs (and every wait for one) takes its timeout from
:func:`scaled`. A timeout only stops a hang from blocking the suite; it is never a speed
check (speed is measured in `bench/`). On a loaded or slow machine, set
`DRAFTFIT_TEST_TIMEOUT_SCALE` (default 1) to multiply them all, e.g. `=3`.
"""

from __future__ import annotations

import os

# A command on a tiny checkpoint takes a second; a command over the malformed corpus or a
# whole matrix can take a minute on two loaded cores.
COMMAND_S = 300.0


def scale() -> float:
    """`DRAFTFIT_TEST_TIMEOUT_SCALE` as a positive number (1 when unset or not one)."""
    text = os.environ.get("DRAFTFIT_TEST_TIMEOUT_SCALE", "")
    try:
        value = float(text)
    except ValueError:
        return 1.0
    return value if value > 0 else 1.0


def scaled(seconds: float = COMMAND_S) -> float:
    """`seconds` (default: one command's generous budget) times the environment's scale."""
    return seconds * scale()
