"""`--show-settings`: the rule selection a draft would be checked under, and where each part
comes from (as `ruff check --show-settings` shows ruff's), without checking anything.

One block per draft: the settings file (named by `--config`, skipped by `--isolated`, or
found by discovery, with the folders searched and why the walk stopped), then `select`,
`extend-select` and `ignore`, each entry with its source: the default, the settings file,
or the command-line option; then `draft-is-for-target` (DF507), with its source.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from draftfit.escape import escape_controls
from draftfit.records import frozen
from draftfit.settings.config_file import Discovery, FileSettings
from draftfit.settings.selection import Ignore, Selection


@frozen
class SettingsOrigin:
    """How the settings file for one draft was chosen.

    Attributes:
        how: `--config`, `--isolated` or `discovered`.
        discovery: the walk, when the file was discovered (None otherwise).
    """

    how: str
    discovery: Discovery | None = None


def shown_path(path: Path) -> str:
    """`path` relative to the current directory when it is below it, else absolute."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:  # another drive (Windows)
        return absolute
    return absolute if relative.startswith("..") else relative


def describe(
    draft: str,
    selection: Selection,
    settings: FileSettings | None,
    origin: SettingsOrigin,
    cli_extend: tuple[str, ...],
    draft_is_for_target: bool = False,
) -> str:
    """The block `--show-settings` prints for `draft` (escaped for a terminal);
    `draft_is_for_target` is `--draft-is-for-target`."""
    lines = [f"Settings for {draft}", *_file_lines(settings, origin)]
    source = selection.select_source
    shown_source = shown_path(Path(source)) if source not in ("default", "--select") else source
    lines.append(f"  select         {', '.join(selection.select)}  ({shown_source})")
    extend = [f"{s}  (--extend-select)" for s in cli_extend]
    if settings is not None:
        extend[:0] = [f"{s}  ({shown_path(settings.path)})" for s in settings.extend_select]
    lines.extend(_entries("extend-select", extend))
    lines.extend(_entries("ignore", [_ignore_line(item) for item in selection.ignores]))
    lines.append("  " + _declaration_line(draft, settings, draft_is_for_target))
    return "\n".join(escape_controls(line) for line in lines) + "\n"


def _file_lines(settings: FileSettings | None, origin: SettingsOrigin) -> list[str]:
    if origin.how == "--isolated":
        return ["  settings file  none (--isolated)"]
    if settings is not None and origin.how == "--config":
        return [f"  settings file  {shown_path(settings.path)}  (--config)"]
    walk = origin.discovery
    searched = ", ".join(shown_path(p) for p in walk.searched) if walk else ""
    searched = searched or "no folder"
    if settings is not None:
        return [
            f"  settings file  {shown_path(settings.path)}  (discovered)",
            f"  searched       {searched}",
        ]
    stop = walk.stop if walk else "not searched"
    return ["  settings file  none", f"  searched       {searched}  (stopped: {stop})"]


def _declaration_line(draft: str, settings: FileSettings | None, flag: bool) -> str:
    """`draft-is-for-target  yes  (--draft-is-for-target)`, or `no  (default)`."""
    name = "draft-is-for-target"
    if flag:
        return f"{name}  yes  (--draft-is-for-target)"
    if settings is not None and settings.draft_is_for_target:
        local = Path(draft)
        said = settings.declares_draft_for_target(local if local.is_dir() else None)
        return f"{name}  {'yes' if said else 'no'}  ({shown_path(settings.path)})"
    return f"{name}  no  (default)"


def _ignore_line(item: Ignore) -> str:
    """`DF105  "served from a converted copy"  (drafts/draftfit.toml)`; the reason only when
    one was given."""
    given = item.reason not in (f"ignored in {item.source}", f"--ignore {item.selector}")
    reason = f"  {json.dumps(item.reason, ensure_ascii=False)}" if given else ""
    return f"{item.selector}{reason}  ({_source(item.source)})"


def _source(source: str) -> str:
    return source if source.startswith("--") else shown_path(Path(source))


def _entries(name: str, entries: list[str]) -> list[str]:
    if not entries:
        return [f"  {name:<13}  (none)"]
    first, *rest = entries
    return [f"  {name:<13}  {first}", *(f"  {'':<13}  {entry}" for entry in rest)]
