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
from typing import TYPE_CHECKING

from draftfit.checkpoint.model import Checkpoint
from draftfit.commands.launch_edit import edit_launch
from draftfit.conversion.aux_order import REORDER_AUX_IDS
from draftfit.conversion.plan import Plan
from draftfit.conversion.planner import plan_conversion
from draftfit.conversion.preview import preview_checkpoint
from draftfit.draft.description import EAGLE
from draftfit.engines.interface import NoRecipe, Recipe, ServeRequest, engine_of
from draftfit.engines.launch import parse_serve_args
from draftfit.engines.launch_part import EngineLaunch
from draftfit.engines.profile import Profile
from draftfit.engines.remote_code import remote_code_at
from draftfit.engines.serve import CONTINUATION, model_source, shell_quote, shell_word
from draftfit.errors import UsageError
from draftfit.mtp_check import MTP
from draftfit.records import record
from draftfit.report import (
    EngineResult,
    Finding,
    Report,
    findings_by_engine,
    verdict_for,
)
from draftfit.rule_ids import SERVING_FAMILY, Severity
from draftfit.serve.settings import ServeSettings
from draftfit.shell_text import split_command
from draftfit.verdicts import Verdict

if TYPE_CHECKING:
    from typing import Any

__all__ = ["NoRecipe", "Recipe", "attach_recipes", "recipe_for", "serving_for"]

CONVERT_STEP = "draftfit convert "


def recipe_for(
    report: Report, result: EngineResult, applying: list[Finding] | None = None
) -> Recipe | None:
    """The recipe for one engine version of `report` (None where the engine cannot serve
    this kind of draft, e.g. an EAGLE-1 draft on TensorRT-LLM), whether or not it leaves
    errors (:attr:`Recipe.resolves_errors`); :func:`serving_for` is what a user is shown.

    `report` is a check made by :func:`draftfit.checker.check_checkpoint` (it holds the
    checkpoint, its description, the target and each version's profile). `applying`: the
    report's findings for this version when the caller has them (see `findings_by_engine`).
    When the check was given a launch for this engine (`--serve-args`), the recipe edits
    that launch (:mod:`draftfit.commands.launch_edit`). What the recipe says still applies is what a
    check of the draft it serves, under its own command, finds."""
    built = _build(report, result, applying)
    return built.recipe if built is not None else None


def serving_for(
    report: Report, result: EngineResult, applying: list[Finding] | None = None
) -> Recipe | NoRecipe:
    """What a user is shown for one engine version: the recipe when a check of the draft it
    serves, under its own launch, finds no error; else one line saying why there is none
    (the errors that would remain and what would fix them)."""
    if report.method == MTP:
        from draftfit.commands.mtp_recipe import mtp_serving_for

        return mtp_serving_for(report, result)
    built = _build(report, result, applying)
    title = result.kept().profile.title
    if built is None:
        kind = KIND_TITLES.get(report.kept().draft.method or "", "draft of this kind")
        return NoRecipe(result.engine, result.version, f"{title} has no serve recipe for {kind}")
    recipe = built.recipe
    if recipe.resolves_errors:
        return recipe
    return NoRecipe(recipe.engine, recipe.version, _why_not(built), list(recipe.remaining))


def attach_recipes(report: Report) -> None:
    """Add to `report` the recipe of every engine version that a recipe serves without an
    error, and for every other version the line saying why it has none."""
    recipes: list[Recipe] = []
    missing: list[NoRecipe] = []
    applying = findings_by_engine(report.findings)
    for result in report.engines:
        shown = serving_for(report, result, applying.get(result.key, []))
        if isinstance(shown, NoRecipe):
            missing.append(shown)
        else:
            recipes.append(shown)
    report.recipes = recipes
    report.no_recipes = missing


# What a version without a recipe for the draft's method cannot serve.
KIND_TITLES = {"eagle": "an EAGLE-1 draft", "eagle3": "an EAGLE-3 draft"}


