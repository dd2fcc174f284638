"""`draftfit inspect`: what a draft holds — dialect, dims, aux ids, tensors by role."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.draft.aux_counting import AuxCounting, AuxIds
from draftfit.draft.description import describe
from draftfit.draft.tensor_names import is_known_role
from draftfit.records import fields, frozen
from draftfit.report import DialectFacts

if TYPE_CHECKING:
    from typing import Any

ROLES: tuple[tuple[str, str], ...] = (
    (r"^fc\.weight$", "fusion fc (aux states -> hidden)"),
    (r"^fc\.bias$", "fusion fc bias"),
    (r"^input_norm\.weight$", "norm before fc (norm_before_fc)"),
    (r"^fc_norm\.(\d+)\.weight$", "per-aux-state norm {0} (fc_norm)"),
    (r"^embed_tokens\.weight$", "token embedding"),
    (r"^lm_head\.weight$", "draft lm_head"),
    (r"^norm\.weight$", "final norm"),
    (r"^d2t$", "draft->target vocab offsets"),
    (r"^t2d$", "target->draft vocab mask"),
    (r"^layers\.(\d+)\.self_attn\.([qkvo])_proj\.weight$", "layer {0} attention {1}"),
    (r"^layers\.(\d+)\.self_attn\.([qkvo])_proj\.bias$", "layer {0} attention {1} bias"),
    (r"^layers\.(\d+)\.self_attn\.([qk])_norm\.weight$", "layer {0} {1}-norm"),
    (r"^layers\.(\d+)\.mlp\.(gate|up|down)_proj\.weight$", "layer {0} mlp {1}"),
    (r"^layers\.(\d+)\.input_layernorm\.weight$", "layer {0} input norm (embeddings)"),
    (r"^layers\.(\d+)\.hidden_norm\.weight$", "layer {0} hidden norm (fc output)"),
    (r"^layers\.(\d+)\.post_attention_layernorm\.weight$", "layer {0} post-attention norm"),
)


def role_of(canonical: str) -> str:
    for pattern, label in ROLES:
        match = re.match(pattern, canonical)
        if match:
            return label.format(*match.groups())
    return "known" if is_known_role(canonical) else "unrecognised"


@frozen
class TensorEntry:
    """One stored tensor: its name, what it is for, dtype, shape and file."""

    name: str
    canonical: str | None  # the name in draftfit's canonical naming; None when unrecognised
    role: str
    dtype: str
    shape: tuple[int, ...]
    file: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "canonical": self.canonical,
            "role": self.role,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "file": self.file,
        }


class _Pairs:
    """Frozen records shown as a `name value` list: their fields in order, JSON-ready."""

    def to_dict(self) -> dict[str, Any]:
        values = ((f.name, getattr(self, f.name)) for f in fields(self))
        return {name: _json_ready(value) for name, value in values}

    def items(self) -> Iterator[tuple[str, Any]]:
        yield from self.to_dict().items()


def _json_ready(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@frozen
class Dims(_Pairs):
    """The draft's dimensions as the config and the stored tensors give them."""

    hidden_size: int | None
    target_hidden_size: int | None
    num_attention_heads: int | None
    num_key_value_heads: int | None
    head_dim: int | None  # as written in the config
    head_dim_effective: int | None  # as an engine derives it
    intermediate_size: int | None
    num_hidden_layers: int | None
    layers_stored: tuple[int, ...]
    vocab_size: int | None
    draft_vocab_size: int | None
    fc_aux_states: int | None


@frozen
class NormFlags(_Pairs):
    """The norm flags of the config; None where the config does not set one."""

    norm_before_residual: Any
    norm_before_fc: Any
    fc_norm: Any
    norm_output: Any


@frozen
class AuxIdsEntry:
    """Aux-layer ids written at one place in the config, with how they count."""

    ids: tuple[int, ...]
    pointer: str
    counting: AuxCounting
    capture_before: tuple[int, ...]
    why: str

    @classmethod
    def of(cls, aux: AuxIds) -> AuxIdsEntry:
        return cls(
            tuple(aux.ids), aux.pointer, aux.convention, tuple(aux.capture_before()), aux.why
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ids": list(self.ids),
            "pointer": self.pointer,
            "counting": self.counting.value,
            "capture_before": list(self.capture_before),
            "why": self.why,
        }


