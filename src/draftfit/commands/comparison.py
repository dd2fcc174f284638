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

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checker import check_checkpoint, resolve_engines
from draftfit.checkpoint import Checkpoint
from draftfit.checkpoint.values import read_bytes
from draftfit.draft.aux_counting import default_capture_ids, resolve_with_target
from draftfit.draft.description import LAYER_FIELDS, DraftDescription, describe
from draftfit.draft.target import Target
from draftfit.engines.interface import engine_of
from draftfit.engines.profile import Profile
from draftfit.engines.view import EngineView
from draftfit.fail_on import UNVERIFIED, FailOn, Verdict
from draftfit.location import Location
from draftfit.records import field, record
from draftfit.report import SCHEMA_VERSION, Finding, Report, VersionVerdict
from draftfit.rule_ids import (
    CONFIG_KEY_DIFFERS,
    TENSOR_DTYPE_DIFFERS,
    TENSOR_NAME_DIFFERS,
    RuleId,
)
from draftfit.rules import registered
from draftfit.rules.base import Rule, Scope, Severity
from draftfit.serve.settings import ServeSettings
from draftfit.version import __version__

if TYPE_CHECKING:
    from typing import Any

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.METHOD_DIFFERS,
    rule_ids.DRAFT_CLASS_DIFFERS,
    rule_ids.DIMENSION_DIFFERS,
    rule_ids.AUX_LAYERS_DIFFER,
    rule_ids.NORM_BEHAVIOUR_DIFFERS,
    rule_ids.PARAMETER_DIFFERS,
    rule_ids.VOCAB_MAP_DIFFERS,
    rule_ids.ENGINE_VERDICT_DIFFERS,
    rule_ids.SPELLING_ONLY,
    rule_ids.EMBEDDING_PRESENCE_DIFFERS,
    rule_ids.CONFIG_KEY_DIFFERS,
    rule_ids.TENSOR_DTYPE_DIFFERS,
    rule_ids.TENSOR_NAME_DIFFERS,
)
EMITS_STAGE = "diff: the draft against the reference"

EQUIVALENT = Verdict.EQUIVALENT
DIFFERENT = Verdict.DIFFERENT

# Semantic fields the draft class reads, and what a difference changes.
SEMANTIC_FIELDS: tuple[tuple[str, str], ...] = (
    ("hidden_size", "every weight shape"),
    ("num_attention_heads", "every attention shape"),
    ("num_key_value_heads", "the k/v projection shapes and the KV cache"),
    ("intermediate_size", "the MLP shapes"),
    ("vocab_size", "the embedding and the output vocabulary"),
    ("hidden_act", "the MLP activation"),
    ("rms_norm_eps", "every RMSNorm"),
    ("rope_theta", "the rotary position embedding"),
    ("rope_scaling", "the rotary position embedding"),
    ("rope_parameters", "the rotary position embedding"),
    ("max_position_embeddings", "the draft's rotary cache length"),
    ("attention_bias", "which attention parameters exist"),
    ("mlp_bias", "which MLP parameters exist"),
    ("layer_types", "which draft layers use sliding-window attention"),
    ("sliding_window", "the sliding-window span"),
    ("use_sliding_window", "whether sliding-window attention is used"),
)
EFFECTIVE_FIELDS: tuple[tuple[str, str, str], ...] = (
    (
        "head_dim",
        "head_dim (declared, else hidden_size / num_attention_heads)",
        "every attention shape",
    ),
    ("target_hidden_size", "target_hidden_size (else hidden_size)", "fc's input width"),
    ("draft_vocab_size", "draft_vocab_size (else vocab_size)", "lm_head and the d2t map"),
    ("num_layers", "the number of decoder layers built", "the number of decoder layers"),
    ("num_aux_states", "the number of aux states fc consumes", "fc's input width"),
    ("use_aux_hidden_state", "whether fc and aux states are used", "what the draft reads"),
)
# What the draft class uses when a key is absent (transformers' LlamaConfig defaults, which
# the speculators library's `to_diff_dict` relies on when it omits default values).
FIELD_DEFAULTS: dict[str, Any] = {
    "hidden_act": "silu",
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
    "attention_bias": False,
    "mlp_bias": False,
    "use_sliding_window": False,
}
IGNORED_RAW_KEYS = frozenset({"transformers_version", "_name_or_path", "speculators_version"})
RAW_CODES = frozenset(
    r.code for r in (CONFIG_KEY_DIFFERS, TENSOR_DTYPE_DIFFERS, TENSOR_NAME_DIFFERS)
)


