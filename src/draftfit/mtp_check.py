"""The MTP check: a target that carries its own MTP (NextN) layers, served as its own draft.

`draftfit check TARGET --method mtp`, or a launch that selects MTP (vLLM `{"method":
"mtp", ...}` or a per-family MTP method, SGLang `--speculative-algorithm NEXTN`), checks the
target's MTP layers instead of an EAGLE draft: no `--target` (the checkpoint is the
target). The target is read from its config, its index and the headers of the shards
holding MTP tensors only (:func:`draftfit.checkpoint.scoped.load_scoped`; from the Hub,
:func:`draftfit.origins.hub.load_hub_scoped`, those headers at once); each engine
release's MTP procedure (its engine's `by_method["mtp"]`, steps in
:mod:`draftfit.engines.procedure` and `engines/<engine>/mtp.py`) judges it from that release's data,
and the MTP rules (:mod:`draftfit.rules.mtp`) turn what it found into findings. A release
whose MTP handling draftfit has not read gets an `unverified` verdict, never `compatible`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint.local import read_json_object
from draftfit.checkpoint.model import Checkpoint
from draftfit.checkpoint.scoped import load_scoped
from draftfit.draft.description import DraftDescription, describe
from draftfit.draft.mistakes import DRAFT_KEYS
from draftfit.draft.mtp import (
    MTP,
    MtpSelection,
    MtpTarget,
    family_of,
    read_mtp_target,
)
from draftfit.draft.nextn_export import NextnExport, nextn_export_class, read_nextn_export
from draftfit.draft.target import Target
from draftfit.engines.installed import resolve_engines
from draftfit.engines.interface import build_view, engine_of
from draftfit.engines.launch_judgement import JudgedLaunch
from draftfit.engines.mtp_view import MtpInputs, MtpLaunch, MtpView
from draftfit.engines.profile import EngineVersion, Profile
from draftfit.engines.view import BuildInputs, EngineView
from draftfit.errors import UsageError
from draftfit.report import (
    DialectFacts,
    EngineResult,
    Finding,
    KeptCheck,
    MtpFacts,
    Report,
    SkippedRule,
    SkipReason,
    findings_by_engine,
    verdict_for,
)
from draftfit.rule_ids import (
    INVALID_CONFIG,
    MTP_CHECK_RULE_IDS,
    MTP_DRAFT_PATH_REQUIRED,
    MTP_LAUNCH_KIND,
    MTP_METHOD_NAME,
    MTP_TOKEN_COUNT_MISSING,
    SERVE_SETTING_INVALID,
    RuleId,
)
from draftfit.rules import all_rules, get_rule
from draftfit.rules.base import Context, Rule, Violation
from draftfit.serve.settings import ServeSettings

if TYPE_CHECKING:
    from typing import Any

# Methods (any case) that select MTP drafting from a launch.
MTP_ALGORITHMS = frozenset({"mtp", "nextn"})
EAGLE_METHODS = frozenset({"eagle", "eagle3"})
QUANT_FILE = "hf_quant_config.json"
# Where a report's kept inputs hold the target's MTP facts (for its recipes).
KEPT_TARGET = "mtp_target"
# The rules that report what the reader found damaged.
STRUCTURE_FAMILY = "structure"
EMITS: tuple[RuleId, ...] = (INVALID_CONFIG,)
EMITS_STAGE = "MTP check: the target's hf_quant_config.json"
# What an MTP check's checkpoint is: no producer's draft convention, the target itself.
MTP_TARGET = DialectFacts(
    "mtp-target", None, "target carrying its own MTP layers (no separate draft)", (), None
)
# ... and a stand-alone NextN export, served beside its target.
NEXTN_EXPORT = DialectFacts(
    "nextn-export",
    None,
    "stand-alone NextN export (a target's NextN layer as layer 0 of a one-layer model)",
    (),
    None,
)
# The rules that judge the launch: without one for an engine they are listed as skipped.
LAUNCH_RULES = (
    MTP_METHOD_NAME,
    MTP_TOKEN_COUNT_MISSING,
    MTP_LAUNCH_KIND,
    MTP_DRAFT_PATH_REQUIRED,
    SERVE_SETTING_INVALID,
)


def selects_mtp(method: str | None, serve: ServeSettings | None) -> bool:
    """Whether `--method` or the launch's method selects MTP drafting (`mtp`, a per-family
    `*_mtp` method, `NEXTN`) of the checkpoint's own MTP layers. `NEXTN` is SGLang's alias of
    its EAGLE worker: with a draft path of its own the launch serves that draft, which is
    checked as a draft."""
    if method == MTP:
        return True
    if method is not None or serve is None or serve.method is None:
        return False
    named = serve.method.lower()
    if named == "nextn" and serve.draft_model not in (None, serve.target_model):
        return False  # SGLang's EAGLE alias with a draft of its own: checked as a draft
    return named in MTP_ALGORITHMS or named.endswith("_mtp")


def launches_target_mtp(checkpoint: Checkpoint, serve: ServeSettings | None) -> bool:
    """Whether the checkpoint is a target whose family ships MTP layers, given with a launch
    of it that names no draft of its own (an EAGLE method on the target, SGLang's EAGLE
    alias of NEXTN): the launch is then judged as an MTP launch of the target."""
    if serve is None or family_of(checkpoint.config) is None:
        return False
    return serve.draft_model is None or serve.draft_model == serve.target_model


def check_mtp_path(
    source: str | Path,
    engines: Iterable[str] | None,
    serve: ServeSettings | None,
    values: str | None = None,
) -> Report:
    """Read the target at `source` (its MTP shards only: locally, or from the Hub with the
    header reads at once) and check its MTP layers."""
    profiles = resolve_engines(engines)
    checkpoint, names = open_mtp_target(source)
    if is_nextn_export(checkpoint):
        raise UsageError(export_needs_target(checkpoint))
    return check_mtp(checkpoint, profiles, serve, names, values)


def export_needs_target(checkpoint: Checkpoint) -> str:
    """The usage error of a NextN export given without its target."""
    return (
        f"{checkpoint.origin} is a stand-alone NextN export (a target's NextN layer stored as "
        "layer 0 of a one-layer model): it is checked beside the target it is served with: "
        "add --target TARGET"
    )


def open_mtp_target(source: str | Path) -> tuple[Checkpoint, list[str]]:
    """The target at `source` as an MTP check reads it (its config, its index and the
    headers of the shards holding MTP tensors), and the tensor names that matter to its
    MTP facts (from the index: most of them have no header read)."""
    from draftfit.origins.reference import is_hub_reference, open_scoped

    text = str(source)
    selection = MtpSelection()
    if is_hub_reference(text):
        scoped = open_scoped(text, selection, selection.query)
    else:
        scoped = load_scoped(source, selection, query=selection.query)
    # the names that matter to the MTP facts, as the selection found them in the index
    names = selection.relevant if selection.relevant is not None else scoped.names()
    return scoped.checkpoint, names


def is_nextn_export(checkpoint: Checkpoint) -> bool:
    """Whether `checkpoint` is a stand-alone NextN export (`...ForCausalLMNextN`)."""
    return nextn_export_class(checkpoint.config) is not None


def read_export(checkpoint: Checkpoint, target: str | Path) -> NextnExport:
    """The NextN export `checkpoint` as facts, next to the target at `target`."""
    target_checkpoint, target_names = open_mtp_target(target)
    target_facts = mtp_target(target_checkpoint, target_names)
    return read_nextn_export(
        checkpoint.config or {},
        list(checkpoint.tensors),
        checkpoint.tensors,
        str(target),
        target_checkpoint.config,
        target_facts.backbone_modules,
        quant_file(checkpoint),
    )


def check_mtp(
    checkpoint: Checkpoint,
    profiles: list[Profile],
    serve: ServeSettings | None,
    names: list[str] | None = None,
    values: str | None = None,
    export: NextnExport | None = None,
) -> Report:
    """Run each release's MTP procedure on the target `checkpoint` (`names`: every tensor
    name it holds, when only some headers were read) and report; `values` (`"sampled"` or
    `"full"`) also reads the MTP layers' values for the value rules. `export`: the
    checkpoint is a stand-alone NextN export served beside that target."""
    target = export.as_loaded if export is not None else mtp_target(checkpoint, names)
    value_facts = None
    if values is not None:  # numpy is imported only then
        from draftfit.values.mtp_scan import mtp_value_facts

        value_facts = mtp_value_facts(checkpoint, target, values)
    draft = describe(checkpoint)
    eagle_draft = _eagle_draft(checkpoint)
    findings: dict[tuple[object, ...], Finding] = {}
    results: list[EngineResult] = []
    skipped: list[SkippedRule] = []
    # the reader's damage (a shard that cannot be read, a broken index): as for any check
    base = Context(checkpoint, draft, None, method=MTP)
    for structural in all_rules():
        if structural.family == STRUCTURE_FAMILY:
            for profile in profiles:
                _gather(findings, structural, structural.run(base), profile.key)
    for profile in profiles:
        settings = serve.for_engine(profile.engine) if serve is not None else None
        view = build_mtp_view(checkpoint, draft, target, profile, settings, eagle_draft, export)
        ctx = Context(checkpoint, draft, None, view, method=MTP, values=value_facts, serve=settings)
        for rule_id in MTP_CHECK_RULE_IDS:
            item = get_rule(rule_id.code)
            if item is None:
                continue
            if item.id in LAUNCH_RULES and settings is None:
                if all(s.code != item.code for s in skipped):
                    skipped.append(SkippedRule(item.id, SkipReason.NO_LAUNCH))
                continue
            _gather(findings, item, item.run(ctx), profile.key)
        result = EngineResult(
            profile.engine,
            profile.version,
            profile.title,
            profile=profile,
            view=view,
            extrapolated_to=profile.requested,
            chosen_because=profile.chosen_because,
        )
        result.basis = profile.basis()
        results.append(result)
    ordered = sorted(findings.values(), key=lambda f: (-int(f.severity), f.code, str(f.location)))
    applying = findings_by_engine(ordered)
    for result in results:
        mtp = result.view.mtp if result.view is not None else None
        result.unverified_reasons = list(mtp.not_read) if mtp is not None else []
        result.verdict, result.counts = verdict_for(
            applying.get(result.key, []), result.key, result.unverified_reasons
        )
    evidence = [f"--serve-args/--serve-config: {serve.method}"] if serve and serve.method else []
    served_beside = export.target if export is not None else None
    return Report(
        draft=checkpoint.origin,
        target=served_beside,
        # an EAGLE draft given to an MTP launch is shown as the draft it is (DF146 says why)
        dialect=(
            DialectFacts.of(draft.dialect)
            if eagle_draft is not None
            else NEXTN_EXPORT
            if export is not None
            else MTP_TARGET
        ),
        method=MTP,
        method_evidence=evidence or ["--method mtp"],
        findings=ordered,
        engines=results,
        skipped_rules=skipped,
        inputs=KeptCheck(
            checkpoint,
            draft,
            None,
            partial(recheck_mtp, serve=serve, names=names, export=export),
            shared={KEPT_TARGET: target},
        ),
        serve=JudgedLaunch(serve) if serve is not None else None,
        hub_origin=checkpoint.hub_origin,
        mtp=MtpFacts.of(checkpoint.origin, target, served_beside) if eagle_draft is None else None,
    )


def mtp_target(checkpoint: Checkpoint, names: list[str] | None = None) -> MtpTarget:
    """The MTP facts of `checkpoint` (with ModelOpt's `hf_quant_config.json` where present)."""
    return read_mtp_target(
        checkpoint.config,
        names if names is not None else list(checkpoint.tensors),
        checkpoint.tensors,
        quant_file(checkpoint),
    )


def quant_file(checkpoint: Checkpoint) -> dict[str, Any] | None:
    """ModelOpt's `hf_quant_config.json` beside the config, where present."""
    if QUANT_FILE in checkpoint.files and checkpoint.access is not None:
        return read_json_object(checkpoint.access, QUANT_FILE, [], INVALID_CONFIG)
    return None


def build_mtp_view(
    checkpoint: Checkpoint,
    draft: DraftDescription,
    target: MtpTarget,
    profile: Profile,
    settings: ServeSettings | None,
    eagle_draft: str | None,
    export: NextnExport | None = None,
) -> EngineView:
    """What `profile`'s release makes of the target's MTP layers under `settings`: its
    engine's procedure for method `mtp` (`by_method["mtp"]`), run like any other. The
    launch's MTP settings are read by the MTP steps (`BuildInputs.mtp`), not by the
    engine's EAGLE launch step, so `serve` stays None; the release's reading of the launch
    line (`BuildInputs.launch`) is read by the MTP launch step of its engine."""
    served = checkpoint.origin if export is not None else None
    mtp = MtpInputs(target, mtp_launch(settings, served), eagle_draft, export)
    # what the release's parser makes of the launch line, read by the MTP launch step
    judged = (
        engine_of(profile).judge_launch(settings, profile, None)
        if settings is not None and engine_of(profile).launch() is not None
        else None
    )
    inputs = BuildInputs(checkpoint, draft, None, profile, MTP, True, mtp=mtp, launch=judged)
    view = build_view(inputs)
    if view.mtp is None:  # no config: the procedure never reached the MTP layers
        view.mtp = MtpView(not_read=[f"{profile.title} found no config to read MTP layers from"])
    return view


def mtp_launch(settings: ServeSettings | None, checked: str | None = None) -> MtpLaunch:
    """The launch as the MTP steps read it (no launch: the release's defaults); `checked`:
    the checkpoint checked when it is a NextN export (the draft the launch should name)."""
    if settings is None:
        return MtpLaunch()
    tokens = settings.num_speculative_tokens
    if tokens is None:
        tokens = settings.speculative_num_steps
    pointer = "--speculative-config" if settings.spec_keys_written else "--speculative-algorithm"
    return MtpLaunch(
        given=True,
        method=settings.method,
        tokens=tokens,
        draft_model=settings.draft_model,
        target_model=settings.target_model,
        pointer=pointer,
        serves_checked=checked is not None and _same_source(settings.draft_model, checked),
        layers=settings.mtp_layers,
        vanilla=settings.mtp_vanilla,
        one_model=settings.mtp_eagle_one_model,
        max_draft_len=settings.max_draft_len,
        whole=settings.full_launch,
        trust_remote_code=bool(settings.trust_remote_code),
        tensor_parallel=settings.draft_tensor_parallel_size or settings.tensor_parallel_size,
        quantization=settings.quantization,
        draft_quantization=settings.draft_quantization,
    )


def _same_source(named: str | None, checked: str) -> bool:
    """Whether the draft a launch names is the checkpoint `checked` (the same text, the
    same local folder, or a folder of the same name: a launch written for another
    machine)."""
    if named is None:
        return False
    if named == checked:
        return True
    first, second = Path(named.rstrip("/")), Path(checked.rstrip("/"))
    if first.name and first.name == second.name:
        return True
    try:
        return first.resolve() == second.resolve()
    except (OSError, RuntimeError, ValueError):
        return False


def _eagle_draft(checkpoint: Checkpoint) -> str | None:
    """What makes `checkpoint` an EAGLE draft rather than a target, or None."""
    config = checkpoint.config or {}
    keys = [key for key in DRAFT_KEYS if key in config]
    if keys:
        return f"its config has `{keys[0]}`"
    architectures = config.get("architectures")
    first = architectures[0] if isinstance(architectures, list) and architectures else None
    if isinstance(first, str) and "eagle" in first.lower():
        return f"`{first}`"
    if family_of(config) is None and "fc.weight" in checkpoint.tensors:
        return "it stores an `fc` projection"
    return None


def _gather(
    found: dict[tuple[object, ...], Finding],
    rule: Rule,
    violations: Iterable[Violation],
    key: EngineVersion,
) -> None:
    """Findings of `rule` from its violations at release `key` (merged across releases)."""
    for v in violations:
        consequence = v.consequence or rule.consequence
        finding = Finding(
            rule.id, v.message, v.location, v.fix, v.citations, consequence, condition=v.condition
        )
        existing = found.setdefault(finding.key(), finding)
        if consequence.severity > existing.severity:
            existing.consequence = consequence
        if key not in existing.engines:
            existing.engines.append(key)


def recheck_mtp(
    checkpoint: Checkpoint,
    target: Target | None,
    profiles: list[Profile],
    method: str | None = None,
    *,
    serve: ServeSettings | None = None,
    names: list[str] | None = None,
    values: str | None = None,
    shared: dict[str, Any] | None = None,
    export: NextnExport | None = None,
) -> Report:
    """The MTP check in the checker's signature (what a report keeps to check again, and
    what `matrix` checks each engine with): `names` are every tensor name the target holds
    (when only some headers were read); `shared` is the EAGLE checker's, not used here;
    `export`: the checkpoint is that NextN export."""
    return check_mtp(checkpoint, profiles, serve, names, values, export)


__all__ = [
    "KEPT_TARGET",
    "MTP",
    "build_mtp_view",
    "check_mtp",
    "check_mtp_path",
    "export_needs_target",
    "is_nextn_export",
    "launches_target_mtp",
    "mtp_launch",
    "mtp_target",
    "open_mtp_target",
    "quant_file",
    "read_export",
    "recheck_mtp",
    "selects_mtp",
]
