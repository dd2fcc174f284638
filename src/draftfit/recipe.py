"""Serve recipes: the exact way to serve a draft correctly with one engine version.

* **vLLM** — `vllm serve TARGET --speculative-config '{"method", "model",
  "num_speculative_tokens"}'`.
* **SGLang** — `python -m sglang.launch_server --model-path TARGET --speculative-algorithm
  EAGLE3 --speculative-draft-model-path DRAFT ...` (plus `--disable-cuda-graph` where that
  release's CUDA graphs would capture other aux layers than the draft's).
* **TensorRT-LLM** — `trtllm-serve TARGET --backend pytorch --extra_llm_api_options
  spec.yaml` with a `speculative_config` whose `eagle3_layers_to_capture` names the trained
  layers in TensorRT-LLM's output-of counting (it never reads them from the checkpoint).

When a `draftfit convert` step would help, the recipe plans that conversion, checks the
planned output in memory against the same engine version, and keeps the step only if it
removes findings; the recipe then says what the engine does with the converted draft.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from draftfit.checkpoint import Checkpoint
from draftfit.engines.profile import Profile, load_engine
from draftfit.errors import UsageError
from draftfit.report import INCOMPATIBLE, Finding, Report, verdict_for
from draftfit.rule_ids import VALUES_FAMILY
from draftfit.rules.base import Severity
from draftfit.spec import DraftSpec, describe
from draftfit.target import Target

DEFAULT_SPECULATIVE_TOKENS = 3
# The convention `draftfit convert --to` writes for each engine (TensorRT-LLM reads the
# SGLang layout: a plain config and `midlayer.*` names).
CONVENTION = {"vllm": "vllm", "sglang": "sglang", "trtllm": "sglang"}
# Findings that passing `eagle3_layers_to_capture` to TensorRT-LLM fixes.
TRTLLM_SETTING_FIXES = frozenset({"DF301", "DF302", "DF304", "DF305"})


@dataclass
class Recipe:
    """How to serve: optional preparation steps, the command, and notes.

    Attributes:
        config: the engine configuration the command carries (vLLM's
            `--speculative-config`, TensorRT-LLM's `spec.yaml`), or the SGLang flags.
        remaining: codes of the findings that still apply after the steps and settings.
        resolves_errors: whether no error-level finding remains after them.
    """

    engine: str
    version: str
    command: str
    steps: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    remaining: list[str] = field(default_factory=list)
    resolves_errors: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "version": self.version,
            "steps": list(self.steps),
            "command": self.command,
            "config": self.config,
            "notes": list(self.notes),
            "remaining": list(self.remaining),
            "resolves_errors": self.resolves_errors,
        }


def recipe_for(
    engine: str,
    version: str,
    checkpoint: Checkpoint,
    target: Target | None,
    report: Report,
    spec: DraftSpec | None = None,
) -> Recipe | None:
    """The recipe for one engine version (None for an EAGLE-1 draft on TensorRT-LLM).

    `report` must hold the findings of `checkpoint` for this engine version; `spec` is its
    description when the caller already has it."""
    profile = load_engine(engine).resolve(version)
    spec = spec or describe(checkpoint)
    findings = [f for f in report.findings if profile.label in f.engines]
    draft, steps, notes, findings = _convert_step(profile, checkpoint, spec, target, findings)
    if engine == "vllm":
        recipe = _vllm(profile, spec, draft, target, findings, notes)
    elif engine == "sglang":
        recipe = _sglang(profile, spec, draft, target, findings, notes)
    elif engine == "trtllm":
        if spec.method == "eagle":
            return None
        recipe = _trtllm(profile, spec, draft, target, findings, notes)
    else:  # pragma: no cover - ENGINES lists only these
        return None
    recipe.steps = steps + recipe.steps
    return recipe


# ---------------------------------------------------------------------- conversion step


def _severe(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity >= Severity.WARNING]


def _convert_step(
    profile: Profile,
    checkpoint: Checkpoint,
    spec: DraftSpec,
    target: Target | None,
    findings: list[Finding],
) -> tuple[str, list[str], list[str], list[Finding]]:
    """Plan `draftfit convert` for this engine, check the planned output for the same version
    in memory, and keep the step when it leaves fewer problems."""
    from draftfit.check import check_checkpoint
    from draftfit.convert.planner import plan_conversion
    from draftfit.convert.preview import preview_checkpoint

    draft = checkpoint.source
    before = _severe(findings)
    if not before or spec.method == "eagle" or checkpoint.config is None:
        return draft, [], [], findings
    to = CONVENTION[profile.engine]
    plan_profile = profile if profile.engine in ("vllm", "sglang") else None
    try:
        plan = plan_conversion(checkpoint, spec, to, plan_profile, target)
    except UsageError:
        return draft, [], [], findings
    after_report = check_checkpoint(preview_checkpoint(plan, checkpoint), target, [profile])
    # Conversion copies tensor bytes verbatim: what the weights' values show stays.
    carried = [f for f in findings if f.family == VALUES_FAMILY]
    after_findings = [*after_report.findings, *carried]
    after = _severe(after_findings)
    if _weight(after) >= _weight(before):
        return draft, [], [], findings
    converted = draft.rstrip("/") + f"-{to}"
    command = f"draftfit convert {draft} --to {to} -o {converted} --engine {profile.label}"
    if target is not None:
        command += f" --target {target.source}"
    fixed = sorted({f.code for f in before} - {f.code for f in after})
    notes = [
        "convert first: "
        + (f"it fixes {', '.join(fixed)}" if fixed else "it leaves fewer problems")
        + f"; {profile.title} then finds the converted draft "
        + verdict_for(after_findings, profile.label)[0]
    ]
    return converted, [command], notes, after_findings


def _weight(findings: list[Finding]) -> tuple[int, int]:
    return (
        sum(1 for f in findings if f.severity == Severity.ERROR),
        sum(1 for f in findings if f.severity == Severity.WARNING),
    )


def _finish(recipe: Recipe, findings: list[Finding], fixed_by_settings: frozenset[str]) -> Recipe:
    remaining = [f for f in _severe(findings) if f.code not in fixed_by_settings]
    recipe.remaining = sorted({f.code for f in remaining})
    recipe.resolves_errors = not any(f.severity == Severity.ERROR for f in remaining)
    for finding in remaining:
        note = f"still applies: {finding.code} {finding.name}"
        if note not in recipe.notes:
            recipe.notes.append(note)
    return recipe


# ---------------------------------------------------------------------- shared facts


def _tokens(spec: DraftSpec) -> tuple[int, str]:
    tokens = spec.get("speculative_tokens")
    if isinstance(tokens, int) and tokens > 0:
        return tokens, "from `speculators_config.proposal_methods[0].speculative_tokens`"
    return DEFAULT_SPECULATIVE_TOKENS, "a common starting point; tune for your traffic"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


# ---------------------------------------------------------------------- vLLM


def _vllm_reads_top_level_ids(profile: Profile) -> bool:
    keys: list[str] = []
    for runner in ("mrv1", "mrv2"):
        fact = profile.fact(f"aux_ids_read_from_{runner}")
        if fact.known:
            keys += fact.value
    return "eagle_aux_hidden_state_layer_ids" in keys


def _vllm(
    profile: Profile,
    spec: DraftSpec,
    draft: str,
    target: Target | None,
    findings: list[Finding],
    notes: list[str],
) -> Recipe:
    method = spec.method or "eagle3"
    tokens, why = _tokens(spec)
    config = {"method": method, "model": draft, "num_speculative_tokens": tokens}
    target_name = target.source if target else "<target>"
    command = f"vllm serve {target_name} \\\n  --speculative-config {_quote(json.dumps(config))}"
    notes = list(notes)
    if not _vllm_reads_top_level_ids(profile) and any(f.code == "DF301" for f in findings):
        notes.append(f"vLLM {profile.version} never reads aux ids from the config: use >= 0.11.1")
    notes.append(f"num_speculative_tokens {tokens}: {why}")
    notes.append(f'pass "method": "{method}" explicitly; vLLM otherwise guesses from the path')
    recipe = Recipe("vllm", profile.version, command, notes=notes, config=config)
    return _finish(recipe, findings, frozenset())


# ---------------------------------------------------------------------- SGLang


def _sglang(
    profile: Profile,
    spec: DraftSpec,
    draft: str,
    target: Target | None,
    findings: list[Finding],
    notes: list[str],
) -> Recipe:
    algorithm = "EAGLE" if spec.method == "eagle" else "EAGLE3"
    tokens, why = _tokens(spec)
    flags: dict[str, Any] = {
        "--speculative-algorithm": algorithm,
        "--speculative-draft-model-path": draft,
        "--speculative-num-steps": tokens,
        "--speculative-eagle-topk": 1,
        "--speculative-num-draft-tokens": tokens + 1,
    }
    notes = list(notes)
    fixed: set[str] = set()
    if any(f.code == "DF309" for f in findings):
        flags["--disable-cuda-graph"] = True
        sticky = target is not None and target.architecture in (
            profile.value("aux_capture_flags_sticky") or []
        )
        if sticky:
            fixed.add("DF305")  # the extra states came from the defaults left flagged
        if sticky and profile.value("aux_ids_autotune_reset") == "sticky-flags-only":
            flags["--disable-flashinfer-autotune"] = True
            notes.append(
                "--disable-flashinfer-autotune: on FlashInfer MoE backends its warm-up flags "
                "the default aux layers too, which this target never clears"
            )
        fixed.add("DF309")
        notes.append(
            f"--disable-cuda-graph: {profile.title}'s CUDA graphs would capture the default aux "
            "layers instead of the draft's (slower, but drafts correctly); SGLang >= 0.5.11 "
            "needs no such flag"
        )
    env = ""
    codes = {f.code for f in findings}
    max_pos = spec.get("max_position_embeddings")
    if codes & {"DF504", "DF506"} and isinstance(max_pos, int):
        if profile.value("draft_context_shorter_than_target") == "error-unless-env-then-raised":
            env = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 "
            notes.append(
                "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1: lets the draft run at the target's "
                f"context (its rotary cache is enlarged); it was trained on at most {max_pos} "
                f"positions, so acceptance may drop beyond them (or cap --context-length {max_pos})"
            )
        else:
            flags["--context-length"] = max_pos
            notes.append(
                f"--context-length {max_pos}: {profile.title} cannot run the draft beyond the "
                f"{max_pos} positions of its rotary cache, so the server's context is capped there"
            )
        fixed |= codes & {"DF504", "DF506"}
    unknown = sorted(set(flags) - set(profile.value("serve_flags") or []))
    if unknown:
        notes.append(f"draftfit's data does not list {', '.join(unknown)} for {profile.title}")
    target_name = target.source if target else "<target>"
    parts = [f"{env}python -m sglang.launch_server --model-path {target_name}"]
    for flag, value in flags.items():
        parts.append(flag if value is True else f"{flag} {value}")
    command = " \\\n  ".join(parts)
    notes.append(f"--speculative-num-steps {tokens}: {why}")
    if algorithm == "EAGLE3":
        notes.append(
            "SGLang reads aux ids only from `eagle_config.eagle_aux_hidden_state_layer_ids` "
            "(no command-line flag)"
        )
    recipe = Recipe("sglang", profile.version, command, notes=notes, config=flags)
    return _finish(recipe, findings, frozenset(fixed))


# ---------------------------------------------------------------------- TensorRT-LLM


def trtllm_layers_to_capture(spec: DraftSpec, target: Target | None) -> list[int] | None:
    """The trained layers in TensorRT-LLM's `eagle3_layers_to_capture` (output-of) counting."""
    trained = spec.trained_capture_before(target.num_layers if target else None)
    if trained is None:
        return None
    return sorted({i - 1 for i in trained})


def _trtllm(
    profile: Profile,
    spec: DraftSpec,
    draft: str,
    target: Target | None,
    findings: list[Finding],
    notes: list[str],
) -> Recipe:
    tokens, why = _tokens(spec)
    decoding = "Eagle3" if "Eagle3" in (profile.value("decoding_types") or []) else "Eagle"
    spec_config: dict[str, Any] = {
        "decoding_type": decoding,
        "max_draft_len": tokens,
        profile.value("draft_path_key"): draft,
    }
    if profile.value("one_model_default") == "one-model-default":
        spec_config["eagle3_one_model"] = True
    notes = list(notes)
    fixed: frozenset[str] = frozenset()
    user_key = profile.value("aux_ids_user_key")
    layers = trtllm_layers_to_capture(spec, target)
    if user_key and layers is not None:
        spec_config[user_key] = layers
        fixed = TRTLLM_SETTING_FIXES
        notes.append(
            f"{user_key} {layers}: the trained layers in TensorRT-LLM's output-of counting; "
            "TensorRT-LLM never reads them from the checkpoint"
        )
    elif user_key:
        notes.append(
            f"pass --target to compute {user_key}: TensorRT-LLM never reads aux ids from the "
            "checkpoint and otherwise captures its default layers"
        )
    else:
        notes.append(
            f"{profile.title} always captures its default layers (1, L//2-1, L-4); a draft "
            "trained on other layers needs TensorRT-LLM >= 1.1"
        )
    notes.append(f"max_draft_len {tokens}: {why}")
    for note in profile.fact("draft_path_key").notes:
        notes.append(f"`{profile.value('draft_path_key')}`: {note}")
    config = {"speculative_config": spec_config}
    target_name = target.source if target else "<target>"
    command = (
        "cat > spec.yaml <<'EOF'\n"
        + _yaml(config)
        + "EOF\n"
        + f"trtllm-serve {target_name} --backend pytorch --extra_llm_api_options spec.yaml"
    )
    recipe = Recipe("trtllm", profile.version, command, notes=notes, config=config)
    return _finish(recipe, findings, fixed)


def _yaml(data: dict[str, Any], indent: int = 0) -> str:
    """A tiny YAML writer for the nested string/int/bool/list mapping of a recipe."""
    lines = []
    for key, value in data.items():
        pad = "  " * indent
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:")
            lines.append(_yaml(value, indent + 1).rstrip("\n"))
        else:
            lines.append(f"{pad}{key}: {json.dumps(value)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------- check --recipe


def attach_recipes(report: Report, checkpoint: Checkpoint, target: Target | None) -> None:
    """Add a recipe for every engine result of `report` (the check of `checkpoint` next to
    `target`) that a recipe can serve."""
    spec = describe(checkpoint)
    recipes = []
    for result in report.engines:
        recipe = recipe_for(result.engine, result.version, checkpoint, target, report, spec)
        if recipe is None:
            continue
        if result.verdict == INCOMPATIBLE and not recipe.resolves_errors:
            continue
        recipes.append(recipe)
    report.recipes = recipes
