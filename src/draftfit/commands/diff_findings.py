"""The differences `draftfit diff` reports (DF8xx), found between two sides through each
engine's view: the draft class the engine resolves, every dimension it builds from, the
aux layers it captures (in one counting convention), the norm behaviour it runs, the
vocabulary map, and every parameter's shape. Each difference either **matters** (it changes
what the engine builds or runs: severity error) or is **spelling** the engine resolves the
same way (info). A raw comparison (config keys, values, tensor names after mapping between
naming conventions, dtypes) follows as info findings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from draftfit import rule_ids
from draftfit.checkpoint import Checkpoint
from draftfit.checkpoint.values import read_bytes
from draftfit.commands.diff_sides import (
    Side,
    flat_config,
    layer_key,
    norms_run,
    profile_raises_context,
    trained_layers,
    used_layers,
)
from draftfit.draft.aux_counting import resolve_with_target
from draftfit.draft.description import DraftDescription
from draftfit.engines.interface import engine_of
from draftfit.engines.profile import EngineVersion, Profile
from draftfit.location import Location
from draftfit.report import Finding
from draftfit.rule_ids import RuleId
from draftfit.rules import registered
from draftfit.rules.base import Rule, Scope, Severity

if TYPE_CHECKING:
    from typing import Any

    from draftfit.engines.view import EngineView

# The rules this module emits and where it stands (see draftfit.commands.detection).
EMITS: tuple[rule_ids.RuleId, ...] = (
    rule_ids.METHOD_DIFFERS,
    rule_ids.DRAFT_CLASS_DIFFERS,
    rule_ids.DIMENSION_DIFFERS,
    rule_ids.AUX_LAYERS_DIFFER,
    rule_ids.NORM_BEHAVIOUR_DIFFERS,
    rule_ids.PARAMETER_DIFFERS,
    rule_ids.VOCAB_MAP_DIFFERS,
    rule_ids.ENGINE_VERDICT_DIFFERS,
    rule_ids.SPELLING_ONLY,
    rule_ids.EMBEDDING_PRESENCE_DIFFERS,
    rule_ids.CONFIG_KEY_DIFFERS,
    rule_ids.TENSOR_DTYPE_DIFFERS,
    rule_ids.TENSOR_NAME_DIFFERS,
)
EMITS_STAGE = "diff: the draft against the reference"

# Semantic fields the draft class reads, and what a difference changes.
SEMANTIC_FIELDS: tuple[tuple[str, str], ...] = (
    ("hidden_size", "every weight shape"),
    ("num_attention_heads", "every attention shape"),
    ("num_key_value_heads", "the k/v projection shapes and the KV cache"),
    ("intermediate_size", "the MLP shapes"),
    ("vocab_size", "the embedding and the output vocabulary"),
    ("hidden_act", "the MLP activation"),
    ("rms_norm_eps", "every RMSNorm"),
    ("rope_theta", "the rotary position embedding"),
    ("rope_scaling", "the rotary position embedding"),
    ("rope_parameters", "the rotary position embedding"),
    ("max_position_embeddings", "the draft's rotary cache length"),
    ("attention_bias", "which attention parameters exist"),
    ("mlp_bias", "which MLP parameters exist"),
    ("layer_types", "which draft layers use sliding-window attention"),
    ("sliding_window", "the sliding-window span"),
    ("use_sliding_window", "whether sliding-window attention is used"),
)
# What the engine built, as read from the view's typed parts (None: not settled).
EFFECTIVE_FIELDS: tuple[tuple[str, str, str, Callable[[EngineView], object]], ...] = (
    (
        "head_dim",
        "head_dim (declared, else hidden_size / num_attention_heads)",
        "every attention shape",
        lambda view: view.dimensions.head_dim,
    ),
    (
        "target_hidden_size",
        "target_hidden_size (else hidden_size)",
        "fc's input width",
        lambda view: view.capture.target_hidden_size,
    ),
    (
        "draft_vocab_size",
        "draft_vocab_size (else vocab_size)",
        "lm_head and the d2t map",
        lambda view: view.vocabulary.draft_vocab_size if view.vocabulary else None,
    ),
    (
        "num_layers",
        "the number of decoder layers built",
        "the number of decoder layers",
        lambda view: view.dimensions.num_layers,
    ),
    (
        "num_aux_states",
        "the number of aux states fc consumes",
        "fc's input width",
        lambda view: view.capture.num_aux_states,
    ),
    (
        "use_aux_hidden_state",
        "whether fc and aux states are used",
        "what the draft reads",
        lambda view: view.capture.use_aux_hidden_state,
    ),
)
# What the draft class uses when a key is absent (transformers' LlamaConfig defaults, which
# the speculators library's `to_diff_dict` relies on when it omits default values).
FIELD_DEFAULTS: dict[str, Any] = {
    "hidden_act": "silu",
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
    "attention_bias": False,
    "mlp_bias": False,
    "use_sliding_window": False,
}
IGNORED_RAW_KEYS = frozenset({"transformers_version", "_name_or_path", "speculators_version"})


Difference = tuple[RuleId, str, Location]


def diff_finding(
    rule_id: RuleId, message: str, location: Location, engines: list[EngineVersion], group: str
) -> Finding:
    """The finding for one difference, for the engine versions `engines` (`group`: "diff"
    for what an engine sees differently, "raw" for bytes that differ)."""
    rule = _rule(rule_id)
    return Finding(
        rule.id,
        message,
        location,
        None,
        (),
        rule.consequence,
        engines,
        condition=rule.condition,
        group=group,
    )


def collect_difference(
    collected: dict[tuple[object, ...], Finding],
    rule_id: RuleId,
    message: str,
    location: Location,
    engine: EngineVersion,
) -> None:
    """Add what `engine` sees differently to `collected`: one finding per difference, naming
    every engine version that sees it."""
    finding = diff_finding(rule_id, message, location, [], "diff")
    existing = collected.setdefault(finding.key(), finding)
    if engine not in existing.engines:
        existing.engines.append(engine)


def _rule(rule_id: RuleId) -> Rule:
    found = registered(rule_id)
    assert found.scope is Scope.DIFF, rule_id
    return found


def _fmt(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    return (
        str(list(value))
        if isinstance(value, tuple)
        else repr(value)
        if isinstance(value, str)
        else str(value)
    )


def differences(a: Side, b: Side, profile: Profile, layers: int | None) -> Iterator[Difference]:
    title = profile.title
    cfg = Location("config.json")
    if a.draft.method != b.draft.method:
        yield (
            rule_ids.METHOD_DIFFERS,
            f"the draft is {a.draft.method or 'unknown'}, the reference "
            f"{b.draft.method or 'unknown'}",
            cfg,
        )
        return
    va, vb = a.result.verdict, b.result.verdict
    if va != vb and "incompatible" in (va, vb):
        worst_a = _first_problem(a)
        worst_b = _first_problem(b)
        yield (
            rule_ids.ENGINE_VERDICT_DIFFERS,
            f"{title} finds the draft {va}{worst_a} and the reference {vb}{worst_b}",
            cfg,
        )
    yield from _compare_class(a, b, profile)
    if not (a.view.built and b.view.built):
        return
    yield from _compare_fields(a, b, title)
    yield from _compare_norms(a, b, title)
    yield from _compare_aux(a, b, title, layers)
    yield from _compare_parameters(a, b, title)
    yield from _compare_vocab_map(a, b)


def _first_problem(side: Side) -> str:
    """` (DFnnn name)` of the side's first warning or error for this version, else ""."""
    worst = next((f for f in side.findings if f.severity >= Severity.WARNING), None)
    return f" ({worst.code} {worst.name})" if worst else ""


