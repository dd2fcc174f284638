"""A target's own MTP (NextN) layers as facts: family, declared depth, shipped layers,
quantization and its exclusion list — engine-neutral.

MTP drafting uses no separate draft: the target checkpoint ships one or more
multi-token-prediction layers after its decoder layers, and the engine builds its draft from
them. How a family names those layers and which config key gives their number is data with
provenance (`mtp_families.toml` beside this module); what each engine release does with them
is in that engine's data. This module reads the config, the tensor names (all of them, from
the index) and the dtypes and shapes of the MTP tensors (from the headers of the shards that
hold them only, :func:`draftfit.checkpoint.scoped.load_scoped`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from draftfit.checkpoint.index_names import NameQuery, PickedNames, pick_names, picked
from draftfit.checkpoint.model import TensorInfo
from draftfit.draft.stamped_json import load_stamped
from draftfit.records import field, frozen

if TYPE_CHECKING:
    from typing import Any

MTP = "mtp"  # the drafting method: the target's own MTP layers as its draft

FAMILIES_FILE = Path(__file__).with_name("mtp_families.toml")
# Its JSON twin (:mod:`draftfit.draft.stamped_json`), written by
# `python dev/compile_engine_data.py`.
FAMILIES_JSON = FAMILIES_FILE.with_suffix(".json")
FAMILIES_FORMAT = 1

LAYER_INDEX = "layer_index"  # model.layers.{L+i}.*
MTP_PREFIX = "mtp_prefix"  # mtp.* and mtp.layers.{i}.*
MTP_LAYERS = "mtp_layers"  # model.mtp_layers.{i}.*

# The last part of a tensor name that holds quantization data beside (or instead of) a
# weight: a module storing one of these is stored quantized.
QUANT_PARTS = frozenset(
    {
        "weight_scale",
        "weight_scale_inv",
        "weight_packed",
        "weight_global_scale",
        "weight_zero_point",
        "qweight",
        "qzeros",
        "scales",
        "input_scale",
        "input_global_scale",
    }
)
# The last name parts that hold a module's weight, as stored unquantized or quantized.
WEIGHT_PARTS = frozenset({"weight", "qweight", "weight_packed"})
# The scales a module quantized per tensor or per channel stores beside its weight.
SCALE_PARTS = frozenset({"weight_scale", "input_scale"})
# Tensors a module carries beside its weight that the engines load as parameters of their own:
# a bias (Qwen2-style attention), a MoE router's score-correction bias (DeepSeek-V3, GLM).
PARAM_PARTS = frozenset({"bias", "e_score_correction_bias"})
# Stored dtypes that are quantized values (a float8 or packed integer weight).
QUANT_DTYPES = frozenset({"F8_E4M3", "F8_E5M2", "U8", "I8", "I32", "F4"})
# Keys of `quantization_config` (or `hf_quant_config.json`) that list modules left unquantized.
EXCLUSION_KEYS = (
    "ignored_layers",
    "modules_to_not_convert",
    "ignore",
    "exclude_modules",
    "exclude",
)
MAX_EXCLUSIONS = 10_000
MAX_LAYER_INDEX = 1_000_000
# The largest width read from a config (hidden and expert sizes, group sizes).
MAX_DIMENSION = 1 << 24


@frozen
class MtpFamily:
    """How one family of targets declares and names its MTP layers (`mtp_families.toml`)."""

    name: str
    title: str
    model_types: tuple[str, ...]
    architectures: tuple[str, ...]
    naming: str
    depth_key: tuple[str, ...]
    own: tuple[str, ...]
    source: str
    # the language model's keys sit in `text_config` (a multimodal target); its decoder
    # layers under `model.language_model.layers.`
    text_config: bool = False

    def layer_prefix(self, num_hidden_layers: int, i: int) -> str:
        """The name prefix of the i-th MTP layer (0-based) in the checkpoint."""
        if self.naming == LAYER_INDEX:
            return f"model.layers.{num_hidden_layers + i}."
        if self.naming == MTP_PREFIX:
            return f"mtp.layers.{i}."
        return f"model.mtp_layers.{i}."

    def own_prefix(self, num_hidden_layers: int, i: int) -> str:
        """The name prefix of the i-th MTP layer's own modules (`enorm`, `fc`, ...)."""
        return "mtp." if self.naming == MTP_PREFIX else self.layer_prefix(num_hidden_layers, i)


def parse_families(text: str) -> dict[str, Any]:
    """The family table's TOML text as tables."""
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib

    return tomllib.loads(text)


