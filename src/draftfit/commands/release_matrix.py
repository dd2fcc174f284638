"""`draftfit matrix`: every engine and version draftfit knows, grouped into ranges that share
a verdict, with the finding that decides each range and (optionally) the serve recipe.

Nobody publishes this matrix; users learn it from crashed deployments and near-zero
acceptance. The markdown form is meant to be pasted into a model card.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from draftfit.checker import check_checkpoint
from draftfit.checkpoint import Checkpoint
from draftfit.commands.recipe import NoRecipe, Recipe, serving_for
from draftfit.draft.target import Target
from draftfit.engines.interface import Engine
from draftfit.engines.registry import ENGINES
from draftfit.records import field, record
from draftfit.report import (
    COMPATIBLE,
    FAILING_VERDICTS,
    UNVERIFIED,
    UNVERIFIED_CODES,
    Finding,
    findings_by_engine,
)
from draftfit.rules.base import Severity
from draftfit.serve.settings import ServeSettings
from draftfit.settings.selection import Selection, apply_to_report
from draftfit.verdicts import FailOn, Verdict

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from draftfit.report import Report

# What must match for two versions to share a row: verdict, deciding findings, recipe (or
# why there is none), unverified reasons: equal keys share one row.
_RowKey = tuple[str, tuple[tuple[str, str], ...], tuple[str], tuple[str, ...]]


@record
class MatrixRow:
    """Consecutive versions of one engine with the same verdict and deciding findings."""

    engine: str
    title: str
    first: str
    last: str
    verdict: Verdict
    deciding: list[Finding]
    versions: list[str] = field(default_factory=list)
    recipe: Recipe | None = None
    # Why the range has no recipe (when it has none and recipes were made).
    no_recipe: NoRecipe | None = None
    # Why an `unverified` range is not called compatible (e.g. "no target"), and the rules
    # that did not run (see EngineResult).
    unverified_reasons: list[str] = field(default_factory=list)
    unchecked_rules: list[str] = field(default_factory=list)

    # Every finding of these versions, for `--fail-on` (the deciding ones are only those at
    # the verdict's severity).
    findings_for_exit: list[Finding] = field(default_factory=list, repr=False)
    # The facts the range's verdicts consulted, as `check` reports each version's
    # (EngineResult.basis), over every version of the range: `read` in the engine's code at
    # every version, and `below_read`, each fact known otherwise at some version (with its
    # confidence at the newest such version); None where no version had one.
    basis: dict[str, Any] | None = None

    def add_basis(self, basis: dict[str, Any] | None) -> None:
        """Merge one version's basis into the range's: a fact below `read` at any version of
        the range is listed so, the others as read."""
        if basis is None:
            return
        if self.basis is None:
            self.basis = {"read": [], "below_read": []}
        below = {item["fact"]: item for item in self.basis["below_read"]}
        below.update({item["fact"]: item for item in basis.get("below_read", [])})
        read = set(self.basis["read"]) | set(basis.get("read", []))
        self.basis["read"] = sorted(read - set(below))
        self.basis["below_read"] = [below[fact] for fact in sorted(below)]

    @property
    def range(self) -> str:
        return self.first if self.first == self.last else f"{self.first}–{self.last}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "versions": list(self.versions),
            "range": self.range,
            "verdict": self.verdict.value,
            "deciding": [f.to_dict() for f in self.deciding],
            "recipe": self.recipe.to_dict() if self.recipe else None,
            "no_recipe": self.no_recipe.to_dict() if self.no_recipe else None,
            "unverified_reasons": list(self.unverified_reasons),
            "unchecked_rules": list(self.unchecked_rules),
            **({"basis": self.basis} if self.basis is not None else {}),
        }


@record
class Matrix:
    """The verdict of every read release of the engines, grouped into version ranges."""

    draft: str
    target: str | None
    rows: list[MatrixRow]
    notes: list[str]
    values: str | None = None  # the value-check mode, when the weights' values were read

    def to_dict(self) -> dict[str, Any]:
        return {
            "draft": self.draft,
            "target": self.target,
            "rows": [r.to_dict() for r in self.rows],
            "notes": list(self.notes),
        }

    def exit_code(self, fail_on: FailOn | Severity | str = FailOn.ERROR) -> int:
        """1 when a row's deciding findings or verdict fail at `fail_on` (as for check)."""
        threshold = FailOn.of(fail_on)
        failing = threshold.fails(
            (f.severity for row in self.rows for f in row.findings_for_exit),
            (row.verdict for row in self.rows),
        )
        return 1 if failing else 0


