"""What every renderer may need besides the result: colour and the `--fail-on` threshold."""

from __future__ import annotations

from dataclasses import dataclass

from draftfit.rules.base import Severity


@dataclass(frozen=True)
class RenderOptions:
    """Settings shared by every renderer.

    Attributes:
        color: style the text for a terminal (text renderers only).
        fail_on: the lowest severity that makes the exit status 1; reports that state their
            exit status (the JSON `summary.exit_code`) state it for this threshold.
    """

    color: bool = False
    fail_on: Severity = Severity.ERROR


PLAIN = RenderOptions()