@cache
def families() -> tuple[MtpFamily, ...]:
    """The family table, read once (from its JSON twin while that is current)."""
    text = FAMILIES_FILE.read_text(encoding="utf-8")
    twin = load_stamped(str(FAMILIES_JSON), FAMILIES_FORMAT, text)
    table = twin["data"] if twin is not None and isinstance(twin.get("data"), dict) else None
    table = table if table is not None else parse_families(text)
    return tuple(
        MtpFamily(
            name=item["name"],
            title=item["title"],
            model_types=tuple(item["model_types"]),
            architectures=tuple(item["architectures"]),
            naming=item["naming"],
            depth_key=tuple(item["depth_key"]),
            own=tuple(item["own"]),
            source=item["source"],
            text_config=bool(item.get("text_config", False)),
        )
        for item in table["family"]
    )


def family_of(config: Mapping[str, Any] | None) -> MtpFamily | None:
    """The MTP family of a target config (by `architectures[0]`, then `model_type`)."""
    if not isinstance(config, Mapping):
        return None
    architectures = config.get("architectures")
    first = architectures[0] if isinstance(architectures, list) and architectures else None
    model_type = config.get("model_type")
    for family in families():
        if isinstance(first, str) and first in family.architectures:
            return family
    for family in families():
        if isinstance(model_type, str) and model_type in family.model_types:
            return family
    return None


