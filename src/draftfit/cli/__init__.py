"""The command line: `main` (parsing and dispatch), `reports` (check / diff / matrix as CI
runs them), `show_settings` (`--show-settings`), `completion` and `pre_commit`.

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("completion", "pre_commit", "show_settings"),
    ("reports",),
    ("main",),
)
