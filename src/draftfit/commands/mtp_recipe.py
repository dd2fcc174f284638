"""Serve recipes for a target's own MTP layers: the launch that serves them right at one
engine release, read from that release's data, and checked as it will run.

The launch is the release's own: vLLM `vllm serve T --speculative-config` with the method the
release takes for the family (`mtp`, or the per-family method of releases before it:
`mtp_recipe_method`), `num_speculative_tokens` equal to the MTP depth the release reads (a
value its depth rule always allows) and `"model"` where the release does not default the
draft to the target (`mtp_default_draft`); SGLang `--speculative-algorithm NEXTN` with the
steps, top-k and draft tokens the release itself would choose (`mtp_tokens_default`) and
`--speculative-draft-model-path` where it is required; TensorRT-LLM `trtllm-serve T
--extra_llm_api_options FILE` whose YAML is `speculative_config: {decoding_type: MTP,
num_nextn_predict_layers: N}` (`max_draft_len: N` where the release reads the depth there:
`mtp_launch_depth_key`) with N the MTP depth (a release whose data gives its MTP
launch's default depth, `mtp_launch_depth_default`, reads its MTP launch from that file).
Where the target's quantization config leaves its BF16 MTP layer unexcluded (DF540), the
recipe first runs `draftfit convert --method mtp`, which writes the exclusion list under
the names that release matches (:mod:`draftfit.conversion.mtp_exclusions`).

A recipe is shown only when the checkpoint it serves (the converted one, held in memory),
checked again under the recipe's own launch at the same release, has no error and is not
unverified; otherwise one line says why there is none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit.checkpoint.access import PlannedAccess
from draftfit.checkpoint.model import Checkpoint
from draftfit.conversion.mtp_convert import plan_mtp_fix
from draftfit.conversion.mtp_exclusions import ExclusionFix
from draftfit.draft.mtp import MtpTarget
from draftfit.engines.interface import NoRecipe, Recipe, engine_of
from draftfit.engines.launch import parse_serve_args
from draftfit.engines.procedure.mtp_part import tokens_chosen
from draftfit.engines.profile import Profile
from draftfit.engines.remote_code import remote_code_at
from draftfit.engines.serve import (
    CONTINUATION,
    model_source,
    shell_quote,
    shell_word,
    yaml_text,
)
from draftfit.errors import UsageError
from draftfit.mtp_check import KEPT_TARGET, MTP, mtp_target
from draftfit.report import EngineResult, Finding, Report, verdict_for
from draftfit.rule_ids import MTP_QUANT_UNCOVERED, Severity
from draftfit.verdicts import UNVERIFIED

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.launch_part import EngineLaunch
    from draftfit.serve.settings import ServeSettings

__all__ = ["mtp_serving_for"]

# The converted folder: one per engine (each writes the names its releases match).
CONVERTED_SUFFIX = "-mtp-{engine}"
# The fact that lists the families a release serves with MTP (absent: MTP not read).
SERVED = "mtp_families_served"
# The fact of a release whose MTP launch is a speculative config in an options file.
OPTIONS_FILE_DEPTH = "mtp_launch_depth_default"
# The key its options file writes the depth under (`num_nextn_predict_layers` where unknown).
OPTIONS_FILE_DEPTH_KEY = "mtp_launch_depth_key"
OPTIONS_FILE = "mtp.yaml"


def mtp_serving_for(report: Report, result: EngineResult) -> Recipe | NoRecipe:
    """The recipe that serves the target's MTP layers at `result`'s release, or why there
    is none (`report` is an MTP check, :func:`draftfit.mtp_check.check_mtp`)."""
    kept = report.kept()
    profile = result.kept().profile
    title = profile.title
    target = kept.shared.get(KEPT_TARGET)
    if not isinstance(target, MtpTarget):
        target = mtp_target(kept.checkpoint)
    family = target.family
    if SERVED not in profile.data.facts or not profile.fact(SERVED).value:
        return NoRecipe(
            result.engine,
            result.version,
            "draftfit has not read how this release serves MTP layers, so it writes no "
            "launch for them",
        )
    if family is None:
        return NoRecipe(
            result.engine,
            result.version,
            f"draftfit's MTP family table has no naming for this target, so no {title} "
            "launch of its MTP layers is written",
        )
    source = model_source(kept.checkpoint.origin)
    # a stand-alone NextN export: the launch serves its target with the export as the draft
    beside = report.mtp.served_beside if report.mtp is not None else None
    served: Checkpoint = kept.checkpoint
    steps: list[str] = []
    notes: list[str] = []
    served_name = source.name
    if beside is None and any(
        f.code == MTP_QUANT_UNCOVERED.code and profile.key in f.engines for f in report.findings
    ):
        given = report.serve.settings if report.serve is not None else None
        own_launch = given if given is not None and given.engine == profile.engine else None
        fixed = _excluding(kept.checkpoint, target, profile, own_launch)
        if isinstance(fixed, str):
            return NoRecipe(
                result.engine,
                result.version,
                f"{MTP_QUANT_UNCOVERED.code} {MTP_QUANT_UNCOVERED.name} remains: {fixed}",
                [MTP_QUANT_UNCOVERED.code],
            )
        fix, served_name = fixed
        if source.hub:
            steps.append(source.download())
        local = source.local.name
        steps.append(
            " ".join(
                shell_word(w)
                for w in (
                    "draftfit",
                    "convert",
                    local,
                    "--method",
                    MTP,
                    "--engine",
                    profile.label,
                    "-o",
                    served_name,
                )
            )
        )
        shown = ", ".join(f"`{entry}`" for entry in fix.added[:2])
        shown += ", ..." if len(fix.added) > 2 else ""
        notes.append(
            f"convert first: it adds {len(fix.added)} entr"
            f"{'y' if len(fix.added) == 1 else 'ies'} ({shown}) "
            f"to `{fix.pointer}` under the names {title} matches, so that the BF16 MTP layer "
            "is built unquantized (no tensor byte changes; the portable fix is to ship the MTP "
            "layer quantized like the backbone)"
        )
        served = _preview(kept.checkpoint, fix, served_name)
    mtp = result.view.mtp if result.view is not None else None
    depth = mtp.depth_used if mtp is not None and mtp.depth_used else target.depth
    launch = _launch(profile, target, served_name, depth or 1, beside, served.config)
    if isinstance(launch, str):
        return NoRecipe(result.engine, result.version, launch)
    command, config, launch_notes, settings = launch
    notes += launch_notes
    given = report.serve.settings if report.serve is not None else None
    if given is not None and given.engine == profile.engine:
        notes.append(
            "a launch of its own, from the release's data: add the other settings of your "
            "launch to it"
        )
    return _read_back(report, profile, served, command, config, steps, notes, settings)


def _excluding(
    checkpoint: Checkpoint,
    target: MtpTarget,
    profile: Profile,
    serve: ServeSettings | None,
) -> tuple[ExclusionFix, str] | str:
    """The exclusion fix `convert` writes for `profile`'s release (the same plan,
    :func:`~draftfit.conversion.mtp_convert.plan_mtp_fix`, without the entries it would take
    out: the recipe reads only the MTP part of the index) and the folder it is written to,
    or why there is none."""
    if checkpoint.config is None:
        return f"{checkpoint.origin} has no readable config.json"
    try:
        fix = plan_mtp_fix(checkpoint.origin, checkpoint, target, [profile], serve)
    except UsageError as error:
        return str(error)
    local = model_source(checkpoint.origin).local.name.rstrip("/")
    return fix, local + CONVERTED_SUFFIX.format(engine=profile.engine)


def _preview(base: Checkpoint, fix: ExclusionFix, origin: str) -> Checkpoint:
    """The converted target as draftfit would read it back: the same tensors, the new
    config and, where the fix is written in another file (ModelOpt's
    `hf_quant_config.json`), that file's new content (nothing is written)."""
    access = base.access
    files = list(base.files)
    if fix.document is not None and access is not None:
        text = json.dumps(fix.document, indent=2) + "\n"
        access = PlannedAccess(access, {fix.file: text.encode()})
        files += [] if fix.file in files else [fix.file]
    return Checkpoint(
        root=base.root,
        origin=origin,
        config=fix.config,
        tensors=base.tensors,
        weight_format=base.weight_format,
        weight_files=list(base.weight_files),
        files=files,
        access=access,
        planned=True,
    )


