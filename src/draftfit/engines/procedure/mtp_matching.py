"""How one module name is matched against a quantization config's exclusion entries, rule by
rule: the string matching each engine's quantization code does (vLLM's ModelOpt and Quark,
SGLang's FP8 paths, ModelOpt globs and compressed-tensors suffixes, GPTQ `dynamic` keys), and
the names of the fused modules SGLang builds from a checkpoint's shards. Pure functions of
names; which rule a release uses, and under which names, is
:mod:`draftfit.engines.procedure.mtp_exclusions`'s.
"""

from __future__ import annotations

import fnmatch
import re

from draftfit.engines.name_patterns import RE_PREFIX, NameList, bounded_pattern

# A routed expert's module, under the layer's prefix (built into one fused MoE layer, not a
# stacked linear layer: `model.decoder.mlp.experts` in SGLang's runtime names)
ROUTED_EXPERT = re.compile(r"mlp\.experts\.\d+\.")
MAX_WILDCARD_CHARS = 256
# SGLang's ModelOpt: an entry ending in one of these also matches a fused module holding it.
FUSED_TAILS = frozenset({"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj"})
_EXPERT_PARENT = re.compile(r"(.*\.mlp\.experts)\.\d+\.[^.]+")


# The projections of the expert SGLang's compressed-tensors reads a fused MoE's scheme from.
EXPERT_ZERO = ("0.gate_proj", "0.up_proj", "0.down_proj")


def sglang_listed(name: str, entries: tuple[str, ...], names: NameList) -> bool:
    """SGLang's compressed-tensors reading of the `ignore` list: `name` as :func:`suffix_listed`
    reads it; the fused experts (or a per-expert name) by expert 0's three projections."""
    parent = name if name.endswith(".mlp.experts") else fused_parent(name)
    if parent != name or name.endswith(".mlp.experts"):
        return all(suffix_listed(f"{parent}.{part}", entries, names) for part in EXPERT_ZERO)
    return suffix_listed(name, entries, names)


def suffix_listed(name: str, entries: tuple[str, ...], names: NameList) -> bool:
    """`name` equal to an entry, matched from its start by a `re:` pattern, or ending in a
    plain entry on a dot boundary."""
    if names.matches(name):
        return True
    return any(not entry.startswith(RE_PREFIX) and name.endswith("." + entry) for entry in entries)


def fused_parent(name: str) -> str:
    """The fused-experts module a per-expert name belongs to (the name itself otherwise)."""
    found = _EXPERT_PARENT.fullmatch(name)
    return found.group(1) if found else name


def modelopt_match(name: str, entries: tuple[str, ...]) -> bool:
    """vLLM's ModelOpt (`is_layer_excluded`): an entry equal to or contained in the name,
    or a shell wildcard matching it."""
    return any(
        len(entry) <= MAX_WILDCARD_CHARS and (entry in name or fnmatch.fnmatch(name, entry))
        for entry in entries
        if entry
    )


def modelopt_parts_match(name: str, entries: tuple[str, ...]) -> bool:
    """SGLang's ModelOpt (`is_layer_excluded`): each entry, `.` literal and `*` any run,
    matching the whole name or one of its dot-separated parts; an entry ending in a fused
    attention projection also matches a module whose last part contains it."""
    parts = name.split(".")
    last = parts[-1]
    for entry in entries:
        if not entry or len(entry) > MAX_WILDCARD_CHARS:
            continue
        if glob_fullmatch(entry, name) or any(glob_fullmatch(entry, part) for part in parts):
            return True
        tail = entry.rsplit(".", 1)[-1]
        if tail in FUSED_TAILS and tail in last:
            return True
    return False


def sglang_paths_match(name: str, entries: tuple[str, ...]) -> bool:
    """SGLang's FP8 (`Fp8Config.from_config` keeps each entry with and without `model.`;
    `is_layer_skipped`): an entry equal to the module path, a parent of it, or a dotted run
    inside it; a fused experts module also by any entry holding its path."""
    normalized = sglang_fp8_entries(entries)
    path = name.rstrip(".")
    if any(module_path_match(entry, path) for entry in normalized):
        return True
    return "experts" in path and any(path in entry for entry in normalized if "experts" in entry)


def sglang_fp8_entries(entries: tuple[str, ...]) -> tuple[str, ...]:
    """The entries as SGLang's FP8 config keeps them: each with and without `model.`."""
    normalized: list[str] = []
    for entry in entries:
        if not entry or len(entry) > MAX_WILDCARD_CHARS:
            continue
        base = entry.removeprefix("model.")
        normalized += [base, "model." + base]
    return tuple(normalized)


def module_path_match(entry: str, path: str) -> bool:
    """SGLang's `_module_path_match`: `entry` equal to the module path, a parent of it, or a
    dotted run inside it (so `mlp.gate` does not reach `mlp.gate_up_proj`)."""
    ignored, path = entry.rstrip("."), path.rstrip(".")
    return ignored == path or path.startswith(ignored + ".") or f".{ignored}." in f".{path}."