def text_config(config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The keys of the target's language model: its `text_config` where its family keeps
    them there (a Qwen3.5 target: `num_hidden_layers`, `mtp_num_hidden_layers`), else the
    config itself (empty for none)."""
    if not isinstance(config, Mapping):
        return {}
    family = family_of(config)
    nested = config.get("text_config") if family is not None and family.text_config else None
    return nested if isinstance(nested, Mapping) else config


def decoder_layers(config: Mapping[str, Any] | None) -> int | None:
    """The target's `num_hidden_layers` (its language model's), when usable."""
    return _int(text_config(config), "num_hidden_layers")


def is_mtp_name(config: Mapping[str, Any] | None, name: str) -> bool:
    """Whether `name` belongs to an MTP layer of the target `config` describes: the
    tensors whose shards :func:`draftfit.checkpoint.scoped.load_scoped` reads."""
    return mtp_names(config)(name)


def mtp_names(config: Mapping[str, Any] | None) -> Callable[[str], bool]:
    """The test :func:`is_mtp_name` makes, with the family and layer count looked up once."""
    family = family_of(config)
    layers = decoder_layers(config)
    if family is None or layers is None:
        return lambda name: name.startswith(("mtp.", "model.mtp_layers."))
    if family.naming == LAYER_INDEX:
        return partial(_at_or_after, layers)
    start = "mtp." if family.naming == MTP_PREFIX else "model.mtp_layers."
    return lambda name: name.startswith(start)


def select_mtp_names(config: Mapping[str, Any] | None, names: Collection[str]) -> list[str]:
    """The names of `names` that :func:`is_mtp_name` picks, in order: the selection of
    :func:`draftfit.checkpoint.scoped.load_scoped`. A 671B target's index names ~92,000
    tensors, so the few that can be MTP tensors are found in one pass of a pattern over
    all of them, then tested one by one."""
    family = family_of(config)
    layers = decoder_layers(config)
    starts = (_slot_pattern(family, layers) or r"mtp\.|model\.mtp_layers\.",)
    wanted = mtp_names(config)
    return [name for name in pick_names(names, NameQuery(starts)) if wanted(name)]


def _at_or_after(layers: int, name: str) -> bool:
    """Whether `name` is under `model.layers.{i}.` with i >= `layers`."""
    index = _layer_number(name)
    return index is not None and index >= layers


@frozen
class MtpLayer:
    """One MTP layer as shipped: its prefix and tensors by the name under it (`eh_proj.weight`,
    `self_attn.q_a_proj.weight`); a tensor known only from the index has no info (None)."""

    index: int
    prefix: str
    tensors: dict[str, TensorInfo | None]
    # the names under `tensors` stored under the MTP block's own prefix (`mtp.fc.weight`, and
    # any other name under `mtp.` outside its layers), not under `prefix`
    outside: set[str] = field(default_factory=set, compare=False)
    # (tensors grouped, module -> {last name part: info}; the module names), built on first
    # use and again when tensors were added since (a layer of 256 experts has ~1,500
    # modules; grouping them for each question would be quadratic)
    _parts: tuple[int, dict[str, dict[str, TensorInfo | None]], frozenset[str]] | None = field(
        default=None, compare=False
    )

    def modules(self) -> frozenset[str]:
        """The module names under the prefix (a tensor's name without its last part)."""
        self._by_module()
        assert self._parts is not None
        return self._parts[2]

    def stored_outside(self, module: str) -> bool:
        """Whether `module` is stored under the MTP block's own prefix, not the layer's."""
        return any(sub.rpartition(".")[0] == module for sub in self.outside)

    def parts(self, module: str) -> tuple[str, ...]:
        """The last name parts of `module`'s tensors (`weight`, `bias`, `weight_scale_inv`), in
        the order they are stored."""
        return tuple(self._by_module().get(module, {}))

    def stored_quantized(self, module: str) -> bool | None:
        """Whether `module`'s weight is stored quantized (a quantized dtype, or scales or
        packed values beside it); None when only the index names it."""
        parts = self._by_module().get(module, {})
        if any(part in QUANT_PARTS for part in parts):
            return True
        weight = parts.get("weight")
        if weight is None:
            return None if "weight" in parts else False
        return weight.dtype in QUANT_DTYPES

    def _by_module(self) -> dict[str, dict[str, TensorInfo | None]]:
        if self._parts is not None and self._parts[0] == len(self.tensors):
            return self._parts[1]
        grouped: dict[str, dict[str, TensorInfo | None]] = {}
        for sub, info in self.tensors.items():
            module, _, part = sub.rpartition(".")
            grouped.setdefault(module, {})[part] = info
        modules = frozenset(module for module in grouped if module)
        object.__setattr__(self, "_parts", (len(self.tensors), grouped, modules))
        return grouped


@frozen
class MtpQuant:
    """The target's quantization as the MTP build reads it.

    Attributes:
        method: `quant_method` (or ModelOpt's `quant_algo`), as written; None: unquantized.
        source: the file it was read from (`config.json`, `hf_quant_config.json`).
        fmt: the weight format where the config names one (`e4m3`, `float-quantized`).
        exclusions: the modules listed as left unquantized (every key of `EXCLUSION_KEYS`
            that the config has, in order).
        exclusion_keys: the keys they came from, as JSON pointers.
        lists: each exclusion key the config writes as a list, with its entries, in the
            order of `EXCLUSION_KEYS` (an engine may read only one of them).
        dynamic: GPTQ `dynamic` keys, as written and in order (`-:` a pattern of modules
            left unquantized, `+:` or none a pattern of modules quantized with overrides).
        blocks: GPTQ's `modules_in_block_to_quantize`, flattened; empty where the config
            has none (vLLM then takes the modules stored quantized in the checkpoint).
        group_size: the quantization's `group_size` where it is an integer (GPTQ, AWQ).
        gptq_refused: what in a GPTQ config vLLM's GPTQ config class refuses (a `bits` /
            `sym` pair other than 4 or 8 bits symmetric, a missing one, activation ordering
            asked for), or None.
        awq_refused: what in an AWQ config vLLM's AWQ config class refuses (a missing bit
            width, group size or `zero_point`, a bit width other than 4), or None.
        marlin_refused: what keeps a GPTQ or AWQ config from SGLang's Marlin path on a
            GPU (`is_gptq_marlin_compatible`, `is_awq_marlin_compatible`: a missing key, a
            `bits` / `sym` pair or group size Marlin has no kernel for), or None. SGLang
            registers no plain `gptq` method for a GPU: such a GPTQ config is refused at
            start-up; an AWQ one goes to another kernel.
        scheme: the quantization scheme the engines' data is keyed by: `method` for
            `fp8` and `compressed-tensors`; ModelOpt as `modelopt-fp8` / `modelopt-nvfp4`
            (by `quant_algo`), Quark as `quark-fp8` / `quark-mxfp4` / `quark-nvfp4` (by its
            global weight format), any other method as written.
    """

    method: str | None = None
    source: str | None = None
    fmt: str | None = None
    exclusions: tuple[str, ...] = ()
    exclusion_keys: tuple[str, ...] = ()
    lists: tuple[tuple[str, tuple[str, ...]], ...] = ()
    dynamic: tuple[str, ...] = ()
    blocks: tuple[str, ...] = ()
    group_size: int | None = None
    gptq_refused: str | None = None
    awq_refused: str | None = None
    marlin_refused: str | None = None
    scheme: str | None = None


@frozen
class MtpTarget:
    """What a target checkpoint says about its MTP layers.

    Attributes:
        family: its MTP family, or None when the table has none for its architecture.
        architecture, model_type: as the config writes them.
        num_hidden_layers: the decoder layer count L (None when absent or not an integer).
        depth: the declared number of MTP layers; None when the key is absent (or not an
            integer: `depth_invalid`).
        depth_key: the key that gave it (the family's first, when absent).
        depth_present: whether the key is written at all.
        layers: the MTP layers shipped, by index (0 = the first MTP layer), found under the
            family's naming scheme, whatever the declared depth.
        backbone_modules: the module names of the last decoder layer, relative to its
            prefix (what a decoder layer of this target holds).
        backbone_parts: the tensors of that layer an MTP decoder layer must carry beside its
            modules, relative to its prefix: `<module>.weight` for each module with a weight
            (stored in any form of `WEIGHT_PARTS`), and each tensor of `PARAM_PARTS`.
        backbone_quant_parts: the quantization tensors of that layer (`<module>.<part>`, each
            part of `QUANT_PARTS`: `o_proj.weight_scale_inv`), relative to its prefix: what
            the target's quantization loads for a module it builds quantized.
        hidden_size, moe_intermediate_size: the language model's widths, where the config
            gives them (what an engine's MoE kernel choice reads).
        first_moe_layer: the first decoder layer with a MoE block (`first_k_dense_replace`),
            where the config gives it.
        quant: the target's quantization.
        names_complete: False when a shard holding MTP tensors could not be read.
        stray: tensor names that look like MTP tensors but are outside the family's scheme.
    """

    family: MtpFamily | None
    architecture: str | None
    model_type: str | None
    num_hidden_layers: int | None
    depth: int | None
    depth_key: str
    depth_present: bool
    layers: dict[int, MtpLayer]
    backbone_modules: frozenset[str]
    quant: MtpQuant
    names_complete: bool = True
    stray: tuple[str, ...] = field(default=())
    depth_invalid: bool = False
    backbone_parts: frozenset[str] = frozenset()
    backbone_quant_parts: frozenset[str] = frozenset()
    hidden_size: int | None = None
    moe_intermediate_size: int | None = None
    first_moe_layer: int | None = None

    @property
    def backbone_scaled(self) -> frozenset[str]:
        """The modules of the last decoder layer stored with a scale beside their weight
        (`weight_scale`, `input_scale`: a quantized module of a per-tensor or per-channel
        scheme), by the index's names."""
        return frozenset(
            module
            for module, _, part in (item.rpartition(".") for item in self.backbone_quant_parts)
            if part in SCALE_PARTS
        )

    @property
    def quantized(self) -> bool:
        return self.quant.method is not None

    def shipped(self) -> tuple[int, ...]:
        return tuple(sorted(self.layers))

    def own_prefix_of(self, index: int, module: str) -> str | None:
        """Where the checkpoint names `module` of MTP layer `index` when it is one of the MTP
        block's own modules (the family's `own`: `eh_proj`, `fc`, the norms, or any other
        module stored under the block's prefix: `mtp.eh_proj`), else None."""
        family, layer = self.family, self.layers.get(index)
        if family is None:
            return None
        if module in family.own or (layer is not None and layer.stored_outside(module)):
            return family.own_prefix(self.num_hidden_layers or 0, index)
        return None


def read_mtp_target(
    config: Mapping[str, Any] | None,
    names: Iterable[str],
    tensors: Mapping[str, TensorInfo],
    quant_file: Mapping[str, Any] | None = None,
) -> MtpTarget:
    """The MTP facts of a target: `names` are every tensor name it holds (the index's),
    `tensors` the ones whose header was read; `quant_file` is `hf_quant_config.json`."""
    config = config if isinstance(config, Mapping) else {}
    family = family_of(config)
    architectures = config.get("architectures")
    architecture = (
        architectures[0]
        if isinstance(architectures, list) and architectures and isinstance(architectures[0], str)
        else None
    )
    model_type = config.get("model_type") if isinstance(config.get("model_type"), str) else None
    text = text_config(config)
    layers_count = _int(text, "num_hidden_layers")
    keys = family.depth_key if family is not None else ("num_nextn_predict_layers",)
    depth_key, depth_present, depth, invalid = keys[0], False, None, False
    # the config first, then its text config (as vLLM reads `mtp_num_hidden_layers`)
    for key, where in ((key, where) for key in keys for where in (config, text)):
        if key in where:
            depth_key, depth_present = key, True
            depth = _int(where, key)
            invalid = depth is None or depth < 0
            depth = None if invalid else depth
            break
    layers: dict[int, MtpLayer] = {}
    stray: list[str] = []
    backbone: set[str] = set()
    parts: set[str] = set()
    quant_parts: set[str] = set()
    words = mtp_words(family)
    last = _last_layer_prefixes(family, layers_count)
    # Only these names can be a backbone module, an MTP tensor or a stray one: the loop
    # below does nothing with any other (the same result, in a fraction of the time).
    names = relevant_names(config, names if isinstance(names, PickedNames) else list(names))
    for name in names:
        if last and name.startswith(last):
            sub = name[len(next(p for p in last if name.startswith(p))) :]
            if "." in sub:
                module, _, part = sub.rpartition(".")
                backbone.add(module)
                if part in PARAM_PARTS:
                    parts.add(sub)
                elif part in WEIGHT_PARTS:
                    parts.add(module + ".weight")
                if part in QUANT_PARTS:
                    quant_parts.add(sub)
        found = _mtp_slot(family, layers_count, name)
        if found is None:
            if _looks_mtp(name, words) and not _own_module(family, name):
                stray.append(name)
            continue
        index, prefix, sub = found
        layer = layers.get(index)
        if layer is None:
            layer = layers[index] = MtpLayer(index, prefix, {})
        layer.tensors[sub] = tensors.get(name)
    if family is not None and family.naming == MTP_PREFIX and layers:
        _add_own(layers, names, tensors, "mtp.")
        # the first layer holds those now (a renamed one is its module, not a stray)
        stray = [n for n in stray if not _placed_by_add_own(n, "mtp.")]
    return MtpTarget(
        family=family,
        architecture=architecture,
        model_type=model_type,
        num_hidden_layers=layers_count,
        depth=depth,
        depth_key=depth_key,
        depth_present=depth_present,
        layers=layers,
        backbone_modules=frozenset(backbone),
        backbone_parts=frozenset(parts),
        backbone_quant_parts=frozenset(quant_parts),
        quant=read_quant(config, quant_file),
        stray=tuple(sorted(stray)[:20]),
        depth_invalid=invalid,
        hidden_size=_dimension(text, "hidden_size"),
        moe_intermediate_size=_dimension(text, "moe_intermediate_size"),
        first_moe_layer=_int(text, "first_k_dense_replace"),
    )


def relevant_names(config: Mapping[str, Any] | None, names: Collection[str]) -> PickedNames:
    """The names of `names`, in order, that :func:`read_mtp_target` can do anything with
    (the last decoder layer's, those its family places in an MTP layer, and any that looks
    like an MTP tensor): given these alone it finds the same facts."""
    return picked(names, relevant_query(config))


def _last_layer_prefixes(family: MtpFamily | None, layers: int | None) -> tuple[str, ...]:
    """The name prefixes of the target's last decoder layer (whose modules an MTP decoder
    layer has): `model.layers.{L-1}.`, and for a multimodal family the language model's."""
    if not layers:
        return ()
    if family is not None and family.text_config:
        return (f"model.layers.{layers - 1}.", f"model.language_model.layers.{layers - 1}.")
    return (f"model.layers.{layers - 1}.",)


def relevant_query(config: Mapping[str, Any] | None) -> NameQuery:
    """The query for :func:`relevant_names` (a reader of the index may keep only these)."""
    family = family_of(config)
    layers_count = decoder_layers(config)
    starts = [re.escape(p) for p in _last_layer_prefixes(family, layers_count)]
    slots = _slot_pattern(family, layers_count)
    if slots is not None:
        starts.append(slots)
    if family is not None and family.naming == MTP_PREFIX:
        starts.append(r"mtp\.")
    return NameQuery(tuple(starts), mtp_words(family))


class MtpSelection:
    """The selection of :func:`draftfit.checkpoint.scoped.load_scoped` for an MTP check:
    the MTP names of the index (whose shards are read), keeping the names the MTP facts
    need (:func:`relevant_names`). Its :meth:`query` lets the reader of the index keep only
    those: the index's ~100,000 names are never all built.

    Attributes:
        relevant: those names, once the index was read (None before, or without an index).
    """

    def __init__(self) -> None:
        self.relevant: list[str] | None = None
        self._queried: NameQuery | None = None

    def __call__(self, config: Mapping[str, Any] | None, names: Collection[str]) -> list[str]:
        # names read through this selection's query are already the relevant ones
        query = relevant_query(config)
        if self._queried == query:
            names = PickedNames(names, query)
        self.relevant = relevant_names(config, names)
        return select_mtp_names(config, self.relevant)

    def query(self, config: Mapping[str, Any] | None) -> NameQuery:
        """The index's names to read at all: those of :func:`relevant_names` (for names that
        are not plain ASCII, a superset)."""
        self._queried = relevant_query(config)
        return self._queried


def _placed_by_add_own(name: str, p: str) -> bool:
    """Whether :func:`_add_own` places `name` in the first MTP layer: any name under `p`
    outside `p` + `layers.`."""
    return name.startswith(p) and not name.startswith(p + "layers.")


def _add_own(
    layers: dict[int, MtpLayer], names: Iterable[str], tensors: Mapping[str, TensorInfo], p: str
) -> None:
    """Qwen3-Next style: `mtp.fc`, `mtp.norm`, ... belong to the first MTP layer (and so does
    any other name under `mtp.` outside its layers: a module the MTP loader looks up)."""
    first = layers[min(layers)]
    for name in names:
        if _placed_by_add_own(name, p):
            first.tensors[name[len(p) :]] = tensors.get(name)
            first.outside.add(name[len(p) :])


def _own_module(family: MtpFamily | None, name: str) -> bool:
    """Whether `name` is a tensor of one of the family's own MTP modules under `mtp.*`
    naming (`mtp.fc.weight`): part of its scheme, whether or not a layer is shipped."""
    if family is None or family.naming != MTP_PREFIX or not name.startswith("mtp."):
        return False
    return name[len("mtp.") :].rpartition(".")[0] in family.own


def _mtp_slot(
    family: MtpFamily | None, layers_count: int | None, name: str
) -> tuple[int, str, str] | None:
    """(MTP layer index, its prefix, the name under it) when `name` is an MTP tensor."""
    if family is None:
        return None
    if family.naming == LAYER_INDEX:
        if layers_count is None:
            return None
        number = _layer_number(name)
        if number is None or number < layers_count:
            return None
        prefix = f"model.layers.{number}."
        return number - layers_count, prefix, name[len(prefix) :]
    start = "mtp.layers." if family.naming == MTP_PREFIX else "model.mtp_layers."
    if family.naming == MTP_PREFIX and name.startswith("mtp.") and not name.startswith(start):
        return None  # the own modules: added to the first layer by _add_own
    if not name.startswith(start):
        return None
    head, _, rest = name[len(start) :].partition(".")
    if not head.isdigit() or len(head) > 7 or not rest:
        return None
    index = int(head)
    return index, f"{start}{index}.", rest


_LAYERS = "model.layers."


def _layer_number(name: str) -> int | None:
    """i of a name under `model.layers.{i}.` (1 to 7 decimal digits), else None."""
    if not name.startswith(_LAYERS):
        return None
    dot = name.find(".", len(_LAYERS))
    digits = name[len(_LAYERS) : dot]
    if dot < 0 or not 0 < len(digits) <= 7 or not digits.isdecimal():
        return None
    return int(digits)


# Words of MTP tensor names, searched in the lower-cased name.
_MTP_WORDS = ("mtp", "nextn", "eh_proj", "shared_head")


def mtp_words(family: MtpFamily | None) -> tuple[str, ...]:
    """The words of MTP tensor names for `family`: the common ones, and for MiMo's
    `model.mtp_layers` naming its own modules' names too (no decoder layer has them, and
    a renamed MiMo layer keeps them)."""
    if family is not None and family.naming == MTP_LAYERS:
        return (*_MTP_WORDS, *family.own)
    return _MTP_WORDS


def _looks_mtp(name: str, words: tuple[str, ...] = _MTP_WORDS) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in words)


