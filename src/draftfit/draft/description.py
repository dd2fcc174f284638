"""One engine-neutral description of a draft (the "canonical description") that rules read.

Every producer spells the same facts differently: dims live at the top level, under
`transformer_layer_config` (speculators) or under `model` (legacy vLLM EAGLE); decoder
tensors are `midlayer.*` or `layers.N.*`; aux-layer ids are top-level or nested under
`eagle_config`, and counted in one of two conventions. :func:`describe` reads all of that
into a :class:`DraftDescription` that records each value *and where it was found*, so findings can
point at the exact JSON pointer or tensor.

How aux-layer ids are found and counted lives in :mod:`draftfit.draft.aux_counting`; how stored
tensor names map to canonical ones, in :mod:`draftfit.draft.tensor_names`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit.checkpoint.model import Checkpoint, TensorInfo
from draftfit.draft.aux_counting import (
    AuxIds,
    aux_locations,
    default_capture_ids,
    resolve_with_target,
)
from draftfit.draft.config_schema import DRAFT_SCHEMA, TypeProblem, scrub
from draftfit.draft.dialects import SPECULATORS, VLLM_LEGACY_EAGLE, Dialect, detect_dialect
from draftfit.draft.tensor_names import canonical_tensors, layer_index
from draftfit.records import field, frozen, record

if TYPE_CHECKING:
    from typing import Any

EAGLE3 = "eagle3"
EAGLE = "eagle"
METHODS = (EAGLE3, EAGLE)

# Fields that describe the decoder layer (found in the layer config for speculators/legacy).
LAYER_FIELDS = (
    "model_type",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "num_hidden_layers",
    "vocab_size",
    "hidden_act",
    "rms_norm_eps",
    "max_position_embeddings",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "attention_bias",
    "mlp_bias",
    "tie_word_embeddings",
    "layer_types",
    "sliding_window",
    "use_sliding_window",
    "num_aux_hidden_states",
    "num_aux_layers",
    "bos_token_id",
    "eos_token_id",
)
# EAGLE-specific fields (top level in every convention).
EAGLE_FIELDS = (
    "architectures",
    "draft_vocab_size",
    "target_hidden_size",
    "norm_before_residual",
    "norm_before_fc",
    "fc_norm",
    "norm_output",
    "torch_dtype",
    "dtype",
    "bias",
    "truncated_vocab_size",
)


@frozen
class Field:
    """A config value and the JSON pointer it was read from (None when absent)."""

    value: Any
    pointer: str | None

    @property
    def present(self) -> bool:
        return self.pointer is not None


ABSENT = Field(None, None)


@record
class DraftDescription:
    """The canonical description of a draft checkpoint.

    Attributes:
        dialect: who wrote it, with evidence.
        method: `eagle3`, `eagle`, or None when it cannot be told.
        method_evidence: why.
        layer_config_pointer: JSON pointer of the decoder-layer config (`""` top level).
        fields: every known field with the pointer it was found at.
        aux: every place aux-layer ids were written, most authoritative first.
        tensors: tensors by canonical name (`layers.N.*`, `fc.weight`, ...).
        raw_names: canonical name -> the name stored in the file.
        name_prefix: a prefix every decoder tensor carries (e.g. `model.`), else `""`.
        unrecognised: stored names that map to no known role.
        config: config.json without its wrong-typed values (what every reader uses).
        config_problems: the wrong-typed values set aside (`config_schema.scrub`).
    """

    dialect: Dialect
    method: str | None
    method_evidence: list[str]
    layer_config_pointer: str
    fields: dict[str, Field]
    aux: list[AuxIds]
    tensors: dict[str, TensorInfo]
    raw_names: dict[str, str]
    name_prefix: str = ""
    unrecognised: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    config_problems: list[TypeProblem] = field(default_factory=list)

    # ---- plain accessors
    def get(self, name: str) -> Any:
        return self.fields.get(name, ABSENT).value

    def field(self, name: str) -> Field:
        return self.fields.get(name, ABSENT)

    def pointer(self, name: str) -> str:
        """Where a field lives, or where it would be written when absent."""
        found = self.fields.get(name)
        if found is not None and found.pointer is not None:
            return found.pointer
        base = self.layer_config_pointer if name in LAYER_FIELDS else ""
        return f"{base}/{name}"

    def int_field(self, name: str) -> int | None:
        value = self.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    # ---- derived dims
    @property
    def hidden_size(self) -> int | None:
        return self.int_field("hidden_size")

    @property
    def num_heads(self) -> int | None:
        return self.int_field("num_attention_heads")

    @property
    def num_kv_heads(self) -> int | None:
        kv = self.int_field("num_key_value_heads")
        return kv if kv is not None else self.num_heads

    @property
    def head_dim_explicit(self) -> int | None:
        return self.int_field("head_dim")

    @property
    def head_dim(self) -> int | None:
        """`head_dim` if written, else `hidden_size // num_attention_heads`."""
        if self.head_dim_explicit is not None:
            return self.head_dim_explicit
        if self.hidden_size and self.num_heads:
            return self.hidden_size // self.num_heads
        return None

    @property
    def undeclared_head_dim(self) -> int | None:
        """The head_dim the stored q_proj implies, when the config declares none and the
        derived `hidden_size // num_attention_heads` disagrees with it (e.g. 7168 // 64 = 112 for
        a Kimi-K2 draft whose q_proj holds 64 heads of 128).
        """
        if self.head_dim_explicit is not None or not self.num_heads:
            return None
        q = self.tensors.get("layers.0.self_attn.q_proj.weight")
        if q is None or len(q.shape) != 2 or q.shape[0] % self.num_heads:
            return None
        implied = q.shape[0] // self.num_heads
        return implied if implied != self.head_dim else None

    @property
    def target_hidden_size(self) -> int | None:
        """`target_hidden_size` if written (and not null), else the draft hidden size."""
        explicit = self.int_field("target_hidden_size")
        return explicit if explicit is not None else self.hidden_size

    @property
    def vocab_size(self) -> int | None:
        return self.int_field("vocab_size")

    @property
    def draft_vocab_size(self) -> int | None:
        """`draft_vocab_size` if written, else the full vocab."""
        explicit = self.int_field("draft_vocab_size")
        return explicit if explicit is not None else self.vocab_size

    @property
    def num_layers_config(self) -> int | None:
        return self.int_field("num_hidden_layers")

    @property
    def layer_indices(self) -> list[int]:
        """Decoder layer indices that have at least one tensor."""
        return sorted({i for i in map(layer_index, self.tensors) if i is not None})

    @property
    def trained_aux(self) -> AuxIds | None:
        """The ids the draft was trained with (the most authoritative place), if written."""
        return self.aux[0] if self.aux else None

    def trained_capture_before(self, target_layers: int | None) -> tuple[int, ...] | None:
        """The target layers the draft was trained on, in capture-before counting.

        With no ids written anywhere, every trainer captured the default layers, so the
        default for a `target_layers`-layer target is returned (None without one).
        """
        aux = self.trained_aux
        if aux is None:
            return default_capture_ids(target_layers) if target_layers else None
        return resolve_with_target(aux, target_layers).capture_before()

    @property
    def fc_input_width(self) -> int | None:
        fc = self.tensors.get("fc.weight")
        return fc.shape[1] if fc is not None and len(fc.shape) == 2 else None

    @property
    def num_aux_states(self) -> int | None:
        """How many aux hidden states the stored `fc` consumes (its width / target hidden)."""
        width, t = self.fc_input_width, self.target_hidden_size
        if width is None or not t or width % t:
            return None
        return width // t

    def has(self, canonical: str) -> bool:
        return canonical in self.tensors

    def raw(self, canonical: str) -> str:
        return self.raw_names.get(canonical, canonical)


# --------------------------------------------------------------------------- building


def describe(checkpoint: Checkpoint, dialect: Dialect | None = None) -> DraftDescription:
    """The canonical description of `checkpoint`, built once per checkpoint (the mistake
    checks, every engine's check and the recipes share it) unless `dialect` is forced."""
    if dialect is not None:
        return _describe(checkpoint, dialect)
    return checkpoint.memo.own(("description",), lambda: _describe(checkpoint, None))


def _describe(checkpoint: Checkpoint, dialect: Dialect | None) -> DraftDescription:
    dialect = dialect or detect_dialect(checkpoint)
    scrubbed = scrub(checkpoint.config, DRAFT_SCHEMA)
    config = scrubbed.config
    layer_pointer, layer_config = _layer_config(config, dialect)
    fields: dict[str, Field] = {}
    for name in LAYER_FIELDS:
        found = _lookup(name, config, layer_pointer, layer_config, prefer_layer=True)
        if found.present:
            fields[name] = found
    for name in EAGLE_FIELDS:
        found = _lookup(name, config, layer_pointer, layer_config, prefer_layer=False)
        if found.present:
            fields[name] = found
    eagle_config = config.get("eagle_config")
    if isinstance(eagle_config, dict):
        for key, value in eagle_config.items():
            fields[f"eagle_config.{key}"] = Field(value, f"/eagle_config/{_escape(key)}")
    spec_config = config.get("speculators_config")
    if isinstance(spec_config, dict):
        methods = spec_config.get("proposal_methods")
        if isinstance(methods, list) and methods and isinstance(methods[0], dict):
            tokens = methods[0].get("speculative_tokens")
            fields["speculative_tokens"] = Field(
                tokens, "/speculators_config/proposal_methods/0/speculative_tokens"
            )
        verifier = spec_config.get("verifier")
        if isinstance(verifier, dict) and "name_or_path" in verifier:
            fields["verifier.name_or_path"] = Field(
                verifier["name_or_path"], "/speculators_config/verifier/name_or_path"
            )

    tensors, raw_names, prefix, unrecognised = canonical_tensors(checkpoint)
    method, method_evidence = _infer_method(config, dialect, tensors, fields)
    draft = DraftDescription(
        dialect=dialect,
        method=method,
        method_evidence=method_evidence,
        layer_config_pointer=layer_pointer,
        fields=fields,
        aux=[],
        tensors=tensors,
        raw_names=raw_names,
        name_prefix=prefix,
        unrecognised=unrecognised,
        config=config,
        config_problems=scrubbed.problems,
    )
    draft.aux = aux_locations(config, dialect)
    return draft


def _layer_config(config: Mapping[str, Any], dialect: Dialect) -> tuple[str, Mapping[str, Any]]:
    if dialect.name == SPECULATORS and isinstance(config.get("transformer_layer_config"), dict):
        return "/transformer_layer_config", config["transformer_layer_config"]
    if dialect.name == VLLM_LEGACY_EAGLE and isinstance(config.get("model"), dict):
        return "/model", config["model"]
    return "", config


def _lookup(
    name: str,
    config: Mapping[str, Any],
    layer_pointer: str,
    layer_config: Mapping[str, Any],
    prefer_layer: bool,
) -> Field:
    places = [(layer_pointer, layer_config), ("", config)]
    if not prefer_layer:
        places.reverse()
    for pointer, mapping in places:
        if name in mapping:
            return Field(mapping[name], f"{pointer}/{_escape(name)}")
    return ABSENT


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _infer_method(
    config: Mapping[str, Any],
    dialect: Dialect,
    tensors: Mapping[str, TensorInfo],
    fields: Mapping[str, Field],
) -> tuple[str | None, list[str]]:
    evidence: list[str] = []
    kind = config.get("speculators_model_type")
    if kind == "eagle3":
        return EAGLE3, ["`speculators_model_type` is `eagle3`"]
    if kind == "eagle":
        return EAGLE, ["`speculators_model_type` is `eagle`"]
    arch = config.get("architectures")
    arch0 = arch[0] if isinstance(arch, list) and arch and isinstance(arch[0], str) else ""
    if "Eagle3" in arch0 or "EAGLE3" in arch0:
        return EAGLE3, [f"`architectures` names an EAGLE-3 class (`{arch0}`)"]
    if dialect.variant == "eagle3":
        evidence.append(f"{dialect.title} layout")
    if dialect.variant == "eagle1":
        return EAGLE, [f"{dialect.title} layout"]
    if arch0.startswith("Eagle") or arch0.endswith("Eagle"):
        return EAGLE, [f"`architectures` names an EAGLE-1 class (`{arch0}`)"]
    if "layers.0.hidden_norm.weight" in tensors:
        evidence.append("`hidden_norm` tensor (EAGLE-3 first layer)")
    fc = tensors.get("fc.weight")
    hidden = fields.get("hidden_size", ABSENT).value
    if fc is not None and len(fc.shape) == 2 and isinstance(hidden, int) and hidden:
        ratio = fc.shape[1] / hidden
        if ratio == 2 and "target_hidden_size" not in fields:
            if not evidence:
                return EAGLE, [
                    f"`fc.weight` is `[{fc.shape[0]}, {fc.shape[1]}]` = [H, 2H] (EAGLE-1)"
                ]
        elif ratio >= 3:
            evidence.append(f"`fc.weight` input width {fc.shape[1]} ≥ 3 × hidden (EAGLE-3)")
    q = tensors.get("layers.0.self_attn.q_proj.weight")
    if q is not None and len(q.shape) == 2 and isinstance(hidden, int) and q.shape[1] == 2 * hidden:
        evidence.append("layer-0 attention takes 2 × hidden inputs (EAGLE-3)")
    if evidence:
        return EAGLE3, evidence
    return None, ["no EAGLE-3 or EAGLE-1 marker found"]
