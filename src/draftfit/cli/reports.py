"""`check`, `diff` and `matrix` as CI runs them: rule selection, several drafts, CI formats.

The command-line layer for the reports: the selection options (`--select`, `--ignore`,
`--extend-select`, `--config`, `--isolated`) and the output options (`--output-file`,
`--quiet`, `--statistics`), the settings file each draft is checked under
(:mod:`draftfit.settings.config_file`), and writing one or several reports in one format.
The commands take their typed options (:mod:`draftfit.cli.options`), built once by the parse
step.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.cli.options import (
    CheckOptions,
    DiffOptions,
    LaunchOptions,
    MatrixOptions,
    OutputOptions,
    SelectionOptions,
)
from draftfit.errors import DraftfitError, UsageError
from draftfit.escape import escape_field
from draftfit.settings.config_file import FileSettings, discover, discover_from, load
from draftfit.verdicts import FailOn

if TYPE_CHECKING:
    from typing import Any

    from draftfit.checkpoint.model import Checkpoint
    from draftfit.cli.show_settings import SettingsOrigin
    from draftfit.render.options import Form
    from draftfit.serve.settings import ServeSettings
    from draftfit.settings.selection import Selection

EXIT_OK, EXIT_USAGE = 0, 2
GLOB_CHARACTERS = frozenset("*?[")


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    """The rule-selection options, shared by check, diff and matrix."""
    group = parser.add_argument_group("rule selection (like ruff's)")
    group.add_argument(
        "--select",
        type=_selectors,
        action="extend",
        metavar="RULES",
        help="only these rules count: codes (DF108), prefixes (DF3, DF = all) or names, "
        "comma-separated (replaces the settings file's select)",
    )
    group.add_argument(
        "--extend-select",
        type=_selectors,
        action="extend",
        default=[],
        metavar="RULES",
        help="rules that count in addition to the selected ones",
    )
    group.add_argument(
        "--ignore",
        type=_selectors,
        action="extend",
        default=[],
        metavar="RULES",
        help="rules that do not count (their findings stay in JSON, marked suppressed)",
    )
    group.add_argument(
        "--config",
        metavar="FILE",
        help="settings file to use (draftfit.toml or pyproject.toml) instead of the one "
        "found next to the draft",
    )
    group.add_argument("--isolated", action="store_true", help="ignore every settings file")
    group.add_argument(
        "--show-settings",
        action="store_true",
        help="print the rule selection each draft would be checked under and where each "
        "part comes from (settings file, option, default); check nothing",
    )


def add_pre_commit_option(parser: argparse.ArgumentParser) -> None:
    """--pre-commit: the DRAFT arguments are changed files, checked by their folders."""
    parser.add_argument(
        "--pre-commit",
        action="store_true",
        help="treat the DRAFT arguments as changed files (as pre-commit passes them) and "
        "check the checkpoint folders they belong to",
    )


def add_output_options(parser: argparse.ArgumentParser, statistics: bool = True) -> None:
    """--output-file, --quiet and (with `statistics`) --statistics."""
    parser.add_argument(
        "--output-file",
        metavar="PATH",
        help="write the output to PATH (atomically) instead of stdout",
    )
    parser.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="text format: print only the verdict lines",
    )
    if statistics:
        parser.add_argument(
            "--statistics",
            action="store_true",
            help="print the number of findings per rule (text: then the verdict lines; json: "
            "a list of {draft, code, name, severity, count, suppressed})",
        )


def _selectors(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def selection_and_declaration(
    options: SelectionOptions, draft: str, flag: bool
) -> tuple[Selection, bool]:
    """The selection a draft is checked under, and whether it is said to be trained for
    the target: `--draft-is-for-target` (`flag`), or its settings file's
    `draft-is-for-target` where that covers the draft's folder."""
    selection, settings, _ = _selection_and_settings(options, draft)
    if flag or settings is None:
        return selection, flag
    local = Path(draft)
    return selection, settings.declares_draft_for_target(local if local.is_dir() else None)


