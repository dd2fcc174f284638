"""The `draftfit` command line: a thin shell that parses, calls the library and renders.

Exit codes: 0 nothing at or above `--fail-on`, 1 something is, 2 usage error or unreadable
input (one line on stderr). Results go to stdout, everything else to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from draftfit import __version__
from draftfit.errors import DraftfitError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class _UsageExit(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageExit(f"{self.prog}: {message} (see `{self.prog} --help`)")


def _add_format(parser: argparse.ArgumentParser, choices: Sequence[str] = ("text", "json")) -> None:
    parser.add_argument("--format", choices=choices, default="text", help="output format")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="draftfit",
        description="Will this speculative-decoding draft load and draft correctly in a serving "
        "engine? Checks EAGLE-3 / EAGLE-1 checkpoints without loading their weights.",
    )
    parser.add_argument("--version", action="version", version=f"draftfit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    check = sub.add_parser(
        "check",
        help="check a draft against engine versions (and a target)",
        description="Check a draft checkpoint against engine versions.",
    )
    check.add_argument(
        "draft", help="draft checkpoint: a directory, hf://OWNER/NAME[@REV] or OWNER/NAME"
    )
    check.add_argument(
        "--target", help="target (verifier): a directory holding its config.json, or a Hub repo"
    )
    check.add_argument(
        "--engine",
        action="append",
        metavar="ENGINE[==VERSION]",
        help="engine and version: vllm, sglang or trtllm, optionally ==VERSION (e.g. "
        "sglang==0.5.6), or all (repeatable; default: newest vLLM)",
    )
    check.add_argument(
        "--method",
        choices=("eagle3", "eagle", "auto"),
        help="speculative method the engine is told (default: read from the checkpoint); "
        "'auto' emulates an engine given no method (vLLM then guesses from the path)",
    )
    check.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        default="error",
        help="lowest severity that makes the exit status 1 (default: error)",
    )
    check.add_argument(
        "--recipe",
        action="store_true",
        help="also print how to serve the draft with each compatible or degraded version",
    )
    _add_format(check)

    diff = sub.add_parser(
        "diff",
        help="compare a draft with a known-good reference, as the engine sees them",
        description="Semantic diff of two checkpoints through each engine's view: which "
        "differences change what the engine builds or runs, and which are spelling.",
    )
    diff.add_argument("draft", help="draft: a directory, hf://owner/name[@rev] or owner/name")
    diff.add_argument("reference", help="reference checkpoint, e.g. a published known-good draft")
    diff.add_argument("--target", help="target directory or Hub repo (resolves default aux layers)")
    diff.add_argument(
        "--engine",
        action="append",
        metavar="ENGINE[==VERSION]",
        help="engine and version (repeatable; default: newest vLLM)",
    )
    diff.add_argument(
        "--method", choices=("eagle3", "eagle"), help="method for both (default: from each)"
    )
    diff.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        default="error",
        help="lowest severity that makes the exit status 1 (default: error, i.e. a difference "
        "that matters)",
    )
    _add_format(diff)

    matrix = sub.add_parser(
        "matrix",
        help="verdicts across every engine version draftfit knows, grouped into ranges",
        description="Check a draft against every known engine version; print ranges that "
        "share a verdict, the finding that decides each, and how to serve it.",
    )
    matrix.add_argument("draft", help="draft: a directory, hf://OWNER/NAME[@REV] or OWNER/NAME")
    matrix.add_argument("--target", help="target directory or Hub repo")
    matrix.add_argument(
        "--method", choices=("eagle3", "eagle"), help="method (default: read from the checkpoint)"
    )
    _add_format(matrix, ("text", "json", "markdown"))

    convert = sub.add_parser(
        "convert",
        help="rewrite a draft into the convention an engine expects (bytes copied verbatim)",
        description="Plan, write atomically and verify a conversion. The input is never "
        "modified; tensor bytes are copied, never decoded.",
    )
    convert.add_argument("draft", help="local draft checkpoint directory")
    convert.add_argument(
        "--to",
        required=True,
        choices=("vllm", "sglang", "speculators"),
        help="destination convention",
    )
    convert.add_argument("-o", "--output", dest="out", help="output directory")
    convert.add_argument("--target", help="target directory or Hub repo (aux ids, hidden size)")
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
    _add_format(convert)

    inspect_p = sub.add_parser(
        "inspect",
        help="show what a draft checkpoint holds",
        description="Dialect, dims, tensors by role, parameter counts.",
    )
    inspect_p.add_argument(
        "draft", help="draft checkpoint: a directory, hf://OWNER/NAME[@REV] or OWNER/NAME"
    )
    _add_format(inspect_p)

    rules_p = sub.add_parser("rules", help="list every rule")
    _add_format(rules_p)

    rule_p = sub.add_parser("rule", help="explain one rule")
    rule_p.add_argument("code", help="rule code (DF301) or name (aux-layers-differ-from-trained)")
    _add_format(rule_p)

    engines_p = sub.add_parser("engines", help="list the engine versions draftfit has data for")
    engines_p.add_argument("engine", nargs="?", help="vllm, sglang or trtllm (default: all)")
    _add_format(engines_p)

    demo = sub.add_parser(
        "demo",
        help="run the built-in example (a Kimi-K2 EAGLE-3 draft)",
        description="Build a full-size sparse Kimi-K2 EAGLE-3 draft trained "
        "with speculators, plus the Kimi-K2 target config, in a temporary "
        "folder, and check it against vLLM.",
    )
    _add_format(demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help(sys.stdout)
            return EXIT_OK
        return _dispatch(args)
    except _UsageExit as exc:
        print(exc.message, file=sys.stderr)
        return EXIT_USAGE
    except DraftfitError as exc:
        print(f"draftfit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("draftfit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # pragma: no cover - e.g. `draftfit rules | head`
        return EXIT_OK
    except Exception as exc:
        if os.environ.get("DRAFTFIT_DEBUG"):
            raise
        print(
            f"draftfit: internal error: {type(exc).__name__}: {exc} "
            "(a bug in draftfit; set DRAFTFIT_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_USAGE


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "check":
        return _cmd_check(args)
    if args.command == "inspect":
        return _cmd_inspect(args)
    if args.command == "diff":
        return _cmd_diff(args)
    if args.command == "convert":
        return _cmd_convert(args)
    if args.command == "matrix":
        return _cmd_matrix(args)
    if args.command == "rules":
        return _cmd_rules(args)
    if args.command == "rule":
        return _cmd_rule(args)
    if args.command == "engines":
        return _cmd_engines(args)
    if args.command == "demo":
        return _cmd_demo(args)
    raise _UsageExit(f"draftfit: unknown command {args.command}")  # pragma: no cover


def _color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _cmd_check(args: argparse.Namespace) -> int:
    from draftfit.check import check_path
    from draftfit.rules.base import Severity

    report = check_path(
        args.draft,
        target=args.target,
        engines=args.engine,
        method=args.method,
        recipes=args.recipe,
    )
    fail_on = Severity.parse(args.fail_on)
    _emit_report(report, args.format, fail_on)
    return report.exit_code(fail_on)


def _cmd_diff(args: argparse.Namespace) -> int:
    from draftfit.diff import diff_paths
    from draftfit.rules.base import Severity

    report = diff_paths(
        args.draft, args.reference, engines=args.engine, target=args.target, method=args.method
    )
    fail_on = Severity.parse(args.fail_on)
    if args.format == "json":
        from draftfit.render.json import render_json

        sys.stdout.write(render_json(report.to_dict(fail_on)))
    else:
        from draftfit.render.diff_text import render_diff

        sys.stdout.write(render_diff(report, _color()))
    return report.exit_code(fail_on)


def _cmd_matrix(args: argparse.Namespace) -> int:
    from draftfit.matrix import build_matrix, render_markdown
    from draftfit.sources import open_checkpoint, open_target

    checkpoint = open_checkpoint(args.draft)
    target = open_target(args.target) if args.target else None
    matrix = build_matrix(checkpoint, target, method=args.method)
    if args.format == "json":
        from draftfit.render.json import render_json

        sys.stdout.write(render_json(matrix.to_dict()))
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(matrix))
    else:
        from draftfit.render.matrix_text import render_matrix

        sys.stdout.write(render_matrix(matrix, _color()))
    return EXIT_OK


def _cmd_convert(args: argparse.Namespace) -> int:
    from draftfit.convert import convert_path
    from draftfit.render.plan_text import render_plan
    from draftfit.rules.base import Severity

    result = convert_path(
        args.draft,
        args.to,
        args.out,
        target=args.target,
        engines=args.engine,
        dry_run=args.dry_run,
        unsafe=args.unsafe_fixes,
        force=args.force,
    )
    if args.format == "json":
        from draftfit.render.json import render_json

        data = {
            "plan": result.plan.to_dict(),
            "output": str(result.out) if result.out else None,
            "written": result.written,
            "check": result.report.to_dict() if result.report else None,
        }
        sys.stdout.write(render_json(data))
    else:
        sys.stdout.write(render_plan(result.plan, args.out, result.written, _color()))
        if result.report is not None:
            from draftfit.render.text import render_check

            sys.stdout.write("\nCheck of the output\n\n")
            sys.stdout.write(render_check(result.report, _color()))
    del Severity
    return result.exit_code()


def _emit_report(report, fmt: str, fail_on) -> None:
    if fmt == "json":
        from draftfit.render.json import render_json

        sys.stdout.write(render_json(report.to_dict(fail_on)))
    else:
        from draftfit.render.text import render_check

        sys.stdout.write(render_check(report, _color()))


def _cmd_inspect(args: argparse.Namespace) -> int:
    from draftfit.inspect import inspect_path, render_inspect

    info = inspect_path(args.draft)
    if args.format == "json":
        from draftfit.render.json import render_json

        sys.stdout.write(render_json(info))
    else:
        sys.stdout.write(render_inspect(info, _color()))
    return EXIT_OK


def _cmd_rules(args: argparse.Namespace) -> int:
    from draftfit.explain import render_rule_list, rule_list

    if args.format == "json":
        from draftfit.render.json import render_json

        sys.stdout.write(render_json({"rules": rule_list()}))
    else:
        sys.stdout.write(render_rule_list(_color()))
    return EXIT_OK


def _cmd_rule(args: argparse.Namespace) -> int:
    from draftfit.explain import render_rule, rule_dict
    from draftfit.rules import get_rule

    item = get_rule(args.code)
    if item is None:
        raise _UsageExit(f"draftfit: no rule {args.code!r} (see `draftfit rules`)")
    if args.format == "json":
        from draftfit.render.json import render_json

        sys.stdout.write(render_json(rule_dict(item, data=True)))
    else:
        sys.stdout.write(render_rule(item))
    return EXIT_OK


def _cmd_engines(args: argparse.Namespace) -> int:
    from draftfit.engines.profile import ENGINES, load_engine
    from draftfit.errors import UsageError

    try:
        datas = [load_engine(e) for e in ([args.engine] if args.engine else ENGINES)]
    except UsageError as exc:
        raise _UsageExit(f"draftfit: {exc}") from exc
    items = [
        {
            "engine": data.engine,
            "title": data.title,
            "latest": data.latest,
            "versions": list(data.versions),
            "facts": {k: f.doc for k, f in sorted(data.facts.items())},
        }
        for data in datas
    ]
    if args.format == "json":
        from draftfit.render.json import render_json

        sys.stdout.write(render_json(items[0] if args.engine else {"engines": items}))
        return EXIT_OK
    lines = []
    for data in datas:
        lines += [
            f"{data.title} (`--engine {data.engine}[==V]`): data for {len(data.versions)} "
            f"releases (newest {data.latest})",
            "  " + ", ".join(data.versions),
            f"  facts ({len(data.facts)}): " + ", ".join(sorted(data.facts)),
        ]
    lines.append("Any other version is refused rather than guessed.")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


def _cmd_demo(args: argparse.Namespace) -> int:
    from draftfit.demo import run_demo

    return run_demo(args.format, _color())


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
