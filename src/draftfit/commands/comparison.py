"""`draftfit diff`: compare a draft with a reference the way an engine sees them.

A raw JSON diff between two conventions is mostly noise (`speculators_config` vs
`eagle_config`, `layers.0.*` vs `midlayer.*`) and hides the line that matters (`head_dim`
112 vs 128). This module compares the two canonical descriptions *through each engine's
view*: the draft class the engine resolves, every dimension it builds from, the aux layers
it captures (in one counting convention), the norm behaviour it runs, the vocabulary map,
and every parameter's shape. Each difference either **matters** (it changes what the
engine builds or runs: severity error, exit 1) or is **spelling** the engine resolves the
same way (info). A raw comparison (config keys, values, tensor names after mapping between
naming conventions, dtypes) follows as info findings.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from draftfit.checker import check_checkpoint, resolve_engines
from draftfit.checkpoint import Checkpoint
from draftfit.commands.diff_findings import (
    collect_difference,
    diff_finding,
    differences,
    raw_differences,
)
from draftfit.commands.diff_report import DiffReport, DiffResult, set_verdicts
from draftfit.commands.diff_sides import side_of, target_layers
from draftfit.draft.description import describe
from draftfit.draft.target import Target
from draftfit.engines.profile import Profile
from draftfit.errors import UsageError
from draftfit.mtp_check import MTP
from draftfit.report import Finding
from draftfit.serve.settings import ServeSettings

__all__ = ["DiffReport", "DiffResult", "diff_checkpoints", "diff_paths", "set_verdicts"]


def diff_checkpoints(
    draft: Checkpoint,
    reference: Checkpoint,
    profiles: list[Profile],
    target: Target | None = None,
    method: str | None = None,
    values: str | None = None,
    serve: ServeSettings | None = None,
) -> DiffReport:
    """Compare `draft` with `reference` for every engine profile.

    Each side is checked once for all profiles; the comparison reads the descriptions and
    engine views those checks computed (the method-from-path note, the only part of a view
    that depends on whether the method was given, is not compared). With `values`, each
    side's check also reads its weights' values, so a value error shows as a verdict
    difference."""
    report_a = check_checkpoint(draft, target, profiles, method, values=values, serve=serve)
    report_b = check_checkpoint(reference, target, profiles, method, values=values, serve=serve)
    draft_a, draft_b = report_a.kept().draft, report_b.kept().draft
    layers, layers_note = target_layers(target, draft_a, draft_b)
    notes = [layers_note] if layers_note else []
    collected: dict[tuple[object, ...], Finding] = {}
    results: list[DiffResult] = []
    for index, profile in enumerate(profiles):
        a, b = (
            side_of(checkpoint, report, index)
            for checkpoint, report in ((draft, report_a), (reference, report_b))
        )
        for name, message, location in differences(a, b, profile, layers):
            collect_difference(collected, name, message, location, profile.key)
        result = DiffResult(profile.engine, profile.version, profile.title)
        result.chosen_because = profile.chosen_because
        for side in (a, b):
            for reason in side.result.unverified_reasons:
                if reason not in result.unverified_reasons:
                    result.unverified_reasons.append(reason)
            for code in side.result.unchecked_rules:
                if code not in result.unchecked_rules:
                    result.unchecked_rules.append(code)
        results.append(result)
    keys = [p.key for p in profiles]
    for name, message, location in raw_differences(draft, reference, draft_a, draft_b):
        finding = diff_finding(name, message, location, keys, "raw")
        collected.setdefault(finding.key(), finding)
    findings = sorted(collected.values(), key=lambda f: (-int(f.severity), f.code, f.message))
    set_verdicts(findings, results)
    return DiffReport(
        draft.origin,
        reference.origin,
        (draft_a.dialect.title, draft_b.dialect.title),
        findings,
        results,
        notes,
    )


def diff_paths(
    draft: str | Path,
    reference: str | Path,
    engines: Iterable[str] | None = None,
    target: str | Path | None = None,
    method: str | None = None,
    values: str | None = None,
    serve: ServeSettings | None = None,
    draft_is_for_target: bool = False,
) -> DiffReport:
    """Load both checkpoints (and the target, if given) and compare them (with `serve`, the
    launch's settings, for both; `draft_is_for_target`: the user says both were trained for
    the target, see DF507)."""
    from draftfit.draft.mistakes import refuse_diff_mistakes
    from draftfit.origins.reference import open_checkpoint, open_target

    if method == MTP:
        from draftfit.commands.mtp_diff import diff_mtp_paths

        if target is not None:
            raise UsageError("an MTP diff compares two targets carrying MTP layers: drop --target")
        return diff_mtp_paths(draft, reference, engines, serve)
    profiles = resolve_engines(engines)
    draft_checkpoint, reference_checkpoint = open_checkpoint(draft), open_checkpoint(reference)
    target_obj = open_target(target) if target is not None else None
    if target_obj is not None:
        target_obj.draft_is_for_target = draft_is_for_target
    refuse_diff_mistakes(
        [
            ("draft", draft_checkpoint, describe(draft_checkpoint)),
            ("reference", reference_checkpoint, describe(reference_checkpoint)),
        ],
        target_obj,
        method,
    )
    return diff_checkpoints(
        draft_checkpoint, reference_checkpoint, profiles, target_obj, method, values, serve
    )
