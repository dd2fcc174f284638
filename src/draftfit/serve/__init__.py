"""The launch a user will run, engine-neutral: its settings and how they are read.

`settings` (the launch's settings as one typed value), `reading` (what every engine's launch
reader shares: where a flag's value goes, value conversion, bounded settings files, the
listing of flags not read). Each engine's flags, keys and commands, and what a release does
with them, live with the engine in :mod:`draftfit.engines` (`--serve-config` /
`--serve-args` parsing: :mod:`draftfit.engines.launch`).

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (("settings",), ("reading",))
