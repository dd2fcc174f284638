"""The quick run's share of a parametrized sweep.

`python -m pytest -m "not slow"` should take about a minute of CPU, yet still reach every
area. A sweep over many cases keeps one case in `every` unmarked and marks the others
`slow`; the full run (`python -m pytest`, `.ci/run`) takes them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


def sampled(items: Sequence[T], every: int, id: Callable[[T], str]) -> list[Any]:
    """`items` as pytest parameters: every `every`-th (from the first) in the quick run, the
    others marked `slow`."""
    return [
        pytest.param(item, id=id(item), marks=() if n % every == 0 else (pytest.mark.slow,))
        for n, item in enumerate(items)
    ]
