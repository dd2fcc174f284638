"""The launch a user will run, engine-neutral: its settings and how they are read.

`settings` (the launch's settings as one typed value), `flags` (each engine's flags and
config keys that draftfit reads), `input` (`--serve-config` / `--serve-args` parsing).
What a release does with them lives with each engine in :mod:`draftfit.engines`.

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (("settings", "flags"), ("input",))
