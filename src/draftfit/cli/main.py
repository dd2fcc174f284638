"""The `draftfit` command line: a thin shell that parses, calls the library and renders.

The parsed arguments become one typed options object (:mod:`draftfit.cli.options`) right
after parsing; the commands below take that object, never argparse's namespace.

Exit codes: 0 nothing at or above `--fail-on`, 1 something is, 2 usage error, unreadable
input or an OS error such as a full disk (one line on stderr), 128 + N when signal N
(SIGINT, SIGTERM, SIGHUP) stopped the command after its cleanup ran. Results go to stdout,
everything else to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from draftfit.cli.options import (
    CHECK_METHODS,
    CONVENTIONS,
    METHODS,
    SHELLS,
    VALUES,
    CheckOptions,
    CommandOptions,
    CompletionOptions,
    ConvertOptions,
    DemoOptions,
    DiffOptions,
    EnginesOptions,
    InspectOptions,
    LaunchOptions,
    MatrixOptions,
    RuleOptions,
    RulesOptions,
    SchemaOptions,
    from_namespace,
)
from draftfit.cli.reports import (
    EXIT_OK,
    EXIT_USAGE,
    add_output_options,
    add_pre_commit_option,
    add_selection_options,
    launch_settings,
    run_check,
    run_diff,
    run_matrix,
)
from draftfit.cli.top import COMMAND_SUMMARIES, UsageExit, top_parser
from draftfit.errors import DraftfitError, Interrupted, UsageError
from draftfit.escape import escape_field
from draftfit.output.notices import notices_to
from draftfit.output.progress import terminal_bars
from draftfit.render import kinds
from draftfit.render.kinds import Kind, formats_for
from draftfit.rule_ids import VERIFIER_DIFFERS_FROM_TARGET
from draftfit.schemas import SCHEMA_KINDS
from draftfit.verdicts import CHOICES as FAIL_ON_CHOICES

if TYPE_CHECKING:
    from typing import Any

# Signals that stop a command the way Ctrl-C does: cleanup runs, exit 128 + N.
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

# A short hint after an OS error's one line, where the cause has a usual remedy.
OS_ERROR_HINTS = {
    getattr(errno, name): hint
    for name, hint in (
        ("ENOSPC", "free space on that filesystem or write the output elsewhere"),
        ("EDQUOT", "the disk quota is exhausted; free space or write the output elsewhere"),
        ("EFBIG", "a file exceeds the size limit (`ulimit -f` or the filesystem's maximum)"),
        ("EROFS", "the filesystem is mounted read-only; write the output elsewhere"),
        ("EACCES", "check the permissions of that path"),
        ("EPERM", "check the permissions and attributes of that path"),
    )
    if hasattr(errno, name)
}


def _add_format(parser: argparse.ArgumentParser, kind: Kind) -> None:
    choices = formats_for(kind)
    parser.add_argument("--format", choices=choices, default=choices[0], help="output format")


def _add_values(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--values",
        nargs="?",
        const="sampled",
        choices=VALUES,
        help="also read the weights' values (DF7xx rules): a fixed sample of rows per tensor, "
        "or every byte with --values=full",
    )


def _add_draft_is_for_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--draft-is-for-target",
        action="store_true",
        help="the draft was trained for --target, whatever verifier it records: a recorded "
        f"verifier that names another model ({VERIFIER_DIFFERS_FROM_TARGET.code}) is reported "
        "as info, not counted",
    )


def _add_serve(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--serve-config",
        metavar="FILE|JSON",
        help="the launch's settings: a vLLM --speculative-config JSON, vLLM engine "
        "arguments (as `vllm serve --config` takes them), or TensorRT-LLM's "
        "--extra_llm_api_options YAML; inline or as a JSON/YAML file",
    )
    parser.add_argument(
        "--serve-args",
        metavar="COMMAND",
        help='the launch command or its flags, e.g. "vllm serve M -tp 8 --speculative-config '
        '\'{...}\'", "python -m sglang.launch_server --tp 8 ..." or "trtllm-serve M '
        "--extra_llm_api_options spec.yaml\" (settings apply to that engine's versions)",
    )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line's parser, or, given a `command` it knows, one with only that
    command's parser under it (what a run of that command needs: building the other ten
    costs every start-up a few milliseconds)."""
    parser, sub = top_parser()
    for name, add in COMMANDS.items():
        if command is None or name == command:
            add(sub)
    return parser


