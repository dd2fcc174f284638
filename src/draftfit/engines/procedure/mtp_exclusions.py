"""Whether a quantized target's configuration leaves an MTP module unquantized, matched under
the names an engine release gives the module.

vLLM matches the checkpoint's own names (`model.layers.{L}.self_attn.q_a_proj`); SGLang's
NextN class renames the layer (`model.decoder.self_attn.q_a_proj`, `model.eh_proj`, the fused
experts as `model.decoder.mlp.experts`). Entries are matched exactly, or as `re:` patterns
(compressed-tensors) and `*` wildcards (ModelOpt), bounded like every module list
(:mod:`draftfit.engines.name_patterns`). Both shards of a fused module must agree.
"""

from __future__ import annotations

import fnmatch
import re

from draftfit.draft.mtp import MtpLayer
from draftfit.engines.name_patterns import NameList

CHECKPOINT_NAMES = "checkpoint"
RUNTIME_NAMES = "runtime"

# Modules an engine builds as one fused layer: an exclusion must name all or none of them.
FUSED = (
    ("q_a_proj", "kv_a_proj_with_mqa"),
    ("gate_proj", "up_proj"),
    ("q_proj", "k_proj", "v_proj"),
)
# MTP-layer modules every engine read builds unquantized (a plain Linear).
ALWAYS_UNQUANTIZED = frozenset({"eh_proj", "input_proj", "fc"})
_EXPERT = re.compile(r"mlp\.experts\.\d+\.")
MAX_WILDCARD_CHARS = 256


def quantizable(module: str) -> bool:
    """Whether the engine builds `module` (a name under the MTP layer's prefix) with the
    target's quantization: a decoder projection or expert, not a norm, the router, the
    head, the embedding or a module always built unquantized."""
    last = module.rsplit(".", 1)[-1]
    if module in ALWAYS_UNQUANTIZED or last in ALWAYS_UNQUANTIZED:
        return False
    return last.endswith(("_proj", "_proj_with_mqa")) and "shared_head" not in module


def engine_name(layer: MtpLayer, module: str, naming: str) -> str:
    """`module` of `layer` as the engine's quantization sees it."""
    if naming == CHECKPOINT_NAMES:
        return layer.prefix + module
    if module in ("eh_proj", "enorm", "hnorm", "shared_head.norm"):
        return "model." + module
    if _EXPERT.match(module):
        return "model.decoder.mlp.experts"
    return "model.decoder." + module


def excluded(name: str, entries: tuple[str, ...], names: NameList) -> bool:
    """Whether the exclusion list names `name`."""
    if name in entries or names.matches(name):
        return True
    return any(
        "*" in entry and len(entry) <= MAX_WILDCARD_CHARS and fnmatch.fnmatchcase(name, entry)
        for entry in entries
    )


def shard_mates(module: str) -> tuple[str, ...]:
    """The other shards of the fused module `module` belongs to (none when it is not fused)."""
    head, _, last = module.rpartition(".")
    for group in FUSED:
        if last in group:
            return tuple(f"{head}.{other}" if head else other for other in group if other != last)
    return ()


__all__ = [
    "ALWAYS_UNQUANTIZED",
    "CHECKPOINT_NAMES",
    "RUNTIME_NAMES",
    "engine_name",
    "excluded",
    "quantizable",
    "shard_mates",
]
