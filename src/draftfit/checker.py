"""The checker: read a draft, describe it, resolve each engine version, run the rules.

This is the library entry point behind `draftfit check`::

    from draftfit.checker import check_path
    report = check_path("./my-draft", target="./target", engines=["vllm==0.34.0"])

The report keeps what the check read and computed (`report.kept()`: the checkpoint, its
description, the target; `result.kept()`: each version's profile and engine view), so serve
recipes (:func:`draftfit.commands.recipe.attach_recipes`), `diff` and `matrix` build on it
instead of doing the work again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint import Checkpoint
from draftfit.draft.aux_counting import AuxCounting
from draftfit.draft.description import EAGLE, EAGLE3, DraftDescription, describe
from draftfit.draft.mistakes import refuse_argument_mistakes
from draftfit.draft.target import Target
from draftfit.engines.installed import resolve_engines
from draftfit.engines.interface import build_view, engine_of
from draftfit.engines.launch_judgement import JudgedLaunch, ReleaseLaunch
from draftfit.engines.profile import EngineVersion, Profile
from draftfit.engines.view import BuildInputs
from draftfit.errors import UsageError
from draftfit.mtp_check import (
    MTP,
    check_mtp,
    check_mtp_path,
    export_needs_target,
    is_nextn_export,
    launches_target_mtp,
    read_export,
    selects_mtp,
)
from draftfit.records import replace
from draftfit.report import (
    UNVERIFIED_RULES,
    AuxLayers,
    DialectFacts,
    EngineResult,
    Finding,
    KeptCheck,
    Report,
    SkippedRule,
    SkipReason,
    TargetFacts,
    findings_by_engine,
    verdict_for,
)
from draftfit.rule_ids import RuleId
from draftfit.rules import all_rules, registered
from draftfit.rules.base import (
    EVENT_RULE_CODES,
    RULES,
    Context,
    Rule,
    Scope,
    Severity,
    Violation,
    view_event_names,
)
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

    from draftfit.values.facts import ValueFacts

METHOD_CHOICES = (EAGLE3, EAGLE, "auto", MTP)

__all__ = [
    "METHOD_CHOICES",
    "carry_from_source",
    "check_checkpoint",
    "check_path",
    "resolve_engines",
]


def check_path(
    draft: str | Path,
    target: str | Path | None = None,
    engines: Iterable[str] | None = None,
    method: str | None = None,
    values: str | None = None,
    serve: ServeSettings | None = None,
    draft_is_for_target: bool = False,
) -> Report:
    """Check the draft `draft` (next to `target`, if given) for each engine. `values`
    (`"sampled"` or `"full"`) also reads the weights' values and runs the DF7xx rules;
    `serve` holds the launch's settings (:mod:`draftfit.engines.launch`), which apply to the
    profiles of their engine. `draft_is_for_target`: the user says the draft was trained for
    this target, so a recorded verifier that names another model is reported as info
    (DF507), not counted.

    Both may be local directories or Hub references (`hf://owner/name[@rev]`, `owner/name`).
    Serve recipes are added to the report by :func:`draftfit.commands.recipe.attach_recipes`.
    """
    from draftfit.origins.reference import open_checkpoint, open_target

    if method == MTP or (target is None and selects_mtp(method, serve)):
        if target is not None:
            return _check_export_or_refuse(draft, target, engines, serve, values)
        return check_mtp_path(draft, engines, serve, values)
    profiles = resolve_engines(engines)
    checkpoint = open_checkpoint(draft)
    if is_nextn_export(checkpoint):
        if target is None:
            raise UsageError(export_needs_target(checkpoint))
        if method not in (None, MTP):
            raise UsageError(
                f"{checkpoint.origin} is a stand-alone NextN export, served as an MTP draft: "
                f"--method {method} does not apply (drop it, or use --method mtp)"
            )
        export = read_export(checkpoint, target)
        return check_mtp(checkpoint, profiles, serve, values=values, export=export)
    if method is None and target is None and launches_target_mtp(checkpoint, serve):
        return check_mtp(checkpoint, profiles, serve, values=values)
    target_obj = open_target(target) if target is not None else None
    if target_obj is not None:
        target_obj.draft_is_for_target = draft_is_for_target
    refuse_argument_mistakes(checkpoint, describe(checkpoint), target_obj, method)
    return check_checkpoint(checkpoint, target_obj, profiles, method, values=values, serve=serve)


def _check_export_or_refuse(
    draft: str | Path,
    target: str | Path,
    engines: Iterable[str] | None,
    serve: ServeSettings | None,
    values: str | None,
) -> Report:
    """`--method mtp` (or an MTP launch) with `--target`: the checkpoint must be a
    stand-alone NextN export, served beside that target."""
    from draftfit.origins.reference import open_checkpoint

    checkpoint = open_checkpoint(draft)
    if not is_nextn_export(checkpoint):
        raise UsageError(
            "an MTP check takes the target alone (it drafts with its own MTP layers): drop "
            "--target; --target goes with a stand-alone NextN export "
            "(`...ForCausalLMNextN`) served beside its target"
        )
    export = read_export(checkpoint, target)
    return check_mtp(checkpoint, resolve_engines(engines), serve, values=values, export=export)


def check_checkpoint(
    checkpoint: Checkpoint,
    target: Target | None,
    profiles: list[Profile],
    method: str | None = None,
    values: str | None = None,
    serve: ServeSettings | None = None,
    *,
    shared: dict[str, Any] | None = None,
) -> Report:
    """Run every rule; checkpoint-scope rules once, engine rules once per profile. With
    `values` (`"sampled"` or `"full"`), the value rules get what the weights hold. Rules
    that judge the launch's settings (`needs_serve`) run for the profiles of `serve`'s
    engine; elsewhere they are listed as skipped (the verdict is for a default launch).

    `shared`: a store for checks of the same inputs made one after another (a `matrix`,
    and the recipes that check each release's served draft again), in which what depends
    on the checkpoint and the target but on no engine is kept and reused; the report keeps
    it (`KeptCheck.shared`) for the recipes."""
    if method is not None and method not in METHOD_CHOICES:
        raise UsageError(f"unknown method {method!r}; choose from {', '.join(METHOD_CHOICES)}")
    if method == MTP:
        return check_mtp(checkpoint, profiles, serve, values=values)
    draft = describe(checkpoint)
    value_facts = _value_facts(checkpoint, draft, target, values)
    effective_method = draft.method if method is None else method
    keys = [p.key for p in profiles]
    plan = _rule_plan()
    collected: dict[tuple[object, ...], Finding] = {}
    skipped: list[SkippedRule] = []

    base = Context(checkpoint, draft, target, method=effective_method, values=value_facts)
    found = _found_for(base, shared)
    for item in plan.checkpoint:
        if item.needs_target and target is None:
            skipped.append(_skip(item))
            continue
        violations = _checkpoint_rule(item, base, found)
        if violations:  # most find nothing, and a matrix asks each of them ~350 times
            _collect(collected, item, violations, keys)

    results: list[EngineResult] = []
    launches: dict[EngineVersion, ReleaseLaunch] = {}
    for profile in profiles:
        settings = serve.for_engine(profile.engine) if serve is not None else None
        # The engine's launch part judges the launch at this release, once.
        launch = (
            engine_of(profile).judge_launch(settings, profile, target)
            if settings is not None
            else None
        )
        if launch is not None:
            launches[profile.key] = launch
            # Without --method, the method the launch selects is the one this engine serves.
            served_method, explicit = launch.served_method(method, effective_method)
        else:
            served_method, explicit = effective_method, method is not None
        view = build_view(
            BuildInputs(
                checkpoint, draft, target, profile, served_method, explicit, settings, launch=launch
            )
        )
        ctx = Context(checkpoint, draft, target, view, method=served_method, serve=settings)
        tagged = view_event_names(view)
        for item, event_name in plan.engine:
            if item.needs_serve and settings is None:
                # listed where the rule judges this engine's launches (its engine data)
                applies = bool(profile.data.facts_for_rule(item.code))
                if applies and all(s.rule != item.id for s in skipped):
                    skipped.append(SkippedRule(item.id, SkipReason.NO_LAUNCH))
                continue
            if item.needs_target and target is None:
                if all(s.rule != item.id for s in skipped):
                    skipped.append(_skip(item))
                continue
            if event_name is not None and event_name not in tagged:
                continue  # an event rule finds nothing in a view without its events
            found_here = list(item.check(ctx))
            if found_here:  # most rules find nothing: a matrix runs them some 50,000 times
                _collect(collected, item, _with_caveats(found_here, profile), [profile.key])
        result = EngineResult(
            profile.engine,
            profile.version,
            profile.title,
            draft_class=view.draft_class,
            profile=profile,
            view=view,
            extrapolated_to=profile.requested,
            chosen_because=profile.chosen_because,
        )
        result.basis = profile.basis()
        if view.aux is not None:
            result.aux_layers = AuxLayers(
                used=tuple(view.aux.used) if view.aux.used is not None else None,
                read_from=view.aux.read_from,
                keys_read=tuple(view.aux.keys_read),
                counting=AuxCounting.CAPTURE_BEFORE,
                expected_count=view.aux.expected_count,
                launch_setting=view.aux.launch_setting or None,
            )
        results.append(result)

    findings = sorted(collected.values(), key=lambda f: (-int(f.severity), f.code, str(f.location)))
    reasons, unchecked = unverified_reasons(target, skipped)
    applying = findings_by_engine(findings)
    for result in results:
        own, own_rules = rotation_unchecked(target, findings, result.key)
        launch = launches.get(result.key)
        result.unverified_reasons = [
            *reasons,
            *own,
            *(launch.unjudged if launch is not None else ()),
            *(result.view.unjudged if result.view else []),
            *(launch.other_target if launch is not None else ()),
        ]
        result.unchecked_rules = [*unchecked, *(r for r in own_rules if r not in unchecked)]
        result.verdict, result.counts = verdict_for(
            applying.get(result.key, []), result.key, result.unverified_reasons
        )
    return Report(
        draft=checkpoint.origin,
        target=target.origin if target else None,
        dialect=DialectFacts.of(draft.dialect),
        method=effective_method,
        method_evidence=draft.method_evidence if method is None else [f"--method {method}"],
        findings=findings,
        engines=results,
        skipped_rules=skipped,
        target_facts=_target_facts(target, draft, shared) if target is not None else None,
        # a planned conversion is checked for the same launch (its settings judged too)
        inputs=KeptCheck(
            checkpoint,
            draft,
            target,
            partial(check_checkpoint, serve=serve),
            shared if shared is not None else {},
        ),
        serve=JudgedLaunch.of(serve, tuple(launches.values())) if serve is not None else None,
        hub_origin=checkpoint.hub_origin,
    )


class _RulePlan:
    """The registered rules as a check runs them, in code order: the checkpoint-scope
    ones, and the engine ones each with its name where it is an event rule
    (:data:`EVENT_RULE_CODES`: it reports only the view's events tagged with that name).
    Made once per set of registered rules: a `matrix` checks ~350 times."""

    def __init__(self, rules: list[Rule]) -> None:
        self.count = len(rules)
        self.checkpoint = tuple(item for item in rules if item.scope is Scope.CHECKPOINT)
        self.engine = tuple(
            (item, item.name if item.code in EVENT_RULE_CODES else None)
            for item in rules
            if item.scope is Scope.ENGINE
        )


_plans: list[_RulePlan] = []


def _rule_plan() -> _RulePlan:
    """The plan of the rules registered now (rules are only ever added)."""
    if not _plans or _plans[0].count != len(RULES):
        _plans[:] = [_RulePlan(all_rules())]
    return _plans[0]


def _checkpoint_rule(
    item: Rule, ctx: Context, found: dict[str, tuple[Violation, ...]] | None
) -> tuple[Violation, ...]:
    """The violations of checkpoint-scope rule `item` in `ctx`; with `found` (see
    :func:`_found_for`), found once for the same inputs."""
    if found is None:
        return tuple(item.run(ctx))
    if item.code not in found:
        found[item.code] = tuple(item.run(ctx))
    return found[item.code]


def _found_for(
    ctx: Context, shared: dict[str, Any] | None
) -> dict[str, tuple[Violation, ...]] | None:
    """Where `shared` keeps the violations of the checkpoint-scope rules, by rule code, for
    the inputs of `ctx`: they depend on the checkpoint, its target, the method and the
    values read, never on an engine. An entry holds its inputs, so that their ids stay
    theirs while it is kept."""
    if shared is None:
        return None
    known: dict[tuple[object, ...], tuple[object, dict[str, tuple[Violation, ...]]]]
    known = shared.setdefault("checkpoint rules", {})
    inputs = (ctx.checkpoint, ctx.target, ctx.values)
    key = (ctx.method, *(id(value) for value in inputs))
    if key not in known:
        known[key] = (inputs, {})
    return known[key][1]


def _target_facts(
    target: Target, draft: DraftDescription, shared: dict[str, Any] | None
) -> TargetFacts:
    """`TargetFacts.of(target, draft)`; with `shared`, made once for each pair."""
    if shared is None:
        return TargetFacts.of(target, draft)
    known: dict[tuple[int, int, bool], tuple[object, TargetFacts]] = shared.setdefault(
        "target facts", {}
    )
    key = (id(target), id(draft), target.draft_is_for_target)
    if key not in known:
        known[key] = ((target, draft), TargetFacts.of(target, draft))
    return known[key][1]


def carry_from_source(report: Report, source: Checkpoint, target: Target | None) -> Report:
    """`report`, a check of a draft converted from `source`, with the findings of `source`
    that a conversion leaves as they are and the converted config no longer shows (DF507:
    the model the draft was trained for, which an output convention without a verifier
    field cannot record); each version's verdict is recomputed. Value findings need
    `--values` and are not made here."""
    item = registered(rule_ids.VERIFIER_DIFFERS_FROM_TARGET)
    if target is None or any(f.code == item.code for f in report.findings):
        return report
    keys = [result.key for result in report.engines]
    collected: dict[tuple[object, ...], Finding] = {}
    violations = item.run(Context(source, describe(source), target))
    _collect(collected, item, (_in_source(v, source) for v in violations), keys)
    if not collected:
        return report
    report.findings = sorted(
        [*report.findings, *collected.values()],
        key=lambda f: (-int(f.severity), f.code, str(f.location)),
    )
    applying = findings_by_engine(report.findings)
    for result in report.engines:
        result.verdict, result.counts = verdict_for(
            applying.get(result.key, []), result.key, result.unverified_reasons
        )
    return report


def _in_source(violation: Violation, source: Checkpoint) -> Violation:
    """`violation` of the source of a conversion, said to be there."""
    where = violation.location
    return replace(
        violation,
        message=f"the draft it was converted from, {source.origin}: {violation.message}",
        location=replace(where, file=f"{source.origin}/{where.file or 'config.json'}"),
    )


# Target config fields the target checks read, and the rules that stay silent without them.
TARGET_FIELDS: tuple[tuple[str, tuple[RuleId, ...]], ...] = (
    ("architectures", (rule_ids.TARGET_NOT_EAGLE3_CAPABLE, rule_ids.TARGET_CAPABILITY_UNKNOWN)),
    (
        "hidden_size",
        (rule_ids.TARGET_HIDDEN_SIZE_MISMATCH, rule_ids.SHARED_EMBEDDING_WIDTH_MISMATCH),
    ),
    ("num_hidden_layers", (rule_ids.AUX_ID_OUT_OF_RANGE,)),
    ("vocab_size", (rule_ids.VOCAB_SIZE_MISMATCH,)),
)


def unverified_reasons(
    target: Target | None, skipped: list[SkippedRule]
) -> tuple[list[str], list[str]]:
    """Why an empty list of findings would not prove compatibility, and the rules concerned.

    Only rules that can change a verdict count: an error or warning rule, or DF505 (which
    makes it `unverified`). Skipped rules come from a missing target; a target whose
    config lacks a field a target check reads leaves that check silent.
    """
    reasons: list[str] = []
    unchecked: list[str] = []
    # Rules skipped for want of serving settings leave the verdict that of a default launch.
    decisive = sorted(
        s.code
        for s in skipped
        if s.reason is not SkipReason.NO_LAUNCH and _can_change_verdict(s.rule)
    )
    if decisive:
        reasons.append("no target")
        unchecked.extend(decisive)
    if target is not None:
        facts = {
            "architectures": target.architecture,
            "hidden_size": target.hidden_size,
            "num_hidden_layers": target.num_layers,
            "vocab_size": target.vocab_size,
        }
        for key, rules in TARGET_FIELDS:
            if facts[key] is None:
                reasons.append(f"the target config has no usable `{key}`")
                unchecked.extend(r.code for r in rules if r.code not in unchecked)
    return reasons, unchecked


def rotation_unchecked(
    target: Target | None, findings: list[Finding], key: EngineVersion
) -> tuple[list[str], list[str]]:
    """The target's rotation evidence exists but could not be read (a symlink out of the
    folder, a FIFO, a directory...): where engine `label` would have judged it (its DF519
    says so), DF516 did not run, so its verdict is not `compatible`."""
    if target is None or target.rotation.unchecked is None or not target.rotation.present:
        return [], []
    said = any(
        f.code == rule_ids.TARGET_ROTATION_UNCHECKED.code and key in f.engines for f in findings
    )
    if not said:
        return [], []
    return [f"the target's {target.rotation.unchecked}"], [
        rule_ids.TARGET_ROTATION_UNCOMPENSATED.code
    ]


def _can_change_verdict(rule_id: RuleId) -> bool:
    """Whether a finding of `rule_id` can change a verdict: an error or warning, or a
    consequence draftfit's data cannot tell (it makes the verdict `unverified`)."""
    return rule_id.severity >= Severity.WARNING or rule_id in UNVERIFIED_RULES


def _value_facts(
    checkpoint: Checkpoint, draft: DraftDescription, target: Target | None, values: str | None
) -> ValueFacts | None:
    """Read the weights' values when asked (numpy is imported only then)."""
    if values is None:
        return None
    from draftfit.values import MODES
    from draftfit.values.scan import scan_values

    if values not in MODES:
        raise UsageError(f"unknown value mode {values!r}; choose from {', '.join(MODES)}")
    return scan_values(checkpoint, draft, target, values)


def _collect(
    collected: dict[tuple[object, ...], Finding],
    item: Rule,
    violations: Iterable[Violation],
    keys: list[EngineVersion],
) -> None:
    for v in violations:
        consequence = v.consequence or item.consequence
        finding = Finding(
            item.id,
            v.message,
            v.location,
            v.fix,
            v.citations,
            consequence,
            condition=v.condition or item.condition,
            related=v.related,
        )
        existing = collected.setdefault(finding.key(), finding)
        if consequence.severity > existing.severity:
            # The same text from engines with different consequences: the worse one counts.
            existing.consequence = consequence
        for key in keys:
            if key not in existing.engines:
                existing.engines.append(key)


def _with_caveats(violations: Iterable[Violation], profile: Profile) -> Iterator[Violation]:
    """Say so in the finding when the engine data behind it is approximate at this version,
    or when the version asked for (`~=`) is not the one the data was read at."""
    extrapolated = profile.extrapolation_note
    for v in violations:
        note = profile.approximate_note(v.citations)
        if note is not None:
            v = replace(v, message=f"{v.message} (draftfit's data here is approximate: {note})")
        if extrapolated is not None:
            v = replace(v, message=f"{v.message} ({extrapolated})")
        yield v


def _skip(item: Rule) -> SkippedRule:
    return SkippedRule(item.id, SkipReason.NO_TARGET)