@record
class _Option:
    """One way to serve the draft: as it is, or converted first.

    Attributes:
        draft: the path the recipe serves.
        steps: the steps before the command (a download, `draftfit convert`).
        findings: the findings for that draft under the given launch (or a default one).
        checkpoint: the draft as it will be served (the planned output when converted).
    """

    draft: str
    steps: list[str]
    findings: list[Finding]
    checkpoint: Checkpoint
    # The conversion lists aux ids ascending and moves `fc`'s input blocks with them.
    reorders: bool = False


@record
class _Built:
    """A recipe with the findings behind its `remaining`, and whether it converts first."""

    recipe: Recipe
    remaining: list[Finding]
    converts: bool
    # The verdict for the draft it serves under its own command (None: not read back).
    verdict: Verdict | None


def _build(report: Report, result: EngineResult, applying: list[Finding] | None) -> _Built | None:
    """The recipe for one version: the draft served as it is, or converted first where the
    converted draft, checked under the recipe's own launch, leaves fewer problems."""
    kept = report.kept()
    profile = result.kept().profile
    key = profile.key
    candidates = report.findings if applying is None else applying
    findings = [f for f in candidates if key in f.engines]
    plain = _serve(report, profile, _Option(kept.checkpoint.origin, [], findings, kept.checkpoint))
    if plain is None:
        return None
    if plain.verdict is not None and not plain.remaining:
        return plain  # nothing a conversion could improve
    conversion = _conversion(report, profile, findings)
    if conversion is None:
        return plain
    converted = _serve(report, profile, conversion)
    if converted is None or _weight(converted.remaining) >= _weight(plain.remaining):
        return plain
    fixed = sorted({f.code for f in plain.remaining} - {f.code for f in converted.remaining})
    verdict = converted.verdict
    note = (
        "convert first: "
        + (f"it fixes {', '.join(fixed)}" if fixed else "it leaves fewer problems")
        + (
            " (it lists the aux ids ascending and moves `fc.weight`'s input blocks to match)"
            if conversion.reorders
            else ""
        )
        + (f"; {profile.title} then finds the converted draft {verdict}" if verdict else "")
    )
    notes = converted.recipe.notes
    notes.insert(1 if notes and notes[0].startswith(EDITED_NOTES) else 0, note)
    return converted


# The notes that say a recipe is the user's own launch, edited (always the first note).
EDITED_NOTES = ("your launch, edited: ", "your launch as given: ")


