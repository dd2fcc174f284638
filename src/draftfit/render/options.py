"""What every renderer may need besides the result: colour and the `--fail-on` threshold."""

from __future__ import annotations

from draftfit.fail_on import FailOn
from draftfit.records import frozen
from draftfit.rule_ids import Severity


@frozen
class RenderOptions:
    """Settings shared by every renderer.

    Attributes:
        color: style the text for a terminal (text renderers only).
        fail_on: the `--fail-on` threshold (see draftfit.fail_on; a finding severity is
            read as the threshold of the same name); reports that state their exit status
            (the JSON `summary.exit_code`) state it for this threshold.
    """

    color: bool = False
    fail_on: FailOn | Severity = FailOn.ERROR


PLAIN = RenderOptions()
