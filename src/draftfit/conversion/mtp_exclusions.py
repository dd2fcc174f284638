"""The exclusion list that keeps a quantized target's unquantized MTP layers unquantized.

A quantized target whose MTP layer ships in BF16 (no scales) is served right only when its
quantization config lists the MTP layer's quantizable modules as left unquantized (DF540):
the engine otherwise builds them quantized like the backbone. The fix changes no tensor
byte: it adds those modules to the config's exclusion list, under the names each engine
release matches (vLLM: the checkpoint's own `model.layers.{L}.<module>`, every shard of a
fused module; SGLang: its NextN class's runtime names `model.decoder.<module>`,
`model.decoder.mlp.experts`), in the key the quantization method's config class reads.

Only the methods whose exclusion key was read are fixed here; for any other the caller says
what the exporter must do instead.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from draftfit.draft.mtp import MtpTarget
from draftfit.engines.name_patterns import NameList
from draftfit.engines.procedure.mtp_exclusions import (
    engine_name,
    excluded,
    quantizable,
    shard_mates,
)
from draftfit.engines.profile import Profile
from draftfit.records import frozen
from draftfit.rule_ids import MTP_QUANT_UNCOVERED

if TYPE_CHECKING:
    from typing import Any

# Per `quant_method`: the exclusion keys its config class reads, in the order it reads them
# (the first non-empty list the config writes is extended, else the first list it
# writes, else the last key is written).
#   fp8: vLLM `Fp8Config.from_config` reads `ignored_layers`, then `modules_to_not_convert`
#        when that is empty (vllm/model_executor/layers/quantization/fp8.py:159-165@v0.34.0,
#        :129-134@v0.10.2); SGLang the first of the two present
#        (sglang/srt/layers/quantization/fp8.py:354-357@v0.5.23).
#   compressed-tensors: `ignore` (the llm-compressor config's list of modules left as is).
EXCLUSION_KEYS: dict[str, tuple[str, ...]] = {
    "fp8": ("ignored_layers", "modules_to_not_convert"),
    "compressed-tensors": ("ignore",),
}
QUANTIZATION_CONFIG = "quantization_config"
NAMING_FACT = "mtp_exclusion_names"


@frozen
class ExclusionFix:
    """The config with the MTP modules added to its exclusion list.

    Attributes:
        config: the new `config.json` (the input's, with the list extended).
        key: the exclusion key written (`modules_to_not_convert`, `ignore`, ...).
        added: the names added, in the order written.
        namings: the naming schemes the names follow (`checkpoint`, `runtime`).
    """

    config: dict[str, Any]
    key: str
    added: tuple[str, ...]
    namings: tuple[str, ...]

    @property
    def pointer(self) -> str:
        return f"/{QUANTIZATION_CONFIG}/{self.key}"


def namings_of(profiles: Iterable[Profile]) -> tuple[str, ...] | None:
    """The naming schemes under which the releases of `profiles` match exclusions, in order
    (None when one of them was not read)."""
    namings: list[str] = []
    for profile in profiles:
        fact = profile.fact(NAMING_FACT)
        if not fact.known or not isinstance(fact.value, str):
            return None
        if fact.value not in namings:
            namings.append(fact.value)
    return tuple(namings)


def why_not_fixable(target: MtpTarget, config: Mapping[str, Any] | None) -> str | None:
    """Why no exclusion list can fix `target` (what the exporter must do), or None."""
    method = target.quant.method
    if method is None:
        return "the target is not quantized: no exclusion list applies"
    scheme = target.quant.scheme or method
    if scheme.startswith(("modelopt", "quark")):
        return (
            f"convert does not write `{scheme}` exclusion lists (in {target.quant.source}) "
            "yet: add the entry that `draftfit check --method mtp` names in "
            f"{MTP_QUANT_UNCOVERED.code}'s fix for each release by hand, or re-export the "
            "target with the MTP layers quantized like the backbone"
        )
    if target.quant.source != "config.json" or not isinstance(
        (config or {}).get(QUANTIZATION_CONFIG), Mapping
    ):
        return (
            f"the quantization (`{method}`) is described in {target.quant.source}, whose "
            "exclusion key draftfit has not read for MTP layers: re-export the target with "
            "the MTP layers quantized like the backbone, or with the exporter's exclusion "
            "option naming them"
        )
    if method not in EXCLUSION_KEYS:
        return (
            f"draftfit has not read which exclusion key `{method}` takes for MTP layers: "
            "re-export the target with the MTP layers quantized like the backbone, or with "
            "the exporter's exclusion option naming them"
        )
    return None


def names_to_exclude(target: MtpTarget, naming: str) -> list[str]:
    """The quantizable modules of every shipped MTP layer that are stored unquantized and
    that the exclusion list does not cover under `naming` (with every shard of a fused
    module), as the engine names them, in a stable order."""
    entries = target.quant.exclusions
    names = NameList(list(entries), "exclusions")
    wanted: list[str] = []
    for index in target.shipped():
        layer = target.layers[index]
        modules = layer.modules()
        for module in sorted(modules):
            if not quantizable(module) or layer.stored_quantized(module) is not False:
                continue
            for part in (module, *(m for m in shard_mates(module) if m in modules)):
                name = engine_name(layer, part, naming)
                if name not in wanted and not excluded(name, entries, names):
                    wanted.append(name)
    return wanted


def plan_exclusions(
    target: MtpTarget, config: Mapping[str, Any], namings: tuple[str, ...]
) -> ExclusionFix | None:
    """The config that excludes the MTP layers' unquantized modules under every naming of
    `namings` (None when nothing is to be added). The caller has checked
    :func:`why_not_fixable`."""
    method = target.quant.method
    assert method is not None and method in EXCLUSION_KEYS, method
    added: list[str] = []
    for naming in namings:
        added += [n for n in names_to_exclude(target, naming) if n not in added]
    if not added:
        return None
    new = copy.deepcopy(dict(config))
    quantization = new[QUANTIZATION_CONFIG]
    keys = EXCLUSION_KEYS[method]
    lists = [k for k in keys if isinstance(quantization.get(k), list)]
    key = next((k for k in lists if quantization[k]), lists[0] if lists else keys[-1])
    present = quantization.get(key)
    quantization[key] = [*(present if isinstance(present, list) else []), *added]
    return ExclusionFix(new, key, tuple(added), namings)


__all__ = [
    "EXCLUSION_KEYS",
    "ExclusionFix",
    "names_to_exclude",
    "namings_of",
    "plan_exclusions",
    "why_not_fixable",
]