# The fused modules SGLang's `is_layer_skipped` reads by their shards' paths: always these
# (its fallback mapping, `_FALLBACK_FUSED_SHARDS`) ...
SGLANG_SHARDS = {
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
    "gate_up_proj": ("gate_proj", "up_proj"),
}
# ... and an MLA layer's fused `q_a_proj` + `kv_a_proj_with_mqa` where the model class maps it
# (DeepSeek's classes write it into their shared mapping when built; GLM-4.7-Flash's do not).
SGLANG_MLA_SHARDS = {"fused_qkv_a_proj_with_mqa": ("q_a_proj", "kv_a_proj_with_mqa")}


def sglang_skipped(
    built: str, entries: tuple[str, ...], by_fused_name: frozenset[str]
) -> tuple[bool, ...]:
    """SGLang's `is_layer_skipped` on the module it builds (`built`: a fused module by the
    fused name, the routed experts as `....mlp.experts`) with `entries` as the config class
    keeps them: per shard of a fused module (each shard's path matched on dotted
    boundaries; SGLang refuses the build where they differ; an MLA fused module of
    `by_fused_name`, which the model class does not map, by its own name), else one value
    for the module itself (its path, or for a module under `experts` an entry holding it)."""
    head, _, last = built.rpartition(".")
    shards = SGLANG_SHARDS.get(last)
    if shards is None and last not in by_fused_name:
        shards = SGLANG_MLA_SHARDS.get(last)
    usable = [e for e in entries if e and len(e) <= MAX_WILDCARD_CHARS]
    if shards:
        paths = [f"{head}.{shard}" if head else shard for shard in shards]
        return tuple(any(module_path_match(entry, path) for entry in usable) for path in paths)
    if any(module_path_match(entry, built) for entry in usable):
        return (True,)
    return ("experts" in built and any(built in e for e in usable if "experts" in e),)


def sglang_modelopt_match(
    built: str, entries: tuple[str, ...], experts: bool, by_fused_name: frozenset[str]
) -> bool:
    """SGLang's ModelOpt (`_get_quant_method`) on the module it builds (`built`): a linear
    module is left unquantized where `is_layer_skipped` skips every shard of it
    (:func:`sglang_skipped`, the entries as written) or `is_layer_excluded` names it
    (:func:`modelopt_parts_match`); the fused experts where `is_layer_excluded` names them
    (it reads nothing else for a MoE layer)."""
    if experts:
        return modelopt_parts_match(built, entries)
    return all(sglang_skipped(built, entries, by_fused_name)) or modelopt_parts_match(
        built, entries
    )


# The fused modules SGLang's Quark (`should_ignore_layer`) reads by their shards' names: the
# loader maps these two for every Quark target, and the model class may map `qkv_proj`.
SGLANG_QUARK_SHARDS = {
    "gate_up_proj": ("gate_proj", "up_proj"),
    "fused_qkv_a_proj_with_mqa": ("q_a_proj", "kv_a_proj_with_mqa"),
    "qkv_proj": ("q_proj", "k_proj", "v_proj"),
}


def sglang_quark_skipped(
    built: str, names: NameList, by_fused_name: frozenset[str]
) -> tuple[bool, ...]:
    """SGLang's Quark `should_ignore_layer` on the module it builds (`built`), `names` its
    `exclude` list: an entry equal to the name or a `re:` pattern matching its start; the
    fused experts also by any entry naming a module under them (one expert's projection);
    else a fused module by its shards' names, per shard (SGLang refuses the build where they
    differ; one of `by_fused_name`, which the model class does not map, by its own only)."""
    if names.matches(built):
        return (True,)
    if built.endswith(".experts") and any(entry.startswith(built + ".") for entry in names.entries):
        return (True,)
    head, _, last = built.rpartition(".")
    shards = None if last in by_fused_name else SGLANG_QUARK_SHARDS.get(last)
    if not shards:
        return (False,)
    return tuple(names.matches(f"{head}.{shard}" if head else shard) for shard in shards)


def gptq_skipped(name: str, keys: tuple[str, ...]) -> bool:
    """vLLM's GPTQ `dynamic` (`get_dynamic_override`): the first key whose pattern (after
    `-:` or `+:`) matches the start of `name` decides; a `-:` key leaves the module
    unquantized. A routed expert is matched by the fused experts module it is built into
    (`....mlp.experts`). A pattern that is not a regular expression matches nothing."""
    name = fused_parent(name)
    for key in keys:
        pattern = bounded_pattern(dynamic_pattern(key))
        if pattern is not None and pattern.match(name):
            return key.startswith("-:")
    return False


