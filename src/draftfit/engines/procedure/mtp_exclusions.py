"""Whether a quantized target's configuration leaves an MTP module unquantized, matched under
the names an engine release gives the module.

vLLM matches the checkpoint's own names (`model.layers.{L}.self_attn.q_a_proj`); SGLang's
NextN class renames the layer (`model.decoder.self_attn.q_a_proj`, `model.eh_proj`, the fused
experts as `model.decoder.mlp.experts`). Entries are matched under each scheme's own rules
(`RULES`: FP8 and compressed-tensors exactly, as `re:` patterns or `*` wildcards; vLLM's
ModelOpt also by containment; SGLang's ModelOpt a glob against the name or one of its
parts; vLLM's Quark exactly or as `re:` only), bounded like every module list
(:mod:`draftfit.engines.name_patterns`). Both shards of a fused module must agree. The
string matching of each rule is :mod:`draftfit.engines.procedure.mtp_matching`'s.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from draftfit.draft.mtp import MTP_PREFIX, MtpLayer, MtpTarget
from draftfit.engines.name_patterns import RE_PREFIX, NameList, bounded_pattern
from draftfit.engines.procedure.mtp_matching import (
    REGEX_CHARS,
    ROUTED_EXPERT,
    dynamic_pattern,
    fused_parent,
    glob_pattern,
    gptq_skipped,
    modelopt_match,
    modelopt_parts_match,
    quark_match,
    sglang_fp8_entries,
    sglang_fused_name,
    sglang_listed,
    sglang_modelopt_match,
    sglang_paths_match,
    sglang_quark_skipped,
    sglang_skipped,
)

if TYPE_CHECKING:
    from draftfit.engines.profile import Profile

CHECKPOINT_NAMES = "checkpoint"
RUNTIME_NAMES = "runtime"
# SGLang's runtime names where the family's MTP model numbers its layers from
# `model.layers.0` (Qwen3-Next: `mtp.layers.{i}.` is built as `model.layers.{i}.`, the names of
# the backbone's own layer i)
RUNTIME_RENUMBERED = "runtime-renumbered"
RENUMBERED_FACT = "mtp_runtime_renumbered"
# MiMo's MTP layers in the checkpoint
MIMO_LAYERS = "model.mtp_layers."

# Modules an engine builds as one fused layer: an exclusion must name all or none of them.
FUSED = (
    ("q_a_proj", "kv_a_proj_with_mqa"),
    ("gate_proj", "up_proj"),
    ("q_proj", "k_proj", "v_proj"),
)
# MTP-layer modules every engine read builds unquantized (a plain Linear).
ALWAYS_UNQUANTIZED = frozenset({"eh_proj", "input_proj", "fc"})
# The renames a release applies to exclusion entries before matching (by family).
NAME_MAP = "mtp_exclusion_name_map"

# How a release matches a scheme's exclusion entries against a module name (the engine
# data's `mtp_exclusion_match`, by scheme):
LISTED = "listed"  # exact names and `re:` patterns matched from the start (compressed-tensors)
# vLLM's FP8 (`is_layer_skipped`, exact mode): exact names; a fused MoE is left unquantized
# when an entry holding `experts` contains its path (from 0.11.0) ...
EXACT = "exact"
# ... and never before (0.10.2 builds every FP8 fused MoE quantized, whatever is listed)
EXACT_NO_MOE = "exact-no-moe"
MODELOPT = "modelopt"  # vLLM's ModelOpt: exact, an entry contained in the name, fnmatch
# SGLang's ModelOpt (`_get_quant_method`): a linear module is left unquantized where
# `is_layer_skipped` skips it (each entry as written, on dotted module-path boundaries; a fused
# module by its shards' paths, which must agree) or `is_layer_excluded` names it (a glob, `.`
# literal and `*` any run, matching the whole name or one dot-separated part; an entry ending
# in an MLA projection also matches a fused module whose last part holds it); the fused
# experts where `is_layer_excluded` names them. Matched against the module SGLang builds.
MODELOPT_PARTS = "modelopt-parts"
QUARK = "quark"  # vLLM's Quark: exact or `re:` (no glob); a MoE also by an entry under it
# SGLang's FP8 (`is_layer_skipped`): entries with and without `model.`, matched on dotted
# module-path boundaries (equal, a parent path, or a dotted run inside the name); the fused
# experts also by an entry holding their path
SGLANG_PATHS = "sglang-paths"
# vLLM's GPTQ (`get_dynamic_override`, `is_layer_gptq_quantized`): a module is left
# unquantized when the first `dynamic` key whose pattern matches the start of its name is a
# `-:` key; a linear module also when it is not among the modules quantized (an entry of
# `modules_in_block_to_quantize` contained in its name; without that key, the modules the
# checkpoint stores quantized); the fused experts by a `-:` key only
GPTQ = "gptq"
# vLLM's AWQ (`is_layer_skipped`, substring mode): a module is left unquantized when an entry
# of `modules_to_not_convert` is contained in its name (the fused experts by theirs,
# `model.layers.{L}.mlp.experts`: a list of every expert's own name does not reach them);
# without entries, the modules the checkpoint stores unquantized, by their names (never the
# fused experts)
AWQ = "awq"
# SGLang's GPTQ Marlin (`get_linear_quant_method`): a linear module is left unquantized when
# the first `dynamic` key whose pattern matches the start of its runtime name is a `-:` key;
# every other linear module is GPTQ, and the fused experts always are (no key is read for
# them)
SGLANG_GPTQ = "sglang-gptq"
# SGLang's AWQ Marlin (`is_layer_skipped_awq`): an entry of `modules_to_not_convert`
# contained in the module's runtime name (the fused experts by theirs); no list is derived
# from the checkpoint where the key is absent
AWQ_LISTED = "awq-listed"
# SGLang's compressed-tensors (`should_ignore_layer`): an entry equal to the module's runtime
# name, a plain entry naming a dotted suffix of it, or a `re:` pattern matching its start;
# each shard of a fused module by its own name; the fused experts when their expert 0's
# three projections are all listed (`model.decoder.mlp.experts.0.gate_proj`, ...)
SGLANG_LISTED = "sglang-listed"
# SGLang's Quark (`should_ignore_layer` on the module it builds): an `exclude` entry equal to
# its runtime name or a `re:` pattern matching its start; the fused experts also by an entry
# naming a module under them; a fused module by its shards' names (all or none)
SGLANG_QUARK = "sglang-quark"
RULES = (
    LISTED,
    EXACT,
    EXACT_NO_MOE,
    MODELOPT,
    MODELOPT_PARTS,
    QUARK,
    SGLANG_PATHS,
    GPTQ,
    AWQ,
    SGLANG_GPTQ,
    AWQ_LISTED,
    SGLANG_LISTED,
    SGLANG_QUARK,
)
# The rules that read GPTQ's `dynamic` keys, and those that match the fused experts as one
# module named by their parent (`....mlp.experts`).
DYNAMIC_RULES = frozenset({GPTQ, SGLANG_GPTQ})
FUSED_NAME_RULES = frozenset({GPTQ, AWQ, SGLANG_GPTQ, AWQ_LISTED, SGLANG_LISTED})
# Rules whose config class refuses to build a fused module some but not all of whose shards
# its `is_layer_skipped` finds listed (SGLang's FP8 and ModelOpt).
SHARD_CHECKED_RULES = frozenset({SGLANG_PATHS, MODELOPT_PARTS, SGLANG_QUARK})
# Rules under which the MTP layer's own head (`shared_head.head`, a ParallelLMHead) is built
# with the target's quantization unless excluded (vLLM's ModelOpt quantizes LM heads).
HEAD_RULES = frozenset({MODELOPT})
HEAD = "shared_head.head"


def quantizable(module: str, rule: str = LISTED) -> bool:
    """Whether the engine builds `module` (a name under the MTP layer's prefix) with the
    target's quantization: a decoder projection or expert, not a norm, the router, the
    embedding or a module always built unquantized; the head only under a rule of
    `HEAD_RULES`."""
    if module == HEAD:
        return rule in HEAD_RULES
    last = module.rsplit(".", 1)[-1]
    if module in ALWAYS_UNQUANTIZED or last in ALWAYS_UNQUANTIZED:
        return False
    return last.endswith(("_proj", "_proj_with_mqa")) and "shared_head" not in module


def engine_name(
    layer: MtpLayer,
    module: str,
    naming: str,
    own_prefix: str | None = None,
    mtp_start: int | None = None,
) -> str:
    """`module` of `layer` as the engine's quantization sees it; `own_prefix`: where the MTP
    block's own modules are named when they are not under the layer's prefix (`mtp.` for
    Qwen3-Next's `mtp.fc`, given only for those modules); `mtp_start`: the target's
    `num_hidden_layers`, where a `model.mtp_layers.{i}` layer's decoder layer is built.

    MiMo's `model.mtp_layers.{i}` layers are built under other names than the checkpoint's:
    vLLM builds the decoder layer under `model.layers.{L + i}` (checkpoint naming: run on
    0.34.0, a list naming `model.layers.{L}.*` excludes it, the checkpoint's names do not),
    SGLang under no prefix at all (`self_attn.qkv_proj`; runtime naming)."""
    if naming == RUNTIME_RENUMBERED and own_prefix is None:
        return f"model.layers.{layer.index}." + module
    if layer.prefix.startswith(MIMO_LAYERS) and own_prefix is None:  # its decoder layer
        if naming == RUNTIME_NAMES:
            return module
        if mtp_start is not None:
            return f"model.layers.{mtp_start + layer.index}." + module
    if naming == CHECKPOINT_NAMES or layer.prefix.startswith("mtp."):
        # SGLang's runtime names are DeepSeek's NextN class's (`model.decoder.*`); an
        # `mtp.*` block (Qwen3-Next, Qwen3.5) keeps the checkpoint's names there too (its
        # MTP class is built under the prefix `mtp`: run on SGLang 0.5.23)
        return (own_prefix if own_prefix is not None else layer.prefix) + module
    if module in ("eh_proj", "enorm", "hnorm", "shared_head.norm"):
        return "model." + module
    if ROUTED_EXPERT.match(module):
        return "model.decoder.mlp.experts"
    return "model.decoder." + module


def exclusion_naming(profile: Profile, target: MtpTarget) -> str | None:
    """Under which names `profile`'s release matches the target's MTP modules against its
    exclusion list (`mtp_exclusion_names`; :data:`RUNTIME_RENUMBERED` for a family its
    `mtp_runtime_renumbered` lists); None where that was not read."""
    fact = profile.fact("mtp_exclusion_names")
    if not fact.known or not isinstance(fact.value, str):
        return None
    if fact.value == RUNTIME_NAMES and RENUMBERED_FACT in profile.data.facts:
        renumbered = profile.fact(RENUMBERED_FACT)
        families = renumbered.value if renumbered.known else None
        if isinstance(families, list) and target.family and target.family.name in families:
            return RUNTIME_RENUMBERED
    return fact.value


def entry_renames(profile: Profile, target: MtpTarget) -> list[tuple[str, str]]:
    """The renames `profile`'s release applies to the target's exclusion entries before
    matching them, longest first: its `mtp_exclusion_name_map` for the target's family
    (SGLang maps DeepSeek-V3's `model.layers.61` to `model.decoder`); none where it has
    none."""
    if NAME_MAP not in profile.data.facts or target.family is None:
        return []
    fact = profile.fact(NAME_MAP)
    table = fact.value.get(target.family.name) if isinstance(fact.value, dict) else None
    if not isinstance(table, dict):
        return []
    return sorted(
        ((old, new) for old, new in table.items() if isinstance(new, str)),
        key=lambda pair: len(pair[0]),
        reverse=True,
    )


def as_matched(entry: str, renames: list[tuple[str, str]]) -> str:
    """`entry` as the release matches it: the first of `renames` it contains applied once."""
    for old, new in renames:
        if old in entry:
            return entry.replace(old, new, 1)
    return entry


def excluded(name: str, entries: tuple[str, ...], names: NameList, rule: str = LISTED) -> bool:
    """Whether the exclusion list names `name` under `rule` (one of `RULES`)."""
    if rule == MODELOPT:
        return modelopt_match(name, entries) or modelopt_match(fused_parent(name), entries)
    if rule == MODELOPT_PARTS:
        return modelopt_parts_match(name, entries)
    if rule == QUARK:
        return quark_match(name, entries)
    if rule == SGLANG_PATHS:
        return sglang_paths_match(name, entries)
    if rule in DYNAMIC_RULES:
        return gptq_skipped(name, entries)
    if rule == SGLANG_LISTED:
        return sglang_listed(name, entries, names)
    if rule in (AWQ, AWQ_LISTED):
        parent = fused_parent(name)
        return any(entry and entry in parent for entry in entries)
    if rule in (EXACT, EXACT_NO_MOE):
        parent = fused_parent(name)
        if parent != name:  # an expert of a fused MoE, built as one module
            return rule == EXACT and any(parent in entry for entry in entries if "experts" in entry)
        return name in entries
    # exact names and `re:` patterns (a shell wildcard is no pattern to these configs)
    return name in entries or names.matches(name)


def shards_disagree(
    rule: str,
    modules: frozenset[str],
    name: str,
    entries: tuple[str, ...],
    names: NameList,
    by_fused_name: frozenset[str] = frozenset(),
) -> str | None:
    """The fused module (its runtime name) that `name`, an MTP module's runtime name, is built
    into where `rule`'s config class refuses it: some but not all of its shards listed
    (SGLang's `is_layer_skipped` by their paths, Quark's by their names; `names`: the entries,
    ready to match); None otherwise. `modules`: those the release builds in the layer
    (:func:`built_modules`)."""
    if rule not in SHARD_CHECKED_RULES:
        return None
    built = sglang_fused_name(name, modules)
    if rule == SGLANG_QUARK:
        found = sglang_quark_skipped(built, names, by_fused_name)
    else:
        read = sglang_fp8_entries(entries) if rule == SGLANG_PATHS else entries
        found = sglang_skipped(built, read, by_fused_name)
    return built if len(set(found)) > 1 else None


def built_modules(target: MtpTarget, layer: MtpLayer) -> frozenset[str]:
    """The modules the release builds in MTP layer `layer`: those it stores, and those of the
    target's own decoder layers, which it builds all the same where the checkpoint lacks one
    (run: vLLM 0.34.0 and SGLang 0.5.23 refuse a DeepSeek-V3 layer without
    `kv_a_proj_with_mqa` whose exclusion list names `q_a_proj`)."""
    return layer.modules() | target.backbone_modules


def unsafe_entries(entries: tuple[str, ...], rule: str) -> tuple[str, ...]:
    """The entries of `entries` that `rule` reads as a regular expression whose matching
    time draftfit cannot bound (:func:`~draftfit.engines.name_patterns.bounded_pattern`:
    one that does not compile, is too long, or nests or repeats too much): a check that
    meets one says it was not read rather than guess what the engine matches."""
    if rule in DYNAMIC_RULES:
        texts = [(key, dynamic_pattern(key)) for key in entries]
    elif rule == QUARK:
        texts = [(e, e[len(RE_PREFIX) :]) for e in entries if e.startswith(RE_PREFIX)]
    elif rule == MODELOPT_PARTS:  # a glob of literals and `*` is matched without a regex
        texts = [(e, glob_pattern(e)) for e in entries if REGEX_CHARS.intersection(e)]
    else:
        return ()
    return tuple(entry for entry, text in texts if bounded_pattern(text) is None)


def gptq_quantized_linear(name: str, stored: bool | None, blocks: tuple[str, ...]) -> bool:
    """Whether vLLM's GPTQ builds the linear module `name` quantized before its `dynamic`
    keys are read (`is_layer_gptq_quantized`): an entry of `modules_in_block_to_quantize`
    contained in the name; without that key, whether the checkpoint stores it quantized
    (`maybe_update_config` lists the modules of every tensor of an integer dtype)."""
    if blocks:
        return any(entry and entry in name for entry in blocks)
    return stored is not False


def layer_entry(
    rule: str, layer: MtpLayer, naming: str, mtp_start: int | None = None
) -> str | None:
    """The one exclusion entry that leaves the whole MTP `layer` unquantized under `rule`
    (None where the rule takes module names only, or the release names the layer's modules
    under no prefix)."""
    prefix = engine_name(layer, "", naming, mtp_start=mtp_start).rstrip(".")
    if not prefix or naming == RUNTIME_RENUMBERED:  # its names are a backbone layer's too
        return None
    if rule == MODELOPT:
        return prefix + "*"
    if rule == MODELOPT_PARTS and naming == RUNTIME_NAMES:
        return "model.decoder*"
    if rule == QUARK and naming == CHECKPOINT_NAMES:
        return "re:" + re.escape(prefix + ".") + ".*"
    if rule == GPTQ and naming == CHECKPOINT_NAMES:
        return "-:" + re.escape(prefix + ".") + ".*"
    if rule == SGLANG_GPTQ:  # matched from the start of the runtime name
        return "-:" + re.escape(prefix + ".") + ".*"
    if rule in (SGLANG_LISTED, SGLANG_QUARK):
        return RE_PREFIX + re.escape(prefix + ".") + ".*"
    if (rule == AWQ and naming == CHECKPOINT_NAMES) or rule == AWQ_LISTED:
        return prefix + "."
    return None


def shard_mates(module: str) -> tuple[str, ...]:
    """The other shards of the fused module `module` belongs to (none when it is not fused)."""
    head, _, last = module.rpartition(".")
    for group in FUSED:
        if last in group:
            return tuple(f"{head}.{other}" if head else other for other in group if other != last)
    return ()


# The fact that says, per scheme, how a release matches exclusion entries (one of `RULES`).
MATCH_FACT = "mtp_exclusion_match"
# Schemes matched by their listed names where a release has no entry for them.
LISTED_SCHEMES = frozenset({"fp8", "compressed-tensors"})


def match_rule(profile: Profile, scheme: str) -> str | None:
    """How the release of `profile` matches the exclusion entries of a `scheme` target
    (`mtp_exclusion_match`): FP8 and compressed-tensors by their listed names where the
    release has no entry for the scheme; None where it was not read, or where the entry
    names no rule draftfit models (the check is then unverified)."""
    fact = profile.fact(MATCH_FACT)
    rule = fact.value.get(scheme) if fact.known and isinstance(fact.value, dict) else None
    if rule is None:
        return LISTED if scheme in LISTED_SCHEMES else None
    return rule if isinstance(rule, str) and rule in RULES else None


OWN_FACT = "mtp_own_quantized"


def own_quantized(profile: Profile, target: MtpTarget) -> frozenset[str] | None:
    """The MTP block's own modules (its family's `own`) the release of `profile` builds with
    the target's quantization (`mtp_own_quantized`: vLLM's `mtp.fc` of Qwen3-Next and Qwen3.5,
    unless the target's scheme is one it builds it unquantized under). None where a family
    whose own modules hold a linear layer (`mtp.fc`: `mtp.*` naming) was not read at the
    release; a family of another naming not listed builds none of them quantized."""
    family = target.family
    if family is None:
        return frozenset()
    fact = profile.fact(OWN_FACT)
    table = fact.value.get(family.name) if fact.known and isinstance(fact.value, dict) else None
    if not isinstance(table, dict):
        return None if family.naming == MTP_PREFIX else frozenset()
    scheme = target.quant.scheme or target.quant.method
    return frozenset(
        module
        for module, unquantized_under in table.items()
        if isinstance(unquantized_under, list) and scheme not in unquantized_under
    )


# Per family, the fused modules SGLang's compressed-tensors matches by the fused name.
FUSED_BY_NAME = "mtp_fused_by_name"


def fused_by_name(profile: Profile, target: MtpTarget) -> frozenset[str] | None:
    """The fused modules of the target's MTP layers that `profile`'s release matches by the
    fused name (`mtp_fused_by_name`); None where its family was not read."""
    if FUSED_BY_NAME not in profile.data.facts or target.family is None:
        return None
    fact = profile.fact(FUSED_BY_NAME)
    table = fact.value if fact.known and isinstance(fact.value, dict) else {}
    names = table.get(target.family.name)
    return frozenset(n for n in names if isinstance(n, str)) if isinstance(names, list) else None


# Families whose MTP class builds every MTP decoder layer unquantized when a GPTQ `dynamic`
# key starting `-:` contains `mtp` (vLLM's Qwen3.5), whatever the key's pattern matches.
GPTQ_SWITCH = "mtp_gptq_layers_switch"


def gptq_switch(profile: Profile, target: MtpTarget) -> bool:
    """Whether `profile`'s release builds the target's MTP decoder layers unquantized for
    this GPTQ target (`mtp_gptq_layers_switch` lists its family, and a `-:` key of its
    `dynamic` contains `mtp`)."""
    if GPTQ_SWITCH not in profile.data.facts or target.family is None:
        return False
    fact = profile.fact(GPTQ_SWITCH)
    families = fact.value if fact.known and isinstance(fact.value, list) else []
    return target.family.name in families and any(
        switches_layers(key) for key in target.quant.dynamic
    )


def switches_layers(key: str) -> bool:
    """Whether the `dynamic` key `key` is one that sets off the switch of
    :func:`gptq_switch` (a `-:` key containing `mtp`)."""
    return key.startswith("-:") and "mtp" in key


def awq_unquantized(
    target: MtpTarget, layer: MtpLayer, index: int, module: str, name: str, entries: tuple[str, ...]
) -> bool:
    """Whether vLLM's AWQ builds `module` of `layer` (engine name `name`) unquantized: an
    entry of `entries` (`modules_to_not_convert`) contained in its name; without entries,
    being stored unquantized under that very name (`maybe_update_config` lists the
    checkpoint's modules without an integer tensor), which the fused experts, matched by
    their own name, never are."""
    if entries:
        return excluded(name, entries, NameList([], "modules_to_not_convert"), AWQ)
    if ROUTED_EXPERT.match(module):
        return False
    stored_here = name == _checkpoint_name(target, layer, index, module)
    return stored_here and layer.stored_quantized(module) is False


def _checkpoint_name(target: MtpTarget, layer: MtpLayer, index: int, module: str) -> str:
    """The checkpoint's own name of `module` of MTP layer `layer` (index `index`)."""
    return (target.own_prefix_of(index, module) or layer.prefix) + module


def unquantized_under(
    rule: str,
    target: MtpTarget,
    layer: MtpLayer,
    index: int,
    module: str,
    name: str,
    entries: tuple[str, ...],
    names: NameList,
    by_fused_name: frozenset[str] = frozenset(),
) -> bool:
    """Whether the release builds `module` of `layer` (engine name `name`) unquantized under
    `rule` and the exclusion `entries` (`names`: them, ready to match), for every rule but
    vLLM's GPTQ (:func:`gptq_unquantized`, which needs the launch): AWQ's own reading
    (:func:`awq_unquantized`), SGLang's GPTQ (never the routed experts), else
    :func:`excluded`. SGLang matches fused modules by the fused name for GPTQ and AWQ, and
    for compressed-tensors those of `by_fused_name` (the family's `mtp_fused_by_name`)."""
    if rule == AWQ:
        return awq_unquantized(target, layer, index, module, name, entries)
    if rule == SGLANG_GPTQ and ROUTED_EXPERT.match(module):
        return False
    if rule in SHARD_CHECKED_RULES:  # matched against the module SGLang builds
        experts = ROUTED_EXPERT.match(module) is not None
        built = fused_parent(name) if experts else sglang_fused_name(name, layer.modules())
        if rule == MODELOPT_PARTS:
            return sglang_modelopt_match(built, entries, experts, by_fused_name)
        if rule == SGLANG_QUARK:
            return all(sglang_quark_skipped(built, names, by_fused_name))
        return all(sglang_skipped(built, sglang_fp8_entries(entries), by_fused_name))
    if rule in (SGLANG_GPTQ, AWQ_LISTED):
        name = sglang_fused_name(name, layer.modules())
    elif rule == SGLANG_LISTED and by_fused_name:
        fused = sglang_fused_name(name, layer.modules())
        if fused.rsplit(".", 1)[-1] in by_fused_name:
            name = fused
    return excluded(name, entries, names, rule)


# vLLM's GPTQ MoE kernel (Marlin) takes group sizes of these only; for any other layer
# `auto_gptq` falls back to the MoE WNA16 method, which reads no `dynamic` key.
MARLIN_GROUPS = (-1, 32, 64, 128)
MARLIN_HIDDEN = 128


def gptq_marlin_experts(target: MtpTarget, tensor_parallel: int | None) -> bool | None:
    """Whether vLLM's GPTQ builds the target's fused experts with its Marlin MoE method
    (`check_moe_marlin_supports_layer`, with tile padding: the hidden size a multiple of
    128, the group size one Marlin takes and dividing each rank's expert width), which
    honours `-:` keys; False: the MoE WNA16 fallback, which does not. None where the config
    does not give the widths."""
    hidden, inter, group = (
        target.hidden_size,
        target.moe_intermediate_size,
        target.quant.group_size,
    )
    if hidden is None or inter is None or group is None:
        return None
    ranks = tensor_parallel or 1
    if inter % ranks:
        return False
    per_rank = inter // ranks
    return (
        hidden % MARLIN_HIDDEN == 0
        and group in MARLIN_GROUPS
        and (group <= 0 or per_rank % group == 0)
    )


def gptq_unquantized(
    target: MtpTarget,
    layer: MtpLayer,
    index: int,
    module: str,
    name: str,
    switch: bool,
    marlin: bool | None = True,
) -> tuple[bool, bool]:
    """(whether vLLM's GPTQ builds `module` of `layer`, engine name `name`, unquantized,
    whether that is because it is not among the modules quantized rather than by a `dynamic`
    key). Unquantized: every decoder-layer module where the family's switch holds (`switch`),
    a `-:` key matching it, or, for a linear module, not being among the modules quantized;
    without `modules_in_block_to_quantize` those are the modules of the checkpoint's integer
    tensors, by the checkpoint's names, so a module built under another name (MiMo's
    `model.layers.{L + i}`) is never among them. The fused experts are quantized unless a
    `-:` key names them and they are built with the Marlin MoE method (`marlin`,
    :func:`gptq_marlin_experts`; the fallback reads no key)."""
    own = target.family.own if target.family is not None else ()
    if switch and module not in own:
        return True, False
    if ROUTED_EXPERT.match(module):
        return bool(marlin) and gptq_skipped(name, target.quant.dynamic), False
    if gptq_skipped(name, target.quant.dynamic):
        return True, False
    stored_here = name == _checkpoint_name(target, layer, index, module)
    stored = layer.stored_quantized(module) if stored_here else False
    unlisted = not gptq_quantized_linear(name, stored, target.quant.blocks)
    return unlisted, unlisted


__all__ = [
    "ALWAYS_UNQUANTIZED",
    "AWQ",
    "AWQ_LISTED",
    "CHECKPOINT_NAMES",
    "DYNAMIC_RULES",
    "FUSED_BY_NAME",
    "FUSED_NAME_RULES",
    "GPTQ",
    "GPTQ_SWITCH",
    "HEAD_RULES",
    "LISTED",
    "MARLIN_GROUPS",
    "MODELOPT",
    "MODELOPT_PARTS",
    "NAME_MAP",
    "OWN_FACT",
    "QUARK",
    "RENUMBERED_FACT",
    "RULES",
    "RUNTIME_NAMES",
    "RUNTIME_RENUMBERED",
    "SGLANG_GPTQ",
    "SGLANG_LISTED",
    "SGLANG_PATHS",
    "SGLANG_QUARK",
    "SHARD_CHECKED_RULES",
    "as_matched",
    "awq_unquantized",
    "built_modules",
    "engine_name",
    "entry_renames",
    "excluded",
    "exclusion_naming",
    "fused_by_name",
    "gptq_marlin_experts",
    "gptq_quantized_linear",
    "gptq_switch",
    "gptq_unquantized",
    "layer_entry",
    "match_rule",
    "own_quantized",
    "quantizable",
    "shard_mates",
    "shards_disagree",
    "switches_layers",
    "unquantized_under",
    "unsafe_entries",
]
