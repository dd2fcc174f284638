"""A stand-alone NextN export as facts: the target's NextN layer stored as layer 0 of a
one-layer model, and how it fits the target it is served beside — engine-neutral.

SGLang's `scripts/export_deepseek_nextn.py` writes one from a DeepSeek-V3/R1 target (e.g.
`lmsys/DeepSeek-R1-NextN`): the target's config with `num_hidden_layers` 1 and
`architectures` `["DeepseekV3ForCausalLMNextN"]`, the tensors of `model.layers.{L}.*`
renamed to `model.layers.0.*` (its `embed_tokens` and `shared_head.head` left out: the
engine takes the target's). An engine release reads such an export one of two ways, which
is data of that release (`mtp_nextn_export`): its NextN loader takes layer 0 when
`num_hidden_layers` is 1 (`layer-zero`), or it builds the MTP layer after the target's
decoder layers as for a target (`layer-index`: `model.layers.{L}`, L the target's
`num_hidden_layers`) and finds nothing there unless the export kept that numbering. Both
readings are made here, once, as :class:`~draftfit.draft.mtp.MtpTarget` facts the MTP steps
judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from draftfit.draft.mtp import MtpTarget, family_of, read_mtp_target
from draftfit.records import frozen, replace

if TYPE_CHECKING:
    from typing import Any

    from draftfit.checkpoint.model import TensorInfo

LAYER_ZERO = "layer-zero"  # the release's NextN loader reads model.layers.0
LAYER_INDEX = "layer-index"  # the release builds model.layers.{L + i}, L the target's
READINGS = (LAYER_ZERO, LAYER_INDEX)

# The config keys an export must share with its target. `hidden_size` is the width of the
# hidden states and embedding the target hands the NextN layer; the others are what an
# export made from another model differs in (its layer was trained on that model's hidden
# states).
FIT_KEYS = (
    "model_type",
    "hidden_size",
    "vocab_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "n_routed_experts",
    "moe_intermediate_size",
    "intermediate_size",
)
MAX_SHOWN_VALUE = 80


def nextn_export_class(config: Mapping[str, Any] | None) -> str | None:
    """The architecture of a stand-alone NextN export (`DeepseekV3ForCausalLMNextN`,
    `Glm4MoeForCausalLMNextN`), or None for any other checkpoint. A target's own config
    never names the NextN class (the engine rewrites to it)."""
    if not isinstance(config, Mapping):
        return None
    architectures = config.get("architectures")
    first = architectures[0] if isinstance(architectures, list) and architectures else None
    if isinstance(first, str) and first.endswith("NextN") and len(first) <= 200:
        return first
    return None


@frozen
class ExportMismatch:
    """A config key whose value in the export differs from the target's."""

    key: str
    export_value: str
    target_value: str


@frozen
class NextnExport:
    """A stand-alone NextN export next to its target.

    Attributes:
        architecture: the export's `architectures[0]` (the NextN class).
        target: the target's source, as given.
        readings: the export read as an MTP target each way a release reads it
            (:data:`LAYER_ZERO`, :data:`LAYER_INDEX`).
        mismatches: the config keys of :data:`FIT_KEYS` that differ from the target's.
        target_family: the MTP family of the target's config (None: none draftfit knows).
    """

    architecture: str
    target: str
    readings: dict[str, MtpTarget]
    mismatches: tuple[ExportMismatch, ...]
    target_family: str | None

    @property
    def as_loaded(self) -> MtpTarget:
        """The export as a release whose NextN loader reads layer 0 sees it."""
        return self.readings[LAYER_ZERO]


def read_nextn_export(
    config: Mapping[str, Any],
    names: Iterable[str],
    tensors: Mapping[str, TensorInfo],
    target_source: str,
    target_config: Mapping[str, Any] | None,
    target_backbone: frozenset[str],
    quant_file: Mapping[str, Any] | None = None,
) -> NextnExport:
    """The export's facts: `names` and `tensors` are its own, `target_backbone` the module
    names of the target's decoder layer (what the NextN layer's decoder layer holds)."""
    architecture = nextn_export_class(config) or "?"
    names = list(names)
    target_config = target_config if isinstance(target_config, Mapping) else {}
    # a release that builds the MTP layer as for a target numbers it after the *target's*
    # decoder layers (the MTP class reads the target's config; the tensors come from the
    # export)
    layers = target_config.get("num_hidden_layers", config.get("num_hidden_layers"))
    as_target = read_mtp_target({**config, "num_hidden_layers": layers}, names, tensors, quant_file)
    at_zero = read_mtp_target({**config, "num_hidden_layers": 0}, names, tensors, quant_file)
    # the decoder layer the export must hold is its target's, when it was made from one of
    # this model type (another model type's layer is built from its own config)
    same_type = config.get("model_type") == target_config.get("model_type")
    at_zero = replace(at_zero, backbone_modules=target_backbone if same_type else frozenset())
    mismatches = tuple(
        ExportMismatch(key, _shown(config.get(key)), _shown(target_config.get(key)))
        for key in FIT_KEYS
        if key in config and key in target_config and config[key] != target_config[key]
    )
    family = family_of(target_config)
    return NextnExport(
        architecture=architecture,
        target=target_source,
        readings={LAYER_ZERO: at_zero, LAYER_INDEX: as_target},
        mismatches=mismatches,
        target_family=family.name if family is not None else None,
    )


def _shown(value: object) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text[:MAX_SHOWN_VALUE]


__all__ = [
    "FIT_KEYS",
    "LAYER_INDEX",
    "LAYER_ZERO",
    "READINGS",
    "ExportMismatch",
    "NextnExport",
    "nextn_export_class",
    "read_nextn_export",
]