def _slot_pattern(family: MtpFamily | None, layers_count: int | None) -> str | None:
    """A pattern for the start of every name :func:`_mtp_slot` may place (and a few more),
    or None when it places none."""
    if family is None:
        return None
    if family.naming == LAYER_INDEX:
        if layers_count is None:
            return None
        return rf"model\.layers\.0*(?:{_at_least(layers_count)})\."
    return r"mtp\.layers\." if family.naming == MTP_PREFIX else r"model\.mtp_layers\."


def _at_least(n: int) -> str:
    """A pattern for the ASCII decimal numbers >= `n` written without leading zeros."""
    if n == 0:
        return "[0-9]+"
    digits = str(n)
    width = len(digits)
    options = [f"[1-9][0-9]{{{width},}}", digits]
    for i, digit in enumerate(digits):
        if digit != "9":
            options.append(f"{digits[:i]}[{int(digit) + 1}-9][0-9]{{{width - i - 1}}}")
    return "|".join(options)


def _dimension(config: Mapping[str, Any], key: str) -> int | None:
    """A positive width of the config (`hidden_size`), or None where it is not one."""
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 < value <= MAX_DIMENSION else None


def _int(config: Mapping[str, Any] | None, key: str) -> int | None:
    if config is None:
        return None
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_LAYER_INDEX else None


