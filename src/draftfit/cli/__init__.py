"""The command line: `entry` (the program's entry point; it answers `--help` and `--version`
from `top`, the top-level parser, alone), `main` (parsing and dispatch), `options` (the
typed options each command is given, built once from the parsed arguments), `reports`
(check / diff / matrix as CI runs them), `show_settings` (`--show-settings`), `completion`
and `pre_commit`.

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("top",),
    ("options",),
    ("completion", "pre_commit", "show_settings"),
    ("reports",),
    ("main",),
    ("entry",),
)