def _compare_class(a: Side, b: Side, profile: Profile) -> Iterator[Difference]:
    """The draft classes, compared by the engine's own notion of one class."""
    title = profile.title
    ca, cb = a.view.draft_class, b.view.draft_class
    arch_a, arch_b = a.draft.get("architectures"), b.draft.get("architectures")
    loc = Location("config.json", "/architectures")
    if ca and cb and not engine_of(profile).same_class(ca, cb):
        yield (
            rule_ids.DRAFT_CLASS_DIFFERS,
            f"{title} builds `{ca}` for the draft and `{cb}` for the reference",
            loc,
        )
    elif ca and cb and arch_a != arch_b:
        same = f"`{ca}`" if ca == cb else f"`{ca}` and `{cb}`, registered to the same class"
        yield (
            rule_ids.SPELLING_ONLY,
            f"`architectures` {_fmt(arch_a)} vs {_fmt(arch_b)}: {title} resolves them to {same}",
            loc,
        )
    if a.draft.dialect.name != b.draft.dialect.name:
        yield (
            rule_ids.SPELLING_ONLY,
            f"config written by {a.draft.dialect.title} vs {b.draft.dialect.title}: "
            f"{title} reads the same fields from "
            f"`{a.draft.layer_config_pointer or '/'}` and `{b.draft.layer_config_pointer or '/'}`",
            Location("config.json"),
        )


