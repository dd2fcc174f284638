"""The command line: `main` (parsing and dispatch), `options` (the typed options each command
is given, built once from the parsed arguments), `reports` (check / diff / matrix as CI runs
them), `show_settings` (`--show-settings`), `completion` and `pre_commit`.

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("options",),
    ("completion", "pre_commit", "show_settings"),
    ("reports",),
    ("main",),
)
