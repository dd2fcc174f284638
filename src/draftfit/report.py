"""Findings, per-engine verdicts and the report every renderer reads.

The JSON form (:meth:`Report.to_dict`) is a stable, documented interface: keys are only
ever added (bump `schema_version` on any incompatible change).
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

from draftfit.engines.profile import EngineVersion
from draftfit.location import Location
from draftfit.records import field, frozen, record
from draftfit.rule_ids import (
    ALL_RULE_IDS,
    VALUES_FAMILY,
    VERIFIER_DIFFERS_FROM_TARGET,
    Consequence,
    RuleId,
    Severity,
)
from draftfit.serve.settings import SETTINGS_FLAGS
from draftfit.verdicts import UNVERIFIED as UNVERIFIED  # re-exported for renderers
from draftfit.verdicts import FailOn, Verdict
from draftfit.version import __version__

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Protocol

    from draftfit.checkpoint.hub_cache import HubOrigin
    from draftfit.checkpoint.model import Checkpoint
    from draftfit.draft.aux_counting import AuxCounting
    from draftfit.draft.description import DraftDescription
    from draftfit.draft.dialects import Dialect
    from draftfit.draft.mtp import MtpTarget
    from draftfit.draft.target import Target
    from draftfit.draft.verifier_identity import VerifierCheck
    from draftfit.engines.interface import NoRecipe, Recipe
    from draftfit.engines.launch_judgement import JudgedLaunch
    from draftfit.engines.profile import Profile
    from draftfit.engines.view import EngineView
    from draftfit.serve.settings import ServeSettings

    class Checker(Protocol):
        """The checker's signature: (checkpoint, target, profiles, method) -> report, with
        the launch's settings when a recipe is checked under its own command."""

        def __call__(
            self,
            checkpoint: Checkpoint,
            target: Target | None,
            profiles: list[Profile],
            method: str | None = None,
            *,
            serve: ServeSettings | None = None,
            shared: dict[str, Any] | None = None,
        ) -> Report: ...


SCHEMA_VERSION = 1
# How many related places the text formats name (JSON and SARIF list them all).
RELATED_SHOWN = 8

INCOMPATIBLE = Verdict.INCOMPATIBLE
DRAFTS_GARBAGE = Verdict.DRAFTS_GARBAGE
# The verdicts that fail the default gate (`--fail-on error`).
FAILING_VERDICTS = frozenset({INCOMPATIBLE, DRAFTS_GARBAGE})
# Nothing fails, but draftfit's data cannot say what a finding does to serving (the rules
# whose consequence is `unknown`: the target class, a target quantization, a rotation), or
# checks that could change the answer were skipped (no target): not called compatible.
# `UNVERIFIED` lives in draftfit.verdicts.
UNVERIFIED_RULES: frozenset[RuleId] = frozenset(
    rule for rule in ALL_RULE_IDS if rule.consequence is Consequence.UNKNOWN
)
UNVERIFIED_CODES = frozenset(item.code for item in UNVERIFIED_RULES)
DEGRADED = Verdict.DEGRADED
COMPATIBLE = Verdict.COMPATIBLE


@frozen
class DialectFacts:
    """Which producer convention wrote the draft, as the report shows it."""

    name: str
    variant: str | None
    title: str
    evidence: tuple[str, ...]
    version_hint: str | None

    @classmethod
    def of(cls, dialect: Dialect) -> DialectFacts:
        return cls(
            dialect.name,
            dialect.variant,
            dialect.title,
            tuple(dialect.evidence),
            dialect.version_hint,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "variant": self.variant,
            "title": self.title,
            "evidence": list(self.evidence),
            "version_hint": self.version_hint,
        }