@record
class DiffResult(VersionVerdict):
    """The verdict for one engine version: are the two equivalent for it? `counts` holds
    `matters` and `spelling`; `unverified_reasons` says why no difference found is not proof
    of equivalence (e.g. "no target": checks of either side against the target were
    skipped)."""

    verdict: Verdict = EQUIVALENT
    # Why this version was compared when no --engine named one (`vLLM 0.10.2, installed here`).
    chosen_because: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**self.verdict_dict(), "chosen_because": self.chosen_because}


@record
class DiffReport:
    """What differs between a draft and a known-good reference, as the engine sees both."""

    draft: str
    reference: str
    dialects: tuple[str, str]
    findings: list[Finding]
    engines: list[DiffResult]
    notes: list[str] = field(default_factory=list)
    # The settings file the selection came from, as the text report names it.
    settings_file: str | None = field(default=None, compare=False)

    def exit_code(self, fail_on: FailOn | Severity | str = FailOn.ERROR) -> int:
        """1 when a counted finding (not suppressed) or an engine verdict fails at `fail_on`
        (see draftfit.fail_on)."""
        failing = FailOn.of(fail_on).fails(
            (f.severity for f in self.findings if f.counts), (e.verdict for e in self.engines)
        )
        return 1 if failing else 0

    def to_dict(self, fail_on: FailOn | Severity = Severity.ERROR) -> dict[str, Any]:
        counting = [f for f in self.findings if f.counts]
        return {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "draftfit", "version": __version__},
            "draft": {"source": self.draft, "dialect": self.dialects[0]},
            "reference": {"source": self.reference, "dialect": self.dialects[1]},
            "engines": [e.to_dict() for e in self.engines],
            "findings": [f.to_dict() for f in self.findings],
            "notes": list(self.notes),
            "summary": {
                "matters": sum(1 for f in counting if f.severity == Severity.ERROR),
                "spelling": sum(1 for f in counting if is_spelling(f)),
                "raw": sum(1 for f in counting if f.code in RAW_CODES),
                "exit_code": self.exit_code(fail_on),
            },
        }


def is_spelling(finding: Finding) -> bool:
    """A semantic difference below error: written differently, resolved the same way by the
    engine (DF810, and DF811's stored-or-borrowed embedding). The text report's "Spelling"
    section, the verdict line's "N spelling" and the JSON summary all count with this."""
    return finding.family == "diff" and finding.severity < Severity.ERROR


def set_verdicts(findings: list[Finding], results: list[DiffResult]) -> None:
    """Each engine version's counts and verdict from the findings that count for it."""
    for result in results:
        counts = {"matters": 0, "spelling": 0}
        for finding in findings:
            if result.key in finding.engines and finding.counts:
                if finding.severity == Severity.ERROR:
                    counts["matters"] += 1
                elif is_spelling(finding):
                    counts["spelling"] += 1
        result.counts = counts
        if counts["matters"]:
            result.verdict = DIFFERENT
        else:
            result.verdict = UNVERIFIED if result.unverified_reasons else EQUIVALENT