def _compare_fields(a: Side, b: Side, title: str) -> Iterator[Difference]:
    for name, why in SEMANTIC_FIELDS:
        default = FIELD_DEFAULTS.get(name)
        x = a.view.visible_config.get(name, default)
        y = b.view.visible_config.get(name, default)
        x = default if x is None else x
        y = default if y is None else y
        if name == "max_position_embeddings" and profile_raises_context(a):
            continue
        if x != y and not (_is_empty(x) and _is_empty(y)):
            yield (
                rule_ids.DIMENSION_DIFFERS,
                f"`{name}` is {_fmt(x)} in the draft and {_fmt(y)} in the reference: changes {why}",
                Location("config.json", a.draft.pointer(name)),
            )
    for name, label, why, built in EFFECTIVE_FIELDS:
        x, y = built(a.view), built(b.view)
        if x != y:
            yield (
                rule_ids.DIMENSION_DIFFERS,
                f"{label}: {_fmt(x)} in the draft, {_fmt(y)} in the reference: changes {why}",
                Location("config.json", a.draft.pointer(name)),
            )
        elif (
            name == "head_dim"
            and (a.draft.head_dim_explicit is None) != (b.draft.head_dim_explicit is None)
            and a.draft.undeclared_head_dim is None
            and b.draft.undeclared_head_dim is None
        ):
            yield (
                rule_ids.SPELLING_ONLY,
                f"`head_dim` is {'declared' if a.draft.head_dim_explicit else 'derived'} in the "
                f"draft and {'declared' if b.draft.head_dim_explicit else 'derived'} in the "
                f"reference; both give {x}",
                Location("config.json", a.draft.pointer("head_dim")),
            )


def _is_empty(value: Any) -> bool:
    return value is None or value == {} or value == []


def _compare_norms(a: Side, b: Side, title: str) -> Iterator[Difference]:
    na = norms_run(a)
    nb = norms_run(b)
    for name in sorted(set(na) | set(nb)):
        if na.get(name) != nb.get(name):
            how_a = _norm_source(a, name)
            how_b = _norm_source(b, name)
            yield (
                rule_ids.NORM_BEHAVIOUR_DIFFERS,
                f"{title} runs `{name}` = {_fmt(na.get(name))} for the draft ({how_a}) and "
                f"{_fmt(nb.get(name))} for the reference ({how_b})",
                Location("config.json", f"/{name}"),
            )


def _norm_source(side: Side, name: str) -> str:
    raw = side.checkpoint.config or {}
    if name in raw:
        return f"written as {_fmt(raw[name])}"
    defaulted = side.view.capture.norm_before_residual_default is not None
    if name == "norm_before_residual" and defaulted:
        return "not written; the speculators adaptor defaults it"
    return "not written"