@frozen
class MtpFacts:
    """The checkpoint of an MTP check, shown as what it is: the target, carrying its own MTP
    layers (no separate draft is served).

    Attributes:
        source: the checkpoint as given.
        architecture, model_type: the target config's `architectures[0]` and `model_type`.
        family, family_title: its MTP family (`deepseek_v3`, "DeepSeek-V3"), None when
            draftfit's family table has none for the architecture.
        depth_key: the config key that declares the MTP depth.
        depth_declared: the depth declared there (None: absent or not an integer).
        layers_shipped: where the MTP layers shipped are (their tensor prefixes).
        quantization: the target's quantization scheme (`quant_method`, or ModelOpt's / Quark's
            scheme: `modelopt-nvfp4`, `quark-mxfp4`; None: unquantized).
        excluded_modules: how many modules its quantization config leaves unquantized.
        role: `target`, or `nextn-export` (a stand-alone NextN export).
        served_beside: a NextN export's target, as given (None for a target).
    """

    source: str
    architecture: str | None
    model_type: str | None
    family: str | None
    family_title: str | None
    depth_key: str
    depth_declared: int | None
    layers_shipped: tuple[str, ...]
    quantization: str | None
    excluded_modules: int
    role: str = "target"
    served_beside: str | None = None

    @classmethod
    def of(cls, source: str, target: MtpTarget, served_beside: str | None = None) -> MtpFacts:
        """The facts of `target`; `served_beside`: the checkpoint is a stand-alone NextN
        export (its layer as a NextN loader reads it), served beside that target."""
        family = target.family
        layers = tuple(target.layers[i].prefix.rstrip(".") for i in target.shipped())
        return cls(
            source,
            target.architecture,
            target.model_type,
            family.name if family is not None else None,
            family.title if family is not None else None,
            target.depth_key,
            target.depth,
            layers,
            target.quant.scheme or target.quant.method,
            len(target.quant.exclusions) + len(target.quant.dynamic),
            "nextn-export" if served_beside is not None else "target",
            served_beside,
        )

    def summary(self) -> str:
        """One line: family, declared depth, MTP layers shipped, quantization."""
        family = self.family_title or "no MTP family draftfit knows"
        depth = "absent" if self.depth_declared is None else str(self.depth_declared)
        shipped = ", ".join(self.layers_shipped[:4]) or "none"
        if len(self.layers_shipped) > 4:
            shipped += f" and {len(self.layers_shipped) - 4} more"
        quant = "unquantized"
        if self.quantization is not None:
            quant = f"quantized `{self.quantization}`, {self.excluded_modules} module(s) excluded"
        return (
            f"{family} (`{self.architecture}`) · `{self.depth_key}` {depth} · "
            f"MTP layers shipped: {shipped} · {quant}"
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "role": self.role,
            "source": self.source,
            "architecture": self.architecture,
            "model_type": self.model_type,
            "family": self.family,
            "family_title": self.family_title,
            "depth_key": self.depth_key,
            "depth_declared": self.depth_declared,
            "layers_shipped": list(self.layers_shipped),
            "quantization": self.quantization,
            "excluded_modules": self.excluded_modules,
        }
        if self.served_beside is not None:
            out["target"] = self.served_beside
        return out


@frozen
class TargetFacts:
    """What the report says about the target model (read from its config.json), and what
    the draft records about the model it was trained for next to it (`verifier`)."""

    architecture: str | None
    model_type: str | None
    hidden_size: int | None
    num_layers: int | None
    vocab_size: int | None
    text_config: str | None  # JSON pointer of the text sub-config, when nested
    verifier: VerifierCheck | None = None

    @classmethod
    def of(cls, target: Target, draft: DraftDescription | None = None) -> TargetFacts:
        """The target's facts; with the draft's description, also what the draft records
        about its verifier next to them."""
        verifier = None
        if draft is not None:
            from draftfit.draft.verifier_identity import check_verifier

            verifier = check_verifier(draft, target)
        return cls(
            target.architecture,
            target.model_type,
            target.hidden_size,
            target.num_layers,
            target.vocab_size,
            target.text_pointer or None,
            verifier,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "architecture": self.architecture,
            "model_type": self.model_type,
            "hidden_size": self.hidden_size,
            "num_layers": self.num_layers,
            "vocab_size": self.vocab_size,
            "text_config": self.text_config,
        }
        if self.verifier is not None:
            out["verifier"] = self.verifier.to_dict()
        return out


class SkipReason(Enum):
    """Why a rule did not run (its value is what the report says)."""

    NO_TARGET = "needs --target"
    # it judges the launch's settings; the verdict is that of a default launch
    NO_LAUNCH = f"needs {SETTINGS_FLAGS}"


@frozen
class SkippedRule:
    """A rule that did not run, and why (e.g. it needs a target and none was given)."""

    rule: RuleId
    reason: SkipReason

    @property
    def code(self) -> str:
        return self.rule.code

    @property
    def name(self) -> str:
        return self.rule.name

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "name": self.name, "reason": self.reason.value}


