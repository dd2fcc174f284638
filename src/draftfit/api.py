"""The Python API: check, compare, tabulate and convert drafts from a script.

    >>> import draftfit
    >>> report = draftfit.check("./draft", target="./target", engines=["vllm==0.34.0"])
    >>> report.exit_code("warning")  # 0 or 1, as `draftfit check --fail-on warning` exits

Each function does what the command of the same name does and returns its typed result:
a :class:`~draftfit.report.Report` (check), a :class:`~draftfit.commands.comparison.DiffReport`
(diff), a :class:`~draftfit.commands.release_matrix.Matrix` (matrix) or a
:class:`~draftfit.conversion.ConvertResult` (convert). `result.to_dict()` is the command's
JSON form without the envelope (its schema: `draftfit schema KIND`). Nothing is printed;
bad input raises :class:`draftfit.errors.DraftfitError` (a `UsageError` for arguments, an
`OSError`-derived error for files). Progress and notices (such as a Hub draft read from
the local cache because the Hub did not answer) go to the `draftfit` logger, at INFO and
WARNING, and no progress bar is drawn. The implementations are imported when first called,
so `import draftfit` stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeAlias

    from draftfit.commands.comparison import DiffReport
    from draftfit.commands.release_matrix import Matrix
    from draftfit.conversion import ConvertResult
    from draftfit.report import Report

    # one `--engine` selector, or several
    Engines: TypeAlias = str | Iterable[str] | None
    # `"sampled"`, `"full"`, True (sampled) or False / None (no value checks)
    Values: TypeAlias = str | bool | None
    # a launch command line, or its words
    ServeArgs: TypeAlias = str | Iterable[str] | None


def check(
    draft: str | Path,
    target: str | Path | None = None,
    engines: Engines = None,
    method: str | None = None,
    *,
    values: Values = None,
    recipes: bool = False,
    serve_config: str | Path | None = None,
    serve_args: ServeArgs = None,
    draft_is_for_target: bool = False,
) -> Report:
    """Check `draft` (a folder or Hub reference) next to `target` for each engine version.

    `engines` takes what `--engine` takes, one selector as a string or several in a list
    (`"vllm"`, `["sglang==0.5.23", "vllm~=0.34"]`, `"all"`; default: the engines installed
    here, else the newest vLLM); `values` is `"sampled"` (or True) or `"full"` to read the
    weights' values too; `recipes` attaches how to serve the draft with each version that
    can (`report.recipes`). `serve_config` (a path) and `serve_args` (a command line, as a
    string or a list of its words) take what `--serve-config` and `--serve-args` take: the
    launch's settings, judged for that engine's versions. `draft_is_for_target` is
    `--draft-is-for-target`: the draft was trained for this target, whatever verifier it
    records (DF507 is then info); a settings file's `draft-is-for-target` is read by the
    command line only.
    """
    from draftfit.checker import check_path
    from draftfit.engines.launch import settings_from

    serve = settings_from(*_launch(serve_config, serve_args))
    report = check_path(
        draft,
        target=target,
        engines=_engines(engines),
        method=method,
        values=_values(values),
        serve=serve,
        draft_is_for_target=draft_is_for_target,
    )
    if recipes:
        from draftfit.commands.recipe import attach_recipes

        attach_recipes(report)
    return report


def diff(
    draft: str | Path,
    reference: str | Path,
    target: str | Path | None = None,
    engines: Engines = None,
    method: str | None = None,
    *,
    values: Values = None,
    serve_config: str | Path | None = None,
    serve_args: ServeArgs = None,
    draft_is_for_target: bool = False,
) -> DiffReport:
    """Compare `draft` with a known-good `reference` as each engine version sees both
    (with the launch's settings and `draft_is_for_target`, as for :func:`check`)."""
    from draftfit.commands.comparison import diff_paths
    from draftfit.engines.launch import settings_from

    return diff_paths(
        draft,
        reference,
        engines=_engines(engines),
        target=target,
        method=method,
        values=_values(values),
        serve=settings_from(*_launch(serve_config, serve_args)),
        draft_is_for_target=draft_is_for_target,
    )


def matrix(
    draft: str | Path,
    target: str | Path | None = None,
    method: str | None = None,
    *,
    values: Values = None,
    serve_config: str | Path | None = None,
    serve_args: ServeArgs = None,
    draft_is_for_target: bool = False,
) -> Matrix:
    """Check `draft` against every release of every engine, grouped into version ranges
    (with the launch's settings and `draft_is_for_target`, as for :func:`check`)."""
    from draftfit.commands.release_matrix import build_matrix
    from draftfit.draft.description import describe
    from draftfit.draft.mistakes import refuse_argument_mistakes
    from draftfit.engines.launch import settings_from
    from draftfit.origins.reference import open_checkpoint, open_target

    serve = settings_from(*_launch(serve_config, serve_args))
    checkpoint = open_checkpoint(draft)
    target_checkpoint = open_target(target) if target is not None else None
    if target_checkpoint is not None:
        target_checkpoint.draft_is_for_target = draft_is_for_target
    refuse_argument_mistakes(
        checkpoint, describe(checkpoint), target_checkpoint, method, command="matrix"
    )
    return build_matrix(
        checkpoint, target_checkpoint, method=method, values=_values(values), serve=serve
    )


def convert(
    draft: str | Path,
    to: str,
    out: str | Path | None = None,
    target: str | Path | None = None,
    engines: Engines = None,
    *,
    dry_run: bool = False,
    unsafe: bool = False,
    force: bool = False,
    verify: bool = False,
    draft_is_for_target: bool = False,
) -> ConvertResult:
    """Rewrite the local draft `draft` into convention `to` (`vllm`, `sglang`,
    `speculators`) at `out`, with the guarantees of `draftfit convert` (atomic, never
    deleting what draftfit did not write); `dry_run` plans without writing; `verify`
    re-reads every copied byte of the output against the input; `draft_is_for_target` as
    for :func:`check`."""
    from draftfit.conversion import convert_path

    return convert_path(
        draft,
        to,
        out,
        target=target,
        engines=_engines(engines),
        dry_run=dry_run,
        unsafe=unsafe,
        force=force,
        verify=verify,
        draft_is_for_target=draft_is_for_target,
    )


__all__ = ["check", "convert", "diff", "matrix"]


def _engines(engines: Engines) -> list[str] | None:
    """One `--engine` selector given as a string (`"vllm"`) is one selector, not its letters."""
    if engines is None:
        return None
    if isinstance(engines, str):
        return [engines]
    return list(engines)


def _values(values: Values) -> str | None:
    """`values=True` reads the sampled values (as `--values` alone does); False, none."""
    if values is True:
        return "sampled"
    if values is False:
        return None
    return values


def _launch(
    serve_config: str | Path | None, serve_args: ServeArgs
) -> tuple[str | None, str | None]:
    """`serve_config` as a path string, and `serve_args` as one command line (a list of
    words is quoted back into one, as a shell would have split it)."""
    config = str(serve_config) if serve_config is not None else None
    if serve_args is None or isinstance(serve_args, str):
        return config, serve_args
    import shlex

    return config, shlex.join(str(word) for word in serve_args)
