"""The quick run's share of a parametrized sweep.

`python -m pytest -m "not slow"` should take about a minute of CPU, yet still reach every
area. A sweep over many cases keeps one case in `every` unmarked and marks the others
`slow`; the full run (`python -m pytest`, `.ci/run`) takes them all. A property runs twice:
at its full budget of examples (marked `slow`) and at a small one (the quick run).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis.strategies import SearchStrategy

T = TypeVar("T")


def sampled(items: Sequence[T], every: int, id: Callable[[T], str]) -> list[Any]:
    """`items` as pytest parameters: every `every`-th (from the first) in the quick run, the
    others marked `slow`."""
    return [
        pytest.param(item, id=id(item), marks=() if n % every == 0 else (pytest.mark.slow,))
        for n, item in enumerate(items)
    ]


def two_budgets(
    full: settings, quick: settings, *strategies: SearchStrategy[Any], **named: SearchStrategy[Any]
) -> Callable[[Callable[..., None]], tuple[Any, Any]]:
    """The property `body` as two tests: at the `full` budget (marked `slow`) and at the
    `quick` one (the quick run), drawing from the same strategies."""

    def wrap(body: Callable[..., None]) -> tuple[Any, Any]:
        return (
            pytest.mark.slow(full(given(*strategies, **named)(body))),
            quick(given(*strategies, **named)(body)),
        )

    return wrap