def _compare_aux(a: Side, b: Side, title: str, layers: int | None) -> Iterator[Difference]:
    used_a = used_layers(a, layers)
    used_b = used_layers(b, layers)
    trained_a = trained_layers(a.draft, layers)
    trained_b = trained_layers(b.draft, layers)
    loc = Location("config.json", "/eagle_aux_hidden_state_layer_ids")
    if trained_a is not None and trained_b is not None and trained_a != trained_b:
        yield (
            rule_ids.AUX_LAYERS_DIFFER,
            f"the draft was trained on capture-before ids {list(trained_a)}, the reference on "
            f"{list(trained_b)}",
            loc,
        )
    if used_a is not None and used_b is not None and used_a != used_b:
        yield (
            rule_ids.AUX_LAYERS_DIFFER,
            f"{title} captures target layers {list(used_a)} for the draft and "
            f"{list(used_b)} for the reference (capture-before counting)",
            loc,
        )
    written_a = [(x.pointer, x.ids, x.convention) for x in a.draft.aux]
    written_b = [(x.pointer, x.ids, x.convention) for x in b.draft.aux]
    if written_a != written_b and trained_a == trained_b and used_a == used_b:
        where_a = _where(a, layers)
        where_b = _where(b, layers)
        same = f" ({list(trained_a)} in capture-before counting)" if trained_a else ""
        yield (
            rule_ids.SPELLING_ONLY,
            f"aux ids written as {where_a} vs {where_b}: the same physical layers{same}, and "
            f"{title} captures the same ones for both",
            loc,
        )


def _where(side: Side, layers: int | None) -> str:
    if not side.draft.aux:
        return "nothing (default layers)"
    resolved = [resolve_with_target(x, layers) for x in side.draft.aux]
    return ", ".join(f"`{x.pointer}` {list(x.ids)} ({x.convention})" for x in resolved)


def _compare_parameters(a: Side, b: Side, title: str) -> Iterator[Difference]:
    names = sorted(set(a.view.expectations) | set(b.view.expectations))
    reached_a = {f.canonical for f in a.view.fates if f.status == "loaded"}
    reached_b = {f.canonical for f in b.view.fates if f.status == "loaded"}
    unbound: dict[str, list[str]] = {"draft": [], "reference": []}
    for name in names:
        ta, tb = a.draft.tensors.get(name), b.draft.tensors.get(name)
        if ta is not None and tb is not None and (name in reached_a) != (name in reached_b):
            unbound["reference" if name in reached_a else "draft"].append(name)
        if name == "embed_tokens.weight" and (ta is None) != (tb is None):
            yield (
                rule_ids.EMBEDDING_PRESENCE_DIFFERS,
                f"`embed_tokens.weight` is stored only in the "
                f"{'draft' if ta is not None else 'reference'}; {title} uses a stored "
                "copy only when it differs from the target's embedding (speculators and "
                "SpecForge store the target's), else shares the target's",
                Location(None, tensor=name),
            )
            continue
        if ta is None and tb is None:
            continue
        if (ta is None) != (tb is None):
            side = "draft" if ta is not None else "reference"
            exp = a.view.expectations.get(name) or b.view.expectations.get(name)
            missing_fate = {
                "uninitialised": "left uninitialised",
                "ones": "left at 1.0",
                "shared": "taken from the target",
            }.get((exp.if_missing if exp is not None else None) or "", "absent")
            yield (
                rule_ids.PARAMETER_DIFFERS,
                f"`{name}` is stored only in the {side}; for the other {title} has it "
                f"{missing_fate}",
                Location(None, tensor=name),
            )
            continue
        assert ta is not None and tb is not None  # both stored (handled above otherwise)
        if tuple(ta.shape) != tuple(tb.shape):
            yield (
                rule_ids.PARAMETER_DIFFERS,
                f"`{name}` is {list(ta.shape)} in the draft and {list(tb.shape)} in the reference",
                Location(None, tensor=name),
            )
    for side, missed in unbound.items():
        if not missed:
            continue
        other = b if side == "reference" else a
        raw = other.draft.raw(missed[0])
        fate = next((f for f in other.view.fates if f.raw == raw), None)
        why = (fate.reason or fate.status) if fate else "not loaded"
        yield (
            rule_ids.PARAMETER_DIFFERS,
            f"{len(missed)} stored tensor(s) load for the "
            f"{'draft' if side == 'reference' else 'reference'} but not for the {side} (first "
            f"`{raw}`: {why})",
            Location(None, tensor=raw),
        )
    raw_a = {x.canonical: x.raw for x in a.view.fates if x.status == "loaded"}
    raw_b = {x.canonical: x.raw for x in b.view.fates if x.status == "loaded"}
    renamed = [n for n in raw_a if n in raw_b and raw_a[n] != raw_b[n]]
    if renamed:
        first = renamed[0]
        yield (
            rule_ids.SPELLING_ONLY,
            f"{len(renamed)} tensor(s) are named differently (e.g. `{raw_a[first]}` vs "
            f"`{raw_b[first]}`): {title} loads both into `{first}`",
            Location(None, tensor=raw_a[first]),
        )


