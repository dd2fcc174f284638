"""The exact signatures of an MTP tensor (numpy): zeros, one constant value, NaN/Inf.

Blocks of whole rows arrive as stored bytes and are decoded (:mod:`draftfit.values.decode`);
what is kept between blocks is a few numbers, so memory does not grow with the tensor. A
float8 weight is judged on its stored values: a block scale multiplies every value of its
block, so (with the scale itself finite and not zero, which the scale tensor's own facts
say) zeros stay zeros and NaN stays NaN; a weight is only constant when its scale tensor is
constant too, which the rules check on the scale's facts.
"""

from __future__ import annotations

import numpy as np

from draftfit.values.decode import decode_float
from draftfit.values.facts import MtpTensorFacts


def add_block(facts: MtpTensorFacts, data: bytes | memoryview) -> None:
    """Fold the stored bytes `data` (whole rows of `facts`' tensor) into `facts`."""
    values = decode_float(data, facts.dtype)
    if not values.size:
        return
    nan = np.isnan(values)
    inf = np.isinf(values)
    facts.values += int(values.size)
    facts.nan += int(nan.sum())
    facts.inf += int(inf.sum())
    if facts.all_zero and bool(np.any(values != 0)):
        facts.all_zero = False
    if not facts.constant:
        return
    if facts.nan or facts.inf:
        facts.constant = False
        return
    first = float(values[0]) if facts.first is None else facts.first
    facts.first = first
    facts.constant = bool(np.all(values == first))


__all__ = ["add_block"]
