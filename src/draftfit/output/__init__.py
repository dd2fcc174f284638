"""Writing what draftfit produces: `guard` (refuse output paths that would destroy
something), `atomic_write` (write, then rename), `json_lines` (a JSON pointer's line) and
`progress` (the progress bar, on a terminal only).

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (("guard", "json_lines", "progress"), ("atomic_write",))