def _add_check_command(sub: Any) -> None:
    check = sub.add_parser(
        "check",
        help=COMMAND_SUMMARIES["check"],
        description="Check a draft checkpoint against engine versions.",
    )
    check.add_argument(
        "draft",
        nargs="+",
        help="draft checkpoint(s): directories (or a glob), hf://OWNER/NAME[@REV] or OWNER/NAME",
    )
    check.add_argument(
        "--target", help="target (verifier): a directory holding its config.json, or a Hub repo"
    )
    _add_draft_is_for_target(check)
    check.add_argument(
        "--engine",
        action="append",
        metavar="ENGINE[==VERSION]",
        help="engine and version: vllm, sglang or trtllm, optionally ==VERSION (e.g. "
        "sglang==0.5.6) or ~=VERSION (the nearest release draftfit has read, findings marked "
        "extrapolated), or all (repeatable; default: the vLLM, SGLang and TensorRT-LLM releases "
        "installed here, else the newest vLLM)",
    )
    check.add_argument(
        "--method",
        choices=CHECK_METHODS,
        help="speculative method the engine is told (default: read from the checkpoint); "
        "'auto' emulates an engine given no method (vLLM then guesses from the path); "
        "'mtp' checks the MTP layers a target ships (the checkpoint is the target)",
    )
    check.add_argument(
        "--fail-on",
        choices=FAIL_ON_CHOICES,
        default="error",
        help="what makes the exit status 1: error (default), warning, unverified (also any "
        "engine verdict other than compatible, e.g. without --target) or info",
    )
    check.add_argument(
        "--recipe",
        action="store_true",
        help="also print how to serve the draft with each compatible or degraded version",
    )
    _add_values(check)
    _add_serve(check)
    _add_format(check, kinds.CHECK)
    add_output_options(check)
    add_selection_options(check)
    add_pre_commit_option(check)


def _add_diff_command(sub: Any) -> None:
    diff = sub.add_parser(
        "diff",
        help=COMMAND_SUMMARIES["diff"],
        description="Semantic diff of two checkpoints through each engine's view: which "
        "differences change what the engine builds or runs, and which are spelling.",
    )
    diff.add_argument("draft", help="draft: a directory, hf://owner/name[@rev] or owner/name")
    diff.add_argument("reference", help="reference checkpoint, e.g. a published known-good draft")
    diff.add_argument("--target", help="target directory or Hub repo (resolves default aux layers)")
    _add_draft_is_for_target(diff)
    diff.add_argument(
        "--engine",
        action="append",
        metavar="ENGINE[==VERSION]",
        help="engine and version (repeatable; default: the engines installed here, else the "
        "newest vLLM)",
    )
    diff.add_argument("--method", choices=METHODS, help="method for both (default: from each)")
    diff.add_argument(
        "--fail-on",
        choices=FAIL_ON_CHOICES,
        default="error",
        help="what makes the exit status 1: error (default: a difference that matters), "
        "warning, unverified (also an engine verdict `unverified`, e.g. without --target) "
        "or info",
    )
    _add_values(diff)
    _add_serve(diff)
    _add_format(diff, kinds.DIFF)
    add_output_options(diff)
    add_selection_options(diff)


def _add_matrix_command(sub: Any) -> None:
    matrix = sub.add_parser(
        "matrix",
        help=COMMAND_SUMMARIES["matrix"],
        description="Check a draft against every known engine version; print ranges that "
        "share a verdict, the finding that decides each, and how to serve it.",
    )
    matrix.add_argument("draft", help="draft: a directory, hf://OWNER/NAME[@REV] or OWNER/NAME")
    matrix.add_argument("--target", help="target directory or Hub repo")
    _add_draft_is_for_target(matrix)
    matrix.add_argument(
        "--method", choices=METHODS, help="method (default: read from the checkpoint)"
    )
    matrix.add_argument(
        "--fail-on",
        choices=FAIL_ON_CHOICES,
        help="exit 1 when any version has a finding at this threshold (as for check); "
        "default: exit 0 whatever the verdicts",
    )
    _add_values(matrix)
    _add_serve(matrix)
    _add_format(matrix, kinds.MATRIX)
    add_output_options(matrix, statistics=False)
    add_selection_options(matrix)


