"""Which config dimension explains stored shapes the engine does not build.

Every engine builds a draft's decoder layer from a few config dimensions (`head_dim`,
`num_attention_heads`, `num_key_value_heads`, `hidden_size`, `intermediate_size`, and for
MLA layers the LoRA ranks and head dimensions). When one of them is written wrong, every
tensor shaped by it disagrees with what the engine builds: one root cause behind several
shape findings, and one edit of the config fixes them all (the tensors are right).

:func:`fit_dimensions` finds that edit from the view alone: each shape the engine
expects carries its dimensions as config fields (:class:`~draftfit.engines.shapes.Axis`),
so a stored dimension solved for one field proposes a value for it; each proposal is then
built again by the same engine, and kept when it makes stored tensors load whole and no
other tensor stop doing so. Proposals that explain the same tensors in different ways are
kept together: the shapes alone cannot tell which dimension is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from draftfit.draft.description import LAYER_FIELDS, Field
from draftfit.engines import shapes
from draftfit.engines.view import (
    BuildInputs,
    DimensionEdit,
    DimensionFit,
    EngineView,
)
from draftfit.records import replace

if TYPE_CHECKING:
    from typing import Any

    from draftfit.draft.description import DraftDescription

# The config dimensions a draft class derives shapes from, in the order edits are listed.
FIT_KEYS = (
    shapes.HEAD_DIM,
    shapes.HEADS,
    shapes.KV_HEADS,
    shapes.INTERMEDIATE,
    shapes.HIDDEN,
    shapes.Q_LORA_RANK,
    shapes.KV_LORA_RANK,
    shapes.QK_NOPE_HEAD_DIM,
    shapes.QK_ROPE_HEAD_DIM,
    shapes.V_HEAD_DIM,
)
# At most this many proposals are built again (each is one more build of the draft).
MAX_TRIALS = 16
_ATTENTION = re.compile(r"^layers\.\d+\.self_attn\.(q|k|v|o)_proj\.weight$")

Rebuild = Callable[[BuildInputs], EngineView]
Shape = tuple[int, ...]


def shape_problems(view: EngineView, draft: DraftDescription) -> dict[str, Shape]:
    """Stored tensors whose shape differs from the fully known shape the engine builds
    for them: canonical name -> stored shape, in the order the engine builds them."""
    problems: dict[str, Shape] = {}
    for exp in view.expectations.values():
        info = draft.tensors.get(exp.canonical)
        if info is None or exp.shape is None or any(d is None for d in exp.shape):
            continue
        if tuple(info.shape) != tuple(exp.shape):
            problems[exp.canonical] = tuple(info.shape)
    return problems


def fit_dimensions(inputs: BuildInputs, view: EngineView, rebuild: Rebuild) -> list[DimensionFit]:
    """The config dimensions that explain `view`'s shape problems, each verified by
    building the draft again (`rebuild`) with the edit; none when there is no problem or
    no single edit explains one."""
    draft = inputs.draft
    problems = shape_problems(view, draft)
    if draft.undeclared_head_dim is not None:
        # A missing `head_dim` is reported with its own fix (head-dim-not-declared).
        problems = {c: s for c, s in problems.items() if not _ATTENTION.match(c)}
    if not problems:
        return []
    trials: list[tuple[DimensionEdit, frozenset[str]]] = []
    for key, value in _proposals(view, problems, draft)[:MAX_TRIALS]:
        edit = _edit(draft, view, problems, key, value)
        if edit is None:
            continue
        trial = rebuild(
            replace(inputs, draft=_edited(draft, edit), serve=None, fit_dimensions=False)
        )
        if not trial.built:
            continue
        after = shape_problems(trial, draft)
        if set(after) - set(problems):
            continue  # the edit breaks a tensor that loaded whole
        resolved = frozenset(c for c in problems if c not in after)
        if resolved:
            trials.append((edit, resolved))
    return _group(trials, list(problems))


def _proposals(
    view: EngineView, problems: Mapping[str, Shape], draft: DraftDescription
) -> list[tuple[str, int]]:
    """(key, value) pairs that give some stored dimension, in the order of `FIT_KEYS`."""
    found: dict[tuple[str, int], None] = {}
    for canonical, stored in problems.items():
        exp = view.expectations[canonical]
        for axis, size, built in zip(exp.axes, stored, exp.shape or (), strict=False):
            if axis is None or size == built:
                continue
            for key in axis.fields:
                if key not in FIT_KEYS:
                    continue
                if key == shapes.HEAD_DIM and draft.undeclared_head_dim is not None:
                    continue
                value = axis.solve(key, size)
                if value is not None:
                    found.setdefault((key, value))
    return sorted(found, key=lambda pair: FIT_KEYS.index(pair[0]))


def _edit(
    draft: DraftDescription,
    view: EngineView,
    problems: Mapping[str, Shape],
    key: str,
    value: int,
) -> DimensionEdit | None:
    """The edit setting `key` to `value`, with the first stored tensor it explains as
    evidence; None when the engine already uses `value`."""
    for canonical, stored in problems.items():
        exp = view.expectations[canonical]
        for index, (axis, size) in enumerate(zip(exp.axes, stored, strict=False)):
            if axis is None or key not in axis.fields or axis.solve(key, size) != value:
                continue
            used = _used(axis, key)
            if used == value:
                return None
            evidence = (
                f"`{draft.raw(canonical)}` is {list(stored)}, whose "
                f"{_dimension(index, len(stored))} {axis.names()} = {axis.numbers(key, value)}"
            )
            pointer = _pointer(draft, key)
            declared = _declared(draft.config, pointer)
            return DimensionEdit(key, pointer, declared, used, value, evidence)
    return None


def _used(axis: shapes.Axis, key: str) -> int:
    for _, factors in axis.terms:
        for name, value in factors:
            if name == key:
                return value
    raise ValueError(key)  # pragma: no cover - `key` comes from the axis's fields


def _dimension(index: int, rank: int) -> str:
    if rank == 1:
        return "length is"
    return {0: "rows are", 1: "columns are"}.get(index, f"dimension {index} is")


def _pointer(draft: DraftDescription, key: str) -> str:
    """Where the draft class reads `key`: the decoder config for its fields (a speculators
    `transformer_layer_config` even when a top-level copy exists, which the engine does not
    read), else where the config writes it, else the decoder config."""
    found = draft.field(key)
    if key in LAYER_FIELDS or found.pointer is None:
        return f"{draft.layer_config_pointer}/{key}"
    return found.pointer


def _declared(config: Mapping[str, Any], pointer: str) -> int | None:
    """The integer at JSON pointer `pointer` of `config`, or None."""
    value: Any = config
    for token in pointer.split("/")[1:]:
        if not isinstance(value, Mapping):
            return None
        value = value.get(token.replace("~1", "/").replace("~0", "~"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _edited(draft: DraftDescription, edit: DimensionEdit) -> DraftDescription:
    """`draft` with `edit` made in its config (the stored tensors unchanged)."""
    config = _set(draft.config, edit.pointer.split("/")[1:], edit.value)
    fields = dict(draft.fields)
    if edit.key in fields:
        fields[edit.key] = Field(edit.value, edit.pointer)
    return replace(draft, config=config, fields=fields)


def _set(mapping: Mapping[str, Any], tokens: list[str], value: int) -> dict[str, Any]:
    """A copy of `mapping` with `value` at the JSON pointer `tokens` (copied on the path)."""
    out = dict(mapping)
    key = tokens[0].replace("~1", "/").replace("~0", "~")
    if len(tokens) == 1:
        out[key] = value
        return out
    inner = out.get(key)
    out[key] = _set(inner if isinstance(inner, Mapping) else {}, tokens[1:], value)
    return out


def _group(
    trials: list[tuple[DimensionEdit, frozenset[str]]], order: list[str]
) -> list[DimensionFit]:
    """One fit per set of tensors explained: an edit whose tensors another edit explains
    and more is dropped; edits explaining overlapping tensors are one (ambiguous) fit."""
    kept = [(e, r) for e, r in trials if not any(r < other for _, other in trials)]
    groups: list[tuple[list[DimensionEdit], set[str]]] = []
    for edit, resolved in kept:
        joined = [g for g in groups if g[1] & resolved]
        edits = [edit]
        tensors = set(resolved)
        for group in joined:
            groups.remove(group)
            edits = group[0] + edits
            tensors |= group[1]
        groups.append((edits, tensors))
    return [
        DimensionFit(
            tuple(sorted(edits, key=lambda e: FIT_KEYS.index(e.key))),
            tuple(c for c in order if c in tensors),
        )
        for edits, tensors in groups
    ]
