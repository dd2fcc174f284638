"""Value checks: read (a sample of, or every byte of) the draft's weights and the target's
embedding, and tell trained from untrained, finite from not, this target from another; for
an MTP check, the target's own MTP layers (:mod:`draftfit.values.mtp_scan`).

Only this package imports numpy, and only its decoding and statistics modules (`decode`,
`stats`, `mtp_stats`) do, so a
plain `draftfit check` never pays for it. The modes:

* `sampled` (`--values`): a fixed, documented number of rows per tensor
  (:data:`draftfit.values.plan.SAMPLE_ROWS`, in :data:`~draftfit.values.plan.SAMPLE_GROUPS`
  evenly spaced runs), read with ranged reads;
* `full` (`--values=full`): every byte of every draft tensor, streamed in bounded chunks.
"""

from __future__ import annotations

SAMPLED = "sampled"
FULL = "full"
MODES = (SAMPLED, FULL)

__all__ = ["FULL", "MODES", "SAMPLED"]
