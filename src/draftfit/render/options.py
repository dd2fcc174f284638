"""What every renderer may need besides the result: colour and the `--fail-on` threshold;
and the forms a command's results can be written in besides the whole of each."""

from __future__ import annotations

from enum import Enum

from draftfit.records import frozen
from draftfit.rule_ids import Severity
from draftfit.verdicts import FailOn


@frozen
class RenderOptions:
    """Settings shared by every renderer.

    Attributes:
        color: style the text for a terminal (text renderers only).
        fail_on: the `--fail-on` threshold (see draftfit.verdicts; a finding severity is
            read as the threshold of the same name); reports that state their exit status
            (the JSON `summary.exit_code`) state it for this threshold.
    """

    color: bool = False
    fail_on: FailOn | Severity = FailOn.ERROR


PLAIN = RenderOptions()


class Form(Enum):
    """What of a command's results is written, where the format has that form
    (:data:`draftfit.render.registry.SET_RENDERERS`); else each result is written whole."""

    WHOLE = "whole"  # every result whole: one document where the format holds several
    STATISTICS = "statistics"  # --statistics: the findings counted per rule
    VERDICTS = "verdicts"  # --quiet: the verdict lines alone
    LIST = "list"  # several drafts named: one list of their reports (JSON)