def read_quant(config: Mapping[str, Any], quant_file: Mapping[str, Any] | None) -> MtpQuant:
    """The quantization method and exclusion list, from `quantization_config` or, where the
    config has none, ModelOpt's `hf_quant_config.json` (`quantization.quant_algo`,
    `exclude_modules`)."""
    qc = config.get("quantization_config")
    source = "config.json"
    pointer = "/quantization_config"
    if not isinstance(qc, Mapping) and isinstance(quant_file, Mapping):
        inner = quant_file.get("quantization")
        if isinstance(inner, Mapping):
            qc = {**inner, "quant_method": MODELOPT}
            source, pointer = "hf_quant_config.json", "/quantization"
    if not isinstance(qc, Mapping):
        return MtpQuant()
    method = qc.get("quant_method")
    method = method.lower()[:64] if isinstance(method, str) else "unknown"
    fmt = qc.get("fmt", qc.get("format"))
    exclusions: list[str] = []
    keys: list[str] = []
    lists: list[tuple[str, tuple[str, ...]]] = []
    for key in EXCLUSION_KEYS:
        value = qc.get(key)
        if isinstance(value, list):
            keys.append(f"{pointer}/{key}")
            entries = tuple(v for v in value[:MAX_EXCLUSIONS] if isinstance(v, str))
            exclusions.extend(entries)
            lists.append((key, entries))
    dynamic = qc.get("dynamic")
    return MtpQuant(
        method=method,
        source=source,
        fmt=fmt if isinstance(fmt, str) else None,
        exclusions=tuple(exclusions),
        exclusion_keys=tuple(keys),
        lists=tuple(lists),
        dynamic=tuple(k for k in dynamic if isinstance(k, str))[:MAX_EXCLUSIONS]
        if isinstance(dynamic, Mapping)
        else (),
        blocks=_blocks(qc.get("modules_in_block_to_quantize")),
        group_size=_group(qc.get("group_size")),
        gptq_refused=_gptq_refused(qc) if method == "gptq" else None,
        awq_refused=_awq_refused(qc) if method == "awq" else None,
        marlin_refused=_marlin_refused(method, qc),
        scheme=scheme_of(method, qc),
    )


