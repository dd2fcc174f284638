"""The attention KV-cache geometry of a draft and of its target, as the engines derive it.

An engine stores, per token and per attention layer, `num_key_value_heads·head_dim` keys
and as many values; an engine that keeps target and draft layers in one paged KV cache
needs the two to agree (or to support layers of different page sizes). Both come from the
configs: `num_key_value_heads` defaults to `num_attention_heads`, and `head_dim` is the
declared one, else `hidden_size // num_attention_heads` (what the Llama-style attention
classes of vLLM, SGLang and TensorRT-LLM derive). An MLA model (`kv_lora_rank` set)
caches one latent vector instead and has no such geometry: None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit.draft.target import Target
from draftfit.records import frozen

if TYPE_CHECKING:
    from typing import Any


@frozen
class KvGeometry:
    """Per-layer KV heads and head size, and whether `head_dim` was declared."""

    kv_heads: int
    head_dim: int
    declared: bool

    @property
    def per_token(self) -> int:
        """Key (or value) elements one layer stores per token."""
        return self.kv_heads * self.head_dim

    def describe(self) -> str:
        """`8 KV heads × head_dim 128` (`(derived)` when head_dim is not declared)."""
        derived = "" if self.declared else " (derived hidden_size/num_attention_heads)"
        heads = "KV head" if self.kv_heads == 1 else "KV heads"
        return f"{self.kv_heads} {heads} × head_dim {self.head_dim}{derived}"


def _int(config: Mapping[str, Any], key: str) -> int | None:
    value = config.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def geometry_of(config: Mapping[str, Any]) -> KvGeometry | None:
    """The KV geometry of a Llama-style attention config; None for MLA or without the
    fields it needs."""
    if config.get("kv_lora_rank") is not None:
        return None
    heads = _int(config, "num_attention_heads")
    hidden = _int(config, "hidden_size")
    if heads is None:
        return None
    kv = _int(config, "num_key_value_heads") or heads
    declared = _int(config, "head_dim")
    if declared is not None:
        return KvGeometry(kv, declared, True)
    if hidden is None:
        return None
    return KvGeometry(kv, hidden // heads, False)


def target_geometry(target: Target) -> KvGeometry | None:
    """The target's KV geometry, read from its text config (None for an MLA target)."""
    return geometry_of(target.text_config)