def _serve(report: Report, profile: Profile, option: _Option) -> _Built | None:
    """The engine's recipe for serving `option`, checked under its own command (None where
    the engine cannot serve this kind of draft)."""
    kept = report.kept()
    served = engine_of(profile).serve(
        ServeRequest(
            profile,
            kept.draft,
            option.draft,
            kept.target,
            frozenset(f.code for f in option.findings),
            (),
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
    read_back = _read_back(report, profile, option.checkpoint, recipe, option.findings)
    verdict = None
    if read_back is not None:
        back, verdict = read_back
        remaining = _finish(recipe, back, frozenset())
    else:
        remaining = _finish(recipe, option.findings, served.fixed_by_settings)
        recipe.resolves_errors = False  # not checked under its own launch: not shown
    launch = frozenset(f.code for f in option.findings if f.family == SERVING_FAMILY)
    if launch and not edited:
        # A recipe of its own: the settings the given launch was judged for are not in it.
        recipe.notes.append(
            "a default launch: it leaves out the given launch's settings behind "
            + ", ".join(sorted(launch))
        )
    steps = option.steps
    judged = _judged_steps(steps, recipe, profile, option.findings, report.serve is not None)
    recipe.steps = judged + recipe.steps
    return _Built(recipe, remaining, bool(steps), verdict)


def _why_not(built: _Built) -> str:
    """One line: the errors a recipe would leave, each with its fix."""
    if built.verdict is None:
        return "its launch could not be read back, so what it serves was not checked"
    errors: dict[str, Finding] = {}
    for finding in built.remaining:
        if finding.severity == Severity.ERROR:
            errors.setdefault(finding.code, finding)
    after = " after `draftfit convert`" if built.converts else ""
    if len(errors) == 1:
        (only,) = errors.values()
        fix = f"; fix: {only.fix}" if only.fix else ""
        return f"{only.code} {only.name} remains{after}{fix}"
    parts = [f"{f.code} {f.name}" + (f" (fix: {f.fix})" if f.fix else "") for f in errors.values()]
    return f"{len(errors)} errors remain{after}: " + "; ".join(parts)


# ---------------------------------------------------------------------- the launch


def _edit_given_launch(report: Report, profile: Profile, recipe: Recipe) -> bool:
    """Make `recipe` an edit of the launch the check was given for this engine, saying
    what changed (True), or leave it (False: no launch for this engine, or an engine whose
    launch is not edited: TensorRT-LLM's settings live in a file)."""
    serve = report.serve.settings if report.serve is not None else None
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
    return split_command(command)


def _recipe_settings(report: Report, recipe: Recipe, profile: Profile) -> ServeSettings:
    """The settings the recipe's own command gives, read as `--serve-args` (and, for an
    engine whose launch keeps its settings in a file the recipe writes, TensorRT-LLM's
    `spec.yaml`, `--serve-config`) reads them; read once per distinct launch of the report's
    recipes (an engine's releases share a few)."""
    serve_args, serve_config = _launch_options(recipe, profile)
    known: dict[tuple[str, str, str], ServeSettings] = report.kept().shared.setdefault(
        "settings", {}
    )
    key = (profile.engine, serve_args, json.dumps(serve_config, sort_keys=True))
    if key not in known:
        known[key] = _read_settings(serve_args, serve_config, profile)
    return known[key]


def _read_settings(
    serve_args: str, serve_config: dict[str, Any] | None, profile: Profile
) -> ServeSettings:
    base = parse_serve_args(serve_args)
    if serve_config is None:
        return base
    launch = engine_of(profile).launch()
    assert launch is not None, profile.engine
    return launch.with_options(serve_config, base, "spec.yaml")


def _launch_options(recipe: Recipe, profile: Profile) -> tuple[str, dict[str, Any] | None]:
    """The recipe's launch as `--serve-args` takes it (one line), and for an engine whose
    launch reads its settings from a file the recipe writes (TensorRT-LLM's `spec.yaml`),
    those settings as `--serve-config` takes them (else None)."""
    if engine_of(profile).edits_launch:
        return recipe.command.replace(CONTINUATION, " "), None
    serve_line = recipe.command.rsplit("\n", 1)[-1]
    words = [w for w in _words(serve_line) if w not in ("--extra_llm_api_options", "spec.yaml")]
    return " ".join(shell_word(w) for w in words), recipe.config


def _read_back(
    report: Report,
    profile: Profile,
    served: Checkpoint,
    recipe: Recipe,
    findings: list[Finding],
) -> tuple[list[Finding], Verdict] | None:
    """The findings for the draft the recipe serves, checked under the recipe's own command
    at the same version (what the values of its weights show is carried over: a
    conversion copies them verbatim), and the verdict they make; None when its command
    cannot be read back."""
    kept = report.kept()
    try:
        settings = _recipe_settings(report, recipe, profile)
        back = kept.checker(
            served, kept.target, [profile], None, serve=settings, shared=kept.shared
        )
    except UsageError:
        return None
    every = [*back.findings, *_carried(findings, back.findings)]
    return every, verdict_for(every, profile.key, back.engines[0].unverified_reasons)[0]


def _judged_steps(
    steps: list[str],
    recipe: Recipe,
    profile: Profile,
    findings: list[Finding],
    launch_given: bool,
) -> list[str]:
    """The steps, with the recipe's launch given to its `draftfit convert` step where that
    step would otherwise judge its output for another launch: a default one under which the
    converted draft has errors (which the recipe's launch settles), or the launch the check
    was given. A shown recipe leaves no error under its own launch, so the step exits 0."""
    if not recipe.resolves_errors:
        return steps
    if not launch_given and not any(f.severity == Severity.ERROR for f in findings):
        return steps
    serve_args, serve_config = _launch_options(recipe, profile)
    options = f" --serve-args {shell_quote(serve_args)}"
    if serve_config is not None:
        options += f" --serve-config {shell_quote(json.dumps(serve_config))}"
    return [step + options if step.startswith(CONVERT_STEP) else step for step in steps]


# ---------------------------------------------------------------------- conversion step


def _severe(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity >= Severity.WARNING]


def _conversion(report: Report, profile: Profile, findings: list[Finding]) -> _Option | None:
    """Serving the draft converted into the engine's convention first: the `draftfit
    convert` step, and the planned output with its findings for the same version (checked in
    memory); None when there is nothing to fix or convert cannot plan it."""
    kept = report.kept()
    checkpoint, draft, target = kept.checkpoint, kept.draft, kept.target
    if (
        not _severe(findings)
        or draft.method == EAGLE
        or checkpoint.config is None
        or _blocked(checkpoint)
    ):
        return None
    engine = engine_of(profile)
    to = engine.convention
    plan_profile = profile if to in engine.plans else None
    try:
        plan = plan_conversion(checkpoint, draft, to, plan_profile, target)
    except UsageError:
        return None
    source = model_source(checkpoint.origin)
    steps = [source.download()] if source.hub else []
    local = source.local.name
    converted = local.rstrip("/") + f"-{to}"
    preview = _preview(report, plan, converted)
    after_report = kept.checker(preview, target, [profile], None, shared=kept.shared)
    # Conversion copies tensor bytes verbatim: what the weights' values show stays, and so
    # does the model the draft was trained for, whatever the output's config records.
    carried = _carried(findings, after_report.findings)
    words = ["draftfit", "convert", local, "--to", to, "-o", converted, "--engine", profile.label]
    if target is not None:
        words += ["--target", model_source(target.origin).for_draftfit]
    words.append("--anyway")  # the recipe converts for its own reasons (its method, its ids)
    steps.append(" ".join(shell_word(w) for w in words))
    reorders = any(edit.action == REORDER_AUX_IDS for edit in plan.edits if plan.applied(edit))
    return _Option(converted, steps, [*after_report.findings, *carried], preview, reorders)


def _preview(report: Report, plan: Plan, converted: str) -> Checkpoint:
    """The planned output of `plan`, written to `converted`, as draftfit would read it
    back: one per distinct plan of the report, so that the versions that plan the same
    output (most of an engine's releases) share its description and the values read from
    it."""
    kept = report.kept()
    previews: list[tuple[Plan, str, Checkpoint]] = kept.shared.setdefault("previews", [])
    for known, name, preview in previews:
        if name == converted and known == plan:
            return preview
    preview = preview_checkpoint(plan, kept.checkpoint, converted)
    previews.append((plan, converted, preview))
    return preview


def _carried(before: list[Finding], after: list[Finding]) -> list[Finding]:
    """The findings of `before` that a conversion leaves as they are
    (:attr:`~draftfit.report.Finding.kept_by_conversion`) and that `after` does not already
    hold."""
    present = {f.code for f in after}
    return [f for f in before if f.kept_by_conversion and f.code not in present]


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


def _finish(
    recipe: Recipe, findings: list[Finding], fixed_by_settings: frozenset[str]
) -> list[Finding]:
    """Record on `recipe` what still applies (errors and warnings, as codes and as notes)
    and whether an error does; returns those findings."""
    remaining = [f for f in _severe(findings) if f.code not in fixed_by_settings]
    recipe.remaining = sorted({f.code for f in remaining})
    recipe.resolves_errors = not any(f.severity == Severity.ERROR for f in remaining)
    for finding in remaining:
        note = f"still applies: {finding.code} {finding.name}"
        if note not in recipe.notes:
            recipe.notes.append(note)
    return remaining
