"""The commands built on a check: serve recipes (`recipe`, with `launch_edit` editing the
user's own launch), `comparison` (diff: what it reads of each side in `diff_sides`, the
DF8xx differences in `diff_findings`, its result in `diff_report`), `release_matrix`
(matrix), `inspection` (inspect), `explain` (rules / rule), `rule_docs` (the rule pages),
`detection` (where each rule is detected) and `demo`; for targets carrying MTP layers,
`mtp_recipe` (their serve recipes) and `mtp_diff` (diff of two such targets).

`LAYERS` lists the modules lowest first (see :mod:`draftfit`).
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("detection",),
    (
        "launch_edit",
        "explain",
        "rule_docs",
        "inspection",
        "diff_report",
        "diff_sides",
        "mtp_recipe",
    ),
    ("recipe", "diff_findings"),
    ("comparison", "mtp_diff"),
    ("release_matrix", "demo"),
)
