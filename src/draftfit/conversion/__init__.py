"""`draftfit convert`: rewrite a draft into the convention an engine expects.

A plan first (:mod:`draftfit.conversion.planner`), then, unless `--dry-run`, an atomic write
that copies tensor bytes verbatim (:mod:`draftfit.conversion.write`), then a check of the
output for the chosen engine::

    from draftfit.conversion import convert_path
    result = convert_path("./specforge-draft", to="vllm", out="./draft-vllm")
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

# The checker (and the report it makes) is loaded when a check runs: with `anyway`, that is
# on a second thread while the bytes are copied, not before the copy starts.
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint import load_checkpoint
from draftfit.checkpoint.model import UNREADABLE_WEIGHTS, Checkpoint
from draftfit.conversion.output import check_output_path
from draftfit.conversion.plan import Plan
from draftfit.conversion.planner import CONVENTIONS, plan_conversion
from draftfit.conversion.write import write_plan
from draftfit.draft.description import describe
from draftfit.draft.mistakes import refuse_convert_mistakes, refuse_draft_as_target
from draftfit.engines.installed import resolve_engines
from draftfit.engines.registry import planning_engine
from draftfit.errors import DamagedInputError, UsageError
from draftfit.records import field, record
from draftfit.rule_ids import Severity

if TYPE_CHECKING:
    from typing import Any

    from draftfit.draft.target import Target
    from draftfit.engines.profile import Profile
    from draftfit.report import Report
    from draftfit.serve.settings import ServeSettings

__all__ = ["CONVENTIONS", "ConvertResult", "convert_path"]

# Damage after which a verbatim copy would lose or garble tensors: bytes missing from the
# file, offsets outside it, a byte count that does not match the shape, an entry dropped
# from the inventory, a file over a reader limit.
LOSES_TENSORS = UNREADABLE_WEIGHTS | {
    rule_ids.DATA_OFFSETS_OUT_OF_RANGE,
    rule_ids.TENSOR_BYTE_SIZE_MISMATCH,
    rule_ids.INVALID_TENSOR_ENTRY,
    rule_ids.UNKNOWN_DTYPE,
}
# Damage a verbatim copy would hide: bytes shared by two tensors or owned by none, an index
# that cannot be trusted (or names shards outside the folder).
HIDES_DAMAGE = frozenset(
    {
        rule_ids.DATA_OFFSETS_OVERLAP,
        rule_ids.DATA_SECTION_NOT_COVERED,
        rule_ids.INVALID_INDEX,
    }
)
# Either way the input is refused before anything is written.
BLOCKS_CONVERSION = LOSES_TENSORS | HIDES_DAMAGE


@record
class ConvertResult:
    """The plan, whether it was written, and the check of the written output."""

    plan: Plan
    out: Path | None
    written: bool
    report: Report | None
    removed_leftovers: list[Path] = field(default_factory=list)
    out_as_given: str | None = None  # the output path as the caller spelled it, for display
    # Said when the draft already loads as is for the planned engine version.
    not_needed: str | None = None

    def exit_code(self) -> int:
        """1 when the written output still has errors for the engine, else 0."""
        return self.report.exit_code(Severity.ERROR) if self.report is not None else 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the plan, where it went, and the check of the output."""
        return {
            "plan": self.plan.to_dict(),
            "output": str(self.out) if self.out else None,
            "written": self.written,
            "removed_leftovers": [str(p) for p in self.removed_leftovers],
            "check": self.report.to_dict() if self.report else None,
            "not_needed": self.not_needed,
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
    verify: bool = False,
    notify: Callable[[str], None] | None = None,
    serve: ServeSettings | None = None,
    anyway: bool = True,
    while_writing: Callable[[], object] | None = None,
    also_read: Sequence[str | Path] = (),
    draft_is_for_target: bool = False,
) -> ConvertResult:
    """Plan (and unless `dry_run`, write and verify) the conversion of `draft` into `to`.

    The output's structure is checked from its headers, and the bytes draftfit wrote itself
    are read back against hashes taken while writing them; `verify` also re-reads every
    byte the kernel copied and compares it with the input. `notify` receives one line for
    each thing done beside the output (a leftover of an interrupted convert removed);
    nothing is printed. `serve` is the launch the output will be served with: the output is
    judged for it. When the draft already loads as is for the planned engine version, the
    result says so (`not_needed`, which the command line prints as its report); with
    `anyway=False` (the command line's default) nothing is then written. `while_writing` is
    work to do on a second thread while the bytes are copied (the command line loads its
    renderer); its error, if any, is raised once the output is written and checked.
    `also_read` names the other files the run reads (a launch's settings files): like the
    draft's and the target's files, the output may not be one of them, whatever the name it
    is reached by. `draft_is_for_target`: the user says the draft was trained for the target
    (DF507), so a speculators output records the target as its verifier."""
    from draftfit.origins.reference import HF_PREFIX as HUB_PREFIX
    from draftfit.origins.reference import is_hub_reference, open_target

    if is_hub_reference(str(draft)):
        raise UsageError(
            "convert needs a local checkpoint: download it first (`hf download OWNER/NAME "
            "--local-dir DIR`)"
        )
    if out is None and not dry_run:
        raise UsageError("convert needs -o OUT (or --dry-run)")
    if out is not None and str(out).startswith(HUB_PREFIX):
        raise UsageError(
            f"-o {out}: convert writes a local folder; give a path, then upload it with "
            "`hf upload OWNER/NAME DIR`"
        )
    checkpoint = load_checkpoint(draft)
    if out is not None:
        _refuse_output_in_target(Path(out), target)
        check_output_path(checkpoint.root, Path(out), force)
        _refuse_output_aliases(Path(out), checkpoint.root, target, also_read)
    target_obj = open_target(target) if target is not None else None
    written_to = f"-o {out}" if out is not None else "--dry-run"
    # A full model given as the draft (or the two swapped) is the command line's mistake,
    # said before whatever a model read as a draft looks damaged by.
    refuse_convert_mistakes(
        checkpoint,
        describe(checkpoint),
        target_obj,
        f"--to {to} {written_to}",
    )
    _refuse_damage(draft, checkpoint)
    refuse_draft_as_target(
        target_obj, f"draftfit convert {draft} --to {to} {written_to} --target VERIFIER"
    )
    if target_obj is not None:
        target_obj.draft_is_for_target = draft_is_for_target
    # The engine whose data the convention is planned with (and verified against by default).
    planner = planning_engine(to)
    if planner is None:
        raise UsageError(f"unknown convention {to!r}; choose from {', '.join(CONVENTIONS)}")
    engine = planner.name
    profiles = resolve_engines(engines or [engine])
    # The version the convention is planned for: the first profile of that engine.
    profile = next((p for p in profiles if p.engine == engine), None)
    plan = plan_conversion(checkpoint, describe(checkpoint), to, profile, target_obj, unsafe)
    if dry_run:
        return ConvertResult(
            plan, Path(out) if out else None, False, None, out_as_given=out_spelling(out)
        )
    assert out is not None

    def judge_input() -> str | None:
        return _not_needed(checkpoint, target_obj, profile, serve)

    if anyway:
        # Written whatever the input's verdict: the input is judged while the bytes are
        # copied, and an error in judging it still stops the output being put in place.
        judged = _Background(judge_input, while_writing)
        try:
            _refuse_short_files(draft, checkpoint, plan)
            result = write_plan(
                plan,
                checkpoint,
                Path(out),
                force=force,
                engines=[p.label for p in profiles],
                verify=verify,
                notify=notify,
                before_copy=judged.start,
                before_swap=judged.wait,
            )
        except Exception:
            judged.wait()  # an error judging the input is said first, as it comes first
            raise
        not_needed = judged.result()
    else:
        not_needed = judge_input()
        if not_needed is not None:
            # The command's answer (its report says it), not a notice beside the output.
            return ConvertResult(
                plan, Path(out), False, None, out_as_given=out_spelling(out), not_needed=not_needed
            )
        _refuse_short_files(draft, checkpoint, plan)
        judged = _Background(None, while_writing)
        result = write_plan(
            plan,
            checkpoint,
            Path(out),
            force=force,
            engines=[p.label for p in profiles],
            verify=verify,
            notify=notify,
            before_copy=judged.start,
        )
    from draftfit.checker import carry_from_source, check_checkpoint

    written = load_checkpoint(out)
    report = check_checkpoint(written, target_obj, profiles, serve=serve)
    # what the conversion cannot change (the model the draft was trained for) stays said
    report = carry_from_source(report, checkpoint, target_obj)
    judged.extra_result()
    return ConvertResult(
        plan,
        Path(out),
        True,
        report,
        result.removed_leftovers,
        out_as_given=out_spelling(out),
        not_needed=not_needed,
    )