def _selection_and_settings(
    options: SelectionOptions, draft: str
) -> tuple[Selection, FileSettings | None, SettingsOrigin]:
    """The selection for `draft`, the settings file it used, and how that file was chosen.
    A local draft's folder is taken as named (a symlinked folder keeps the settings of the
    folders the user named it in); a Hub draft's walk starts in the current directory."""
    from draftfit.cli.show_settings import SettingsOrigin
    from draftfit.settings.selection import Selection

    settings = None
    local = Path(draft)
    checkpoint = local if local.is_dir() else None
    origin = SettingsOrigin("--isolated")
    if not options.isolated:
        path: Path | None
        if options.config:
            path = Path(options.config)
            if not path.is_file():
                raise UsageError(f"--config {options.config}: no such file")
            origin = SettingsOrigin("--config")
        else:
            walk = discover_from(checkpoint if checkpoint is not None else Path.cwd())
            path, origin = walk.found, SettingsOrigin("discovered", walk)
        settings = load(path) if path is not None else None
    selection = Selection.build(
        select=options.select,
        extend_select=options.extend_select,
        ignore=options.ignore,
        settings=settings,
        checkpoint=checkpoint,
    )
    return selection, settings, origin


def show_settings(
    options: SelectionOptions,
    output: OutputOptions,
    drafts: Sequence[str],
    draft_is_for_target: bool = False,
) -> int:
    """`--show-settings`: print each draft's resolved selection and its sources (and whether
    it is said to be trained for the target: `draft_is_for_target` is the flag); exit 0.
    It is text only: another `--format` is refused rather than answered in text."""
    from draftfit.cli.show_settings import describe

    if output.format != "text":
        raise UsageError(
            f"--show-settings prints text; leave out --format {output.format} "
            "(or use --format text)"
        )
    blocks = []
    for draft in drafts:
        selection, settings, origin = _selection_and_settings(options, draft)
        blocks.append(
            describe(draft, selection, settings, origin, options.extend_select, draft_is_for_target)
        )
    _write("\n".join(blocks), output)
    return EXIT_OK


def _settings_shown(selection: Selection) -> str | None:
    """The settings file a report names in its text form (None: none applied)."""
    from draftfit.cli.show_settings import shown_path

    return shown_path(selection.settings_file) if selection.settings_file else None


def expand_drafts(arguments: Sequence[str]) -> list[str]:
    """The drafts named on the command line; a pattern that is not itself a path is expanded
    as a shell glob (for shells that do not, and for quoted patterns)."""
    drafts: list[str] = []
    for argument in arguments:
        if GLOB_CHARACTERS & set(argument) and not os.path.exists(argument):
            import glob  # only for a pattern

            matches = [m for m in sorted(glob.glob(argument, recursive=True)) if os.path.isdir(m)]
            if not matches:
                raise UsageError(f"{argument}: no checkpoint folder matches this pattern")
            drafts.extend(matches)
        else:
            drafts.append(argument)
    return list(dict.fromkeys(drafts))


def launch_settings(launch: LaunchOptions) -> ServeSettings | None:
    """The launch's settings from `--serve-config` / `--serve-args` (read before any
    draft)."""
    if not launch.given:
        return None
    from draftfit.engines.launch import settings_from

    return settings_from(launch.serve_config, launch.serve_args)


def run_check(options: CheckOptions) -> int:
    """`draftfit check D1 [D2 ...]`: one report per draft, the worst exit status."""
    from draftfit.checker import check_path
    from draftfit.settings.selection import apply_to_report

    fail_on = options.fail_on
    if options.pre_commit:
        from draftfit.cli.pre_commit import checkpoint_folders

        drafts = checkpoint_folders(options.drafts)
        if not drafts:
            return EXIT_OK
    else:
        drafts = expand_drafts(options.drafts)
    refuse_output_file(drafts, options.target, options.output, options.selection, options.launch)
    if options.selection.show_settings:
        return show_settings(options.selection, options.output, drafts, options.draft_is_for_target)
    reports: list[Any] = []
    worst = EXIT_OK
    serve = launch_settings(options.launch)
    if options.target and len(drafts) > 1:
        # A draft given as the target is one mistake, said once, not once per draft.
        from draftfit.draft.mistakes import refuse_draft_as_target
        from draftfit.origins.reference import open_target

        refuse_draft_as_target(
            open_target(options.target),
            "draftfit check " + " ".join(options.drafts) + " --target VERIFIER",
        )

    for draft in drafts:
        try:
            selection, declared = selection_and_declaration(
                options.selection, draft, options.draft_is_for_target
            )
            report = check_path(
                draft,
                target=options.target,
                engines=options.engines or None,
                method=options.method,
                values=options.values,
                serve=serve,
                draft_is_for_target=declared,
            )
        except DraftfitError as exc:
            if len(drafts) == 1:
                raise
            print(f"draftfit: error: {escape_field(str(exc))}", file=sys.stderr)
            worst = max(worst, EXIT_USAGE)
            continue
        if not selection.is_default:
            apply_to_report(report, selection)
        report.settings_file = _settings_shown(selection)
        if options.recipe:
            from draftfit.commands.recipe import (
                attach_recipes,  # and the converter: only for --recipe
            )

            attach_recipes(report)
        reports.append(report)
        worst = max(worst, report.exit_code(fail_on))
    if reports:
        write_reports(reports, options.output, fail_on, many=len(drafts) > 1)
    return worst