# The (bits, sym) pairs vLLM's GPTQ config class takes (`AutoGPTQConfig.TYPE_MAP`).
GPTQ_TYPES = frozenset({(4, True), (8, True)})


def _gptq_refused(qc: Mapping[str, Any]) -> str | None:
    """What vLLM's GPTQ config class refuses in `qc` while it is built (for the whole
    target), or None: a missing `bits` or `sym`, a pair it has no kernel type for, or
    activation ordering (:func:`_act_order`)."""
    bits, sym = qc.get("bits"), qc.get("sym")
    if "bits" not in qc or "sym" not in qc:
        return "no `bits` or no `sym` key"
    wrong = _gptq_type_refused(bits, sym)
    if wrong is not None:
        return f"{wrong} (it takes 4 or 8 bits, symmetric)"
    if _act_order(qc):
        return "activation ordering (`desc_act: true` with a group size)"
    return None


def _gptq_type_refused(bits: object, sym: object) -> str | None:
    """The `bits` / `sym` pair, shown, where it is not one of `GPTQ_TYPES` (the int4 / int8
    symmetric types both engines' GPTQ kernels take), else None."""
    known = isinstance(bits, int) and not isinstance(bits, bool) and isinstance(sym, bool)
    if known and (bits, sym) in GPTQ_TYPES:
        return None
    return f"`bits` {str(bits)[:20]} with `sym` {str(sym)[:20]}"


