"""DF310 — aux ids written out of ascending order.

Every engine captures the aux hidden states inside the target's decoder-layer loop, so it
hands them to the draft's `fc` in ascending layer order whatever order the ids are listed in
(vLLM 0.34 even sorts the list). A draft trained with the states concatenated in the written
order then sees its `fc` input blocks permuted. The order each engine version uses is the
`aux_concat_order` fact of its data.
"""

from __future__ import annotations

from collections.abc import Iterator

from draftfit.engines.profile import load_engine
from draftfit.rules.aux import capture_fix, trained_capture_ids
from draftfit.rules.base import Context, Severity, Violation, config_at, rule


def _fmt(ids: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


@rule(
    "DF310",
    "aux-ids-not-ascending",
    Severity.WARNING,
    "the aux ids are not ascending, but the engine feeds fc the states in ascending layer order",
    family="aux",
)
def aux_ids_not_ascending(ctx: Context) -> Iterator[Violation]:
    """## What it checks
    The written aux ids are in ascending order, when the engine version captures exactly the
    layers they name (other layers are DF301, repeated ids DF306).

    ## Why it matters
    The engines capture the states inside the target's layer loop and concatenate them in
    ascending layer order, whatever order the ids are written in. A draft trained with the
    states in the written order then gets its `fc` input blocks permuted: it loads, and
    drafts badly.

    ## Example
    `eagle_aux_hidden_state_layer_ids: [29, 2, 16]`: the engine feeds `fc` layers 2, 16, 29.

    ## Fix
    If the draft was trained in the written order, permute `fc.weight`'s input blocks into
    ascending layer order, then list the ids ascending; if it was trained in ascending order,
    listing them ascending is enough.
    """
    view = ctx.view
    if view is None or view.aux is None or view.aux.used is None:
        return
    trained, where = trained_capture_ids(ctx)
    if trained is None or where is None:
        return
    ascending = tuple(sorted(trained))
    if len(set(trained)) != len(trained) or trained == ascending:
        return
    if set(view.aux.used) != set(trained):
        return
    order = load_engine(view.engine).resolve(view.version).fact("aux_concat_order")
    if not order.known or order.value != "ascending":
        return
    width = ctx.spec.target_hidden_size
    blocks = f" ({len(trained)} blocks of {width} columns)" if width else ""
    counted = f" (capture-before {_fmt(trained)})" if tuple(where.ids) != trained else ""
    yield Violation(
        f"`{where.pointer}` lists the aux layers as {_fmt(where.ids)}{counted}, but "
        f"{view.title} concatenates the captured states in ascending layer order "
        f"{_fmt(ascending)}: a draft trained in the written order gets its `fc` input blocks "
        "permuted",
        config_at(where.pointer),
        f"if the draft was trained in the written order, permute `fc.weight`'s input "
        f"columns{blocks} into ascending layer order (`draftfit convert` does not); then "
        f"{capture_fix(view, ascending)}",
        order.sources,
    )