def run_diff(options: DiffOptions) -> int:
    """`draftfit diff DRAFT REFERENCE` with the draft's rule selection."""
    from draftfit.commands.comparison import diff_paths, set_verdicts

    refuse_output_file(
        [options.draft, options.reference],
        options.target,
        options.output,
        options.selection,
        options.launch,
    )
    if options.selection.show_settings:
        return show_settings(
            options.selection, options.output, [options.draft], options.draft_is_for_target
        )
    selection, declared = selection_and_declaration(
        options.selection, options.draft, options.draft_is_for_target
    )
    report = diff_paths(
        options.draft,
        options.reference,
        engines=options.engines or None,
        target=options.target,
        method=options.method,
        values=options.values,
        serve=launch_settings(options.launch),
        draft_is_for_target=declared,
    )
    if not selection.is_default:
        selection.apply(report.findings)
        set_verdicts(report.findings, report.engines)
    report.settings_file = _settings_shown(selection)
    write_reports([report], options.output, options.fail_on)
    return report.exit_code(options.fail_on)


def run_matrix(options: MatrixOptions) -> int:
    """`draftfit matrix DRAFT` with the draft's rule selection."""
    from draftfit.commands.release_matrix import build_matrix
    from draftfit.draft.description import describe
    from draftfit.draft.mistakes import refuse_argument_mistakes
    from draftfit.origins.reference import open_checkpoint, open_target

    output = options.output
    refuse_output_file([options.draft], options.target, output, options.selection, options.launch)
    if options.selection.show_settings:
        return show_settings(
            options.selection, output, [options.draft], options.draft_is_for_target
        )
    selection, declared = selection_and_declaration(
        options.selection, options.draft, options.draft_is_for_target
    )
    serve = launch_settings(options.launch)
    if _selects_mtp(options.method, serve, options.target):
        return _run_mtp_matrix(options, selection, serve)
    checkpoint = open_checkpoint(options.draft)
    if _is_export(checkpoint):
        return _run_mtp_matrix(options, selection, serve, checkpoint)
    target = open_target(options.target) if options.target else None
    if target is not None:
        target.draft_is_for_target = declared
    refuse_argument_mistakes(
        checkpoint, describe(checkpoint), target, options.method, command="matrix"
    )
    matrix = build_matrix(
        checkpoint,
        target,
        method=options.method,
        selection=None if selection.is_default else selection,
        values=options.values,
        serve=serve,
    )
    write_reports([matrix], output, FailOn.ERROR)
    if options.fail_on is None:
        return EXIT_OK
    return matrix.exit_code(options.fail_on)


def _selects_mtp(method: str | None, serve: ServeSettings | None, target: str | None) -> bool:
    """Whether a matrix is of a target's own MTP layers (`--method mtp`, or a launch that
    selects MTP drafting and no `--target`)."""
    from draftfit.mtp_check import MTP, selects_mtp

    return method == MTP or (target is None and selects_mtp(method, serve))


def _is_export(checkpoint: Checkpoint) -> bool:
    from draftfit.mtp_check import is_nextn_export

    return is_nextn_export(checkpoint)