def _launch(
    profile: Profile,
    target: MtpTarget,
    served: str,
    depth: int,
    beside: str | None = None,
    config_json: Mapping[str, Any] | None = None,
) -> tuple[str, dict[str, Any], list[str], ServeSettings | None] | str:
    """The release's launch of the MTP layers of `served` (command, its configuration,
    notes, and its settings where the command itself cannot be read back), or why draftfit
    cannot write one; `beside`: `served` is a stand-alone NextN export, drafting for that
    target (which the launch serves, naming the export); `config_json`: the served target's
    config (whose own code may need `--trust-remote-code`, as for any recipe)."""
    family = target.family
    assert family is not None
    title = profile.title
    required = profile.fact("mtp_default_draft")
    if not required.known or family.name not in required.value:
        return f"which draft {title} uses for {family.title} MTP layers was not read"
    needs_path = required.value[family.name] == "required"
    notes: list[str] = []
    draft = served
    if beside is not None:
        served, needs_path = model_source(beside).name, True
        notes.append(f"the NextN export is the draft, beside its target `{served}`")
    launch = engine_of(profile).launch()
    if launch is not None and launch.options_file_flag and OPTIONS_FILE_DEPTH in profile.data.facts:
        start = f"{launch.shown_command} {shell_word(served)}"
        return _options_file_launch(profile, launch, start, depth, notes)
    if launch is None or not (launch.model_positional or launch.model_flags):
        return f"{title} has no launch draftfit writes"
    if launch.model_positional:
        start = f"{launch.shown_command} {shell_word(served)}"
    else:  # the spelled-out flag (`--model-path`, not its `--model` alias)
        start = f"{launch.shown_command} {max(sorted(launch.model_flags), key=len)} "
        start += shell_word(served)
    if beside is None:
        code = remote_code_at(profile, None, config_json)
        note = code.note("--trust-remote-code")
        if code.flag_wanted:
            start += " --trust-remote-code"
        if note is not None:
            notes.append(note)
    if launch.json_flag is not None:  # vLLM: the speculative config
        methods = profile.fact("mtp_recipe_method")
        method = methods.value.get(family.name) if methods.known else None
        if not isinstance(method, str):
            return f"the method {title} takes for {family.title} MTP layers was not read"
        config: dict[str, Any] = {"method": method, "num_speculative_tokens": depth}
        if needs_path:
            config["model"] = draft
            if beside is None:
                notes.append(
                    f'"model" names the target itself: {title} does not default the MTP '
                    f"draft of a {family.title} target to it"
                )
        notes.append(
            f"num_speculative_tokens {config['num_speculative_tokens']}: the MTP depth; a "
            "multiple of it reuses the layers in turn (lower acceptance per step)"
        )
        lines = [start, f"{launch.json_flag} {shell_quote(json.dumps(config))}"]
        return CONTINUATION.join(lines), config, notes, None
    chosen = tokens_chosen(profile, family.name)
    if chosen is None:
        return f"the MTP steps {title} chooses for {family.title} targets were not read"
    steps, topk, tokens = chosen
    flags: dict[str, Any] = {
        "--speculative-algorithm": "NEXTN",
        "--speculative-num-steps": steps,
        "--speculative-eagle-topk": topk,
        "--speculative-num-draft-tokens": tokens,
    }
    if needs_path:
        flags["--speculative-draft-model-path"] = draft
        if beside is None:
            notes.append(
                f"--speculative-draft-model-path names the target itself: {title} requires "
                f"it for {family.title} targets"
            )
    notes.append(
        f"steps {steps}, top-k {topk}, {tokens} draft tokens: what {title} chooses itself "
        "for this target"
    )
    parts = [start]
    parts += [f"{flag} {shell_word(str(value))}" for flag, value in flags.items()]
    return CONTINUATION.join(parts), flags, notes, None


