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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from draftfit.commands.comparison import DiffReport
    from draftfit.commands.release_matrix import Matrix
    from draftfit.conversion import ConvertResult
    from draftfit.report import Report


def check(
    draft: str | Path,
    target: str | Path | None = None,
    engines: Iterable[str] | None = None,
    method: str | None = None,
    *,
    values: str | None = None,
    recipes: bool = False,
    serve_config: str | None = None,
    serve_args: str | None = None,
    draft_is_for_target: bool = False,
) -> Report:
    """Check `draft` (a folder or Hub reference) next to `target` for each engine version.

    `engines` takes what `--engine` takes (`"vllm"`, `"sglang==0.5.23"`, `"vllm~=0.34"`,
    `"all"`; default: the engines installed here, else the newest vLLM); `values` is
    `"sampled"` or `"full"` to read the weights' values too; `recipes` attaches how to serve
    the draft with each version that can (`report.recipes`). `serve_config` and
    `serve_args` take what `--serve-config` and `--serve-args` take: the launch's settings,
    judged for that engine's versions. `draft_is_for_target` is `--draft-is-for-target`:
    the draft was trained for this target, whatever verifier it records (DF507 is then
    info); a settings file's `draft-is-for-target` is read by the command line only.
    """
    from draftfit.checker import check_path
    from draftfit.engines.launch import settings_from

    serve = settings_from(serve_config, serve_args, _roots(draft, target))
    report = check_path(
        draft,
        target=target,
        engines=engines,
        method=method,
        values=values,
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
    engines: Iterable[str] | None = None,
    method: str | None = None,
    *,
    values: str | None = None,
    serve_config: str | None = None,
    serve_args: str | None = None,
    draft_is_for_target: bool = False,
) -> DiffReport:
    """Compare `draft` with a known-good `reference` as each engine version sees both
    (with the launch's settings and `draft_is_for_target`, as for :func:`check`)."""
    from draftfit.commands.comparison import diff_paths
    from draftfit.engines.launch import settings_from

    return diff_paths(
        draft,
        reference,
        engines=engines,
        target=target,
        method=method,
        values=values,
        serve=settings_from(serve_config, serve_args, _roots(draft, reference, target)),
        draft_is_for_target=draft_is_for_target,
    )


def matrix(
    draft: str | Path,
    target: str | Path | None = None,
    method: str | None = None,
    *,
    values: str | None = None,
    serve_config: str | None = None,
    serve_args: str | None = None,
    draft_is_for_target: bool = False,
) -> Matrix:
    """Check `draft` against every release of every engine, grouped into version ranges
    (with the launch's settings and `draft_is_for_target`, as for :func:`check`)."""
    from draftfit.commands.release_matrix import build_matrix
    from draftfit.engines.launch import settings_from
    from draftfit.origins.reference import open_checkpoint, open_target

    serve = settings_from(serve_config, serve_args, _roots(draft, target))
    checkpoint = open_checkpoint(draft)
    target_checkpoint = open_target(target) if target is not None else None
    if target_checkpoint is not None:
        target_checkpoint.draft_is_for_target = draft_is_for_target
    return build_matrix(checkpoint, target_checkpoint, method=method, values=values, serve=serve)


def convert(
    draft: str | Path,
    to: str,
    out: str | Path | None = None,
    target: str | Path | None = None,
    engines: list[str] | None = None,
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
        engines=engines,
        dry_run=dry_run,
        unsafe=unsafe,
        force=force,
        verify=verify,
        draft_is_for_target=draft_is_for_target,
    )


__all__ = ["check", "convert", "diff", "matrix"]


def _roots(*paths: str | Path | None) -> list[str | Path]:
    """The checkpoints named, where a settings file reached through a symlink may lie."""
    return [path for path in paths if path is not None]