@record
class _Side:
    """One side of a comparison: the checkpoint, its description, the engine's view and
    its check."""

    checkpoint: Checkpoint
    spec: DraftDescription
    view: EngineView
    report: Report


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
    spec_a, spec_b = report_a.kept().spec, report_b.kept().spec
    layers, layers_note = _target_layers(target, spec_a, spec_b)
    notes = [layers_note] if layers_note else []
    collected: dict[tuple[object, ...], Finding] = {}
    results: list[DiffResult] = []
    for index, profile in enumerate(profiles):
        a, b = (
            _side(checkpoint, report, index)
            for checkpoint, report in ((draft, report_a), (reference, report_b))
        )
        for name, message, location in _compare(a, b, profile, layers):
            rule = _rule(name)
            finding = Finding(
                rule.id,
                message,
                location,
                None,
                (),
                rule.consequence,
                condition=rule.condition,
                group="diff",
            )
            existing = collected.setdefault(finding.key(), finding)
            if profile.key not in existing.engines:
                existing.engines.append(profile.key)
        result = DiffResult(profile.engine, profile.version, profile.title)
        result.chosen_because = profile.chosen_because
        for side in (a, b):
            engine_result = side.report.engines[0]
            for reason in engine_result.unverified_reasons:
                if reason not in result.unverified_reasons:
                    result.unverified_reasons.append(reason)
            for code in engine_result.unchecked_rules:
                if code not in result.unchecked_rules:
                    result.unchecked_rules.append(code)
        results.append(result)
    for name, message, location in _compare_raw(draft, reference, spec_a, spec_b):
        rule = _rule(name)
        collected.setdefault(
            (rule.code, message, location),
            Finding(
                rule.id,
                message,
                location,
                None,
                (),
                rule.consequence,
                [p.key for p in profiles],
                condition=rule.condition,
                group="raw",
            ),
        )
    findings = sorted(collected.values(), key=lambda f: (-int(f.severity), f.code, f.message))
    set_verdicts(findings, results)
    return DiffReport(
        draft.origin,
        reference.origin,
        (spec_a.dialect.title, spec_b.dialect.title),
        findings,
        results,
        notes,
    )


def _side(checkpoint: Checkpoint, report: Report, index: int) -> _Side:
    """One side of the comparison for the profile at `index`: its description, the
    engine view the check built, and the check narrowed to that version."""
    result = report.engines[index]
    key = result.key
    narrowed = Report(
        draft=report.draft,
        target=report.target,
        dialect=report.dialect,
        method=report.method,
        method_evidence=report.method_evidence,
        findings=[f for f in report.findings if key in f.engines],
        engines=[result],
    )
    return _Side(checkpoint, report.kept().spec, result.kept().view, narrowed)


def _rule(rule_id: RuleId) -> Rule:
    found = registered(rule_id)
    assert found.scope is Scope.DIFF, rule_id
    return found


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


# ---------------------------------------------------------------------- semantic comparison

Difference = tuple[RuleId, str, Location]


