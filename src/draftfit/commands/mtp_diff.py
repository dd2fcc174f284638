"""`draftfit diff A B --method mtp`: two targets' MTP parts as each engine release sees them.

Typically a quantized export against its BF16 original. Each side is read as the MTP check
reads it (config, index, the headers of the MTP shards) and checked at every release; the
comparison reads what each release made of both (the typed MTP part of its view,
:class:`draftfit.engines.mtp_view.MtpView`) and the MTP layers as shipped:

* the MTP family (the class the release builds) — DF802, matters;
* the MTP depth the release reads and the layers it builds — DF803, matters;
* the layers shipped and the modules of each (a module one side lacks) — DF806, matters;
* the release's verdict on each side (e.g. an exclusion list that covers the BF16 MTP layer
  on one side only) — DF808, matters;
* how each MTP module is stored (quantized or not, its weight's dtype), the quantization
  method and the exclusion list — DF813 / DF812, raw (info): an export changes them on
  purpose, and what it changes for the engine is in the verdicts;
* tensor names that look like MTP tensors but are outside the family's naming — DF814.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from draftfit.commands.diff_findings import collect_difference, diff_finding
from draftfit.commands.diff_report import DiffReport, DiffResult, set_verdicts
from draftfit.draft.mtp import MtpLayer, MtpTarget
from draftfit.engines.installed import resolve_engines
from draftfit.engines.mtp_view import MtpView
from draftfit.engines.profile import Profile
from draftfit.location import Location
from draftfit.mtp_check import check_mtp, mtp_target, open_mtp_target
from draftfit.report import EngineResult, Finding, findings_by_engine
from draftfit.rule_ids import (
    CONFIG_KEY_DIFFERS,
    DIMENSION_DIFFERS,
    DRAFT_CLASS_DIFFERS,
    ENGINE_VERDICT_DIFFERS,
    PARAMETER_DIFFERS,
    TENSOR_DTYPE_DIFFERS,
    TENSOR_NAME_DIFFERS,
    RuleId,
    Severity,
)
from draftfit.serve.settings import ServeSettings

EMITS: tuple[RuleId, ...] = (
    DRAFT_CLASS_DIFFERS,
    DIMENSION_DIFFERS,
    PARAMETER_DIFFERS,
    ENGINE_VERDICT_DIFFERS,
    CONFIG_KEY_DIFFERS,
    TENSOR_DTYPE_DIFFERS,
    TENSOR_NAME_DIFFERS,
)
EMITS_STAGE = "diff: two targets' MTP layers"

SHOWN = 8
Difference = tuple[RuleId, str, Location]


def diff_mtp_paths(
    draft: str | Path,
    reference: str | Path,
    engines: Iterable[str] | None = None,
    serve: ServeSettings | None = None,
) -> DiffReport:
    """Read both targets as the MTP check does and compare their MTP parts."""
    profiles = resolve_engines(engines)
    sides = [open_mtp_target(source) for source in (draft, reference)]
    reports = [check_mtp(checkpoint, profiles, serve, names) for checkpoint, names in sides]
    targets = [mtp_target(checkpoint, names) for checkpoint, names in sides]
    collected: dict[tuple[object, ...], Finding] = {}
    results: list[DiffResult] = []
    applying = [findings_by_engine(report.findings) for report in reports]
    for index, profile in enumerate(profiles):
        a, b = (report.engines[index] for report in reports)
        differences = list(_view_differences(a, b, profile))
        differences += _verdict_difference(
            a, b, [by.get(profile.key, []) for by in applying], profile
        )
        for rule, message, location in differences:
            collect_difference(collected, rule, message, location, profile.key)
        result = DiffResult(profile.engine, profile.version, profile.title)
        result.chosen_because = profile.chosen_because
        for side in (a, b):
            for reason in side.unverified_reasons:
                if reason not in result.unverified_reasons:
                    result.unverified_reasons.append(reason)
        results.append(result)
    keys = [p.key for p in profiles]
    for rule, message, location in _shipped_differences(*targets):
        group = "diff" if rule is PARAMETER_DIFFERS else "raw"
        finding = diff_finding(rule, message, location, keys, group)
        collected.setdefault(finding.key(), finding)
    findings = sorted(collected.values(), key=lambda f: (-int(f.severity), f.code, f.message))
    set_verdicts(findings, results)
    titles = tuple(_title(t) for t in targets)
    return DiffReport(
        sides[0][0].origin,
        sides[1][0].origin,
        (titles[0], titles[1]),
        findings,
        results,
        ["both read as targets carrying MTP layers (--method mtp)"],
    )


def _title(target: MtpTarget) -> str:
    family = target.family.title if target.family is not None else "unknown family"
    quant = f", {target.quant.method}" if target.quant.method else ""
    return f"MTP target ({family}{quant})"


def _view(result: EngineResult) -> MtpView | None:
    return result.view.mtp if result.view is not None else None


def _view_differences(a: EngineResult, b: EngineResult, profile: Profile) -> Iterable[Difference]:
    """What the release made of each side's MTP layers, where it differs."""
    view_a, view_b = _view(a), _view(b)
    if view_a is None or view_b is None:
        return
    title = profile.title
    if view_a.family != view_b.family:
        yield (
            DRAFT_CLASS_DIFFERS,
            f"{title} builds the MTP draft of a `{view_a.family}` target for the draft and of "
            f"a `{view_b.family}` target for the reference",
            Location("config.json", "/architectures"),
        )
    if view_a.depth_used != view_b.depth_used:
        yield (
            DIMENSION_DIFFERS,
            f"{title} reads an MTP depth of {view_a.depth_used} for the draft and "
            f"{view_b.depth_used} for the reference",
            Location("config.json"),
        )
    if view_a.layers_built != view_b.layers_built:
        yield (
            DIMENSION_DIFFERS,
            f"{title} builds MTP layers {_layers(view_a.layers_built)} for the draft and "
            f"{_layers(view_b.layers_built)} for the reference",
            Location("config.json"),
        )


