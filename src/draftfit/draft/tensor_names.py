"""Stored tensor names and the canonical layout every producer's names map to.

Producers spell the same tensor differently: decoder tensors are `midlayer.*`,
`midlayer.N.*`, `transformer.*` or `layers.N.*`, some names carry a `model.` prefix, and
older SGLang drafts name the per-aux-state norms `aux_norm_low/mid/high`.
:func:`canonical_name` strips the prefix and renames to the canonical `layers.N.*` layout;
:func:`is_known_role` says whether a canonical name is one a draft class builds. The
dialect fingerprints (:mod:`draftfit.draft.dialects`) read the stored names; everything after them
reads canonical ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from draftfit.checkpoint.dtypes import PLAIN_FLOAT_DTYPES
from draftfit.checkpoint.model import Checkpoint, TensorInfo

# Renames from producer spellings to the canonical `layers.N.*` layout, by leading word
# (`midlayer.N.` keeps its layer number; see :func:`canonical_name`).
_PREFIX_RENAMES: tuple[tuple[str, str], ...] = (
    ("midlayer.", "layers.0."),
    ("transformer.", "layers.0."),  # speculators EAGLE-1 conversion
    ("fusion_fc.", "fc."),  # speculators EAGLE-1 conversion
    ("aux_norm_low.", "fc_norm.0."),  # legacy SGLang names
    ("aux_norm_mid.", "fc_norm.1."),
    ("aux_norm_high.", "fc_norm.2."),
)

_KNOWN_TOP = re.compile(
    r"^(fc\.(weight|bias)|norm\.weight|lm_head\.weight|embed_tokens\.weight|d2t|t2d|"
    r"input_norm\.weight|fc_norm\.\d+\.weight|mask_hidden|hidden_norm\.weight|"
    r"embed_layernorm\.weight|lm_head_layernorm\.weight|hidden_layernorm\.weight|"
    r"embedding_layernorm\.weight|pre_lm_head_layernorm\.weight|token_map|enorm\.weight|"
    r"hnorm\.weight)$"
)
_KNOWN_LAYER = re.compile(
    r"^layers\.\d+\.("
    r"self_attn\.(q_proj|k_proj|v_proj|o_proj)\.(weight|bias)|"
    r"self_attn\.(q_norm|k_norm)\.weight|"
    r"self_attn\.(q_a_proj|q_b_proj|kv_a_proj_with_mqa|kv_b_proj|q_a_layernorm|kv_a_layernorm|"
    r"fused_qkv_a_proj)\.weight|"
    r"mlp\.(gate_proj|up_proj|down_proj|gate_up_proj)\.(weight|bias)|"
    r"(input_layernorm|post_attention_layernorm|hidden_norm)\.weight)$"
)


@lru_cache(maxsize=16384)
def canonical_name(raw: str) -> tuple[str, str]:
    """Map a stored tensor name to `(canonical name, stripped prefix)`.

    Kept per name: a `matrix` maps the same draft's names once per engine release."""
    prefix = ""
    name = raw
    if name.startswith("model."):
        prefix = "model."
        name = name[len(prefix) :]
    if name.startswith("midlayer."):
        rest = name[len("midlayer.") :]
        number, dot, tail = rest.partition(".")
        if dot and number.isdecimal():  # `midlayer.N.x`: layer N
            return f"layers.{number}.{tail}", prefix
    for old, new in _PREFIX_RENAMES:
        if name.startswith(old):
            return new + name[len(old) :], prefix
    return name, prefix


# Tensors a quantized linear layer stores beside (or instead of) `weight`: compressed-tensors
# scales, zero points and packed weights, FP8 block scales (`weight_scale_inv`).
_QUANT_SUFFIX = re.compile(
    r"\.(weight_scale|weight_scale_inv|weight_zero_point|weight_packed|weight_shape|"
    r"weight_global_scale|weight_g_idx|input_scale|input_zero_point|input_global_scale)$"
)


def is_known_role(canonical: str) -> bool:
    """Whether a canonical name is a tensor some EAGLE draft class builds or reads: a known
    parameter, or a quantization tensor of a known linear layer (`*_proj`, `fc`, `lm_head`)."""
    if _KNOWN_TOP.match(canonical) or _KNOWN_LAYER.match(canonical):
        return True
    quant = _QUANT_SUFFIX.search(canonical)
    if quant is None:
        return False
    module = canonical[: quant.start()]
    linear = module.endswith("_proj") or module in ("fc", "lm_head")
    return linear and bool(
        _KNOWN_TOP.match(module + ".weight") or _KNOWN_LAYER.match(module + ".weight")
    )