def _run_mtp_matrix(
    options: MatrixOptions,
    selection: Selection,
    serve: ServeSettings | None,
    opened: Checkpoint | None = None,
) -> int:
    """`draftfit matrix TARGET --method mtp`: every release's verdict on the target's MTP
    layers (read as `check --method mtp` reads them: config, index, MTP shards); `matrix
    NEXTN --target TARGET`: a stand-alone NextN export's, beside its target."""
    from functools import partial

    from draftfit.commands.release_matrix import build_matrix
    from draftfit.mtp_check import (
        MTP,
        export_needs_target,
        is_nextn_export,
        read_export,
        recheck_mtp,
    )
    from draftfit.origins.reference import open_checkpoint

    if options.target is not None:
        checkpoint = opened if opened is not None else open_checkpoint(options.draft)
        if not is_nextn_export(checkpoint):
            raise UsageError(
                "an MTP matrix takes the target alone (it drafts with its own MTP layers): "
                "drop --target; --target goes with a stand-alone NextN export "
                "(`...ForCausalLMNextN`) served beside its target"
            )
        export = read_export(checkpoint, options.target)
        checker = partial(recheck_mtp, export=export)
    else:
        if opened is not None:
            raise UsageError(export_needs_target(opened))
        from draftfit.mtp_check import open_mtp_target

        checkpoint, names = open_mtp_target(options.draft)
        if is_nextn_export(checkpoint):
            raise UsageError(export_needs_target(checkpoint))
        checker = partial(recheck_mtp, names=names)
    matrix = build_matrix(
        checkpoint,
        None,
        method=MTP,
        selection=None if selection.is_default else selection,
        serve=serve,
        checker=checker,
    )
    matrix.notes = [n for n in matrix.notes if not n.startswith("no --target")]
    write_reports([matrix], options.output, FailOn.ERROR)
    if options.fail_on is None:
        return EXIT_OK
    return matrix.exit_code(options.fail_on)


def refuse_output_file(
    drafts: Sequence[str],
    target: str | None,
    output: OutputOptions,
    selection: SelectionOptions,
    launch: LaunchOptions,
) -> None:
    """Before any work: refuse an `--output-file` that is not a regular file or a new path,
    or that is something this run reads (a checkpoint, the target, a settings file, a
    launch's settings file); see :mod:`draftfit.output.guard`."""
    if not output.output_file:
        return
    from draftfit.output.guard import Inputs, check_output_file, files_in_command

    inputs = Inputs()
    for draft in drafts:
        inputs.add_path(draft, "the checkpoint")
        if not selection.isolated and not selection.config:
            with contextlib.suppress(DraftfitError):  # reported when the draft is checked
                found = discover(Path(draft) if os.path.isdir(draft) else Path.cwd())
                inputs.add_file(found, "the settings file")
    inputs.add_path(target, "the target")
    for name in [*drafts, target]:
        _add_hub_cache(inputs, name)
    inputs.add_file(selection.config if not selection.isolated else None, "the settings file")
    inputs.add_file(launch.serve_config, "the --serve-config file")
    for name in files_in_command(launch.serve_args):
        inputs.add_file(name, "the --serve-args file")
    check_output_file(output.output_file, inputs)


def _add_hub_cache(inputs: Any, name: str | None) -> None:
    """A draft or target named by its Hub id: the repository's local cache folder counts as
    an input (a run reads it when offline or when the Hub does not answer)."""
    from draftfit.origins.reference import is_hub_reference

    if name is None or not is_hub_reference(name):
        return
    from draftfit.origins.hub import cache_folder

    folder = cache_folder(name)
    if folder is not None:
        inputs.folders.append((folder, f"the Hub cache of {name}"))


def _options(output: OutputOptions, fail_on: FailOn) -> Any:
    from draftfit.render.options import RenderOptions

    color = not output.output_file and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    return RenderOptions(color, fail_on)


def write_reports(
    reports: list[Any], output: OutputOptions, fail_on: FailOn, many: bool = False
) -> None:
    """Write `reports` (of one kind) in `output.format` as one document, in the form the
    output options ask for, stating exit statuses for `fail_on`; `many`: several drafts were
    named. Only the renderers of that format are imported (JSON never loads rich)."""
    from draftfit.render.registry import render_all

    text = render_all(reports, output.format, _options(output, fail_on), _forms(output, many))
    _write(text, output)


def _forms(output: OutputOptions, many: bool) -> list[Form]:
    """The forms asked for, most wanted first: `--statistics`, `--quiet`, then one list of
    several drafts' reports; a format writes the first it has (else each report whole)."""
    from draftfit.render.options import Form

    asked = ((output.statistics, Form.STATISTICS), (output.quiet, Form.VERDICTS), (many, Form.LIST))
    return [form for wanted, form in asked if wanted]


def _write(text: str, output: OutputOptions) -> None:
    if output.output_file:
        from draftfit.output.atomic_write import write_text_atomic

        write_text_atomic(output.output_file, text)
    else:
        sys.stdout.write(text)