class _Background:
    """`work`, then `extra`, on a second thread once `start` is called (as the copying
    starts): Python runs them while the first thread waits on the kernel's copies. `wait`
    joins it (running them here if it never started) and raises the error of `work`;
    `result` also returns what `work` returned; `extra_result` raises the error of `extra`.
    """

    def __init__(
        self, work: Callable[[], str | None] | None, extra: Callable[[], object] | None
    ) -> None:
        self._work, self._extra = work, extra
        self._value: str | None = None
        self._error: BaseException | None = None
        self._extra_error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._done = work is None and extra is None

    def start(self) -> None:
        if self._done or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="draftfit-convert", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._done = True
        if self._work is not None:
            try:
                self._value = self._work()
            except BaseException as exc:  # handed to the first thread by wait()
                self._error = exc
                return
        if self._extra is not None:
            try:
                self._extra()
            except BaseException as exc:
                self._extra_error = exc

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
        elif not self._done:
            self._run()  # the write stopped before its copying started
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def result(self) -> str | None:
        self.wait()
        return self._value

    def extra_result(self) -> None:
        self.wait()
        if self._extra_error is not None:
            error, self._extra_error = self._extra_error, None
            raise error


def _not_needed(
    checkpoint: Checkpoint,
    target: Target | None,
    profile: Profile | None,
    serve: ServeSettings | None,
) -> str | None:
    """One line when the draft already loads as is for the planned engine version (no
    error-level finding there, under the launch when one is given), else None."""
    if profile is None:
        return None
    from draftfit.checker import check_checkpoint

    report = check_checkpoint(checkpoint, target, [profile], serve=serve)
    if report.exit_code(Severity.ERROR):
        return None
    return (
        f"{checkpoint.origin} already loads as is in {profile.title}: no conversion needed "
        "(pass --anyway to write it all the same)"
    )


