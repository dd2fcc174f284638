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

import json

from draftfit.checkpoint.model import Checkpoint
from draftfit.commands.launch_edit import edit_launch
from draftfit.conversion.planner import plan_conversion
from draftfit.conversion.preview import preview_checkpoint
from draftfit.draft.description import EAGLE
from draftfit.engines.interface import Recipe, ServeRequest, engine_of
from draftfit.engines.launch import parse_serve_args
from draftfit.engines.launch_part import EngineLaunch
from draftfit.engines.profile import Profile
from draftfit.engines.remote_code import remote_code_at
from draftfit.engines.serve import CONTINUATION, model_source, shell_quote, shell_word
from draftfit.errors import UsageError
from draftfit.report import (
    INCOMPATIBLE,
    EngineResult,
    Finding,
    Report,
    findings_by_engine,
    verdict_for,
)
from draftfit.rule_ids import SERVING_FAMILY, VALUES_FAMILY, Severity
from draftfit.serve.settings import ServeSettings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Recipe", "attach_recipes", "recipe_for"]

CONVERT_STEP = "draftfit convert "


def recipe_for(
    report: Report, result: EngineResult, applying: list[Finding] | None = None
) -> Recipe | None:
    """The recipe for one engine version of `report` (None where the engine cannot serve
    this kind of draft, e.g. an EAGLE-1 draft on TensorRT-LLM).

    `report` is a check made by :func:`draftfit.checker.check_checkpoint` (it holds the
    checkpoint, its description, the target and each version's profile). `applying`: the
    report's findings for this version when the caller has them (see `findings_by_engine`).
    When the check was given a launch for this engine (`--serve-args`), the recipe edits
    that launch (:mod:`draftfit.commands.launch_edit`). What the recipe says still applies is what a
    check of the draft it serves, under its own command, finds."""
    kept = report.kept()
    profile = result.kept().profile
    key = profile.key
    candidates = report.findings if applying is None else applying
    findings = [f for f in candidates if key in f.engines]
    draft, steps, notes, findings, served_checkpoint = _convert_step(report, profile, findings)
    served = engine_of(profile).serve(
        ServeRequest(
            profile,
            kept.spec,
            draft,
            kept.target,
            frozenset(f.code for f in findings),
            tuple(notes),
            remote_code_at(
                profile,
                kept.checkpoint.config,
                kept.target.config if kept.target is not None else None,
            ),
        )
    )
    if served is None:
        return None
    recipe = served.recipe
    edited = _edit_given_launch(report, profile, recipe)
    read_back = _read_back(report, profile, served_checkpoint, recipe, findings)
    if read_back is not None:
        recipe = _finish(recipe, read_back, frozenset())
    else:
        recipe = _finish(recipe, findings, served.fixed_by_settings)
    launch = frozenset(f.code for f in findings if f.family == SERVING_FAMILY)
    if launch and not edited and read_back is None:
        # A recipe of its own: the settings the given launch was judged for are not in it.
        recipe.notes.append(
            "a default launch: it leaves out the given launch's settings behind "
            + ", ".join(sorted(launch))
        )
    judged = _judged_steps(steps, recipe, findings, read_back, engine_of(profile).edits_launch)
    recipe.steps = judged + recipe.steps
    return recipe


def attach_recipes(report: Report) -> None:
    """Add a recipe for every engine result of `report` that a recipe can serve."""
    recipes = []
    applying = findings_by_engine(report.findings)
    for result in report.engines:
        recipe = recipe_for(report, result, applying.get(result.key, []))
        if recipe is None:
            continue
        # a version that will not run gets a recipe only when it makes the draft servable;
        # one that drafts garbage keeps it, with what still applies in its notes
        if result.verdict == INCOMPATIBLE and not recipe.resolves_errors:
            continue
        recipes.append(recipe)
    report.recipes = recipes


# ---------------------------------------------------------------------- the launch


def _edit_given_launch(report: Report, profile: Profile, recipe: Recipe) -> bool:
    """Make `recipe` an edit of the launch the check was given for this engine, saying
    what changed (True), or leave it (False: no launch for this engine, or an engine whose
    launch is not edited: TensorRT-LLM's settings live in a file)."""
    serve = report.serve
    if serve is None or serve.engine != profile.engine or not serve.words:
        return False
    engine = engine_of(profile)
    launch = engine.launch()
    if not engine.edits_launch or launch is None:
        return False
    command, changes = edit_launch(serve.words, recipe.command, launch)
    recipe.command = command
    recipe.config = _json_config(command, launch) or recipe.config
    recipe.notes.insert(
        0,
        "your launch, edited: " + "; ".join(changes)
        if changes
        else "your launch as given: it already sets what this draft needs",
    )
    return True


def _json_config(command: str, launch: EngineLaunch) -> dict[str, Any] | None:
    """The JSON object a command carries in its engine's JSON flag (vLLM's
    `--speculative-config`), if any."""
    from draftfit.commands.launch_edit import split_launch

    if launch.json_flag is None:
        return None
    spellings = launch.spellings(launch.json_flag)
    for flag, value in split_launch(_words(command), launch).flags:
        if flag in spellings and value:
            try:
                data = json.loads(value)
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _words(command: str) -> list[str]:
    import shlex  # only a recipe's own command is split here

    return shlex.split(command.replace(CONTINUATION, " "))


