"""draftfit's own settings: `draftfit.toml` / `[tool.draftfit]` discovery (`config_file`)
and the rule selection they and the command line make (`selection`).

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (("config_file",), ("selection",))