@frozen
class AuxLayers:
    """The aux hidden-state layers one engine version will capture for this draft."""

    used: tuple[int, ...] | None  # capture-before ids; None when unknown (no target)
    read_from: str | None  # config pointer the ids came from; None when the default is used
    keys_read: tuple[str, ...]
    counting: AuxCounting
    expected_count: int | None
    launch_setting: str | None = None  # the launch's setting that chose the ids, if any

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "used": list(self.used) if self.used is not None else None,
            "read_from": self.read_from,
            "keys_read": list(self.keys_read),
            "counting": self.counting.value,
            "expected_count": self.expected_count,
        }
        if self.launch_setting is not None:
            out["launch_setting"] = self.launch_setting
        return out


@frozen
class Suppression:
    """Why a finding does not count: the reason and where the selection said so."""

    reason: str
    declared_in: str  # a settings file, or the command-line flag

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "source": self.declared_in}


@record
class Finding:
    """One problem (or fact worth knowing), with the engine versions it applies to.

    It carries the identity of the rule that made it (`rule`): its code, name and family
    come from there. `consequence` is what the finding does to serving (the rule's own
    unless the engine version or the case states another); the severity follows from it.
    """

    rule: RuleId
    message: str
    location: Location
    fix: str | None
    citations: tuple[str, ...]
    consequence: Consequence
    engines: list[EngineVersion] = field(default_factory=list)
    suppression: Suppression | None = None  # set by rule selection; then it does not count
    condition: str | None = None  # when a `degrades` finding degrades
    # A report's own grouping where it is not the rule's family (`diff`: "diff" for what
    # the engine sees differently, "raw" for bytes that differ).
    group: str | None = None
    # Other places the finding explains: the tensors whose shape findings it stands for
    # (reported once, at their cause, instead of once per tensor).
    related: tuple[Location, ...] = ()

    @property
    def code(self) -> str:
        return self.rule.code

    @property
    def name(self) -> str:
        return self.rule.name

    @property
    def family(self) -> str:
        return self.group or self.rule.family

    @property
    def severity(self) -> Severity:
        return self.consequence.severity

    @property
    def consequence_text(self) -> str:
        """The consequence as a user reads it ("loads, but drafts garbage: acceptance ≈ 0")."""
        own = self.condition == self.rule.condition  # the rule's effect goes with its condition
        return self.consequence.describe(self.condition, self.rule.effect if own else None)

    @property
    def counts(self) -> bool:
        """Whether the finding counts for verdicts and the exit status (not suppressed)."""
        return self.suppression is None

    @property
    def related_lines(self) -> list[str]:
        """The places the finding explains, as the text formats list them:
        ``explains: `q_proj.weight`, ...`` (tensors) and ``see also: config.json /x``."""
        tensors = [f"`{r.tensor}`" for r in self.related if r.tensor is not None]
        others = [str(r) for r in self.related if r.tensor is None and str(r)]
        lines = []
        if tensors:
            shown = tensors[:RELATED_SHOWN]
            more = len(tensors) - len(shown)
            lines.append("explains: " + ", ".join(shown) + (f" and {more} more" if more else ""))
        if others:
            lines.append("see also: " + ", ".join(others))
        return lines

    @property
    def kept_by_conversion(self) -> bool:
        """Whether a conversion leaves this finding as it is: it copies the weights verbatim
        and rewrites only names and config, so neither what the values show (DF7xx) nor the
        model the draft was trained for (DF507) changes, whatever the output records."""
        return self.rule.family == VALUES_FAMILY or self.rule == VERIFIER_DIFFERS_FROM_TARGET

    def key(self) -> tuple[str, str, Location]:
        return (self.code, self.message, self.location)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": str(self.severity),
            "consequence": str(self.consequence),
            "consequence_text": self.consequence_text,
            "message": self.message,
            "location": self.location.to_dict(),
            "engines": [e.label for e in self.engines],
            "fix": self.fix,
            "sources": list(self.citations),
            **({"related": [r.to_dict() for r in self.related]} if self.related else {}),
            **(
                {"suppressed": True, "suppression": self.suppression.to_dict()}
                if self.suppression is not None
                else {}
            ),
        }


