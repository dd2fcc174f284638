"""Writing what draftfit produces: `guard` (refuse output paths that would destroy
something), `atomic_write` (write, then rename), `json_lines` (a JSON pointer's line),
`progress` (the progress bar, on a terminal only), `notices` (the library's notices: to
the command line's stderr, else the `draftfit` logger) and `temporary` (new private files
and folders beside an output).

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("guard", "json_lines", "progress", "notices", "temporary"),
    ("atomic_write",),
)
