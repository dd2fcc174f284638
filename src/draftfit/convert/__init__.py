"""`draftfit convert`: rewrite a draft into the convention an engine expects.

A plan first (:mod:`draftfit.convert.planner`), then, unless `--dry-run`, an atomic write
that copies tensor bytes verbatim (:mod:`draftfit.convert.write`), then a check of the
output for the chosen engine::

    from draftfit.convert import convert_path
    result = convert_path("./specforge-draft", to="vllm", out="./draft-vllm")
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from draftfit.check import check_checkpoint, resolve_engines
from draftfit.checkpoint import load_checkpoint
from draftfit.convert.plan import Plan
from draftfit.convert.planner import CONVENTIONS, plan_conversion
from draftfit.convert.write import check_output_path, write_plan
from draftfit.errors import UsageError
from draftfit.report import Report
from draftfit.rules.base import Severity
from draftfit.spec import describe

__all__ = ["CONVENTIONS", "CONVENTION_ENGINE", "ConvertResult", "convert_path"]

# The engine whose data a convention is planned with (and verified against by default).
CONVENTION_ENGINE = {"vllm": "vllm", "sglang": "sglang", "speculators": "vllm"}


@dataclass
class ConvertResult:
    """The plan, whether it was written, and the check of the written output."""

    plan: Plan
    out: Path | None
    written: bool
    report: Report | None
    out_as_given: str | None = None  # the output path as the caller spelled it, for display

    def exit_code(self) -> int:
        """1 when the written output still has errors for the engine, else 0."""
        return self.report.exit_code(Severity.ERROR) if self.report is not None else 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the plan, where it went, and the check of the output."""
        return {
            "plan": self.plan.to_dict(),
            "output": str(self.out) if self.out else None,
            "written": self.written,
            "check": self.report.to_dict() if self.report else None,
        }


def convert_path(
    draft: str | Path,
    to: str,
    out: str | Path | None,
    target: str | Path | None = None,
    engines: list[str] | None = None,
    dry_run: bool = False,
    unsafe: bool = False,
    force: bool = False,
) -> ConvertResult:
    """Plan (and unless `dry_run`, write and verify) the conversion of `draft` into `to`."""
    from draftfit.sources import is_hub_reference, open_target

    if is_hub_reference(str(draft)):
        raise UsageError(
            "convert needs a local checkpoint: download it first (`hf download OWNER/NAME "
            "--local-dir DIR`)"
        )
    if out is None and not dry_run:
        raise UsageError("convert needs -o OUT (or --dry-run)")
    checkpoint = load_checkpoint(draft)
    if out is not None:
        check_output_path(checkpoint.root, Path(out), force)
    if not checkpoint.weights_complete:
        kinds = sorted({d.kind for d in checkpoint.damage})
        raise UsageError(
            f"{draft} has damaged weight files ({', '.join(kinds)}); run `draftfit check` first"
        )
    target_obj = open_target(target) if target is not None else None
    engine = CONVENTION_ENGINE[to]
    profiles = resolve_engines(engines or [engine])
    # The version the convention is planned for: the first profile of that engine.
    profile = next((p for p in profiles if p.engine == engine), None)
    plan = plan_conversion(checkpoint, describe(checkpoint), to, profile, target_obj, unsafe)
    if dry_run:
        return ConvertResult(plan, Path(out) if out else None, False, None, _spelling(out))
    assert out is not None
    write_plan(plan, checkpoint, Path(out))
    written = load_checkpoint(out)
    report = check_checkpoint(written, target_obj, profiles)
    return ConvertResult(plan, Path(out), True, report, _spelling(out))


def _spelling(out: str | Path | None) -> str | None:
    return str(out) if out else None