def _options_file_launch(
    profile: Profile, launch: EngineLaunch, start: str, depth: int, notes: list[str]
) -> tuple[str, dict[str, Any], list[str], ServeSettings | None] | str:
    """The launch of a release that reads its MTP speculative config from an options file
    (TensorRT-LLM's `--extra_llm_api_options`): the file, then the command that names it;
    its settings are read from the file's content, as the release reads them."""
    names = profile.fact("mtp_method_names")
    canonical = [n for n, kind in (names.value or {}).items() if kind == "canonical"]
    flag = launch.options_file_flag
    if not names.known or not canonical or flag is None:
        return f"the MTP launch of {profile.title} was not read"
    key = profile.fact(OPTIONS_FILE_DEPTH_KEY)
    depth_key = key.value if key.known else "num_nextn_predict_layers"
    config: dict[str, Any] = {
        "speculative_config": {"decoding_type": canonical[0], depth_key: depth}
    }
    beyond = (
        "refused at this release"
        if depth_key == "num_nextn_predict_layers"
        else "shared or silently cut short at this release"
    )
    notes.append(
        f"{depth_key} {depth}: the MTP depth the target declares (more layers than it ships "
        f"are {beyond}, unless one layer is reused: MTP-Eagle)"
    )
    command = (
        f"cat > {OPTIONS_FILE} <<'EOF'\n{yaml_text(config)}EOF\n"
        f"{start} --backend pytorch {flag} {OPTIONS_FILE}"
    )
    return command, config, notes, launch.read_config(config, "--serve-config")


