"""The command line's options, typed: one frozen object per command, built once from the
parsed arguments by :func:`from_namespace`.

That function is the only reader of argparse's namespace; everything below the parse step
(:mod:`draftfit.cli.reports`, the command functions of :mod:`draftfit.cli.main`) takes these
objects. The parts that several commands share are objects of their own: the rule selection
(:class:`SelectionOptions`), where and how the output is written (:class:`OutputOptions`) and
the launch's settings (:class:`LaunchOptions`). Paths are kept as the user gave them.

The module is light: records, the `--fail-on` scale and the output kinds, nothing that
reads a checkpoint or renders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeVar

from draftfit.records import frozen
from draftfit.render import kinds
from draftfit.render.kinds import Kind
from draftfit.schemas import SCHEMA_KINDS
from draftfit.verdicts import CHOICES as FAIL_ON_CHOICES
from draftfit.verdicts import FailOn

if TYPE_CHECKING:
    import argparse
    from typing import Any

Method = Literal["eagle3", "eagle", "auto", "mtp"]
Values = Literal["sampled", "full"]
Convention = Literal["vllm", "sglang", "speculators"]
Shell = Literal["bash", "zsh", "fish"]
_Choice = TypeVar("_Choice", bound=str)

# The choices the parser offers, in the order `--help` lists them.
CHECK_METHODS: tuple[Method, ...] = ("eagle3", "eagle", "auto", "mtp")  # 'auto': no method given
METHODS: tuple[Method, ...] = ("eagle3", "eagle", "mtp")  # diff and matrix
VALUES: tuple[Values, ...] = ("sampled", "full")
CONVENTIONS: tuple[Convention, ...] = ("vllm", "sglang", "speculators")
SHELLS: tuple[Shell, ...] = ("bash", "zsh", "fish")


@frozen
class SelectionOptions:
    """Which rules count (check, diff and matrix; see :mod:`draftfit.settings.selection`).

    Attributes:
        select: `--select`, the selectors in the order given; None when not given (the
            settings file's or the default), empty when given empty.
        extend_select: `--extend-select`.
        ignore: `--ignore`.
        config: `--config`, the settings file to use instead of the discovered one.
        isolated: `--isolated`: no settings file at all.
        show_settings: `--show-settings`: print the selection, check nothing.
    """

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    config: str | None = None
    isolated: bool = False
    show_settings: bool = False


@frozen
class OutputOptions:
    """How a report is written (check, diff and matrix).

    Attributes:
        format: `--format`, one of the command's output kind's formats.
        output_file: `--output-file`, written atomically instead of stdout (None: stdout).
        quiet: `--quiet`: text format, the verdict lines only.
        statistics: `--statistics`: findings counted per rule (not offered by matrix).
    """

    format: str
    output_file: str | None = None
    quiet: bool = False
    statistics: bool = False


@frozen
class LaunchOptions:
    """The launch a draft will be served with (`--serve-config`, `--serve-args`), as given;
    read by :func:`draftfit.engines.launch.settings_from`."""

    serve_config: str | None = None
    serve_args: str | None = None

    @property
    def given(self) -> bool:
        """Whether either was given."""
        return self.serve_config is not None or self.serve_args is not None


@frozen
class CheckOptions:
    """`draftfit check`.

    Attributes:
        drafts: the DRAFT arguments as given (folders, globs, Hub ids, or with
            `pre_commit` the changed files).
        engines: `--engine` in the order given; empty: the default engines.
        draft_is_for_target: `--draft-is-for-target` (a settings file may say it too).
    """

    drafts: tuple[str, ...]
    target: str | None
    engines: tuple[str, ...]
    method: Method | None
    fail_on: FailOn
    recipe: bool
    values: Values | None
    pre_commit: bool
    launch: LaunchOptions
    output: OutputOptions
    selection: SelectionOptions
    draft_is_for_target: bool = False


@frozen
class DiffOptions:
    """`draftfit diff` (`engines` empty: the default engines)."""

    draft: str
    reference: str
    target: str | None
    engines: tuple[str, ...]
    method: Method | None
    fail_on: FailOn
    values: Values | None
    launch: LaunchOptions
    output: OutputOptions
    selection: SelectionOptions
    draft_is_for_target: bool = False


@frozen
class MatrixOptions:
    """`draftfit matrix` (`fail_on` None: exit 0 whatever the verdicts)."""

    draft: str
    target: str | None
    method: Method | None
    fail_on: FailOn | None
    values: Values | None
    launch: LaunchOptions
    output: OutputOptions
    selection: SelectionOptions
    draft_is_for_target: bool = False


@frozen
class ConvertOptions:
    """`draftfit convert` (`out` None: no `--output`; `engines` empty: the default)."""

    draft: str
    to: Convention | None
    out: str | None
    target: str | None
    engines: tuple[str, ...]
    dry_run: bool
    unsafe_fixes: bool
    force: bool
    anyway: bool
    verify: bool
    launch: LaunchOptions
    format: str
    draft_is_for_target: bool = False
    # "mtp": the draft is a target whose MTP layers' quantization exclusions are written
    method: str | None = None


@frozen
class InspectOptions:
    """`draftfit inspect`."""

    draft: str
    format: str


@frozen
class RulesOptions:
    """`draftfit rules`."""

    format: str


@frozen
class RuleOptions:
    """`draftfit rule` (`code`: a rule code or name, as given)."""

    code: str
    format: str


@frozen
class EnginesOptions:
    """`draftfit engines` (`engine` None: every engine)."""

    engine: str | None
    format: str


@frozen
class SchemaOptions:
    """`draftfit schema` (`kind`: one of :data:`draftfit.schemas.SCHEMA_KINDS`)."""

    kind: str


@frozen
class DemoOptions:
    """`draftfit demo`."""

    format: str


@frozen
class CompletionOptions:
    """`draftfit completion`."""

    shell: Shell


CommandOptions = (
    CheckOptions
    | DiffOptions
    | MatrixOptions
    | ConvertOptions
    | InspectOptions
    | RulesOptions
    | RuleOptions
    | EnginesOptions
    | SchemaOptions
    | DemoOptions
    | CompletionOptions
)


def from_namespace(args: argparse.Namespace) -> CommandOptions:
    """The typed options of the command `args` holds (`args.command` is set). A value outside
    the parser's choices raises ValueError: the parser refuses those, so it is a bug."""
    command = args.command
    if command == "check":
        return CheckOptions(
            drafts=tuple(args.draft),
            target=args.target,
            engines=_engines(args),
            method=_optional(args.method, CHECK_METHODS, "--method"),
            fail_on=FailOn.parse(_one_of(args.fail_on, FAIL_ON_CHOICES, "--fail-on")),
            recipe=bool(args.recipe),
            values=_optional(args.values, VALUES, "--values"),
            pre_commit=bool(args.pre_commit),
            launch=_launch(args),
            output=_output(args, kinds.CHECK),
            selection=_selection(args),
            draft_is_for_target=bool(args.draft_is_for_target),
        )
    if command == "diff":
        return DiffOptions(
            draft=args.draft,
            reference=args.reference,
            target=args.target,
            engines=_engines(args),
            method=_optional(args.method, METHODS, "--method"),
            fail_on=FailOn.parse(_one_of(args.fail_on, FAIL_ON_CHOICES, "--fail-on")),
            values=_optional(args.values, VALUES, "--values"),
            launch=_launch(args),
            output=_output(args, kinds.DIFF),
            selection=_selection(args),
            draft_is_for_target=bool(args.draft_is_for_target),
        )
    if command == "matrix":
        fail_on = _optional(args.fail_on, FAIL_ON_CHOICES, "--fail-on")
        return MatrixOptions(
            draft=args.draft,
            target=args.target,
            method=_optional(args.method, METHODS, "--method"),
            fail_on=FailOn.parse(fail_on) if fail_on is not None else None,
            values=_optional(args.values, VALUES, "--values"),
            launch=_launch(args),
            output=_output(args, kinds.MATRIX),
            selection=_selection(args),
            draft_is_for_target=bool(args.draft_is_for_target),
        )
    if command == "convert":
        return ConvertOptions(
            draft=args.draft,
            to=_optional(args.to, CONVENTIONS, "--to"),
            out=args.out,
            target=args.target,
            engines=_engines(args),
            dry_run=bool(args.dry_run),
            unsafe_fixes=bool(args.unsafe_fixes),
            force=bool(args.force),
            anyway=bool(args.anyway),
            verify=bool(args.verify),
            launch=_launch(args),
            format=_format(args, kinds.CONVERT),
            draft_is_for_target=bool(args.draft_is_for_target),
            method=_optional(args.method, ("mtp",), "--method"),
        )
    if command == "inspect":
        return InspectOptions(draft=args.draft, format=_format(args, kinds.INSPECT))
    if command == "rules":
        return RulesOptions(format=_format(args, kinds.RULE_LIST))
    if command == "rule":
        return RuleOptions(code=args.code, format=_format(args, kinds.RULE))
    if command == "engines":
        return EnginesOptions(engine=args.engine, format=_format(args, kinds.ENGINES))
    if command == "schema":
        return SchemaOptions(kind=_one_of(args.kind, SCHEMA_KINDS, "schema KIND"))
    if command == "demo":
        return DemoOptions(format=_format(args, kinds.DEMO))
    if command == "completion":
        return CompletionOptions(shell=_one_of(args.shell, SHELLS, "completion SHELL"))
    raise ValueError(f"no options for the command {command!r}")


def _one_of(value: Any, choices: tuple[_Choice, ...], option: str) -> _Choice:
    for choice in choices:
        if value == choice:
            return choice
    raise ValueError(f"{option}: {value!r} is none of {', '.join(choices)}")


def _optional(value: Any, choices: tuple[_Choice, ...], option: str) -> _Choice | None:
    return None if value is None else _one_of(value, choices, option)


def _format(args: argparse.Namespace, kind: Kind) -> str:
    return _one_of(args.format, kind.formats, "--format")


def _engines(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(args.engine or ())


def _launch(args: argparse.Namespace) -> LaunchOptions:
    return LaunchOptions(serve_config=args.serve_config, serve_args=args.serve_args)


def _output(args: argparse.Namespace, kind: Kind) -> OutputOptions:
    return OutputOptions(
        format=_format(args, kind),
        output_file=args.output_file,
        quiet=bool(args.quiet),
        statistics=bool(getattr(args, "statistics", False)),
    )


def _selection(args: argparse.Namespace) -> SelectionOptions:
    return SelectionOptions(
        select=tuple(args.select) if args.select is not None else None,
        extend_select=tuple(args.extend_select),
        ignore=tuple(args.ignore),
        config=args.config,
        isolated=bool(args.isolated),
        show_settings=bool(args.show_settings),
    )
