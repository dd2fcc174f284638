r"""The exclusion list that keeps a quantized target's unquantized MTP layers unquantized.

A quantized target whose MTP layer ships in BF16 (no scales) is served right only when its
quantization config lists the MTP layer's quantizable modules as left unquantized (DF540):
the engine otherwise builds them quantized like the backbone. The fix changes no tensor
byte: it adds those modules to the config's exclusion list, under the names each engine
release matches (vLLM: the checkpoint's own `model.layers.{L}.<module>`, every shard of a
fused module; SGLang: its NextN class's runtime names `model.decoder.<module>`,
`model.decoder.mlp.experts`), in the key the quantization method's config class reads.

ModelOpt and Quark targets are fixed with the one entry each release's matching rule takes
for the whole MTP layer (`model.layers.{L}*` for vLLM's ModelOpt, `model.decoder*` for
SGLang's, `re:model\.layers\.{L}\..*` for vLLM's Quark: the engines' `mtp_exclusion_match`),
in the file the quantization is read from (`hf_quant_config.json` for a ModelOpt export
without `quantization_config`, else `config.json`).

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
    AWQ,
    GPTQ,
    LISTED,
    MODELOPT,
    MODELOPT_PARTS,
    QUARK,
    SHARD_CHECKED_RULES,
    as_matched,
    engine_name,
    entry_renames,
    excluded,
    gptq_marlin_experts,
    gptq_switch,
    gptq_unquantized,
    layer_entry,
    match_rule,
    quantizable,
    shard_mates,
    switches_layers,
    unquantized_under,
)
from draftfit.engines.procedure.mtp_matching import ROUTED_EXPERT, gptq_skipped, sglang_fused_name
from draftfit.engines.profile import Profile
from draftfit.records import frozen, replace

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
CONFIG_FILE = "config.json"
# The key of the exclusion list each whole-layer rule reads (ModelOpt, Quark).
LAYER_RULE_KEYS = {
    MODELOPT: "exclude_modules",
    MODELOPT_PARTS: "exclude_modules",
    QUARK: "exclude",
    AWQ: "modules_to_not_convert",
}


@frozen
class ExclusionFix:
    """The quantization config with the MTP modules added to its exclusion list.

    Attributes:
        config: the new `config.json` (the input's, with the list extended where the
            quantization is described there; else the input's as it is).
        key: the exclusion key written (`modules_to_not_convert`, `ignore`, ...).
        added: the names added, in the order written.
        namings: the naming schemes the names follow (`checkpoint`, `runtime`).
        file: the file the list is written in (`config.json`, `hf_quant_config.json`).
        document: that file's new content, where it is not `config.json` (else None).
        parent: the JSON pointer of the object holding the list in that file.
        removed: per exclusion key, the entries taken out of it (they named MTP modules
            stored quantized like the backbone: DF541).
        kept: modules written after `added` only to keep them unquantized (an AWQ config
            that listed none, whose list vLLM derived from the checkpoint's dtypes).
    """

    config: dict[str, Any]
    key: str
    added: tuple[str, ...]
    namings: tuple[str, ...]
    file: str = CONFIG_FILE
    document: dict[str, Any] | None = None
    parent: str = f"/{QUANTIZATION_CONFIG}"
    removed: tuple[tuple[str, tuple[str, ...]], ...] = ()
    kept: tuple[str, ...] = ()

    @property
    def pointer(self) -> str:
        """Where the list is written: a JSON pointer into `config.json`, or
        `FILE:POINTER` for another file."""
        pointer = f"{self.parent}/{self.key}"
        return pointer if self.file == CONFIG_FILE else f"{self.file}:{pointer}"


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


def match_rules(target: MtpTarget, profiles: Iterable[Profile]) -> tuple[str, ...] | None:
    """How each release of `profiles` matches the target's scheme's exclusion entries
    (:func:`~draftfit.engines.procedure.mtp_exclusions.match_rule`), in order; None when one
    of them was not read."""
    scheme = target.quant.scheme or target.quant.method or ""
    rules = [match_rule(profile, scheme) for profile in profiles]
    return None if None in rules else tuple(rule for rule in rules if rule is not None)


def why_not_fixable(target: MtpTarget, config: Mapping[str, Any] | None) -> str | None:
    """Why no exclusion list can fix `target` (what the exporter must do), or None."""
    method = target.quant.method
    if method is None:
        return "the target is not quantized: no exclusion list applies"
    scheme = target.quant.scheme or method
    if scheme.startswith(("modelopt", "quark")) or scheme == AWQ_METHOD:
        return None  # the whole-layer entry of each release's rule (see match_rules)
    if target.quant.source != CONFIG_FILE or not isinstance(
        (config or {}).get(QUANTIZATION_CONFIG), Mapping
    ):
        return (
            f"the quantization (`{method}`) is described in {target.quant.source}, whose "
            "exclusion key draftfit has not read for MTP layers: re-export the target with "
            "the MTP layers quantized like the backbone, or with the exporter's exclusion "
            "option naming them"
        )
    if method == GPTQ_METHOD:
        return None  # `-:` keys of `dynamic` (see plan_gptq)
    if method not in EXCLUSION_KEYS:
        return (
            f"draftfit has not read which exclusion key `{method}` takes for MTP layers: "
            "re-export the target with the MTP layers quantized like the backbone, or with "
            "the exporter's exclusion option naming them"
        )
    return None


def names_to_exclude(
    target: MtpTarget,
    naming: str,
    rule: str = LISTED,
    own: frozenset[str] = frozenset(),
    by_fused_name: frozenset[str] = frozenset(),
) -> list[str]:
    """The quantizable modules of every shipped MTP layer that are stored unquantized and
    that the exclusion list does not cover under `naming` and `rule` (with every shard of a
    fused module), as the engine names them, in a stable order; `own`: the MTP block's own
    modules the releases build quantized too (vLLM's `mtp.fc`, :func:`own_quantized`);
    `by_fused_name`: the fused modules SGLang's FP8 matches by the fused module's own name
    (GLM-4.7-Flash's MLA module), named so instead of by their shards."""
    entries = target.quant.exclusions
    names = NameList(list(entries), "exclusions")
    wanted: list[str] = []
    for index in target.shipped():
        layer = target.layers[index]
        modules = layer.modules()
        for module in sorted(modules):
            if module not in own and not quantizable(module, rule):
                continue
            if layer.stored_quantized(module) is not False:
                continue
            for part in (module, *(m for m in shard_mates(module) if m in modules)):
                own_at = target.own_prefix_of(index, part)
                name = engine_name(layer, part, naming, own_at, target.num_hidden_layers)
                if unquantized_under(
                    rule, target, layer, index, part, name, entries, names, by_fused_name
                ):
                    continue
                built = sglang_fused_name(name, modules)
                if rule in SHARD_CHECKED_RULES and built.rsplit(".", 1)[-1] in by_fused_name:
                    name = built
                if name not in wanted:
                    wanted.append(name)
    return wanted


def layer_entries(
    target: MtpTarget,
    namings: tuple[str, ...],
    rules: tuple[str, ...],
    own: frozenset[str] = frozenset(),
    by_fused_name: frozenset[str] = frozenset(),
) -> list[str] | None:
    """For a ModelOpt or Quark target: the whole-layer entry each release's rule takes for
    every shipped MTP layer it leaves uncovered, in order, and the MTP block's own modules
    it builds quantized (`own`) by their names (None when a rule takes no such entry under
    that release's naming; `by_fused_name` as for :func:`names_to_exclude`)."""
    added: list[str] = []
    for naming, rule in zip(namings, rules, strict=True):
        uncovered = names_to_exclude(target, naming, rule, own, by_fused_name)
        for index in target.shipped():
            layer = target.layers[index]
            prefix = engine_name(layer, "", naming, mtp_start=target.num_hidden_layers)
            if not any(n.startswith(prefix) for n in uncovered):
                continue
            entry = layer_entry(rule, layer, naming, target.num_hidden_layers)
            if entry is None:
                return None
            if entry not in added:
                added.append(entry)
        start = target.num_hidden_layers
        layers = [
            engine_name(target.layers[i], "", naming, mtp_start=start) for i in target.shipped()
        ]
        added += [
            n for n in uncovered if not any(n.startswith(p) for p in layers) and n not in added
        ]
    return added


@frozen
class Removal:
    """Exclusion entries that name an MTP module stored quantized like the backbone (DF541):
    the release builds that module unquantized and the quantized tensors do not fit it.

    Attributes:
        entries: those to take out (they name no backbone module).
        shared: those that also name a backbone module under some release's rule: taking
            them out would quantize that module too, so no config change is written.
    """

    entries: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()


def plan_removal(
    target: MtpTarget,
    profiles: Iterable[Profile],
    backbone: Iterable[str],
    own: frozenset[str] = frozenset(),
) -> Removal:
    """The exclusion entries that name, under some release of `profiles` (its naming, its
    matching rule and its renames of entries), a module of a shipped MTP layer that the
    release quantizes and the checkpoint stores quantized; `backbone`: the target's other
    module names (checkpoint names), which an entry taken out must not name; `own`: the
    MTP block's own modules the releases build quantized (vLLM's `mtp.fc`).
    A release whose naming or rule was not read is passed over (the caller has checked)."""
    scheme = target.quant.scheme or target.quant.method or ""
    start = target.num_hidden_layers
    stored: list[tuple[list[str], str, list[tuple[str, str]]]] = []
    for profile in profiles:
        fact = profile.fact(NAMING_FACT)
        rule = match_rule(profile, scheme)
        if not fact.known or not isinstance(fact.value, str) or rule is None:
            continue
        names = [
            engine_name(layer, module, fact.value, target.own_prefix_of(index, module), start)
            for index in target.shipped()
            for layer in (target.layers[index],)
            for module in sorted(layer.modules())
            if (module in own or quantizable(module, rule))
            and layer.stored_quantized(module) is True
        ]
        stored.append((names, rule, entry_renames(profile, target)))
    taken: list[str] = []
    for entry in dict.fromkeys(target.quant.exclusions):
        for names, rule, renames in stored:
            matched = as_matched(entry, renames)
            one = NameList([matched], "exclusions")
            if any(excluded(name, (matched,), one, rule) for name in names):
                taken.append(entry)
                break
    if not taken:
        return Removal()
    modules = sorted(set(backbone))
    shared: set[str] = set()
    for _, rule, renames in stored:
        mapped = {as_matched(entry, renames): entry for entry in taken}
        together = tuple(mapped)
        listed = NameList(list(together), "exclusions")
        # the backbone modules any of them names (one pass over a target's ~60,000
        # modules), then which entry names each
        for module in (m for m in modules if excluded(m, together, listed, rule)):
            shared.update(
                entry
                for matched, entry in mapped.items()
                if excluded(module, (matched,), NameList([matched], "exclusions"), rule)
            )
    return Removal(
        tuple(e for e in taken if e not in shared), tuple(e for e in taken if e in shared)
    )


def emptied_keys(target: MtpTarget, removal: Removal) -> list[str]:
    """The exclusion keys that taking `removal` out would leave empty while another key
    still lists entries: a config class that reads the first non-empty list would then
    read the other one (vLLM's FP8 `ignored_layers` / `modules_to_not_convert`)."""
    left = {
        key: [e for e in entries if e not in removal.entries] for key, entries in target.quant.lists
    }
    emptied = [key for key, entries in target.quant.lists if entries and not left[key]]
    return emptied if any(left.values()) else []


def without(target: MtpTarget, removal: Removal) -> MtpTarget:
    """`target` as draftfit reads it once `removal`'s entries are out of its lists."""
    gone = set(removal.entries)
    quant = replace(
        target.quant,
        exclusions=tuple(e for e in target.quant.exclusions if e not in gone),
        lists=tuple(
            (key, tuple(e for e in entries if e not in gone)) for key, entries in target.quant.lists
        ),
    )
    return replace(target, quant=quant)


def plan_exclusions(
    target: MtpTarget,
    config: Mapping[str, Any],
    namings: tuple[str, ...],
    rules: tuple[str, ...] | None = None,
    quant_file: Mapping[str, Any] | None = None,
    own: frozenset[str] = frozenset(),
    removal: Removal | None = None,
    unquantized: tuple[str, ...] = (),
    by_fused_name: frozenset[str] = frozenset(),
) -> ExclusionFix | None:
    """The config (or ModelOpt's `quant_file`, where the quantization is read from it) that
    excludes the MTP layers' unquantized modules under every naming of `namings`, matched
    by `rules` (one per naming; default: listed names), with the MTP block's own modules in
    `own` (built quantized by the releases), and with `removal`'s entries taken out of
    every list (for FP8 and compressed-tensors; :func:`plan_removal`) — None when nothing
    is to be added or taken out. `unquantized`: for an AWQ config that lists no module, the
    modules the checkpoint stores unquantized (:func:`stored_unquantized`), written with the
    MTP entries so that the list keeps leaving them unquantized. `by_fused_name`: the fused
    modules SGLang's FP8 and ModelOpt match by their own name (:func:`names_to_exclude`).
    The caller has checked :func:`why_not_fixable` (and, for ModelOpt, Quark and AWQ, that
    :func:`match_rules` and :func:`layer_entries` give an answer)."""
    method = target.quant.method
    assert method is not None, method
    rules = rules if rules is not None else tuple(LISTED for _ in namings)
    removal = removal or Removal()
    if any(rule in LAYER_RULE_KEYS for rule in rules):
        assert not removal.entries or method == AWQ_METHOD, removal
        kept = without(target, removal) if removal.entries else target
        return _plan_layer_entries(
            kept, config, namings, rules, quant_file, own, unquantized, removal, by_fused_name
        )
    assert method in EXCLUSION_KEYS, method
    kept = without(target, removal) if removal.entries else target
    added: list[str] = []
    for naming, rule in zip(namings, rules, strict=True):
        added += [
            n for n in names_to_exclude(kept, naming, rule, own, by_fused_name) if n not in added
        ]
    if not added and not removal.entries:
        return None
    new = copy.deepcopy(dict(config))
    quantization = new[QUANTIZATION_CONFIG]
    keys = EXCLUSION_KEYS[method]
    removed: list[tuple[str, tuple[str, ...]]] = []
    for key in keys:
        present = quantization.get(key)
        if not isinstance(present, list):
            continue
        out = tuple(e for e in present if isinstance(e, str) and e in removal.entries)
        if out:
            quantization[key] = [e for e in present if e not in out]
            removed.append((key, out))
    lists = [k for k in keys if isinstance(quantization.get(k), list)]
    key = next((k for k in lists if quantization[k]), lists[0] if lists else keys[-1])
    if added:
        present = quantization.get(key)
        quantization[key] = [*(present if isinstance(present, list) else []), *added]
    return ExclusionFix(new, key, tuple(added), namings, removed=tuple(removed))


GPTQ_METHOD = "gptq"
AWQ_METHOD = "awq"
# The dtypes vLLM's AWQ counts as unquantized when it lists the modules left unquantized
# itself (`maybe_update_config`: float16, bfloat16, float32).
UNQUANTIZED_DTYPES = frozenset({"F16", "BF16", "F32"})


def stored_unquantized(tensors: Mapping[str, Any]) -> tuple[str, ...]:
    """The modules (a tensor name less its last part) none of whose tensors in `tensors`
    (name -> info with a `dtype`) has a dtype outside :data:`UNQUANTIZED_DTYPES`, sorted:
    the list vLLM's AWQ derives from a checkpoint whose config lists none."""
    modules: dict[str, bool] = {}
    for name, info in tensors.items():
        module = name.rsplit(".", 1)[0]
        plain = getattr(info, "dtype", None) in UNQUANTIZED_DTYPES
        modules[module] = modules.get(module, True) and plain
    return tuple(sorted(module for module, plain in modules.items() if plain))


DYNAMIC = "dynamic"


@frozen
class GptqPlan:
    """The `dynamic` keys that fix a GPTQ target's MTP layers.

    Attributes:
        added: `-:` keys to add (one per MTP layer whose experts are stored unquantized and
            built GPTQ), written before every other key: the first key that matches wins.
        removed: `-:` keys that leave MTP modules stored GPTQ unquantized (DF541).
        shared: such keys that also match a backbone module (taking them out would quantize
            it): nothing is written.
        elsewhere: MTP modules stored GPTQ that the release builds under a name no quantized
            tensor has (MiMo's `model.layers.{L + i}`): no key brings them back.
        mixed: MTP layers that hold modules of both kinds, which one key cannot serve.
        fallback: MTP layers whose BF16 experts the release builds with the MoE WNA16
            fallback (or whose widths the config does not give), which reads no key.
    """

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()
    elsewhere: tuple[str, ...] = ()
    mixed: tuple[str, ...] = ()
    fallback: tuple[str, ...] = ()


def plan_gptq(
    target: MtpTarget,
    profiles: Iterable[Profile],
    backbone: Iterable[str],
    own: frozenset[str] = frozenset(),
    tensor_parallel: int | None = None,
) -> GptqPlan:
    """The `dynamic` keys to add and take out so that every release of `profiles` (each
    matching GPTQ by :data:`GPTQ`) builds each shipped MTP layer as the checkpoint stores
    it; `backbone`: the target's other module names, which a key taken out must not
    match; `own`: the MTP block's own modules the releases build quantized (`mtp.fc`);
    `tensor_parallel`: the launch's size, which decides the experts' GPTQ method."""
    start = target.num_hidden_layers
    marlin = gptq_marlin_experts(target, tensor_parallel)
    fallback: list[str] = []
    added: list[str] = []
    removed: list[str] = []
    elsewhere: list[str] = []
    mixed: list[str] = []
    keys = [key for key in target.quant.dynamic if key.startswith("-:")]
    for profile in profiles:
        fact = profile.fact(NAMING_FACT)
        naming = fact.value if fact.known and isinstance(fact.value, str) else None
        if naming is None or match_rule(profile, target.quant.scheme or "") != GPTQ:
            continue
        switch = gptq_switch(profile, target)
        family_own = target.family.own if target.family is not None else ()
        for index in target.shipped():
            layer = target.layers[index]
            needs_key = stored_quantized = unreachable = False
            for module in sorted(layer.modules()):
                if module not in own and not quantizable(module, GPTQ):
                    continue
                own_at = target.own_prefix_of(index, module)
                name = engine_name(layer, module, naming, own_at, start)
                stored = layer.stored_quantized(module)
                left, unlisted = gptq_unquantized(
                    target, layer, index, module, name, switch, marlin
                )
                stored_quantized |= stored is True
                if stored is False and not left:
                    needs_key = True
                    unreachable |= bool(ROUTED_EXPERT.match(module)) and marlin is not True
                elif stored is True and unlisted:
                    elsewhere.append(name)
                elif stored is True and left:
                    by_switch = switch and module not in family_own
                    removed += [
                        key
                        for key in keys
                        if key not in removed
                        and (gptq_skipped(name, (key,)) or (by_switch and switches_layers(key)))
                    ]
            entry = layer_entry(GPTQ, layer, naming, start)
            if needs_key and unreachable:
                fallback.append(layer.prefix.rstrip("."))
            elif needs_key and stored_quantized:
                mixed.append(layer.prefix.rstrip("."))
            elif needs_key and entry is not None and entry not in added:
                added.append(entry)
    modules = sorted(set(backbone))
    shared = [key for key in removed if any(gptq_skipped(m, (key,)) for m in modules)]
    return GptqPlan(
        tuple(added),
        tuple(k for k in removed if k not in shared),
        tuple(shared),
        tuple(dict.fromkeys(elsewhere)),
        tuple(mixed),
        tuple(dict.fromkeys(fallback)),
    )


def gptq_fix(
    config: Mapping[str, Any], plan: GptqPlan, namings: tuple[str, ...]
) -> ExclusionFix | None:
    """`config` with `plan`'s keys added first to `quantization_config.dynamic` (each with
    no overrides, `{}`) and its removed keys taken out, the other keys kept in their order
    with their values; None where there is nothing to change."""
    if not plan.added and not plan.removed:
        return None
    new = copy.deepcopy(dict(config))
    quantization = new[QUANTIZATION_CONFIG]
    present = quantization.get(DYNAMIC)
    kept = present if isinstance(present, Mapping) else {}
    quantization[DYNAMIC] = {
        **{key: {} for key in plan.added},
        **{k: v for k, v in kept.items() if k not in plan.removed and k not in plan.added},
    }
    return ExclusionFix(
        new,
        DYNAMIC,
        plan.added,
        namings,
        removed=((DYNAMIC, plan.removed),) if plan.removed else (),
    )


def _plan_layer_entries(
    target: MtpTarget,
    config: Mapping[str, Any],
    namings: tuple[str, ...],
    rules: tuple[str, ...],
    quant_file: Mapping[str, Any] | None,
    own: frozenset[str],
    unquantized: tuple[str, ...] = (),
    removal: Removal | None = None,
    by_fused_name: frozenset[str] = frozenset(),
) -> ExclusionFix | None:
    """ModelOpt / Quark / AWQ: each release's whole-layer entry, in the list its rule reads
    (for an AWQ config without one, after the modules it would otherwise derive), with
    `removal`'s entries taken out of it (AWQ; `target` is read without them)."""
    added = layer_entries(target, namings, rules, own, by_fused_name) or []
    gone = removal.entries if removal is not None else ()
    if not added and not gone:
        return None
    kept: list[str] = []
    if AWQ in rules and not target.quant.exclusions:
        kept = [module for module in unquantized if module not in added]
    key = LAYER_RULE_KEYS[next(rule for rule in rules if rule in LAYER_RULE_KEYS)]
    in_file = target.quant.source != CONFIG_FILE and quant_file is not None
    document = copy.deepcopy(dict(quant_file if in_file and quant_file else config))
    holder = document["quantization" if in_file else QUANTIZATION_CONFIG]
    present = holder.get(key)
    before = present if isinstance(present, list) else []
    holder[key] = [*(e for e in before if e not in gone), *added, *kept]
    out = tuple(e for e in gone if e in before)
    removed = ((key, out),) if out else ()
    if in_file:
        assert target.quant.source is not None
        return ExclusionFix(
            copy.deepcopy(dict(config)),
            key,
            tuple(added),
            namings,
            file=target.quant.source,
            document=document,
            parent="/quantization",
        )
    return ExclusionFix(document, key, tuple(added), namings, removed=removed, kept=tuple(kept))


__all__ = [
    "EXCLUSION_KEYS",
    "ExclusionFix",
    "GptqPlan",
    "Removal",
    "emptied_keys",
    "gptq_fix",
    "layer_entries",
    "match_rules",
    "names_to_exclude",
    "namings_of",
    "plan_exclusions",
    "plan_gptq",
    "plan_removal",
    "stored_unquantized",
    "why_not_fixable",
    "without",
]