def _add_convert_command(sub: Any) -> None:
    convert = sub.add_parser(
        "convert",
        help=COMMAND_SUMMARIES["convert"],
        description="Plan, write atomically and verify a conversion. The input is never "
        "modified; tensor bytes are copied, never decoded.",
    )
    convert.add_argument("draft", help="local draft checkpoint directory")
    convert.add_argument(
        "--to",
        choices=CONVENTIONS,
        help="destination convention (required, except with --method mtp)",
    )
    convert.add_argument(
        "--method",
        choices=("mtp",),
        help="mtp: the checkpoint is a target carrying MTP layers; write the quantization "
        "exclusion list that serves them (no tensor byte changes)",
    )
    convert.add_argument("-o", "--output", dest="out", help="output directory")
    convert.add_argument("--target", help="target directory or Hub repo (aux ids, hidden size)")
    _add_draft_is_for_target(convert)
    convert.add_argument(
        "--engine",
        action="append",
        metavar="ENGINE[==VERSION]",
        help="engine version to plan for and verify against (repeatable; vllm, sglang or "
        "trtllm, optionally ==VERSION, or all; default: the newest release of the engine the "
        "convention is for)",
    )
    convert.add_argument("--dry-run", action="store_true", help="print the plan, write nothing")
    convert.add_argument(
        "--unsafe-fixes", action="store_true", help="also apply edits that change values or guess"
    )
    convert.add_argument(
        "--force", action="store_true", help="replace a non-empty output directory"
    )
    convert.add_argument(
        "--anyway",
        action="store_true",
        help="write the conversion even when the draft already loads as is for the engine",
    )
    _add_serve(convert)
    convert.add_argument(
        "--verify",
        action="store_true",
        help="also re-read every copied byte of the output and compare it with the input "
        "(by default only the bytes draftfit wrote itself are read back)",
    )
    _add_format(convert, kinds.CONVERT)


def _add_inspect_command(sub: Any) -> None:
    inspect_p = sub.add_parser(
        "inspect",
        help=COMMAND_SUMMARIES["inspect"],
        description="Dialect, dims, tensors by role, parameter counts.",
    )
    inspect_p.add_argument(
        "draft", help="draft checkpoint: a directory, hf://OWNER/NAME[@REV] or OWNER/NAME"
    )
    _add_format(inspect_p, kinds.INSPECT)


def _add_rules_command(sub: Any) -> None:
    rules_p = sub.add_parser("rules", help=COMMAND_SUMMARIES["rules"])
    _add_format(rules_p, kinds.RULE_LIST)


def _add_rule_command(sub: Any) -> None:
    rule_p = sub.add_parser("rule", help=COMMAND_SUMMARIES["rule"])
    rule_p.add_argument("code", help="rule code (DF301) or name (aux-layers-differ-from-trained)")
    _add_format(rule_p, kinds.RULE)


def _add_engines_command(sub: Any) -> None:
    engines_p = sub.add_parser("engines", help=COMMAND_SUMMARIES["engines"])
    engines_p.add_argument("engine", nargs="?", help="vllm, sglang or trtllm (default: all)")
    _add_format(engines_p, kinds.ENGINES)


def _add_schema_command(sub: Any) -> None:
    schema_p = sub.add_parser(
        "schema",
        help=COMMAND_SUMMARIES["schema"],
        description="Print the JSON Schema (draft 2020-12) that a command's JSON output "
        "follows; the schemas ship with the package.",
    )
    schema_p.add_argument("kind", choices=SCHEMA_KINDS, help="the command whose output to describe")


def _add_demo_command(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help=COMMAND_SUMMARIES["demo"],
        description="Build a full-size sparse Kimi-K2 EAGLE-3 draft trained "
        "with speculators, plus the Kimi-K2 target config, in a temporary "
        "folder, and check it against vLLM.",
    )
    _add_format(demo, kinds.DEMO)


def _add_completion_command(sub: Any) -> None:
    completion = sub.add_parser(
        "completion",
        help=COMMAND_SUMMARIES["completion"],
        description="Print the completion script for a shell, e.g. "
        "`draftfit completion bash > ~/.local/share/bash-completion/completions/draftfit`.",
    )
    completion.add_argument("shell", choices=SHELLS)


