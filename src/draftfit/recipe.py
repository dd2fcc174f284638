"""Serve recipes: the exact way to serve a draft correctly with an engine version.

For vLLM: the `vllm serve ... --speculative-config` JSON (method, model,
`num_speculative_tokens`), preceded by a `draftfit convert` step when the checkpoint needs
one the converter can make safely (aux ids the version does not read, a `head_dim` it
would derive wrongly, ...). Other engines add their own recipe functions here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from draftfit.checkpoint import Checkpoint
from draftfit.report import Finding, Report
from draftfit.spec import describe
from draftfit.target import Target

# Findings a `draftfit convert --to vllm` fixes with safe edits.
FIXED_BY_CONVERT_VLLM = frozenset(
    {"DF101", "DF105", "DF110", "DF111", "DF202", "DF208", "DF301", "DF304", "DF401", "DF602"}
)
DEFAULT_SPECULATIVE_TOKENS = 3


@dataclass
class Recipe:
    """How to serve: optional preparation steps, the command, and notes."""

    engine: str
    version: str
    command: str
    steps: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "version": self.version,
            "steps": list(self.steps),
            "command": self.command,
            "config": self.config,
            "notes": list(self.notes),
        }


def recipe_for(
    engine: str,
    version: str,
    checkpoint: Checkpoint,
    target: Target | None,
    report: Report,
    deciding: list[Finding],
) -> Recipe | None:
    """The recipe for one engine version, or None when draftfit has none for that engine."""
    if engine == "vllm":
        return vllm_recipe(version, checkpoint, target, deciding)
    return None


def _vllm_reads_top_level_ids(version: str) -> bool:
    from draftfit.engines.profile import load_engine

    profile = load_engine("vllm").resolve(version)
    keys = []
    for runner in ("mrv1", "mrv2"):
        fact = profile.fact(f"aux_ids_read_from_{runner}")
        if fact.known:
            keys += fact.value
    return "eagle_aux_hidden_state_layer_ids" in keys


def _tokens(checkpoint: Checkpoint) -> tuple[int, str]:
    spec = describe(checkpoint)
    tokens = spec.get("speculative_tokens")
    if isinstance(tokens, int) and tokens > 0:
        return tokens, "from `speculators_config.proposal_methods[0].speculative_tokens`"
    return DEFAULT_SPECULATIVE_TOKENS, "a common starting point; tune for your traffic"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def vllm_recipe(
    version: str, checkpoint: Checkpoint, target: Target | None, deciding: list[Finding]
) -> Recipe:
    spec = describe(checkpoint)
    method = spec.method or "eagle3"
    draft = checkpoint.source
    target_name = target.source if target else "<target>"
    steps: list[str] = []
    notes: list[str] = []
    reads_top = _vllm_reads_top_level_ids(version)
    fixable = [
        f for f in deciding if f.code in FIXED_BY_CONVERT_VLLM and (f.code != "DF301" or reads_top)
    ]
    if fixable:
        converted = draft.rstrip("/") + "-vllm"
        target_arg = f" --target {target.source}" if target else ""
        steps.append(
            f"draftfit convert {draft} --to vllm -o {converted} --engine vllm=={version}"
            + target_arg
        )
        notes.append("convert first: it fixes " + ", ".join(sorted({f.code for f in fixable})))
        draft = converted
    for finding in (f for f in deciding if f not in fixable):
        notes.append(f"not fixed by converting: {finding.code} {finding.name}")
    if not reads_top and any(f.code == "DF301" for f in deciding):
        notes.append(f"vLLM {version} never reads aux ids from the config: use vLLM >= 0.11.1")
    tokens, why = _tokens(checkpoint)
    config = {"method": method, "model": draft, "num_speculative_tokens": tokens}
    command = f"vllm serve {target_name} \\\n  --speculative-config {_quote(json.dumps(config))}"
    notes.append(f"num_speculative_tokens {tokens}: {why}")
    notes.append(f'pass "method": "{method}" explicitly; vLLM otherwise guesses from the path')
    return Recipe("vllm", version, command, steps, notes, config)


def attach_recipes(report: Report, draft: str, target: str | None) -> None:
    """Add a recipe for every compatible or degraded engine result of `report`."""
    from draftfit.sources import open_checkpoint, open_target

    checkpoint = open_checkpoint(draft)
    target_obj = open_target(target) if target else None
    recipes = []
    for result in report.engines:
        if result.verdict == "incompatible":
            continue
        level = "warning" if result.verdict == "degraded" else None
        deciding = [
            f for f in report.findings if result.label in f.engines and str(f.severity) == level
        ]
        recipe = recipe_for(result.engine, result.version, checkpoint, target_obj, report, deciding)
        if recipe is not None:
            recipes.append(recipe)
    report.recipes = recipes