def _fmt(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    return (
        str(list(value))
        if isinstance(value, tuple)
        else repr(value)
        if isinstance(value, str)
        else str(value)
    )


def _target_layers(
    target: Target | None, a: DraftDescription, b: DraftDescription
) -> tuple[int | None, str | None]:
    """The target's layer count, or one implied by an aux list in the default pattern.

    Without a target, a written list `[2, L//2, L-3]` (capture-before) or `[1, L//2-1, L-4]`
    (output-of) names L: that is how both checkpoints' captured layers can be compared.
    """
    if target is not None and target.num_layers:
        return target.num_layers, None
    for spec in (a, b):
        for aux in spec.aux:
            for ids in (tuple(aux.ids), aux.capture_before()):
                if len(ids) == 3 and ids == default_capture_ids(ids[2] + 3):
                    layers = ids[2] + 3
                    return layers, (
                        f"no --target: a {layers}-layer target is assumed, because "
                        f"`{aux.pointer}` {list(aux.ids)} is the default aux pattern for it"
                    )
    return None, None


def _compare(a: _Side, b: _Side, profile: Profile, layers: int | None) -> Iterator[Difference]:
    title = profile.title
    cfg = Location("config.json")
    if a.spec.method != b.spec.method:
        yield (
            rule_ids.METHOD_DIFFERS,
            f"the draft is {a.spec.method or 'unknown'}, the reference "
            f"{b.spec.method or 'unknown'}",
            cfg,
        )
        return
    va, vb = a.report.engines[0].verdict, b.report.engines[0].verdict
    if va != vb and "incompatible" in (va, vb):
        worst_a = _first_problem(a.report)
        worst_b = _first_problem(b.report)
        yield (
            rule_ids.ENGINE_VERDICT_DIFFERS,
            f"{title} finds the draft {va}{worst_a} and the reference {vb}{worst_b}",
            cfg,
        )
    yield from _compare_class(a, b, profile)
    if not (a.view.built and b.view.built):
        return
    yield from _compare_fields(a, b, title)
    yield from _compare_norms(a, b, title)
    yield from _compare_aux(a, b, title, layers)
    yield from _compare_parameters(a, b, title)
    yield from _compare_vocab_map(a, b)


def _first_problem(report: Report) -> str:
    worst = next(
        (
            f
            for f in report.findings
            if f.severity >= Severity.WARNING and report.engines[0].key in f.engines
        ),
        None,
    )
    return f" ({worst.code} {worst.name})" if worst else ""


def _compare_class(a: _Side, b: _Side, profile: Profile) -> Iterator[Difference]:
    """The draft classes, compared by the engine's own notion of one class."""
    title = profile.title
    ca, cb = a.view.draft_class, b.view.draft_class
    arch_a, arch_b = a.spec.get("architectures"), b.spec.get("architectures")
    loc = Location("config.json", "/architectures")
    if ca and cb and not engine_of(profile).same_class(ca, cb):
        yield (
            rule_ids.DRAFT_CLASS_DIFFERS,
            f"{title} builds `{ca}` for the draft and `{cb}` for the reference",
            loc,
        )
    elif ca and cb and arch_a != arch_b:
        same = f"`{ca}`" if ca == cb else f"`{ca}` and `{cb}`, registered to the same class"
        yield (
            rule_ids.SPELLING_ONLY,
            f"`architectures` {_fmt(arch_a)} vs {_fmt(arch_b)}: {title} resolves them to {same}",
            loc,
        )
    if a.spec.dialect.name != b.spec.dialect.name:
        yield (
            rule_ids.SPELLING_ONLY,
            f"config written by {a.spec.dialect.title} vs {b.spec.dialect.title}: "
            f"{title} reads the same fields from "
            f"`{a.spec.layer_config_pointer or '/'}` and `{b.spec.layer_config_pointer or '/'}`",
            Location("config.json"),
        )


def _compare_fields(a: _Side, b: _Side, title: str) -> Iterator[Difference]:
    for name, why in SEMANTIC_FIELDS:
        default = FIELD_DEFAULTS.get(name)
        x, y = a.view.config.get(name, default), b.view.config.get(name, default)
        x = default if x is None else x
        y = default if y is None else y
        if name == "max_position_embeddings" and profile_raises_context(a):
            continue
        if x != y and not (_is_empty(x) and _is_empty(y)):
            yield (
                rule_ids.DIMENSION_DIFFERS,
                f"`{name}` is {_fmt(x)} in the draft and {_fmt(y)} in the reference: changes {why}",
                Location("config.json", a.spec.pointer(name)),
            )
    for name, label, why in EFFECTIVE_FIELDS:
        x, y = a.view.effective.get(name), b.view.effective.get(name)
        if x != y:
            yield (
                rule_ids.DIMENSION_DIFFERS,
                f"{label}: {_fmt(x)} in the draft, {_fmt(y)} in the reference: changes {why}",
                Location("config.json", a.spec.pointer(name)),
            )
        elif (
            name == "head_dim"
            and (a.spec.head_dim_explicit is None) != (b.spec.head_dim_explicit is None)
            and a.spec.undeclared_head_dim is None
            and b.spec.undeclared_head_dim is None
        ):
            yield (
                rule_ids.SPELLING_ONLY,
                f"`head_dim` is {'declared' if a.spec.head_dim_explicit else 'derived'} in the "
                f"draft and {'declared' if b.spec.head_dim_explicit else 'derived'} in the "
                f"reference; both give {x}",
                Location("config.json", a.spec.pointer("head_dim")),
            )


def profile_raises_context(side: _Side) -> bool:
    return side.view.effective.get("max_position_raised") is True


def _is_empty(value: Any) -> bool:
    return value is None or value == {} or value == []


def _norms(side: _Side) -> dict[str, Any]:
    """The norm flags the engine runs for one side (`{}` when it resolved none)."""
    norms = side.view.effective.get("norms")
    return norms if isinstance(norms, dict) else {}


def _compare_norms(a: _Side, b: _Side, title: str) -> Iterator[Difference]:
    na = _norms(a)
    nb = _norms(b)
    for name in sorted(set(na) | set(nb)):
        if na.get(name) != nb.get(name):
            how_a = _norm_source(a, name)
            how_b = _norm_source(b, name)
            yield (
                rule_ids.NORM_BEHAVIOUR_DIFFERS,
                f"{title} runs `{name}` = {_fmt(na.get(name))} for the draft ({how_a}) and "
                f"{_fmt(nb.get(name))} for the reference ({how_b})",
                Location("config.json", f"/{name}"),
            )


def _norm_source(side: _Side, name: str) -> str:
    raw = side.checkpoint.config or {}
    if name in raw:
        return f"written as {_fmt(raw[name])}"
    if name == "norm_before_residual" and "norm_before_residual_defaulted" in side.view.effective:
        return "not written; the speculators adaptor defaults it"
    return "not written"


def _compare_aux(a: _Side, b: _Side, title: str, layers: int | None) -> Iterator[Difference]:
    used_a = _used(a, layers)
    used_b = _used(b, layers)
    trained_a = _trained(a.spec, layers)
    trained_b = _trained(b.spec, layers)
    loc = Location("config.json", "/eagle_aux_hidden_state_layer_ids")
    if trained_a is not None and trained_b is not None and trained_a != trained_b:
        yield (
            rule_ids.AUX_LAYERS_DIFFER,
            f"the draft was trained on capture-before ids {list(trained_a)}, the reference on "
            f"{list(trained_b)}",
            loc,
        )
    if used_a is not None and used_b is not None and used_a != used_b:
        yield (
            rule_ids.AUX_LAYERS_DIFFER,
            f"{title} captures target layers {list(used_a)} for the draft and "
            f"{list(used_b)} for the reference (capture-before counting)",
            loc,
        )
    written_a = [(x.pointer, x.ids, x.convention) for x in a.spec.aux]
    written_b = [(x.pointer, x.ids, x.convention) for x in b.spec.aux]
    if written_a != written_b and trained_a == trained_b and used_a == used_b:
        where_a = _where(a, layers)
        where_b = _where(b, layers)
        same = f" ({list(trained_a)} in capture-before counting)" if trained_a else ""
        yield (
            rule_ids.SPELLING_ONLY,
            f"aux ids written as {where_a} vs {where_b}: the same physical layers{same}, and "
            f"{title} captures the same ones for both",
            loc,
        )


def _where(side: _Side, layers: int | None) -> str:
    if not side.spec.aux:
        return "nothing (default layers)"
    resolved = [resolve_with_target(x, layers) for x in side.spec.aux]
    return ", ".join(f"`{x.pointer}` {list(x.ids)} ({x.convention})" for x in resolved)


def _used(side: _Side, layers: int | None) -> tuple[int, ...] | None:
    aux = side.view.aux
    if aux is None:
        return None
    if aux.used is not None:
        return tuple(sorted(set(aux.used)))
    if aux.read_from is None and layers:
        return default_capture_ids(layers)
    if aux.read_from is not None:
        for x in side.spec.aux:
            if x.pointer == aux.read_from:
                return tuple(sorted(set(x.ids)))
    return None


def _trained(spec: DraftDescription, layers: int | None) -> tuple[int, ...] | None:
    ids = spec.trained_capture_before(layers)
    return tuple(sorted(set(ids))) if ids is not None else None


def _compare_parameters(a: _Side, b: _Side, title: str) -> Iterator[Difference]:
    names = sorted(set(a.view.expectations) | set(b.view.expectations))
    reached_a = {f.canonical for f in a.view.fates if f.status == "loaded"}
    reached_b = {f.canonical for f in b.view.fates if f.status == "loaded"}
    unbound: dict[str, list[str]] = {"draft": [], "reference": []}
    for name in names:
        ta, tb = a.spec.tensors.get(name), b.spec.tensors.get(name)
        if ta is not None and tb is not None and (name in reached_a) != (name in reached_b):
            unbound["reference" if name in reached_a else "draft"].append(name)
        if name == "embed_tokens.weight" and (ta is None) != (tb is None):
            yield (
                rule_ids.EMBEDDING_PRESENCE_DIFFERS,
                f"`embed_tokens.weight` is stored only in the "
                f"{'draft' if ta is not None else 'reference'}; {title} uses a stored "
                "copy only when it differs from the target's embedding (speculators and "
                "SpecForge store the target's), else shares the target's",
                Location(None, tensor=name),
            )
            continue
        if ta is None and tb is None:
            continue
        if (ta is None) != (tb is None):
            side = "draft" if ta is not None else "reference"
            exp = a.view.expectations.get(name) or b.view.expectations.get(name)
            missing_fate = {
                "uninitialised": "left uninitialised",
                "ones": "left at 1.0",
                "shared": "taken from the target",
            }.get((exp.if_missing if exp is not None else None) or "", "absent")
            yield (
                rule_ids.PARAMETER_DIFFERS,
                f"`{name}` is stored only in the {side}; for the other {title} has it "
                f"{missing_fate}",
                Location(None, tensor=name),
            )
            continue
        assert ta is not None and tb is not None  # both stored (handled above otherwise)
        if tuple(ta.shape) != tuple(tb.shape):
            yield (
                rule_ids.PARAMETER_DIFFERS,
                f"`{name}` is {list(ta.shape)} in the draft and {list(tb.shape)} in the reference",
                Location(None, tensor=name),
            )
    for side, missed in unbound.items():
        if not missed:
            continue
        other = b if side == "reference" else a
        raw = other.spec.raw(missed[0])
        fate = next((f for f in other.view.fates if f.raw == raw), None)
        why = (fate.reason or fate.status) if fate else "not loaded"
        yield (
            rule_ids.PARAMETER_DIFFERS,
            f"{len(missed)} stored tensor(s) load for the "
            f"{'draft' if side == 'reference' else 'reference'} but not for the {side} (first "
            f"`{raw}`: {why})",
            Location(None, tensor=raw),
        )
    raw_a = {x.canonical: x.raw for x in a.view.fates if x.status == "loaded"}
    raw_b = {x.canonical: x.raw for x in b.view.fates if x.status == "loaded"}
    renamed = [n for n in raw_a if n in raw_b and raw_a[n] != raw_b[n]]
    if renamed:
        first = renamed[0]
        yield (
            rule_ids.SPELLING_ONLY,
            f"{len(renamed)} tensor(s) are named differently (e.g. `{raw_a[first]}` vs "
            f"`{raw_b[first]}`): {title} loads both into `{first}`",
            Location(None, tensor=raw_a[first]),
        )


def _compare_vocab_map(a: _Side, b: _Side) -> Iterator[Difference]:
    da, db = a.spec.tensors.get("d2t"), b.spec.tensors.get("d2t")
    if da is None or db is None or tuple(da.shape) != tuple(db.shape):
        return
    bytes_a, bytes_b = read_bytes(a.checkpoint, da), read_bytes(b.checkpoint, db)
    if bytes_a is None or bytes_b is None or da.dtype != db.dtype:
        return
    if hashlib.sha256(bytes_a).digest() != hashlib.sha256(bytes_b).digest():
        yield (
            rule_ids.VOCAB_MAP_DIFFERS,
            "`d2t` selects different target tokens in the two checkpoints: they were built "
            "with different draft vocabularies",
            Location(None, tensor=a.spec.raw("d2t")),
        )


# ---------------------------------------------------------------------- raw comparison


def _compare_raw(
    draft: Checkpoint, reference: Checkpoint, a: DraftDescription, b: DraftDescription
) -> Iterator[Difference]:
    flat_a = _flatten(draft.config or {})
    flat_b = _flatten(reference.config or {})
    # Map the decoder fields of nested conventions onto one name so that
    # `/transformer_layer_config/hidden_size` and `/hidden_size` compare as one key.
    layer_a = {_layer_key(a, p): p for p in flat_a}
    layer_b = {_layer_key(b, p): p for p in flat_b}
    for key in sorted(set(layer_a) | set(layer_b)):
        pa, pb = layer_a.get(key), layer_b.get(key)
        if key.strip("/").split("/")[0] in IGNORED_RAW_KEYS:
            continue
        if pa is None:
            assert pb is not None  # the key came from one side
            yield (
                rule_ids.CONFIG_KEY_DIFFERS,
                f"`{pb}` = {_fmt(flat_b[pb])} only in the reference",
                Location("config.json", pb),
            )
        elif pb is None:
            yield (
                rule_ids.CONFIG_KEY_DIFFERS,
                f"`{pa}` = {_fmt(flat_a[pa])} only in the draft",
                Location("config.json", pa),
            )
        elif flat_a[pa] != flat_b[pb]:
            where = f"`{pa}`" if pa == pb else f"`{pa}` / `{pb}`"
            yield (
                rule_ids.CONFIG_KEY_DIFFERS,
                f"{where}: {_fmt(flat_a[pa])} vs {_fmt(flat_b[pb])}",
                Location("config.json", pa),
            )
    for name in sorted(set(a.tensors) | set(b.tensors)):
        ta, tb = a.tensors.get(name), b.tensors.get(name)
        if ta is not None and tb is not None and ta.dtype != tb.dtype:
            yield (
                rule_ids.TENSOR_DTYPE_DIFFERS,
                f"`{name}` is {ta.dtype} in the draft and {tb.dtype} in the reference",
                Location(ta.file, tensor=a.raw(name)),
            )
        elif (ta is None) != (tb is None) and name in ("t2d", "mask_hidden"):
            yield (
                rule_ids.TENSOR_NAME_DIFFERS,
                f"`{name}` is stored only in the {'draft' if ta is not None else 'reference'}; "
                "engines skip it",
                Location(None, tensor=name),
            )


def _layer_key(spec: DraftDescription, pointer: str) -> str:
    base = spec.layer_config_pointer
    if base and pointer.startswith(base + "/"):
        rest = pointer[len(base) :]
        if rest.strip("/").split("/")[0] in LAYER_FIELDS:
            return rest
    return pointer


def _flatten(value: Any, pointer: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            token = str(key).replace("~", "~0").replace("/", "~1")
            out.update(_flatten(item, f"{pointer}/{token}"))
        return out
    return {pointer or "/": tuple(value) if isinstance(value, list) else value}