def dynamic_pattern(key: str) -> str:
    """The regular expression of a GPTQ `dynamic` key (after its `-:` or `+:`)."""
    return key[2:] if key.startswith(("-:", "+:")) else key


def glob_pattern(entry: str) -> str:
    """SGLang's ModelOpt reading of an entry: `.` literal, `*` any run, and any other
    character as the regular expression it is."""
    return entry.replace(".", r"\.").replace("*", ".*")


# Characters that make an entry a regular expression to SGLang's ModelOpt, beside `.` / `*`.
REGEX_CHARS = frozenset("\\^$+?{}[]|()")


def glob_fullmatch(entry: str, text: str) -> bool:
    """Whether `entry`, read as SGLang's ModelOpt reads it (:func:`glob_pattern`), matches
    all of `text`. An entry of literals and `*` only is matched segment by segment, leftmost
    first (exact for such globs, and linear in the text whatever the number of `*`); any
    other entry as its bounded regular expression (none: no match)."""
    if REGEX_CHARS.intersection(entry):
        pattern = bounded_pattern(glob_pattern(entry))
        return pattern is not None and pattern.fullmatch(text) is not None
    if "*" not in entry:
        return text == entry
    first, *middle, last = entry.split("*")
    if not text.startswith(first) or len(text) < len(first) + len(last):
        return False
    at = len(first)
    end = len(text) - len(last)
    for piece in middle:
        found = text.find(piece, at, end)
        if found < 0:
            return False
        at = found + len(piece)
    return text.endswith(last) and at <= end


def quark_match(name: str, entries: tuple[str, ...]) -> bool:
    """vLLM's Quark (`should_ignore_layer`): an entry equal to the name or a `re:` pattern
    matching its start; a wildcard entry is not a pattern. The fused experts module is
    ignored when an entry names it or a module under it."""
    parent = fused_parent(name)
    for entry in entries:
        if len(entry) > MAX_WILDCARD_CHARS:
            continue
        if entry.startswith(RE_PREFIX):
            pattern = bounded_pattern(entry[len(RE_PREFIX) :])
            if pattern is not None and pattern.match(parent):
                return True
        elif entry in (name, parent) or entry.startswith(parent + "."):
            return True
    return False


# The checkpoint modules SGLang builds fused, by the fused module's last name part: its GPTQ
# `dynamic` keys and AWQ entries are matched against the fused module's name, never a
# shard's. An MLA layer with `q_a_proj` (a `q_lora_rank`) fuses it with
# `kv_a_proj_with_mqa`, and keeps `q_proj` (no `q_lora_rank`) on its own.
SGLANG_FUSED = {
    "q_proj": "qkv_proj",
    "k_proj": "qkv_proj",
    "v_proj": "qkv_proj",
    "gate_proj": "gate_up_proj",
    "up_proj": "gate_up_proj",
}
SGLANG_FUSED_MLA = {
    "q_a_proj": "fused_qkv_a_proj_with_mqa",
    "kv_a_proj_with_mqa": "fused_qkv_a_proj_with_mqa",
}


def sglang_fused_name(name: str, modules: set[str] | frozenset[str]) -> str:
    """`name` (an MTP module's runtime name) as the module SGLang builds it into: the fused
    module of its shards (:data:`SGLANG_FUSED`; in an MLA layer, `modules` holding
    `kv_a_proj_with_mqa`, `q_a_proj` with it and `q_proj` alone); a routed expert or any
    other module as it is."""
    head, _, last = name.rpartition(".")
    mla = any(module.endswith("kv_a_proj_with_mqa") for module in modules)
    if ROUTED_EXPERT.search(name + "."):
        return name
    if mla and last in SGLANG_FUSED_MLA:
        if not any(module.endswith("q_a_proj") for module in modules):
            return name
        fused = SGLANG_FUSED_MLA[last]
    elif mla and last == "q_proj":
        return name
    else:
        fused = SGLANG_FUSED.get(last, last)
    return f"{head}.{fused}" if head else fused


__all__ = [
    "EXPERT_ZERO",
    "FUSED_TAILS",
    "MAX_WILDCARD_CHARS",
    "REGEX_CHARS",
    "ROUTED_EXPERT",
    "SGLANG_FUSED",
    "SGLANG_FUSED_MLA",
    "SGLANG_MLA_SHARDS",
    "SGLANG_QUARK_SHARDS",
    "SGLANG_SHARDS",
    "dynamic_pattern",
    "fused_parent",
    "glob_fullmatch",
    "glob_pattern",
    "gptq_skipped",
    "modelopt_match",
    "modelopt_parts_match",
    "module_path_match",
    "quark_match",
    "sglang_fp8_entries",
    "sglang_fused_name",
    "sglang_listed",
    "sglang_modelopt_match",
    "sglang_paths_match",
    "sglang_quark_skipped",
    "sglang_skipped",
    "suffix_listed",
]