def _recipe_settings(recipe: Recipe, profile: Profile) -> ServeSettings:
    """The settings the recipe's own command gives, read as `--serve-args` reads them (an
    engine whose launch keeps its settings in a file, TensorRT-LLM's `spec.yaml`: from the
    recipe's config)."""
    if not engine_of(profile).edits_launch:
        serve_line = recipe.command.rsplit("\n", 1)[-1]
        words = [w for w in _words(serve_line) if w not in ("--extra_llm_api_options", "spec.yaml")]
        base = parse_serve_args(" ".join(shell_word(w) for w in words))
        launch = engine_of(profile).launch()
        assert launch is not None, profile.engine
        return launch.with_options(recipe.config, base, "spec.yaml")
    return parse_serve_args(recipe.command.replace(CONTINUATION, " "))


def _read_back(
    report: Report,
    profile: Profile,
    served: Checkpoint,
    recipe: Recipe,
    findings: list[Finding],
) -> list[Finding] | None:
    """The findings for the draft the recipe serves, checked under the recipe's own command
    at the same version (what the values of its weights show is carried over: a
    conversion copies them verbatim); None when its command cannot be read back."""
    kept = report.kept()
    try:
        settings = _recipe_settings(recipe, profile)
        back = kept.checker(served, kept.target, [profile], None, serve=settings)
    except UsageError:
        return None
    carried = [f for f in findings if f.family == VALUES_FAMILY]
    return [*back.findings, *carried]


def _judged_steps(
    steps: list[str],
    recipe: Recipe,
    findings: list[Finding],
    read_back: list[Finding] | None,
    edits_launch: bool,
) -> list[str]:
    """The steps, with the recipe's launch given to its `draftfit convert` step where the
    converted draft has errors only a default launch has: that step then judges its output
    for the launch it will be served with, and exits 0."""
    if read_back is None or not edits_launch:
        return steps
    default_errors = any(
        f.severity == Severity.ERROR and f.family != SERVING_FAMILY for f in findings
    )
    if not default_errors or any(f.severity == Severity.ERROR for f in read_back):
        return steps
    launch = recipe.command.replace(CONTINUATION, " ")
    return [
        f"{step} --serve-args {shell_quote(launch)}" if step.startswith(CONVERT_STEP) else step
        for step in steps
    ]


# ---------------------------------------------------------------------- conversion step


def _severe(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity >= Severity.WARNING]


def _convert_step(
    report: Report, profile: Profile, findings: list[Finding]
) -> tuple[str, list[str], list[str], list[Finding], Checkpoint]:
    """Plan `draftfit convert` for this engine, check the planned output for the same version
    in memory, and keep the step when it leaves fewer problems. Returns the draft path the
    recipe serves, the steps, their notes, the findings for that draft, and the draft as
    it will be served (the planned output when converted)."""
    kept = report.kept()
    checkpoint, spec, target = kept.checkpoint, kept.spec, kept.target
    draft = checkpoint.origin
    before = _severe(findings)
    if not before or spec.method == EAGLE or checkpoint.config is None or _blocked(checkpoint):
        return draft, [], [], findings, checkpoint
    engine = engine_of(profile)
    to = engine.convention
    plan_profile = profile if to in engine.plans else None
    try:
        plan = plan_conversion(checkpoint, spec, to, plan_profile, target)
    except UsageError:
        return draft, [], [], findings, checkpoint
    preview = preview_checkpoint(plan, checkpoint)
    after_report = kept.checker(preview, target, [profile], None)
    # Conversion copies tensor bytes verbatim: what the weights' values show stays.
    carried = [f for f in findings if f.family == VALUES_FAMILY]
    after_findings = [*after_report.findings, *carried]
    after = _severe(after_findings)
    after_result = after_report.engines[0]
    if _weight(after) >= _weight(before):
        return draft, [], [], findings, checkpoint
    source = model_source(draft)
    steps = [source.download()] if source.hub else []
    local = source.local.name
    converted = local.rstrip("/") + f"-{to}"
    words = ["draftfit", "convert", local, "--to", to, "-o", converted, "--engine", profile.label]
    if target is not None:
        words += ["--target", model_source(target.origin).for_draftfit]
    words.append("--anyway")  # the recipe converts for its own reasons (its method, its ids)
    steps.append(" ".join(shell_word(w) for w in words))
    fixed = sorted({f.code for f in before} - {f.code for f in after})
    # the verdict for the recipe's own launch: without what the given launch's settings cause
    own_launch = [f for f in after_findings if f.family != SERVING_FAMILY]
    notes = [
        "convert first: "
        + (f"it fixes {', '.join(fixed)}" if fixed else "it leaves fewer problems")
        + f"; {profile.title} then finds the converted draft "
        + (
            verdict_for(own_launch, profile.key, after_result.unverified_reasons)[0]
            if carried or len(own_launch) != len(after_findings)
            else after_result.verdict
        )
    ]
    return converted, steps, notes, after_findings, preview


def _blocked(checkpoint: Checkpoint) -> bool:
    """Whether `draftfit convert` refuses this draft: damage a verbatim copy would carry
    into (or hide in) the output."""
    from draftfit.conversion import BLOCKS_CONVERSION  # the convert command's own rule

    return any(d.rule in BLOCKS_CONVERSION for d in checkpoint.damage)


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
