"""Rule cases — DF4xx: the draft vocabulary and its mappings (d2t, t2d)."""

from __future__ import annotations

import numpy as np

from tests import factory as f
from tests.cases.base import case, with_target
from tests.cases.config import _no_draft_vocab
from tests.factory import Draft

case("d2t-missing", {"DF401"}, {"DF402"}, verdict="drafts-garbage", oracle="08")(
    with_target(f.specforge().drop("d2t"))
)
case("lm-head-missing-reduced", {"DF402"}, {"DF401"}, verdict="drafts-garbage", oracle="09")(
    with_target(f.specforge().drop("lm_head.weight"))
)
case("lm-head-missing-full-vocab", set(), {"DF402", "DF205"}, verdict="compatible", oracle="09b")(
    with_target(_no_draft_vocab().drop("lm_head.weight"))
)
case("lm-head-missing-0.11.0", {"DF205"}, {"DF402"}, engines=("vllm==0.11.0",))(
    with_target(f.specforge().drop("lm_head.weight"))
)


def _absolute_d2t() -> Draft:
    draft = f.specforge()
    d2t = np.frombuffer(draft.tensors["d2t"].data, dtype="<i8")
    absolute = d2t + np.arange(d2t.size)
    return draft.add("d2t", "I64", (d2t.size,), (absolute + 200).astype("<i8").tobytes())


case("d2t-out-of-range", {"DF403"}, verdict="incompatible")(with_target(_absolute_d2t()))


def _t2d_wrong_count() -> Draft:
    draft = f.specforge()
    t2d = np.zeros(f.VOCAB, dtype=np.bool_)
    t2d[:10] = True
    return draft.add("t2d", "BOOL", (f.VOCAB,), t2d.tobytes())


case("t2d-wrong-count", {"DF407"}, {"DF403", "DF404"}, verdict="compatible")(
    with_target(_t2d_wrong_count())
)


def _t2d_elsewhere() -> Draft:
    """A t2d with the right count that marks other ids than d2t maps to."""
    draft = f.specforge()
    d2t = np.frombuffer(draft.tensors["d2t"].data, dtype="<i8")
    mapped = set((d2t + np.arange(d2t.size)).tolist())
    t2d = np.zeros(f.VOCAB, dtype=np.bool_)
    others = [i for i in range(f.VOCAB) if i not in mapped][: d2t.size]
    t2d[others] = True
    return draft.add("t2d", "BOOL", (f.VOCAB,), t2d.tobytes())


def _d2t_duplicates() -> Draft:
    draft = f.specforge()
    d2t = np.frombuffer(draft.tensors["d2t"].data, dtype="<i8").copy()
    d2t[1] = d2t[0] - 1  # draft id 1 maps to the target id draft id 0 maps to
    return draft.add("d2t", "I64", (d2t.size,), d2t.astype("<i8").tobytes())


case("t2d-marks-other-ids", {"DF407"}, {"DF404"}, verdict="compatible")(
    with_target(_t2d_elsewhere())
)
case("d2t-duplicate-targets", {"DF404"}, {"DF407"}, verdict="degraded")(
    with_target(_d2t_duplicates())
)
case("vocab-map-consistent", set(), {"DF403", "DF404", "DF407"}, verdict="compatible")(
    with_target(f.specforge())
)
case("vocab-size-mismatch", {"DF405"}, verdict="incompatible", oracle="21d")(
    with_target(f.specforge(), vocab=512)
)
case("d2t-dropped-0.9.0", {"DF406"}, engines=("vllm==0.9.0",))(with_target(f.eagle_official()))
case("d2t-with-full-vocab-0.34", {"DF201"}, verdict="incompatible", oracle="08c")(
    with_target(_no_draft_vocab().add("d2t", "I64", (f.VOCAB,), np.zeros(f.VOCAB, "<i8").tobytes()))
)
