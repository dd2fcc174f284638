"""What a command concludes for one engine version: the verdicts of `check`, `matrix` and
`diff`, as their JSON and text forms spell them.

Apart from :mod:`draftfit.fail_on`, which says which of them fail a run, and from
:class:`~draftfit.rule_ids.Severity`, which grades findings only: a verdict is not a finding.
"""

from __future__ import annotations

import enum


class Verdict(str, enum.Enum):
    """What a command concludes for one engine version: `check` and `matrix` say
    compatible, degraded, unverified, drafts-garbage or incompatible; `diff` says
    equivalent, unverified or different. A `str`, so its JSON and text forms are its value.
    """

    COMPATIBLE = "compatible"
    DEGRADED = "degraded"
    # Nothing fails, but checks that could change the answer were skipped (no target) or
    # draftfit's data cannot settle it (an `unknown` finding, such as DF505): not called
    # compatible.
    UNVERIFIED = "unverified"
    # The engine loads and serves the draft, but every draft is wrong (acceptance ≈ 0).
    DRAFTS_GARBAGE = "drafts-garbage"
    # The engine will not run the draft: it refuses to start, fails at the first request,
    # or the launch does not serve it.
    INCOMPATIBLE = "incompatible"
    EQUIVALENT = "equivalent"  # `diff`: the engine sees both drafts alike
    DIFFERENT = "different"  # `diff`: it does not

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __repr__(self) -> str:
        # shown as the string it is equal to (`'compatible'`), as scripts compare it
        return repr(self.value)


# The verdict `unverified`, as check, matrix and diff report it.
UNVERIFIED = Verdict.UNVERIFIED