@frozen
class DamageEntry:
    """A structural problem found while reading the checkpoint."""

    kind: str
    file: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "file": self.file, "message": self.message}


@frozen
class InspectInfo:
    """Everything `draftfit inspect` shows; :meth:`to_dict` is its JSON form."""

    source: str
    dialect: DialectFacts
    method: str | None
    method_evidence: tuple[str, ...]
    layer_config: str
    dims: Dims
    aux_layer_ids: tuple[AuxIdsEntry, ...]
    norm_flags: NormFlags
    has_d2t: bool
    has_t2d: bool
    weight_format: str | None
    weight_files: tuple[str, ...]
    tensors: tuple[TensorEntry, ...]
    parameters_by_dtype: Mapping[str, int]
    damage: tuple[DamageEntry, ...]

    @property
    def parameters_total(self) -> int:
        return sum(self.parameters_by_dtype.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "dialect": self.dialect.to_dict(),
            "method": self.method,
            "method_evidence": list(self.method_evidence),
            "layer_config": self.layer_config,
            "dims": self.dims.to_dict(),
            "aux_layer_ids": [a.to_dict() for a in self.aux_layer_ids],
            "norm_flags": self.norm_flags.to_dict(),
            "vocab_maps": {"d2t": self.has_d2t, "t2d": self.has_t2d},
            "weight_format": self.weight_format,
            "weight_files": list(self.weight_files),
            "tensors": [t.to_dict() for t in self.tensors],
            "parameters_by_dtype": dict(self.parameters_by_dtype),
            "parameters_total": self.parameters_total,
            "damage": [d.to_dict() for d in self.damage],
        }


def inspect_path(path: str | Path) -> InspectInfo:
    """Everything `draftfit inspect` shows about the draft at `path` (a full model is a
    usage error, as for `check`)."""
    from draftfit.draft.mistakes import refuse_full_model
    from draftfit.origins.reference import open_checkpoint

    checkpoint = open_checkpoint(path)
    draft = describe(checkpoint)
    refuse_full_model(checkpoint, draft, "inspect")
    tensors = [
        TensorEntry(
            info.name, canonical, role_of(canonical), info.dtype, tuple(info.shape), info.file
        )
        for canonical, info in draft.tensors.items()
    ]
    for raw in draft.unrecognised:
        if raw not in {t.name for t in tensors}:
            info = checkpoint.tensors[raw]
            tensors.append(
                TensorEntry(raw, None, "unrecognised", info.dtype, tuple(info.shape), info.file)
            )
    dims = Dims(
        hidden_size=draft.hidden_size,
        target_hidden_size=draft.int_field("target_hidden_size"),
        num_attention_heads=draft.num_heads,
        num_key_value_heads=draft.num_kv_heads,
        head_dim=draft.head_dim_explicit,
        head_dim_effective=draft.head_dim,
        intermediate_size=draft.int_field("intermediate_size"),
        num_hidden_layers=draft.num_layers_config,
        layers_stored=tuple(draft.layer_indices),
        vocab_size=draft.vocab_size,
        draft_vocab_size=draft.int_field("draft_vocab_size"),
        fc_aux_states=draft.num_aux_states,
    )
    return InspectInfo(
        source=checkpoint.origin,
        dialect=DialectFacts.of(draft.dialect),
        method=draft.method,
        method_evidence=tuple(draft.method_evidence),
        layer_config=draft.layer_config_pointer or "/",
        dims=dims,
        aux_layer_ids=tuple(AuxIdsEntry.of(a) for a in draft.aux),
        norm_flags=NormFlags(
            **{
                k: draft.get(k)
                for k in ("norm_before_residual", "norm_before_fc", "fc_norm", "norm_output")
            }
        ),
        has_d2t=draft.has("d2t"),
        has_t2d=draft.has("t2d"),
        weight_format=checkpoint.weight_format,
        weight_files=tuple(checkpoint.weight_files),
        tensors=tuple(tensors),
        parameters_by_dtype=checkpoint.parameter_count_by_dtype(),
        damage=tuple(DamageEntry(d.kind, d.file, d.message) for d in checkpoint.damage),
    )