COMMANDS: dict[str, Callable[[Any], None]] = {
    "check": _add_check_command,
    "diff": _add_diff_command,
    "matrix": _add_matrix_command,
    "convert": _add_convert_command,
    "inspect": _add_inspect_command,
    "rules": _add_rules_command,
    "rule": _add_rule_command,
    "engines": _add_engines_command,
    "schema": _add_schema_command,
    "demo": _add_demo_command,
    "completion": _add_completion_command,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words and words[0] in COMMANDS else None)
    try:
        args = parser.parse_args(words)
        if args.command is None:
            parser.print_help(sys.stdout)
            return EXIT_OK
        options = from_namespace(args)
        with _stop_signals_raise(), _notices_on_stderr(), terminal_bars():
            return _dispatch(options)
    except UsageExit as exc:
        print(escape_field(exc.message), file=sys.stderr)
        return EXIT_USAGE
    except DraftfitError as exc:
        print(f"draftfit: error: {escape_field(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        print(f"draftfit: interrupted by {signal.Signals(signum).name}", file=sys.stderr)
        return 128 + signum
    except BrokenPipeError:  # pragma: no cover - e.g. `draftfit rules | head`
        return EXIT_OK
    except OSError as exc:
        if exc.errno is None and os.environ.get("DRAFTFIT_DEBUG"):
            raise
        if exc.errno is None:  # not from the OS: a bug
            return _internal_error(exc)
        print(f"draftfit: error: {describe_os_error(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if os.environ.get("DRAFTFIT_DEBUG"):
            raise
        return _internal_error(exc)


def _internal_error(exc: BaseException) -> int:
    print(
        f"draftfit: internal error: {type(exc).__name__}: {escape_field(str(exc))} "
        "(a bug in draftfit; set DRAFTFIT_DEBUG=1 for the traceback)",
        file=sys.stderr,
    )
    return EXIT_USAGE


def describe_os_error(exc: OSError) -> str:
    """One line for an OS error: the cause, the path(s), and a hint where one helps."""
    cause = exc.strerror or os.strerror(exc.errno or 0)
    line = cause
    if exc.filename is not None:
        line += f": {os.fsdecode(exc.filename)}"
    if exc.filename2 is not None:
        line += f" -> {os.fsdecode(exc.filename2)}"
    hint = OS_ERROR_HINTS.get(exc.errno or 0)
    line = escape_field(line)
    return f"{line} ({hint})" if hint else line


def _notices_on_stderr() -> contextlib.AbstractContextManager[None]:
    """While a command runs, the library's progress and notices are printed on stderr as
    `draftfit: MESSAGE` lines, escaped like every other line."""

    def print_notice(message: str) -> None:
        print(f"draftfit: {escape_field(message)}", file=sys.stderr, flush=True)

    return notices_to(print_notice)


@contextlib.contextmanager
def _stop_signals_raise() -> Iterator[None]:
    """While a command runs, SIGTERM and SIGHUP (and SIGINT) raise :class:`Interrupted`, so
    cleanup runs as for Ctrl-C. A signal the caller ignores (`nohup`) stays ignored; the
    previous handlers come back afterwards."""
    previous = {}

    def stop(signum: int, _frame: object) -> None:
        raise Interrupted(signum)

    for signum in STOP_SIGNALS:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN:
            continue
        try:
            signal.signal(signum, stop)
        except ValueError:  # not the main thread: handlers are the main thread's alone
            break
        previous[signum] = current
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def _emit(result: object, fmt: str, **options: Any) -> None:
    """Render `result` in `fmt` to stdout (the renderers load only when output is due)."""
    from draftfit.render.registry import emit

    emit(result, fmt, **options)


def _dispatch(options: CommandOptions) -> int:
    if isinstance(options, CheckOptions):
        return run_check(options)
    if isinstance(options, InspectOptions):
        return _cmd_inspect(options)
    if isinstance(options, DiffOptions):
        return run_diff(options)
    if isinstance(options, ConvertOptions):
        return _cmd_convert(options)
    if isinstance(options, MatrixOptions):
        return run_matrix(options)
    if isinstance(options, RulesOptions):
        return _cmd_rules(options)
    if isinstance(options, RuleOptions):
        return _cmd_rule(options)
    if isinstance(options, EnginesOptions):
        return _cmd_engines(options)
    if isinstance(options, DemoOptions):
        return _cmd_demo(options)
    if isinstance(options, SchemaOptions):
        return _cmd_schema(options)
    return _cmd_completion(options)


def _cmd_convert(options: ConvertOptions) -> int:
    from draftfit.conversion import convert_path

    if options.method == "mtp":
        return _cmd_convert_mtp(options)
    if options.to is None:
        raise UsageError(
            "convert needs --to CONVENTION (or --method mtp for a target's MTP layers)"
        )
    result = convert_path(
        options.draft,
        options.to,
        options.out,
        target=options.target,
        engines=list(options.engines) or None,
        dry_run=options.dry_run,
        unsafe=options.unsafe_fixes,
        force=options.force,
        verify=options.verify,
        notify=_notice,
        # the launch the converted draft will be served with
        serve=launch_settings(options.launch),
        anyway=options.anyway,
        while_writing=lambda: _load_renderer(kinds.CONVERT, options.format),
        also_read=_launch_files(options.launch),
        draft_is_for_target=options.draft_is_for_target,
    )
    _emit(result, options.format)
    return result.exit_code()


def _cmd_convert_mtp(options: ConvertOptions) -> int:
    """`draftfit convert TARGET --method mtp`: the exclusion list that serves its MTP layers."""
    from draftfit.conversion.mtp_convert import convert_mtp_path

    if options.to is not None or options.target is not None:
        raise UsageError(
            "convert --method mtp takes the target alone and writes its own fix: drop "
            + ("--to" if options.to is not None else "--target")
        )
    result = convert_mtp_path(
        options.draft,
        options.out,
        list(options.engines) or None,
        dry_run=options.dry_run,
        force=options.force,
        verify=options.verify,
        notify=_notice,
        serve=launch_settings(options.launch),
    )
    _emit(result, options.format)
    return result.exit_code()


def _launch_files(launch: LaunchOptions) -> list[str]:
    """The files a launch's options make draftfit read: the `--serve-config` file and the
    files `--serve-args` names."""
    from draftfit.output.guard import files_in_command

    files = [launch.serve_config] if launch.serve_config is not None else []
    return [*files, *files_in_command(launch.serve_args)]


def _load_renderer(kind: Kind, fmt: str) -> None:
    """Load the renderer `_emit` will use (a convert loads it while its bytes are copied)."""
    from draftfit.render.registry import renderer_for

    renderer_for(kind, fmt)


def _notice(message: str) -> None:
    """One line on stderr about something done beside the command's output."""
    print(f"draftfit: {escape_field(message)}", file=sys.stderr, flush=True)


def _cmd_inspect(options: InspectOptions) -> int:
    from draftfit.commands.inspection import inspect_path

    _emit(inspect_path(options.draft), options.format)
    return EXIT_OK


def _cmd_rules(options: RulesOptions) -> int:
    from draftfit.commands.explain import RuleList

    _emit(RuleList.all(), options.format)
    return EXIT_OK


def _cmd_rule(options: RuleOptions) -> int:
    from draftfit.rules import get_rule

    item = get_rule(options.code)
    if item is None:
        raise UsageExit(f"draftfit: no rule {options.code!r} (see `draftfit rules`)")
    _emit(item, options.format)
    return EXIT_OK


def _cmd_engines(options: EnginesOptions) -> int:
    from draftfit.engines.listing import list_engines
    from draftfit.errors import UsageError

    try:
        listing = list_engines(options.engine)
    except UsageError as exc:
        raise UsageExit(f"draftfit: {exc}") from exc
    _emit(listing, options.format)
    return EXIT_OK


def _cmd_demo(options: DemoOptions) -> int:
    from draftfit.commands.demo import run_demo

    _emit(run_demo(), options.format)
    return EXIT_OK


def _cmd_schema(options: SchemaOptions) -> int:
    from draftfit.schemas import schema_text

    sys.stdout.write(schema_text(options.kind))
    return EXIT_OK


def _cmd_completion(options: CompletionOptions) -> int:
    from draftfit.cli.completion import completion_script

    sys.stdout.write(completion_script(options.shell, build_parser()))
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
