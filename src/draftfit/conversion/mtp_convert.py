"""`draftfit convert TARGET --method mtp`: the one fix of a target's MTP layers that changes
no tensor byte, an exclusion list in the quantization config (DF540, DF541).

The plan copies every tensor verbatim into shards that keep the input's grouping, writes
the config with the MTP layers' unquantized modules added to the exclusion key of the
target's quantization method, under the names each requested engine release matches, and
the entries that name MTP modules stored quantized taken out (where they name no backbone
module; :mod:`draftfit.conversion.mtp_exclusions`), and copies the other files. It is written as
every conversion is (:func:`draftfit.conversion.write.write_plan`: a marked temporary
folder swapped into place, the input only read, free space checked, bytes copied by the
kernel where it can), then read back and checked again as an MTP target at the same
releases. Where no exclusion list fixes the target, nothing is written and the message
says what the exporter must do.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint import load_checkpoint
from draftfit.checkpoint.model import Checkpoint
from draftfit.conversion.mtp_exclusions import (
    AWQ_METHOD,
    LAYER_RULE_KEYS,
    ExclusionFix,
    GptqPlan,
    Removal,
    emptied_keys,
    gptq_fix,
    layer_entries,
    match_rules,
    namings_of,
    plan_exclusions,
    plan_gptq,
    plan_removal,
    stored_unquantized,
    why_not_fixable,
)
from draftfit.conversion.output import MARKER, MARKER_PART, check_output_path
from draftfit.conversion.plan import Edit, OutputTensor, Plan
from draftfit.conversion.write import write_plan
from draftfit.draft.mtp import MtpTarget, mtp_names
from draftfit.engines.installed import resolve_engines
from draftfit.engines.procedure.mtp_exclusions import (
    AWQ,
    AWQ_LISTED,
    EXACT_NO_MOE,
    GPTQ,
    RUNTIME_RENUMBERED,
    SGLANG_GPTQ,
    SGLANG_LISTED,
    SGLANG_QUARK,
    SHARD_CHECKED_RULES,
    exclusion_naming,
    own_quantized,
    unsafe_entries,
)
from draftfit.engines.procedure.mtp_quant_method import mla_fused_by_name
from draftfit.engines.profile import Profile
from draftfit.errors import UsageError
from draftfit.mtp_check import MTP, check_mtp, mtp_target, quant_file
from draftfit.records import replace
from draftfit.rule_ids import MTP_QUANT_EXCLUDED_STORED
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from draftfit.conversion import ConvertResult

CONFIG = "config.json"
# The exclusion rules whose fix `check` names and convert does not write (SGLang's GPTQ keys,
# AWQ entries and compressed-tensors `ignore` entries of its runtime names).
CHECK_ONLY = frozenset({SGLANG_GPTQ, AWQ_LISTED, SGLANG_LISTED, SGLANG_QUARK})
INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def convert_mtp_path(
    source: str | Path,
    out: str | Path | None,
    engines: list[str] | None = None,
    *,
    dry_run: bool = False,
    force: bool = False,
    verify: bool = False,
    notify: Callable[[str], None] | None = None,
    serve: ServeSettings | None = None,
) -> ConvertResult:
    """Plan (and unless `dry_run`, write and check) the exclusion list that fixes the target
    at `source` for the releases `engines` (default: as `check`). Returns a
    :class:`draftfit.conversion.ConvertResult`; raises :class:`UsageError` where no
    exclusion list fixes it (the message says what the exporter must do)."""
    from draftfit.conversion import (  # the package imports this module's caller
        ConvertResult,
        out_spelling,
    )
    from draftfit.origins.reference import is_hub_reference

    if is_hub_reference(str(source)):
        raise UsageError(
            "convert needs a local checkpoint: download it first (`hf download OWNER/NAME "
            "--local-dir DIR`)"
        )
    if out is None and not dry_run:
        raise UsageError("convert needs -o OUT (or --dry-run)")
    checkpoint = load_checkpoint(source)
    if checkpoint.config is None:
        raise UsageError(f"{source}: no readable config.json, so there is no config to fix")
    if out is not None:
        check_output_path(checkpoint.root, Path(out), force)
    profiles = resolve_engines(engines)
    target = mtp_target(checkpoint)
    if target.family is None:
        raise UsageError(
            f"{source}: draftfit's MTP family table has no naming for this target, so it "
            "cannot tell which tensors are its MTP layers"
        )
    is_mtp = mtp_names(checkpoint.config)
    backbone = {name.rsplit(".", 1)[0] for name in checkpoint.tensors if not is_mtp(name)}
    fix = plan_mtp_fix(source, checkpoint, target, profiles, serve, backbone)
    plan = _plan(checkpoint, fix)
    if dry_run:
        shown = Path(out) if out else None
        return ConvertResult(plan, shown, False, None, out_as_given=out_spelling(out))
    assert out is not None
    result = write_plan(
        plan,
        checkpoint,
        Path(out),
        force=force,
        engines=[p.label for p in profiles],
        verify=verify,
        notify=notify,
    )
    written = load_checkpoint(result.out)
    report = check_mtp(written, profiles, serve)
    return ConvertResult(
        plan, Path(out), True, report, result.removed_leftovers, out_as_given=out_spelling(out)
    )


def plan_mtp_fix(
    source: str | Path,
    checkpoint: Checkpoint,
    target: MtpTarget,
    profiles: list[Profile],
    serve: ServeSettings | None = None,
    backbone: set[str] | None = None,
) -> ExclusionFix:
    """The config change that fixes the MTP layers of `target` (read from `checkpoint`,
    named `source` in messages) for the releases `profiles`: entries added for DF540 and,
    where `backbone` (the target's other module names) is given, entries taken out for
    DF541. Raises :class:`UsageError` where no config change fixes it (the message says
    what to do instead). Shared by `convert` and the MTP recipe (which reads only the MTP
    part of an index: it passes no `backbone`, and a change that takes entries out is then
    left to `convert`)."""
    assert checkpoint.config is not None
    why = why_not_fixable(target, checkpoint.config)
    if why is not None:
        raise UsageError(f"no config change fixes {source}'s MTP layers: {why}")
    namings = namings_of(profiles)
    rules = match_rules(target, profiles)
    if namings is None or rules is None:
        raise UsageError(
            "draftfit has not read how "
            + ", ".join(p.title for p in profiles)
            + f" matches `{target.quant.scheme or target.quant.method}` quantization "
            "exclusions: choose a read release with --engine"
        )
    shared = [p.title for p in profiles if exclusion_naming(p, target) == RUNTIME_RENUMBERED]
    if shared:
        raise UsageError(
            f"no config change fixes {source}'s MTP layers for {', '.join(shared)}: it builds "
            "them under `model.layers.{i}`, the names of a backbone layer too, so an entry "
            "that leaves them unquantized leaves that layer unquantized as well; re-export the "
            "target with the MTP layers quantized like the backbone"
        )
    unwritten = [p.title for p, rule in zip(profiles, rules, strict=True) if rule in CHECK_ONLY]
    if unwritten:
        raise UsageError(
            f"convert does not write {', '.join(unwritten)}'s fix for the MTP layers of "
            f"this `{target.quant.method}` target: `draftfit check` names the `dynamic` key "
            "or exclusion entry to add by hand"
        )
    if EXACT_NO_MOE in rules and any(
        ".experts." in module for layer in target.layers.values() for module in layer.modules()
    ):
        raise UsageError(
            f"no config change fixes {source}'s MTP layers for "
            + ", ".join(
                p.title for p, rule in zip(profiles, rules, strict=True) if rule == EXACT_NO_MOE
            )
            + ": it builds the MTP layer's fused MoE quantized whatever the exclusion list says; "
            "re-export the target with the MTP layers quantized like the backbone"
        )
    listed = target.quant.dynamic if GPTQ in rules else target.quant.exclusions
    unsafe = sorted({e for rule in rules for e in unsafe_entries(listed, rule)})
    if unsafe:
        raise UsageError(
            f"no config change is written for {source}: the exclusion entry `{unsafe[0][:80]}` "
            "is a pattern whose matching time draftfit cannot bound (it does not compile, or "
            "nests or repeats too much), so it cannot tell which modules it names; rewrite it "
            "as a plainer pattern first"
        )
    title = target.family.title if target.family else "the target"
    own = _read_by_all(
        profiles,
        [own_quantized(profile, target) for profile in profiles],
        f"builds {title}'s own MTP modules (`mtp.fc`) quantized",
    )
    by_name = _read_by_all(
        profiles,
        [
            mla_fused_by_name(profile, target) if rule in SHARD_CHECKED_RULES else frozenset()
            for profile, rule in zip(profiles, rules, strict=True)
        ],
        f"reads {title}'s fused MLA module by its shards",
    )
    whole_layer = any(rule in LAYER_RULE_KEYS for rule in rules)  # ModelOpt, Quark
    if whole_layer and layer_entries(target, namings, rules, own, by_name) is None:
        raise UsageError(
            f"no config change fixes {source}'s MTP layers: the exclusion rule of "
            + ", ".join(p.title for p in profiles)
            + " takes no entry for a whole MTP layer under the names it matches; re-export "
            "the target with the MTP layers quantized like the backbone"
        )
    if GPTQ in rules:
        tensor_parallel = (
            (serve.draft_tensor_parallel_size or serve.tensor_parallel_size) if serve else None
        )
        plan_keys = plan_gptq(target, profiles, backbone or (), own, tensor_parallel)
        if backbone is None:
            plan_keys = replace(plan_keys, removed=(), shared=())
        _check_gptq(source, plan_keys, profiles)
        fix = gptq_fix(checkpoint.config, plan_keys, namings)
    else:
        removal = (
            plan_removal(target, profiles, backbone, own) if backbone is not None else Removal()
        )
        _check_removal(source, target, removal, whole_layer)
        fix = plan_exclusions(
            target,
            checkpoint.config,
            namings,
            rules,
            quant_file(checkpoint),
            own,
            removal,
            _awq_derived(source, checkpoint, target, rules, backbone),
            by_name,
        )
    if fix is None:
        raise UsageError(
            f"{source}: every unquantized MTP module is already excluded, and no entry names "
            f"a quantized one, under the names {', '.join(p.title for p in profiles)} "
            "matches: nothing to convert"
        )
    return fix


def _read_by_all(
    profiles: list[Profile], found: list[frozenset[str] | None], question: str
) -> frozenset[str]:
    """The union of each release's answer in `found` (one per profile); a usage error naming
    the releases where it was not read (None) and the `question` they were not read for."""
    unread = [p.title for p, answer in zip(profiles, found, strict=True) if answer is None]
    if unread:
        raise UsageError(
            f"draftfit has not read whether {', '.join(unread)} {question}: choose a read "
            "release with --engine"
        )
    return frozenset().union(*(answer for answer in found if answer is not None))


def _awq_derived(
    source: str | Path,
    checkpoint: Checkpoint,
    target: MtpTarget,
    rules: tuple[str, ...],
    backbone: set[str] | None,
) -> tuple[str, ...]:
    """For an AWQ config that lists no module: the modules the checkpoint stores
    unquantized, which vLLM otherwise lists itself and a written list must keep (every
    tensor's dtype is needed: without `backbone`, the recipe's partial read, it raises
    :class:`UsageError`). Empty for any other config."""
    if AWQ not in rules or target.quant.exclusions:
        return ()
    if backbone is None:
        raise UsageError(
            f"{source}'s AWQ config lists no module left unquantized (vLLM then lists those "
            "the checkpoint stores unquantized): the list to write needs every tensor's "
            "dtype; run `draftfit convert TARGET --method mtp`, which reads them"
        )
    return stored_unquantized(checkpoint.tensors)


def _check_gptq(source: str | Path, plan: GptqPlan, profiles: list[Profile]) -> None:
    """Raise :class:`UsageError` where no `dynamic` key fixes the GPTQ target (the message
    says what to do instead)."""
    titles = ", ".join(p.title for p in profiles)
    if plan.elsewhere:
        shown = ", ".join(f"`{name}`" for name in plan.elsewhere[:4])
        raise UsageError(
            f"no config change fixes {source}'s MTP layers: {titles} builds {shown} under "
            "names no quantized tensor of the checkpoint has, so it builds them unquantized "
            "whatever `dynamic` says; re-export the target with the MTP layer unquantized "
            "(BF16)"
        )
    if plan.fallback:
        raise UsageError(
            f"no config change fixes {source}'s MTP layers: {titles} builds the experts of "
            f"{', '.join(plan.fallback)} with its GPTQ MoE WNA16 fallback (their widths, group "
            "size or tensor-parallel size are not ones its Marlin method takes, or the config "
            "does not give them), which reads no `dynamic` key; re-export the target with the "
            "MTP layers quantized like the backbone"
        )
    if plan.mixed:
        raise UsageError(
            f"no config change fixes {source}'s MTP layers: {', '.join(plan.mixed)} holds "
            "both unquantized and GPTQ-stored modules, which no one `dynamic` key serves; "
            "re-export the MTP layer all unquantized or all quantized like the backbone"
        )
    if plan.shared:
        _refuse_shared(source, plan.shared, "the `dynamic` key")


def _refuse_shared(source: str | Path, shared: tuple[str, ...], what: str) -> None:
    """Raise :class:`UsageError`: the entries `shared` (`what` names one of them) leave both
    MTP modules stored quantized and backbone modules unquantized, so none can be taken out."""
    shown = ", ".join(f"`{entry}`" for entry in shared[:4])
    raise UsageError(
        f"no config change fixes {source}'s MTP layers: {what} {shown} (of "
        f"{len(shared)}) names both MTP modules stored quantized and backbone modules, so "
        "taking it out would quantize the backbone modules too; replace it by one that names "
        "only the backbone modules, or store the MTP layer unquantized"
    )


def _check_removal(
    source: str | Path, target: MtpTarget, removal: Removal, whole_layer: bool
) -> None:
    """Raise :class:`UsageError` where the entries naming quantized MTP modules cannot be
    taken out by this conversion (the message says what to do instead)."""
    if removal.shared:
        _refuse_shared(source, removal.shared, "the exclusion entry")
    if removal.entries and whole_layer and target.quant.method != AWQ_METHOD:
        shown = ", ".join(f"`{entry}`" for entry in removal.entries[:4])
        raise UsageError(
            f"take {shown} out of the exclusion list in {target.quant.source} by hand: they "
            f"name MTP modules stored quantized like the backbone ({MTP_QUANT_EXCLUDED_STORED.code}"
            "); draftfit writes this change for FP8, compressed-tensors, GPTQ and AWQ configs "
            "only"
        )
    if (
        removal.entries
        and target.quant.method == AWQ_METHOD
        and set(target.quant.exclusions) <= set(removal.entries)
    ):
        raise UsageError(
            f"no config change is written for {source}: taking the entries that name quantized "
            "MTP modules out would leave `modules_to_not_convert` empty, and vLLM would then "
            "list the modules the checkpoint stores unquantized itself, a change beyond the MTP "
            "layers; take them out by hand, or leave the key out, if that is what you want"
        )
    emptied = emptied_keys(target, removal)
    if emptied:
        raise UsageError(
            f"no config change is written for {source}: taking the entries that name "
            f"quantized MTP modules out would leave `{emptied[0]}` empty, and the config "
            "class would then read another exclusion key instead; merge the keys into one "
            "first"
        )


def _plan(checkpoint: Checkpoint, fix: ExclusionFix) -> Plan:
    """Every tensor copied verbatim (each weight file's tensors kept together), the fixed
    config, and the other files copied."""
    shard_of = {name: i for i, name in enumerate(checkpoint.weight_files)}
    tensors = [
        OutputTensor(name, info.dtype, info.shape, info, shard=shard_of.get(info.file, 0))
        for name, info in checkpoint.tensors.items()
    ]
    skip = {
        CONFIG,
        *([fix.file] if fix.document is not None else []),
        *INDEXES,
        *checkpoint.weight_files,
        *checkpoint.ignored_weight_files,
        MARKER,
        MARKER_PART,
    }
    edits = [
        Edit(
            "set-config",
            f"{fix.parent}/{key}",
            f"take {len(out)} entr{'y' if len(out) == 1 else 'ies'} out of `{key}` "
            f"({', '.join(f'`{e}`' for e in out[:4])}{' ...' if len(out) > 4 else ''}): "
            "they name MTP modules stored quantized like the backbone, which the engine "
            "must build quantized to load their scales",
        )
        for key, out in fix.removed
    ]
    if fix.added:
        names = ", ".join(fix.namings)
        where = f"`{fix.key}`" + (f" of {fix.file}" if fix.document is not None else "")
        shown = ", ".join(f"`{name}`" for name in fix.added[:4])
        edits.append(
            Edit(
                "set-config",
                fix.pointer,
                f"add {len(fix.added)} MTP entr{'y' if len(fix.added) == 1 else 'ies'} to "
                f"{where} ({names} names: {shown}{' ...' if len(fix.added) > 4 else ''}), "
                "so that the engine builds the unquantized MTP layer unquantized"
                + (
                    f", then the {len(fix.kept)} modules the checkpoint stores unquantized, "
                    "which the engine lists itself only while the key is absent"
                    if fix.kept
                    else ""
                ),
            )
        )
    return Plan(
        MTP,
        checkpoint.origin,
        fix.config,
        tensors,
        edits,
        [name for name in checkpoint.files if name not in skip and "/" not in name],
        shards=max(len(checkpoint.weight_files), 1),
        documents={fix.file: fix.document} if fix.document is not None else {},
    )


__all__ = ["convert_mtp_path"]
