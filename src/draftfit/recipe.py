"""Serve recipes: the exact way to serve a draft correctly with one engine version.

Each engine writes its own command (:meth:`draftfit.engines.interface.Engine.serve`: vLLM's
`vllm serve`, SGLang's `launch_server`, TensorRT-LLM's `trtllm-serve` with a `spec.yaml`).
This module adds what is common to all of them, from the check the report already holds:

* When a `draftfit convert` step would help, the recipe plans that conversion into the
  engine's convention, checks the planned output in memory against the same engine version
  (with the checker that made the report), and keeps the step only if it removes findings;
  the recipe then says what the engine does with the converted draft.
* A Hub draft is downloaded (`hf download`) before that step, since `draftfit convert` reads
  a local copy; the recipe then names the converted folder.
* What still applies after the steps and the engine's serve-time settings, and whether any
  error remains.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from draftfit.checkpoint.model import Checkpoint
from draftfit.conversion.planner import plan_conversion
from draftfit.conversion.preview import preview_checkpoint
from draftfit.engines.interface import Recipe, ServeRequest
from draftfit.engines.profile import Profile
from draftfit.engines.serve import model_source, shell_word
from draftfit.errors import UsageError
from draftfit.report import INCOMPATIBLE, EngineResult, Finding, Report, verdict_for
from draftfit.rule_ids import SERVING_FAMILY, VALUES_FAMILY, Severity
from draftfit.spec import EAGLE

__all__ = ["Recipe", "attach_recipes", "recipe_for"]


def recipe_for(report: Report, result: EngineResult) -> Recipe | None:
    """The recipe for one engine version of `report` (None where the engine cannot serve
    this kind of draft, e.g. an EAGLE-1 draft on TensorRT-LLM).

    `report` is a check made by :func:`draftfit.checker.check_checkpoint` (it holds the
    checkpoint, its description, the target and each version's profile)."""
    kept = report.kept()
    profile = result.kept().profile
    findings = [f for f in report.findings if profile.label in f.engines]
    draft, steps, notes, findings = _convert_step(report, profile, findings)
    served = profile.impl.serve(
        ServeRequest(
            profile,
            kept.spec,
            draft,
            kept.target,
            frozenset(f.code for f in findings),
            tuple(notes),
            _names_own_code(kept.checkpoint.config)
            or (kept.target is not None and _names_own_code(kept.target.config)),
        )
    )
    if served is None:
        return None
    # The recipe is a launch of its own: the settings the given launch was judged for
    # (`--serve-args`, `--serve-config`) are not in it, nor what they caused.
    launch = frozenset(f.code for f in findings if f.family == SERVING_FAMILY)
    recipe = _finish(served.recipe, findings, served.fixed_by_settings | launch)
    if launch:
        recipe.notes.append(
            "a default launch: it leaves out the given launch's settings behind "
            + ", ".join(sorted(launch))
        )
    recipe.steps = steps + recipe.steps
    return recipe


def attach_recipes(report: Report) -> None:
    """Add a recipe for every engine result of `report` that a recipe can serve."""
    recipes = []
    for result in report.engines:
        recipe = recipe_for(report, result)
        if recipe is None:
            continue
        # a version that will not run gets a recipe only when it makes the draft servable;
        # one that drafts garbage keeps it, with what still applies in its notes
        if result.verdict == INCOMPATIBLE and not recipe.resolves_errors:
            continue
        recipes.append(recipe)
    report.recipes = recipes


# ---------------------------------------------------------------------- conversion step


def _severe(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity >= Severity.WARNING]


def _convert_step(
    report: Report, profile: Profile, findings: list[Finding]
) -> tuple[str, list[str], list[str], list[Finding]]:
    """Plan `draftfit convert` for this engine, check the planned output for the same version
    in memory, and keep the step when it leaves fewer problems."""
    kept = report.kept()
    checkpoint, spec, target = kept.checkpoint, kept.spec, kept.target
    draft = checkpoint.source
    before = _severe(findings)
    if not before or spec.method == EAGLE or checkpoint.config is None or _blocked(checkpoint):
        return draft, [], [], findings
    engine = profile.impl
    to = engine.convention
    plan_profile = profile if to in engine.plans else None
    try:
        plan = plan_conversion(checkpoint, spec, to, plan_profile, target)
    except UsageError:
        return draft, [], [], findings
    after_report = kept.checker(preview_checkpoint(plan, checkpoint), target, [profile], None)
    # Conversion copies tensor bytes verbatim: what the weights' values show stays.
    carried = [f for f in findings if f.family == VALUES_FAMILY]
    after_findings = [*after_report.findings, *carried]
    after = _severe(after_findings)
    after_result = after_report.engines[0]
    if _weight(after) >= _weight(before):
        return draft, [], [], findings
    source = model_source(draft)
    steps = [source.download()] if source.hub else []
    local = source.local.name
    converted = local.rstrip("/") + f"-{to}"
    words = ["draftfit", "convert", local, "--to", to, "-o", converted, "--engine", profile.label]
    if target is not None:
        words += ["--target", model_source(target.source).for_draftfit]
    steps.append(" ".join(shell_word(w) for w in words))
    fixed = sorted({f.code for f in before} - {f.code for f in after})
    # the verdict for the recipe's own launch: without what the given launch's settings cause
    own_launch = [f for f in after_findings if f.family != SERVING_FAMILY]
    notes = [
        "convert first: "
        + (f"it fixes {', '.join(fixed)}" if fixed else "it leaves fewer problems")
        + f"; {profile.title} then finds the converted draft "
        + (
            verdict_for(own_launch, profile.label, after_result.unverified_reasons)[0]
            if carried or len(own_launch) != len(after_findings)
            else after_result.verdict
        )
    ]
    return converted, steps, notes, after_findings


def _blocked(checkpoint: Checkpoint) -> bool:
    """Whether `draftfit convert` refuses this draft: damage a verbatim copy would carry
    into (or hide in) the output."""
    from draftfit.conversion import BLOCKS_CONVERSION  # the convert command's own rule

    return any(d.rule in BLOCKS_CONVERSION for d in checkpoint.damage)


def _names_own_code(config: Mapping[str, Any] | None) -> bool:
    """Whether a config.json names code of its own for Transformers' `Auto*` classes
    (`auto_map.AutoConfig`, ...: Kimi-K2's `configuration_deepseek.DeepseekV3Config`), which
    engines load only when told to trust it. A speculators config's `auto_map` entry under
    `""` is read by no `Auto*` class and needs nothing."""
    auto_map = config.get("auto_map") if config else None
    return isinstance(auto_map, Mapping) and any(
        isinstance(key, str) and key.startswith("Auto") for key in auto_map
    )


def _weight(findings: list[Finding]) -> tuple[int, int, int]:
    """How bad the findings are, worst first: errors that stop the engine, errors that let it
    run but draft wrong, warnings."""
    errors = [f for f in findings if f.severity == Severity.ERROR]
    running = sum(1 for f in errors if f.consequence is not None and f.consequence.runs)
    return (
        len(errors) - running,
        running,
        sum(1 for f in findings if f.severity == Severity.WARNING),
    )


def _finish(recipe: Recipe, findings: list[Finding], fixed_by_settings: frozenset[str]) -> Recipe:
    remaining = [f for f in _severe(findings) if f.code not in fixed_by_settings]
    recipe.remaining = sorted({f.code for f in remaining})
    # Servable: nothing left that stops the engine (what still drafts wrong is noted below).
    recipe.resolves_errors = not any(
        f.severity == Severity.ERROR and not (f.consequence is not None and f.consequence.runs)
        for f in remaining
    )
    for finding in remaining:
        note = f"still applies: {finding.code} {finding.name}"
        if note not in recipe.notes:
            recipe.notes.append(note)
    return recipe
