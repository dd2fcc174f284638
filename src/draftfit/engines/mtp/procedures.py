"""Each engine's MTP procedure, by engine name (an engine without one: MTP not read)."""

from __future__ import annotations

from draftfit.engines.mtp.state import Procedure
from draftfit.engines.sglang import SGLANG
from draftfit.engines.sglang.mtp import PROCEDURE as SGLANG_MTP
from draftfit.engines.vllm import VLLM
from draftfit.engines.vllm.mtp import PROCEDURE as VLLM_MTP

PROCEDURES: dict[str, Procedure] = {VLLM.name: VLLM_MTP, SGLANG.name: SGLANG_MTP}


def mtp_procedure(engine: str) -> Procedure | None:
    """The MTP procedure of engine `engine`, or None where draftfit has none."""
    return PROCEDURES.get(engine)


__all__ = ["PROCEDURES", "mtp_procedure"]
