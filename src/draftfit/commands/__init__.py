"""The commands built on a check: serve recipes (`recipe`, with `launch_edit` editing the
user's own launch), `comparison` (diff), `release_matrix` (matrix), `inspection`
(inspect), `explain` (rules / rule), `rule_docs` (the rule pages), `detection` (where each
rule is detected) and `demo`.

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("detection",),
    ("launch_edit", "explain", "rule_docs", "inspection"),
    ("recipe", "comparison"),
    ("release_matrix", "demo"),
)