def _awq_refused(qc: Mapping[str, Any]) -> str | None:
    """What vLLM's AWQ config class refuses in `qc` while it is built (for the whole target),
    or None: a key it reads missing (each under either of its names, the first present
    taken) or a bit width other than 4 (its only type)."""
    found: dict[str, object] = {}
    for name, keys in (
        ("bits", ("w_bit", "bits")),
        ("group_size", ("q_group_size", "group_size")),
        ("zero_point", ("zero_point",)),
    ):
        present = [key for key in keys if key in qc]
        if not present:
            return f"no `{keys[-1]}` key"
        found[name] = qc[present[0]]
    bits = found["bits"]
    if isinstance(bits, bool) or bits != 4:
        return f"`bits` {str(bits)[:20]} (it takes 4 bits)"
    return None


# The group sizes SGLang's Marlin kernels take for an integer type.
MARLIN_GROUP_SIZES = frozenset({-1, 32, 64, 128})


def _marlin_refused(method: str, qc: Mapping[str, Any]) -> str | None:
    """What keeps a GPTQ or AWQ config off SGLang's Marlin path, or None (and None for any
    other method): a key it needs missing, a `bits` / `sym` pair with no Marlin type (4 or 8
    bits symmetric for GPTQ; 4 bits with zero points for AWQ), or a group size Marlin does
    not take."""
    if method not in ("gptq", "awq"):
        return None
    needed = (
        ("bits", "group_size", "sym", "desc_act")
        if method == "gptq"
        else ("bits", "group_size", "zero_point")
    )
    missing = [key for key in needed if qc.get(key) is None]
    if missing:
        return f"no `{missing[0]}` key"
    bits, group = qc.get("bits"), qc.get("group_size")
    if method == "gptq":
        wrong = _gptq_type_refused(bits, qc.get("sym"))
        if wrong is not None:
            return f"{wrong} (Marlin takes 4 or 8 bits, symmetric)"
    elif bits != 4 or qc.get("zero_point") is not True or isinstance(bits, bool):
        shown = f"`bits` {str(bits)[:20]} with `zero_point` {str(qc.get('zero_point'))[:20]}"
        return f"{shown} (Marlin takes 4 bits with zero points)"
    if isinstance(group, bool) or group not in MARLIN_GROUP_SIZES:
        return f"`group_size` {str(group)[:20]} (Marlin takes -1, 32, 64 or 128)"
    return None