def _read_back(
    report: Report,
    profile: Profile,
    served: Checkpoint,
    command: str,
    config: dict[str, Any],
    steps: list[str],
    notes: list[str],
    settings: ServeSettings | None = None,
) -> Recipe | NoRecipe:
    """The recipe when the checkpoint it serves, checked again under its own launch (read
    from `command`, or `settings` where given) at the same release, has no error and is
    verified; else why there is none."""
    kept = report.kept()
    engine, version = profile.engine, profile.version
    try:
        if settings is None:
            settings = parse_serve_args(command.replace(CONTINUATION, " "))
        back = kept.checker(served, None, [profile], MTP, serve=settings)
    except UsageError as exc:
        return NoRecipe(engine, version, f"its launch could not be read back: {exc}")
    result = back.engines[0]
    verdict, _ = verdict_for(back.findings, profile.key, result.unverified_reasons)
    severe = [f for f in back.findings if f.severity >= Severity.WARNING and f.counts]
    remaining = sorted({f.code for f in severe})
    errors = [f for f in severe if f.severity == Severity.ERROR]
    if errors:
        return NoRecipe(engine, version, _why_not(errors, bool(steps)), remaining)
    if verdict == UNVERIFIED:
        reasons = "; ".join(result.unverified_reasons) or "part of the check was not made"
        return NoRecipe(engine, version, f"what it serves could not be verified: {reasons}")
    for finding in severe:
        notes.append(f"still applies: {finding.code} {finding.name}")
    export = report.mtp is not None and report.mtp.served_beside is not None
    notes.append(
        f"{profile.title} finds the {'export' if export else 'target'} {verdict} under this launch"
    )
    return Recipe(engine, version, command, steps, notes, config, remaining, True)


def _why_not(errors: list[Finding], converted: bool) -> str:
    """One line: the errors the launch would leave, each with its fix."""
    by_code: dict[str, Finding] = {}
    for finding in errors:
        by_code.setdefault(finding.code, finding)
    after = " after `draftfit convert --method mtp`" if converted else ""
    if len(by_code) == 1:
        (only,) = by_code.values()
        fix = f"; fix: {only.fix}" if only.fix else ""
        return f"{only.code} {only.name} remains{after}{fix}"
    parts = [f"{f.code} {f.name}" + (f" (fix: {f.fix})" if f.fix else "") for f in by_code.values()]
    return f"{len(by_code)} errors remain{after}: " + "; ".join(parts)