@record
class VersionVerdict:
    """One engine version's verdict, as `check` and `diff` both report it.

    Attributes:
        engine, version, title: the engine version (`vllm`, `0.34.0`, `vLLM 0.34.0`).
        verdict: `check`: compatible / degraded / unverified / drafts-garbage /
            incompatible; `diff`: equivalent / unverified / different.
        counts: findings per severity (`check`) or per kind of difference (`diff`).
        unverified_reasons: why nothing found is not proof (e.g. "no target").
        unchecked_rules: the rules that could have changed the verdict but did not run.
    """

    engine: str
    version: str
    title: str
    verdict: Verdict = Verdict.UNVERIFIED
    counts: dict[str, int] = field(default_factory=dict)
    unverified_reasons: list[str] = field(default_factory=list)
    unchecked_rules: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.engine}=={self.version}"

    @property
    def key(self) -> EngineVersion:
        """This result's release, as findings are keyed."""
        return EngineVersion(self.engine, self.version)

    def verdict_dict(self) -> dict[str, Any]:
        """The JSON keys every per-version result has."""
        return {
            "engine": self.engine,
            "version": self.version,
            "verdict": self.verdict.value,
            "counts": dict(self.counts),
            "unverified_reasons": list(self.unverified_reasons),
            "unchecked_rules": list(self.unchecked_rules),
        }


@record
class EngineResult(VersionVerdict):
    """The verdict for one engine version, plus what it will do with the aux layers."""

    verdict: Verdict = COMPATIBLE
    draft_class: str | None = None
    aux_layers: AuxLayers | None = None
    # What the checker computed for this version (not part of the JSON form).
    profile: Profile | None = field(default=None, repr=False, compare=False)
    view: EngineView | None = field(default=None, repr=False, compare=False)
    # The version asked for with `--engine ENGINE~=V` when the data is `version`'s: the
    # verdict and every engine finding are extrapolated to it.
    extrapolated_to: str | None = None
    # The facts the verdict consulted, by how they are known (Profile.basis): those read in
    # the engine's code at this release, and the others with their confidence and note.
    basis: dict[str, Any] | None = None
    # Why this version was checked when no --engine named one (`vLLM 0.10.2, installed here`).
    chosen_because: str | None = None

    def kept(self) -> KeptEngine:
        """The profile and view the checker used for this version."""
        if self.profile is None or self.view is None:
            raise ValueError(f"{self.label}: this result was not made by the checker")
        return KeptEngine(self.profile, self.view)

    def to_dict(self) -> dict[str, Any]:
        out = self.verdict_dict()
        out["draft_class"] = self.draft_class
        out["extrapolated_to"] = self.extrapolated_to
        out["basis"] = self.basis
        out["chosen_because"] = self.chosen_because
        if self.aux_layers is not None:
            out["aux_layers"] = self.aux_layers.to_dict()
        if self.view is not None and self.view.mtp is not None:
            out["mtp"] = self.view.mtp.to_dict()
        return out


@frozen
class KeptEngine:
    """What the checker computed for one engine version: its profile and view."""

    profile: Profile
    view: EngineView


@frozen
class KeptCheck:
    """What the checker read and computed for a report.

    Attributes:
        checkpoint: the draft as read.
        draft: its description (`draftfit.draft.description.describe`).
        target: the target's facts, or None.
        checker: the function that made the report, to check a planned conversion the
            same way.
        shared: what the recipes of the report's versions compute once for all of them
            (:mod:`draftfit.commands.recipe`): nothing in it depends on the version.
    """

    checkpoint: Checkpoint
    draft: DraftDescription
    target: Target | None
    checker: Checker
    shared: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@record
