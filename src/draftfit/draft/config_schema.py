"""The JSON type of every config field draftfit reads, and a pass that sets wrong ones aside.

Engines read `config.json` through HF's JSON loader, which keeps JSON types as they are: a
`"4096"` hidden size stays a string, `4096.0` stays a float, `"false"` stays a (truthy)
string. Engines then either crash in shape math or a typed config class (an *error*), or
read the value as something else, e.g. `bool("false")` is true (a *warning*: it loads but
drafts differently from what the author meant).

This module is the single table of what each field must be (:data:`DRAFT_SCHEMA`,
:data:`TARGET_SCHEMA`), and :func:`scrub` walks a config against it: it returns a copy with
every wrong-typed value removed (so descriptive code treats it as absent and never crashes
on it or uses it) plus one :class:`TypeProblem` per removed value (so the rules
`config-field-wrong-type` / `config-field-misread` can make the verdict say so).

Decisions: a bool is never an integer (JSON `true` is not `1`); a float is never an
integer, not even `4096.0` (HF keeps it a float and tensor shapes refuse floats); dims,
counts and ids are at most 2**31 - 1 (nothing larger is a real dimension); null is allowed
only where a producer writes it and engines accept it (`target_hidden_size`, `head_dim`,
the aux-id lists, `rope_scaling`, ...).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit.escape import clip
from draftfit.records import field, frozen, record

if TYPE_CHECKING:
    from typing import Any

INT_LIMIT = 2**31

POS_INT = "positive integer"
NONNEG_INT = "non-negative integer"
POS_NUMBER = "positive number"
BOOL = "boolean"
STR = "string"
STR_LIST = "list of strings"
INT_LIST = "list of non-negative integers"
# Aux-layer ids: integers of either sign (TensorRT-LLM's -1 is the final hidden state; an id
# an engine cannot capture is a range question, reported by the aux rules, not a type one).
LAYER_ID_LIST = "list of integers"
TOKEN_IDS = "non-negative integer or list of them"
DICT = "object"
# Value domains of string fields: a string that names nothing the engines know.
DTYPE_NAME = "dtype name (bfloat16, float16, float32, ...)"
MODEL_TYPE_NAME = "model type name (letters, digits, `_`, `-`: llama, qwen2_moe, ...)"
DICT_LIST = "list of objects"
ANY = "any value"  # read only as a container of further fields, when it is an object


@frozen
class Expect:
    """What one config field must be.

    Attributes:
        kind: one of the module's kind constants.
        nullable: whether JSON null is accepted (engines then use their default).
        crash: True when engines refuse or crash on a wrong type (error); False when they
            load and read it as something else (warning).
        read_by: who reads it, for the message.
        children: the fields of an object-valued field (walked when it is an object).
    """

    kind: str
    nullable: bool = False
    crash: bool = True
    read_by: str = "every engine"
    children: Mapping[str, Expect] | None = field(default=None, compare=False)


# What `torch_dtype` / `dtype` may name: the `torch.<name>` dtypes transformers looks up
# (`getattr(torch, name)`), and `auto` (the weights' own dtype).
TORCH_DTYPE_NAMES = frozenset(
    (
        "auto",
        "float32",
        "float",
        "float16",
        "half",
        "bfloat16",
        "float64",
        "double",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn_x2",
        "int8",
        "uint8",
        "int16",
        "short",
        "int32",
        "int",
        "int64",
        "long",
        "uint16",
        "uint32",
        "uint64",
        "bool",
    )
)
# A model type is a registry key of transformers (`llama`, `qwen2_moe`, `gpt-oss` styles):
# `"64"` or `"Llama 3"` names no config class.
_MODEL_TYPE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def matches(kind: str, value: Any) -> bool:
    """Whether `value` (as JSON decoded it) is of `kind`."""
    if kind == ANY:
        return True
    if kind == POS_INT:
        return _int(value) and 0 < value < INT_LIMIT
    if kind == NONNEG_INT:
        return _int(value) and 0 <= value < INT_LIMIT
    if kind == POS_NUMBER:
        return (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value > 0
        )
    if kind == BOOL:
        return isinstance(value, bool)
    if kind == STR:
        return isinstance(value, str)
    if kind == DTYPE_NAME:
        return isinstance(value, str) and value.removeprefix("torch.") in TORCH_DTYPE_NAMES
    if kind == MODEL_TYPE_NAME:
        return isinstance(value, str) and _MODEL_TYPE.fullmatch(value) is not None
    if kind == STR_LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == INT_LIST:
        return isinstance(value, list) and all(matches(NONNEG_INT, v) for v in value)
    if kind == LAYER_ID_LIST:
        return isinstance(value, list) and all(_int(v) and abs(v) < INT_LIMIT for v in value)
    if kind == TOKEN_IDS:
        return matches(NONNEG_INT, value) or matches(INT_LIST, value)
    if kind == DICT:
        return isinstance(value, dict)
    if kind == DICT_LIST:
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    raise ValueError(f"unknown kind {kind!r}")


_SHAPE = "every engine (layer shapes)"
_FLAG = "every engine (read as true/false)"

# Fields of the draft's decoder layer: top level, `transformer_layer_config` or `model`.
LAYER_SCHEMA: dict[str, Expect] = {
    "model_type": Expect(MODEL_TYPE_NAME, read_by="every engine (picks the layer class)"),
    "hidden_size": Expect(POS_INT, read_by=_SHAPE),
    "num_attention_heads": Expect(POS_INT, read_by=_SHAPE),
    "num_key_value_heads": Expect(POS_INT, nullable=True, read_by=_SHAPE),
    "head_dim": Expect(POS_INT, nullable=True, read_by=_SHAPE),
    "intermediate_size": Expect(POS_INT, read_by=_SHAPE),
    "num_hidden_layers": Expect(POS_INT, read_by="every engine (layer count)"),
    "vocab_size": Expect(POS_INT, read_by=_SHAPE),
    "hidden_act": Expect(STR, read_by="vLLM, SGLang (activation lookup)"),
    "rms_norm_eps": Expect(POS_NUMBER, read_by="every engine (RMSNorm)"),
    "max_position_embeddings": Expect(POS_INT, read_by="every engine (context length)"),
    "rope_theta": Expect(POS_NUMBER, nullable=True, read_by="every engine (rotary embedding)"),
    "rope_scaling": Expect(DICT, nullable=True, read_by="every engine (rotary embedding)"),
    "rope_parameters": Expect(DICT, nullable=True, read_by="every engine (rotary embedding)"),
    "attention_bias": Expect(BOOL, crash=False, read_by=_FLAG),
    "mlp_bias": Expect(BOOL, crash=False, read_by=_FLAG),
    "tie_word_embeddings": Expect(BOOL, crash=False, read_by=_FLAG),
    "layer_types": Expect(STR_LIST, nullable=True, read_by="vLLM, SGLang (attention kind)"),
    "sliding_window": Expect(POS_INT, nullable=True, read_by="every engine (attention window)"),
    "use_sliding_window": Expect(BOOL, crash=False, read_by=_FLAG),
    "num_aux_hidden_states": Expect(POS_INT, read_by="vLLM (`fc` width)"),
    "num_aux_layers": Expect(POS_INT, read_by="SGLang (`fc` width)"),
    "bos_token_id": Expect(TOKEN_IDS, nullable=True, crash=False, read_by="generation stop"),
    "eos_token_id": Expect(TOKEN_IDS, nullable=True, crash=False, read_by="generation stop"),
    # MLA (DeepSeek-family) drafts
    "q_lora_rank": Expect(POS_INT, nullable=True, read_by="MLA drafts (layer shapes)"),
    "kv_lora_rank": Expect(POS_INT, nullable=True, read_by="MLA drafts (layer shapes)"),
    "qk_nope_head_dim": Expect(POS_INT, read_by="MLA drafts (layer shapes)"),
    "qk_rope_head_dim": Expect(POS_INT, read_by="MLA drafts (layer shapes)"),
    "v_head_dim": Expect(POS_INT, read_by="MLA drafts (layer shapes)"),
    "num_nextn_predict_layers": Expect(NONNEG_INT, read_by="SGLang (draft KV pool)"),
}

_AUX = "vLLM, SGLang, TensorRT-LLM (target layers captured)"
EAGLE_CONFIG_SCHEMA: dict[str, Expect] = {
    "eagle_aux_hidden_state_layer_ids": Expect(LAYER_ID_LIST, nullable=True, read_by=_AUX),
    "layer_ids": Expect(LAYER_ID_LIST, nullable=True, read_by="vLLM (target layers captured)"),
    "use_aux_hidden_state": Expect(BOOL, crash=False, read_by="vLLM, SGLang (read as true/false)"),
    "norm_before_fc": Expect(BOOL, crash=False, read_by=_FLAG),
    "eh_proj_before_attn": Expect(BOOL, crash=False, read_by="SGLang, TensorRT-LLM"),
    "return_hidden_post_norm": Expect(BOOL, crash=False, read_by="SGLang, TensorRT-LLM"),
    "next_layer_regular": Expect(BOOL, crash=False, read_by="TensorRT-LLM"),
    "use_input_layernorm_in_first_layer": Expect(BOOL, crash=False, read_by="ModelOpt exports"),
    "use_last_layernorm": Expect(BOOL, crash=False, read_by="ModelOpt exports"),
    "use_mtp_layernorm": Expect(BOOL, crash=False, read_by="ModelOpt exports"),
}

_SPECULATORS_ROUTE = "vLLM (speculators route)"
_SERVE = "vLLM (`vllm serve <draft>` only; --speculative-config is unaffected)"
SPECULATORS_CONFIG_SCHEMA: dict[str, Expect] = {
    "algorithm": Expect(STR, read_by=_SPECULATORS_ROUTE),
    "default_proposal_method": Expect(STR, read_by=_SPECULATORS_ROUTE),
    "proposal_methods": Expect(
        DICT_LIST,
        crash=False,
        read_by=_SERVE,
        children={"speculative_tokens": Expect(POS_INT, crash=False, read_by=_SERVE)},
    ),
    "verifier": Expect(
        DICT,
        crash=False,
        read_by="vLLM (`vllm serve <draft>` finds the target)",
        children={
            "name_or_path": Expect(STR, nullable=True, crash=False, read_by="vLLM"),
            "architectures": Expect(STR_LIST, crash=False, read_by="vLLM"),
        },
    ),
}

# `quantization_config`: only the method is read as a field; the scheme (`config_groups`,
# `ignore`, `format`) is read where it is used (`engines/draft_quant.py`).
QUANTIZATION_SCHEMA: dict[str, Expect] = {
    "quant_method": Expect(STR, read_by="vLLM, SGLang (the quantization method)"),
}

# Every draft field by where it sits, from the top of config.json.
DRAFT_SCHEMA: dict[str, Expect] = {
    **LAYER_SCHEMA,
    "architectures": Expect(STR_LIST, read_by="every engine (picks the draft class)"),
    "draft_vocab_size": Expect(POS_INT, read_by=_SHAPE),
    "truncated_vocab_size": Expect(POS_INT, nullable=True, read_by=_SHAPE),
    "target_hidden_size": Expect(POS_INT, nullable=True, read_by="every engine (`fc` width)"),
    "norm_before_residual": Expect(BOOL, crash=False, read_by=_FLAG),
    "norm_before_fc": Expect(BOOL, crash=False, read_by=_FLAG),
    "fc_norm": Expect(BOOL, crash=False, read_by=_FLAG),
    "use_aux_norm": Expect(BOOL, crash=False, read_by="SGLang (read as true/false)"),
    "norm_output": Expect(BOOL, crash=False, read_by=_FLAG),
    "bias": Expect(BOOL, crash=False, read_by="SGLang, TensorRT-LLM (`fc` bias)"),
    "torch_dtype": Expect(DTYPE_NAME, nullable=True, read_by="every engine (weight dtype)"),
    "dtype": Expect(DTYPE_NAME, nullable=True, read_by="every engine (weight dtype)"),
    "eagle_aux_hidden_state_layer_ids": Expect(LAYER_ID_LIST, nullable=True, read_by=_AUX),
    "eagle_config": Expect(
        DICT, nullable=True, read_by="vLLM, SGLang, TensorRT-LLM", children=EAGLE_CONFIG_SCHEMA
    ),
    "quantization_config": Expect(
        DICT,
        nullable=True,
        read_by="vLLM, SGLang (the draft's own quantization: the parameters its layers build)",
        children=QUANTIZATION_SCHEMA,
    ),
    "speculators_model_type": Expect(STR, read_by=_SPECULATORS_ROUTE),
    "speculators_version": Expect(STR, crash=False, read_by=_SPECULATORS_ROUTE),
    "speculators_config": Expect(
        DICT, read_by=_SPECULATORS_ROUTE, children=SPECULATORS_CONFIG_SCHEMA
    ),
    "transformer_layer_config": Expect(DICT, read_by=_SPECULATORS_ROUTE, children=LAYER_SCHEMA),
    "auto_map": Expect(DICT, crash=False, read_by="transformers (remote-code class lookup)"),
    # The legacy vLLM EAGLE-1 layout nests the layer under `model`; elsewhere `model` is
    # not a config draftfit reads, so any type is accepted and only an object is walked.
    "model": Expect(ANY, read_by="vLLM (legacy EAGLE-1 layout)", children=LAYER_SCHEMA),
}

_TARGET = "every engine (verifier config)"
TARGET_TEXT_SCHEMA: dict[str, Expect] = {
    "model_type": Expect(MODEL_TYPE_NAME, read_by="vLLM (EAGLE-3 allow-list)"),
    "architectures": Expect(STR_LIST, read_by="every engine (verifier class)"),
    "hidden_size": Expect(POS_INT, read_by=_TARGET),
    "num_hidden_layers": Expect(POS_INT, read_by=_TARGET),
    "vocab_size": Expect(POS_INT, read_by=_TARGET),
    "num_attention_heads": Expect(POS_INT, read_by=_TARGET),
    "num_key_value_heads": Expect(POS_INT, nullable=True, read_by=_TARGET),
    "head_dim": Expect(POS_INT, nullable=True, read_by=_TARGET),
    "max_position_embeddings": Expect(POS_INT, read_by=_TARGET),
    "quantization_config": Expect(
        DICT,
        nullable=True,
        read_by="vLLM (quantized targets), SGLang (the draft inherits --quantization)",
        children=QUANTIZATION_SCHEMA,
    ),
    "num_experts": Expect(NONNEG_INT, nullable=True, read_by="vLLM (MoE targets)"),
    "n_routed_experts": Expect(NONNEG_INT, nullable=True, read_by="vLLM (MoE targets)"),
    "num_local_experts": Expect(NONNEG_INT, nullable=True, read_by="vLLM (MoE targets)"),
    "moe_num_experts": Expect(NONNEG_INT, nullable=True, read_by="vLLM (MoE targets)"),
}
TEXT_CONFIG_KEYS = ("text_config", "language_config", "llm_config", "text_model")
TARGET_SCHEMA: dict[str, Expect] = {
    **TARGET_TEXT_SCHEMA,
    **{
        key: Expect(ANY, read_by="every engine (multimodal text part)", children=TARGET_TEXT_SCHEMA)
        for key in TEXT_CONFIG_KEYS
    },
}


@frozen
class TypeProblem:
    """One config value of the wrong JSON type, set aside by :func:`scrub`."""

    pointer: str
    value: Any
    expect: Expect

    @property
    def name(self) -> str:
        return self.pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")

    def shown(self, limit: int = 60) -> str:
        """The value as JSON, escaped and shortened (never the whole of a huge value)."""
        try:
            text = json.dumps(self.value, ensure_ascii=True)
        except (TypeError, ValueError):  # pragma: no cover - JSON only holds JSON types
            text = repr(self.value)
        return clip(text, limit)

    @property
    def expected(self) -> str:
        bound = " below 2**31" if self.expect.kind in (POS_INT, NONNEG_INT, INT_LIST) else ""
        return self.expect.kind + bound + (" or null" if self.expect.nullable else "")


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value (`4096.0` is a float, `true` a boolean)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


@record
class Scrubbed:
    """A config with wrong-typed values removed, and what was removed."""

    config: dict[str, Any]
    problems: list[TypeProblem]


def scrub(config: Any, schema: Mapping[str, Expect]) -> Scrubbed:
    """Copy `config` without the values that do not match `schema` (containers are copied
    one level per schema level; every other value is shared, never modified)."""
    problems: list[TypeProblem] = []
    if not isinstance(config, dict):
        return Scrubbed({}, problems)
    return Scrubbed(_walk(config, schema, "", problems), problems)


def _walk(
    mapping: dict[str, Any], schema: Mapping[str, Expect], base: str, problems: list[TypeProblem]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        expect = schema.get(key) if isinstance(key, str) else None
        pointer = f"{base}/{_escape(key)}"
        if expect is None:
            out[key] = value
            continue
        if not (value is None and expect.nullable) and not matches(expect.kind, value):
            problems.append(TypeProblem(pointer, value, expect))
            continue
        if expect.children is not None and isinstance(value, dict):
            value = _walk(value, expect.children, pointer, problems)
        elif expect.children is not None and expect.kind == DICT_LIST:
            value = [
                _walk(item, expect.children, f"{pointer}/{i}", problems)
                for i, item in enumerate(value)
            ]
        out[key] = value
    return out


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def schema_names(schema: Mapping[str, Expect]) -> set[str]:
    """Every field name the schema knows, at any depth."""
    names: set[str] = set()
    for key, expect in schema.items():
        names.add(key)
        if expect.children is not None:
            names |= schema_names(expect.children)
    return names