def _act_order(qc: Mapping[str, Any]) -> bool:
    """Whether a GPTQ config asks for activation ordering: `desc_act` true with a group size
    other than -1, in the config or in a `dynamic` override (an override's missing keys take
    the config's values; `-:` keys override nothing)."""
    desc_act, group = qc.get("desc_act") is True, qc.get("group_size")
    if desc_act and group != -1:
        return True
    dynamic = qc.get("dynamic")
    if not isinstance(dynamic, Mapping):
        return False
    for key, overrides in list(dynamic.items())[:MAX_EXCLUSIONS]:
        if not isinstance(key, str) or key.startswith("-:") or not isinstance(overrides, Mapping):
            continue
        if overrides.get("desc_act", desc_act) is True and overrides.get("group_size", group) != -1:
            return True
    return False


def _group(value: object) -> int | None:
    """A `group_size` (-1: per channel), or None where it is not a bounded integer."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if -1 <= value <= MAX_DIMENSION else None


def _blocks(value: object) -> tuple[str, ...]:
    """GPTQ's `modules_in_block_to_quantize` (a list of names, or of lists of names),
    flattened and bounded."""
    if not isinstance(value, list):
        return ()
    flat: list[str] = []
    for item in value[:MAX_EXCLUSIONS]:
        group = item if isinstance(item, list) else [item]
        flat.extend(v for v in group[:MAX_EXCLUSIONS] if isinstance(v, str))
    return tuple(flat[:MAX_EXCLUSIONS])


MODELOPT = "modelopt"


def scheme_of(method: str, qc: Mapping[str, Any]) -> str:
    """The scheme of a quantization config whose `quant_method` is `method` (see
    :class:`MtpQuant`): ModelOpt by `quant_algo` (vLLM's `modelopt` for FP8, `modelopt_fp4`
    for any FP4 algorithm), Quark by the dtype of its global weight quantization (a list of
    two, FP4 then FP8, is NVFP4)."""
    if method.startswith(MODELOPT):
        algo = qc.get("quant_algo")
        algo = algo.upper() if isinstance(algo, str) else ""
        if algo == "FP8":
            return "modelopt-fp8"
        return "modelopt-nvfp4" if "FP4" in algo else f"modelopt-{algo.lower()[:32] or 'unknown'}"
    if method == "quark":
        glob = qc.get("global_quant_config")
        weight = glob.get("weight") if isinstance(glob, Mapping) else None
        if isinstance(weight, list) and weight and isinstance(weight[0], Mapping):
            first = weight[0].get("dtype")
            return "quark-nvfp4" if first == "fp4" and len(weight) == 2 else "quark-unknown"
        dtype = weight.get("dtype") if isinstance(weight, Mapping) else None
        return {"fp4": "quark-mxfp4", "fp8_e4m3": "quark-fp8"}.get(str(dtype), "quark-unknown")
    return method


__all__ = [
    "LAYER_INDEX",
    "MTP_LAYERS",
    "MTP_PREFIX",
    "MtpFamily",
    "MtpLayer",
    "MtpQuant",
    "MtpSelection",
    "MtpTarget",
    "decoder_layers",
    "families",
    "family_of",
    "is_mtp_name",
    "mtp_names",
    "read_mtp_target",
    "read_quant",
    "relevant_names",
    "scheme_of",
    "select_mtp_names",
    "text_config",
]