def canonical_tensors(
    checkpoint: Checkpoint,
) -> tuple[dict[str, TensorInfo], dict[str, str], str, list[str]]:
    """The checkpoint's tensors by canonical name, with: canonical -> stored name, the prefix
    every stored name carries (`model.`, else `""`), and the stored names that map to no
    known role or repeat a role another stored name already fills."""
    tensors: dict[str, TensorInfo] = {}
    raw_names: dict[str, str] = {}
    prefixes: set[str] = set()
    unrecognised: list[str] = []
    for raw, info in checkpoint.tensors.items():
        canonical, prefix = canonical_name(raw)
        prefixes.add(prefix)
        if canonical in tensors:
            # Two spellings of one role (e.g. `midlayer.x` and `layers.0.x`): keep both visible.
            unrecognised.append(raw)
            continue
        tensors[canonical] = info
        raw_names[canonical] = raw
        if not is_known_role(canonical):
            unrecognised.append(raw)
    prefix = "model." if prefixes == {"model."} else ""
    return tensors, raw_names, prefix, unrecognised


# `fc`'s own tensors when it is not quantized (the bias is per output: no column of it).
FC_PLAIN = frozenset({"fc.weight", "fc.bias"})
_FC_NORM = re.compile(r"^fc_norm\.(\d+)\.weight$")


def fc_blocks_problem(
    tensors: Mapping[str, TensorInfo], count: int, width: int | None
) -> str | None:
    """Why `fc.weight`'s input columns cannot be moved as `count` blocks of `width` columns
    each (`width`: the target's hidden size, None when not known), with the weights that
    follow them (`input_norm.weight` over the concatenation, one `fc_norm.{k}` per state);
    None when they can. `tensors` are the draft's, by canonical name."""
    quantized = sorted(name for name in tensors if name.startswith("fc.") and name not in FC_PLAIN)
    if quantized:
        return (
            f"`fc` is stored quantized ({', '.join(f'`{n}`' for n in quantized)}): its "
            "columns are packed or share scales, so they cannot be moved as blocks"
        )
    fc = tensors.get("fc.weight")
    if fc is None:
        return "the draft has no `fc.weight`"
    if fc.dtype not in PLAIN_FLOAT_DTYPES:
        return f"`fc.weight` is {fc.dtype}; only BF16, F16 and F32 columns are moved"
    if len(fc.shape) != 2 or fc.shape[1] % count or (width and fc.shape[1] != count * width):
        blocks = f"{count} blocks of {width}" if width else f"{count} equal blocks"
        return f"`fc.weight` is {list(fc.shape)}, whose input columns are not {blocks}"
    if fc.byte_range is None:
        return "`fc.weight` is not stored contiguously (re-save the draft with safetensors)"
    norm = tensors.get("input_norm.weight")
    if norm is not None and (
        norm.dtype not in PLAIN_FLOAT_DTYPES
        or norm.shape != (fc.shape[1],)
        or norm.byte_range is None
    ):
        return f"`input_norm.weight` is {norm.dtype} {list(norm.shape)}, not one weight per column"
    per_state = sorted(int(m.group(1)) for n in tensors if (m := _FC_NORM.match(n)))
    if per_state and per_state != list(range(count)):
        return f"the draft has `fc_norm` weights for states {per_state}, not for each of {count}"
    return None


_LAYER_RE = re.compile(r"^layers\.(\d+)\.")


def layer_index(canonical: str) -> int | None:
    """The decoder layer a canonical name belongs to (`layers.N.*`), else None."""
    match = _LAYER_RE.match(canonical)
    return int(match.group(1)) if match else None


# A message or reason longer than this quotes something absurd (a tensor name of megabytes):
# it keeps its start and end, and the middle is cut, so that a check of every release
# (`matrix`) does not hold one copy of that name per release.
MESSAGE_LIMIT = 4000


def bounded_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text`, or its first and last parts around a mark saying how much was cut."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[-(limit // 4) :]
    return f"{head}… ({len(text) - len(head) - len(tail):,} characters cut) …{tail}"