def build_matrix(
    checkpoint: Checkpoint,
    target: Target | None,
    engines: tuple[Engine, ...] = ENGINES,
    method: str | None = None,
    selection: Selection | None = None,
    values: str | None = None,
    serve: ServeSettings | None = None,
    checker: Callable[..., Report] | None = None,
) -> Matrix:
    """Check `checkpoint` against every known version of every engine and group the results.

    One check per engine covers all its versions; each version's recipe reuses that check
    (its description of the draft, its profile), and what depends on no version is found
    once for all (`check_checkpoint`'s `shared`). `values`: also run the value rules.
    `checker`: the check to make of each engine's releases (default `check_checkpoint`; an
    MTP target's is :func:`draftfit.mtp_check.recheck_mtp` with its index's names)."""
    rows: list[MatrixRow] = []
    notes: list[str] = []
    if target is None:
        notes.append("no --target: checks that need the target were skipped in every version")
    if serve is not None:
        notes.append(f"serving settings, judged for {serve.engine}'s versions: {serve.summary()}")
    # What the checks of every engine and the recipes of every release share: the draft's
    # and the target's own checks, the planned outputs, the recipes' launches.
    shared: dict[str, Any] = {}
    for engine in engines:
        profiles = [engine.resolve(v) for v in engine.versions]
        report = (checker or check_checkpoint)(
            checkpoint, target, profiles, method, values=values, serve=serve, shared=shared
        )
        if selection is not None:
            apply_to_report(report, selection)
        current: MatrixRow | None = None
        current_key: _RowKey | None = None
        by_engine = findings_by_engine(report.findings)
        for result in report.engines:
            applying = by_engine.get(result.key, [])
            deciding = _deciding(applying, result.verdict)
            shown = serving_for(report, result, applying)
            recipe = shown if isinstance(shown, Recipe) else None
            missing = shown if isinstance(shown, NoRecipe) else None
            key = (
                result.verdict,
                _signature(deciding, result.title),
                _recipe_signature(shown, result.version),
                tuple(r.replace(result.title, "<engine>") for r in result.unverified_reasons),
            )
            if current is not None and key == current_key:
                # reasons that name the release (an MTP check's "not read"): the range's
                current.unverified_reasons = [
                    r.replace(result.title, engine.title) for r in result.unverified_reasons
                ]
                current.last = result.version
                current.versions.append(result.version)
                current.deciding = deciding  # newest wording
                current.recipe = recipe
                current.no_recipe = missing
                current.findings_for_exit.extend(applying)
                current.add_basis(result.basis)
                continue
            current = MatrixRow(
                engine.name,
                engine.title,
                result.version,
                result.version,
                result.verdict,
                deciding,
                [result.version],
                recipe,
                missing,
                list(result.unverified_reasons),
                list(result.unchecked_rules),
                list(applying),
            )
            current.add_basis(result.basis)
            current_key = key
            rows.append(current)
    if values is not None:
        notes.append(
            "weight values read ("
            + ("every byte of the draft" if values == "full" else "a fixed sample of rows")
            + "): DF7xx findings apply to every version"
        )
    return Matrix(checkpoint.origin, target.origin if target else None, rows, notes, values)


def _recipe_signature(shown: Recipe | NoRecipe, version: str) -> tuple[str]:
    """What makes two versions' recipes (or reasons for none) "the same": everything but the
    version itself."""
    if isinstance(shown, NoRecipe):
        text = json.dumps({"reason": shown.reason, "remaining": shown.remaining})
    else:
        text = json.dumps(
            {"steps": shown.steps, "command": shown.command, "remaining": shown.remaining},
            sort_keys=True,
        )
    # the version as a whole word: 0.4.4 in "0.4.4.post2" (another release) stays
    whole = re.compile(rf"(?<![\w.]){re.escape(version)}(?![\w]|\.\w)")
    return (whole.sub("<version>", text),)


def _signature(findings: list[Finding], title: str) -> tuple[tuple[str, str], ...]:
    """What makes two versions' verdicts "the same": codes and messages, version removed."""
    return tuple(sorted((f.code, f.message.replace(title, "<engine>")) for f in findings))


def _deciding(applying: list[Finding], verdict: Verdict) -> list[Finding]:
    """The findings at the severity that decided this version's verdict (`applying`: the
    findings that apply to the version)."""
    if verdict == COMPATIBLE:
        return []
    if verdict == UNVERIFIED:
        return [f for f in applying if f.code in UNVERIFIED_CODES and f.counts]
    level = Severity.ERROR if verdict in FAILING_VERDICTS else Severity.WARNING
    return [f for f in applying if f.severity == level and f.counts]