def _layers(layers: tuple[int, ...] | None) -> str:
    return "none" if not layers else ", ".join(str(i) for i in layers)


def _verdict_difference(
    a: EngineResult, b: EngineResult, applying: list[list[Finding]], profile: Profile
) -> Iterable[Difference]:
    """The release's verdicts on the two sides, where they differ (with what decides each)."""
    if a.verdict == b.verdict:
        return
    deciding = [
        ", ".join(sorted({f.code for f in found if f.severity == Severity.ERROR})) or "none"
        for found in applying
    ]
    yield (
        ENGINE_VERDICT_DIFFERS,
        f"{profile.title} finds the draft {a.verdict} (errors: {deciding[0]}) and the "
        f"reference {b.verdict} (errors: {deciding[1]}); `draftfit check --method mtp` on "
        "each says why",
        Location("config.json"),
    )


def _shipped_differences(a: MtpTarget, b: MtpTarget) -> Iterable[Difference]:
    """The MTP layers as shipped: layers, modules, how each module is stored, the
    quantization method, the exclusion list, stray MTP-like names."""
    if a.shipped() != b.shipped():
        yield (
            PARAMETER_DIFFERS,
            f"the draft ships MTP layers {_layers(a.shipped())}, the reference "
            f"{_layers(b.shipped())}",
            Location("model.safetensors.index.json"),
        )
    for index in sorted(set(a.layers) & set(b.layers)):
        yield from _layer_differences(a.layers[index], b.layers[index])
    if a.quant.method != b.quant.method:
        yield (
            CONFIG_KEY_DIFFERS,
            f"quantization: the draft `{a.quant.method or 'none'}`, the reference "
            f"`{b.quant.method or 'none'}`",
            Location("config.json", "/quantization_config"),
        )
    only_a = sorted(set(a.quant.exclusions) - set(b.quant.exclusions))
    only_b = sorted(set(b.quant.exclusions) - set(a.quant.exclusions))
    if only_a or only_b:
        yield (
            CONFIG_KEY_DIFFERS,
            "exclusion list: only the draft's names "
            + _names(only_a)
            + "; only the reference's names "
            + _names(only_b),
            Location("config.json", "/quantization_config"),
        )
    if a.stray != b.stray:
        yield (
            TENSOR_NAME_DIFFERS,
            f"names that look like MTP tensors outside the family's naming: the draft "
            f"{_names(list(a.stray))}, the reference {_names(list(b.stray))}",
            Location("model.safetensors.index.json"),
        )


def _layer_differences(a: MtpLayer, b: MtpLayer) -> Iterable[Difference]:
    modules_a, modules_b = a.modules(), b.modules()
    for missing, side, other in (
        (sorted(modules_b - modules_a), "the draft", "the reference"),
        (sorted(modules_a - modules_b), "the reference", "the draft"),
    ):
        if missing:
            yield (
                PARAMETER_DIFFERS,
                f"MTP layer {a.prefix.rstrip('.')}: {side} lacks {_names(missing)}, which "
                f"{other} ships",
                Location(tensor=(a.prefix if side == "the draft" else b.prefix) + missing[0]),
            )
    stored: list[str] = []
    for module in sorted(modules_a & modules_b):
        how_a, how_b = _storage(a, module), _storage(b, module)
        if how_a != how_b:
            stored.append(f"`{module}` ({how_a} vs {how_b})")
    if stored:
        shown = ", ".join(stored[:SHOWN]) + (
            f" and {len(stored) - SHOWN} more" if len(stored) > SHOWN else ""
        )
        yield (
            TENSOR_DTYPE_DIFFERS,
            f"MTP layer {a.prefix.rstrip('.')} stores modules differently (draft vs "
            f"reference): {shown}",
            Location(tensor=a.prefix + stored[0].split("`")[1]),
        )


def _storage(layer: MtpLayer, module: str) -> str:
    quantized = layer.stored_quantized(module)
    weight = layer.tensors.get(module + ".weight")
    dtype = weight.dtype if weight is not None else "?"
    if quantized is None:
        return "not read"
    return f"quantized {dtype}" if quantized else dtype


def _names(names: list[str]) -> str:
    if not names:
        return "none"
    shown = ", ".join(f"`{n}`" for n in names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


__all__ = ["diff_mtp_paths"]