def _refuse_output_in_target(out: Path, target: str | Path | None) -> None:
    """Refuse an output inside (or at) the target's folder, local or its Hub cache folder:
    convert reads it."""
    from draftfit.origins.reference import is_hub_reference
    from draftfit.output.guard import Inputs, refuse_inputs

    inputs = Inputs()
    inputs.add_path(target, "the target")
    if target is not None and is_hub_reference(str(target)):
        from draftfit.origins.hub import cache_folder  # a Hub target only

        folder = cache_folder(str(target))
        if folder is not None:  # read when offline or when the Hub does not answer
            inputs.folders.append((folder, f"the Hub cache of {target}"))
    refuse_inputs(out, "output", inputs)


def _refuse_output_aliases(
    out: Path, draft: Path, target: str | Path | None, also_read: Sequence[str | Path]
) -> None:
    """Refuse an output that reaches an input another way than by its path: inside the
    Hugging Face cache folder the draft or the target is a snapshot of, an input folder by
    identity (a bind mount), or, for each file a `--force` would replace, an input file
    by identity (a hard link of the draft's config.json, of a blob, of a launch's file)."""
    from draftfit.output.guard import Inputs, refuse_inputs, refuse_same_file

    inputs = Inputs()
    inputs.add_path(draft, "the input checkpoint")
    inputs.add_path(target, "the target")
    for name in also_read:
        inputs.add_file(name, "the file")
    refuse_inputs(out, "output", inputs)
    try:
        with os.scandir(out) as listing:
            replaced = [item.path for item in listing if item.is_file(follow_symlinks=False)]
    except OSError:
        return  # a new output (or one check_output_path has refused)
    for path in replaced:
        refuse_same_file(path, "output file", inputs)


def _refuse_damage(draft: str | Path, checkpoint: Checkpoint) -> None:
    """Refuse an input whose damage a verbatim copy would carry into (or hide in) the
    output, naming the finding `draftfit check` reports for it."""
    blocking = [d for d in checkpoint.damage if d.rule in BLOCKS_CONVERSION]
    blocking.sort(key=lambda d: d.rule in HIDES_DAMAGE)  # name lost tensors first
    if not blocking:
        return
    first = blocking[0]
    more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
    raise DamagedInputError(
        f"{draft} is damaged: {first.rule} in {first.file}: {first.message}{more}; "
        "nothing written (run `draftfit check` on it)"
    )


def _refuse_short_files(draft: str | Path, checkpoint: Checkpoint, plan: Plan) -> None:
    """Refuse when a source file is now shorter than a tensor the plan copies from it
    (truncated since its header was read, or damage no reader rule caught)."""
    sizes: dict[str, int] = {}
    for tensor in plan.tensors:
        info = tensor.copied_from
        if info is None or info.byte_range is None:
            continue
        if info.file not in sizes:
            sizes[info.file] = (checkpoint.root / info.file).stat().st_size
        if info.byte_range[1] > sizes[info.file]:
            raise DamagedInputError(
                f"{draft} is damaged: {rule_ids.TRUNCATED_FILE} in {info.file}: `{info.name}` ends "
                f"at byte {info.byte_range[1]}, but the file holds {sizes[info.file]} bytes; "
                "nothing written (run `draftfit check` on it)"
            )


def out_spelling(out: str | Path | None) -> str | None:
    """The output path as the caller spelled it (`ConvertResult.out_as_given`)."""
    return str(out) if out else None