class Report:
    """Everything `check` found, ready to render."""

    draft: str
    target: str | None
    dialect: DialectFacts
    method: str | None
    method_evidence: list[str]
    findings: list[Finding]
    engines: list[EngineResult]
    skipped_rules: list[SkippedRule] = field(default_factory=list)
    target_facts: TargetFacts | None = None
    recipes: list[Recipe] | None = None  # when asked for (`check --recipe`)
    # With the recipes: each version without one, and why.
    no_recipes: list[NoRecipe] | None = None
    # The launch, when given, as its engine's launch part judged it at each checked release.
    serve: JudgedLaunch | None = None
    # The settings file the selection came from, as the text report names it (not part of
    # the JSON form, where each suppressed finding names its source).
    settings_file: str | None = field(default=None, compare=False)
    # The Hub repository and revision the draft's folder layout names, when it does.
    hub_origin: HubOrigin | None = None
    # An MTP check: the checkpoint is the target, carrying the MTP layers it drafts with.
    mtp: MtpFacts | None = None
    # What the checker read and computed (not part of the JSON form): see `kept`.
    inputs: KeptCheck | None = field(default=None, repr=False, compare=False)

    def kept(self) -> KeptCheck:
        """The checkpoint, its description, the target and the checker behind this report,
        so that recipes, `diff` and `matrix` reuse them instead of reading them again."""
        if self.inputs is None:
            raise ValueError("this report was not made by the checker")
        return self.inputs

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity and f.counts)

    def exit_code(self, fail_on: FailOn | Severity | str = FailOn.ERROR) -> int:
        """1 when a counted finding (not suppressed) or an engine verdict fails at `fail_on`
        (see draftfit.verdicts)."""
        return exit_code(self.findings, self.engines, fail_on)

    def to_dict(self, fail_on: FailOn | Severity = Severity.ERROR) -> dict[str, Any]:
        out: dict[str, Any] = {
            **envelope(),
            "draft": {
                "source": self.draft,
                "dialect": self.dialect.to_dict(),
                "method": self.method,
                "method_evidence": list(self.method_evidence),
                **({"hub": self.hub_origin.to_dict()} if self.hub_origin is not None else {}),
            },
            "target": (
                {
                    "source": self.target,
                    **(self.target_facts.to_dict() if self.target_facts else {}),
                }
                if self.target
                else None
            ),
            "engines": [e.to_dict() for e in self.engines],
            "findings": [f.to_dict() for f in self.findings],
            "skipped_rules": [s.to_dict() for s in self.skipped_rules],
            "summary": {
                "error": self.count(Severity.ERROR),
                "warning": self.count(Severity.WARNING),
                "info": self.count(Severity.INFO),
                "exit_code": self.exit_code(fail_on),
            },
        }
        if self.recipes is not None:
            out["recipes"] = [r.to_dict() for r in self.recipes]
            out["no_recipes"] = [r.to_dict() for r in self.no_recipes or []]
        if self.serve is not None:
            out["serve"] = self.serve.to_dict()
        if self.mtp is not None:
            out["mtp"] = self.mtp.to_dict()
        return out


def envelope() -> dict[str, Any]:
    """The keys a report's JSON form starts with: its schema version and the tool."""
    return {"schema_version": SCHEMA_VERSION, "tool": {"name": "draftfit", "version": __version__}}


def exit_code(
    findings: Iterable[Finding],
    results: Iterable[VersionVerdict],
    fail_on: FailOn | Severity | str = FailOn.ERROR,
) -> int:
    """1 when a counted finding (not suppressed) or a version's verdict fails at `fail_on`
    (see draftfit.verdicts), else 0: the exit status of `check` and `diff`."""
    failing = FailOn.of(fail_on).fails(
        (f.severity for f in findings if f.counts), (r.verdict for r in results)
    )
    return 1 if failing else 0


def findings_by_engine(findings: list[Finding]) -> dict[EngineVersion, list[Finding]]:
    """The findings that apply to each engine version, in the order of `findings`.

    Built once per report: a check over many versions holds findings of every version, and
    scanning all of them again for each version costs time quadratic in the versions."""
    index: dict[EngineVersion, list[Finding]] = {}
    for finding in findings:
        for key in finding.engines:
            index.setdefault(key, []).append(finding)
    return index


def verdict_for(
    findings: list[Finding], key: EngineVersion, unverified_reasons: list[str] | None = None
) -> tuple[Verdict, dict[str, int]]:
    """Verdict and severity counts of the findings that apply to engine version `key`.

    An error whose consequence is that the engine will not run (refuses to start, fails at
    the first request) makes it `incompatible`; errors that all let it run but make every
    draft wrong make it `drafts-garbage`. Without errors or warnings the verdict is
    `unverified`, not `compatible`, when a finding's consequence is unknown (DF505: draftfit
    has no record of the target class) or `unverified_reasons` names checks that were
    skipped."""
    counts = {"error": 0, "warning": 0, "info": 0}
    findings = [f for f in findings if f.counts]
    runs = True
    for finding in findings:
        if key in finding.engines:
            counts[str(finding.severity)] += 1
            if finding.severity == Severity.ERROR and not _runs(finding):
                runs = False
    if counts["error"]:
        return (DRAFTS_GARBAGE if runs else INCOMPATIBLE), counts
    if counts["warning"]:
        return DEGRADED, counts
    if unverified_reasons or any(key in f.engines and _unknown(f) for f in findings):
        return UNVERIFIED, counts
    return COMPATIBLE, counts


def _unknown(finding: Finding) -> bool:
    """Whether draftfit cannot tell what this finding does to serving (an unknown
    consequence, the rule's own or this finding's)."""
    return finding.code in UNVERIFIED_CODES or finding.consequence is Consequence.UNKNOWN


def _runs(finding: Finding) -> bool:
    """Whether the engine still serves with this error finding (it drafts garbage)."""
    return finding.consequence is not None and finding.consequence.runs
