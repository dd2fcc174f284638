"""The commands built on a check: serve recipes (`recipe`, with `launch_edit` editing the
user's own launch), `comparison` (diff), `release_matrix` (matrix), `inspection`
(inspect), `explain` (rules / rule), `rule_docs` (the rule pages) and `demo`.

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("launch_edit", "explain", "rule_docs", "inspection"),
    ("recipe", "comparison"),
    ("release_matrix", "demo"),
)