def _compare_vocab_map(a: Side, b: Side) -> Iterator[Difference]:
    da, db = a.draft.tensors.get("d2t"), b.draft.tensors.get("d2t")
    if da is None or db is None or tuple(da.shape) != tuple(db.shape):
        return
    bytes_a, bytes_b = read_bytes(a.checkpoint, da), read_bytes(b.checkpoint, db)
    if bytes_a is None or bytes_b is None or da.dtype != db.dtype:
        return
    if hashlib.sha256(bytes_a).digest() != hashlib.sha256(bytes_b).digest():
        yield (
            rule_ids.VOCAB_MAP_DIFFERS,
            "`d2t` selects different target tokens in the two checkpoints: they were built "
            "with different draft vocabularies",
            Location(None, tensor=a.draft.raw("d2t")),
        )


# ---------------------------------------------------------------------- raw comparison


def raw_differences(
    draft: Checkpoint, reference: Checkpoint, a: DraftDescription, b: DraftDescription
) -> Iterator[Difference]:
    flat_a = flat_config(draft.config or {})
    flat_b = flat_config(reference.config or {})
    # Map the decoder fields of nested conventions onto one name so that
    # `/transformer_layer_config/hidden_size` and `/hidden_size` compare as one key.
    layer_a = {layer_key(a, p): p for p in flat_a}
    layer_b = {layer_key(b, p): p for p in flat_b}
    for key in sorted(set(layer_a) | set(layer_b)):
        pa, pb = layer_a.get(key), layer_b.get(key)
        if key.strip("/").split("/")[0] in IGNORED_RAW_KEYS:
            continue
        if pa is None:
            assert pb is not None  # the key came from one side
            yield (
                rule_ids.CONFIG_KEY_DIFFERS,
                f"`{pb}` = {_fmt(flat_b[pb])} only in the reference",
                Location("config.json", pb),
            )
        elif pb is None:
            yield (
                rule_ids.CONFIG_KEY_DIFFERS,
                f"`{pa}` = {_fmt(flat_a[pa])} only in the draft",
                Location("config.json", pa),
            )
        elif flat_a[pa] != flat_b[pb]:
            where = f"`{pa}`" if pa == pb else f"`{pa}` / `{pb}`"
            yield (
                rule_ids.CONFIG_KEY_DIFFERS,
                f"{where}: {_fmt(flat_a[pa])} vs {_fmt(flat_b[pb])}",
                Location("config.json", pa),
            )
    for name in sorted(set(a.tensors) | set(b.tensors)):
        ta, tb = a.tensors.get(name), b.tensors.get(name)
        if ta is not None and tb is not None and ta.dtype != tb.dtype:
            yield (
                rule_ids.TENSOR_DTYPE_DIFFERS,
                f"`{name}` is {ta.dtype} in the draft and {tb.dtype} in the reference",
                Location(ta.file, tensor=a.raw(name)),
            )
        elif (ta is None) != (tb is None) and name in ("t2d", "mask_hidden"):
            yield (
                rule_ids.TENSOR_NAME_DIFFERS,
                f"`{name}` is stored only in the {'draft' if ta is not None else 'reference'}; "
                "engines skip it",
                Location(None, tensor=name),
            )
