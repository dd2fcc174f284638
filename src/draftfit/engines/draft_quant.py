"""A draft's own `quantization_config`, read the way a compressed-tensors loader reads it.

Quantized drafts (FP8, INT8, packed INT4, NVFP4 written by llm-compressor) store extra
tensors beside each quantized linear layer: `weight_scale`, `input_scale`, `weight_packed`,
... An engine that builds the draft with the draft's own quantization config registers a
parameter for each of them; one that does not rejects them. This module says which scheme
the config describes and which linear modules it covers; the parameter names per scheme
come from the engine's data (`compressed_tensors_params`), with the source lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from draftfit.engines.name_patterns import MAX_ENTRIES, NameList
from draftfit.engines.view import UNINITIALISED, EngineView, Expectation
from draftfit.records import field, frozen

if TYPE_CHECKING:
    from typing import Any

# Every per-layer tensor name a compressed-tensors scheme may store beside (or instead of)
# `weight`; used to recognise quantization tensors where the engine builds none.
QUANT_SUFFIXES = frozenset(
    {
        "weight_scale",
        "weight_zero_point",
        "weight_packed",
        "weight_shape",
        "weight_global_scale",
        "weight_g_idx",
        "input_scale",
        "input_zero_point",
        "input_global_scale",
        "weight_scale_inv",
    }
)

FP8 = "fp8"
INT8 = "int8"
PACK_QUANTIZED = "pack_quantized"
# Quantization methods that quantize bf16 weights at load time: an unquantized draft can
# take them (SGLang then quantizes the draft too).
ONLINE_QUANTIZATION = frozenset({"fp8"})
NVFP4 = "nvfp4"


@frozen
class DraftQuant:
    """What a draft's `quantization_config` says.

    Attributes:
        method: `quant_method` as written (e.g. `compressed-tensors`), or None.
        scheme: FP8 / INT8 / PACK_QUANTIZED / NVFP4, or None when draftfit does not model
            the scheme (several groups with different schemes, an unusual one, or module
            lists it cannot read: `unreadable`).
        all_linear: whether the scheme targets every `Linear` module.
        targets: other target names or `re:` patterns.
        ignore: module names or `re:` patterns left unquantized.
        asymmetric: whether a group's weights are asymmetric (they then need zero points).
        unreadable: why the `targets` or `ignore` lists cannot be used (wrong type, too
            many entries, a pattern draftfit cannot match safely), or None. Nothing is then
            modelled from the config: no module counts as covered.
        target_list: `targets` ready to match.
        ignore_list: `ignore` ready to match.
    """

    method: str | None
    scheme: str | None
    all_linear: bool
    targets: tuple[str, ...]
    ignore: tuple[str, ...]
    asymmetric: bool = False
    unreadable: str | None = None
    target_list: NameList | None = field(default=None, compare=False, repr=False)
    ignore_list: NameList | None = field(default=None, compare=False, repr=False)

    def covers(self, module: str) -> bool:
        """Whether the engine quantizes module `module` (draftfit's canonical name, e.g.
        `layers.0.mlp.up_proj`, `fc`, `lm_head`): targeted and not ignored. Names are
        matched as the engine names its modules — exactly, or by an `re:` pattern from the
        start — and the engine sees the draft's modules under `model.` (`model.fc`; vLLM also
        numbers the draft's decoder layers after the target's, which an exact `ignore` entry
        for a decoder layer does not follow: draftfit then treats the entry as written).
        The `Linear` target matches the engine's linear layer classes (`QKVParallelLinear`,
        `ReplicatedLinear`, ...) by class name, not its `ParallelLMHead`: lm_head is covered
        only when a target names it. With unreadable lists nothing is covered."""
        if self.unreadable is not None:
            return False
        name = module if module == "lm_head" else "model." + module
        if self.ignore_list is not None and self.ignore_list.matches(name):
            return False
        if self.all_linear and module != "lm_head":
            return True
        return self.target_list is not None and self.target_list.matches(name)


def read_draft_quant(config: Mapping[str, Any]) -> DraftQuant | None:
    """The draft's quantization, or None when its config.json has no `quantization_config`.
    Its module lists are read bounded (:mod:`draftfit.engines.name_patterns`)."""
    qc = config.get("quantization_config")
    if not isinstance(qc, dict):
        return None
    method = qc.get("quant_method")
    method = method if isinstance(method, str) else None
    groups = qc.get("config_groups")
    schemes: set[str | None] = set()
    targets: list[str] = []
    all_linear = False
    asymmetric = False
    unreadable: str | None = None
    if isinstance(groups, dict):
        for group in groups.values():
            if not isinstance(group, dict):
                schemes.add(None)
                continue
            weights = group.get("weights")
            asymmetric |= isinstance(weights, dict) and weights.get("symmetric") is False
            named = NameList(group.get("targets"), "targets")
            unreadable = unreadable or named.unreadable
            for target in named.entries:
                if target == "Linear":
                    all_linear = True
                else:
                    targets.append(target)
            schemes.add(_scheme(group, qc.get("format")))
    target_list = NameList(targets[: MAX_ENTRIES + 1], "targets")
    ignore_list = NameList(qc.get("ignore"), "ignore")
    unreadable = unreadable or target_list.unreadable or ignore_list.unreadable
    scheme = schemes.pop() if len(schemes) == 1 and unreadable is None else None
    return DraftQuant(
        method,
        scheme,
        all_linear,
        target_list.entries,
        ignore_list.entries,
        asymmetric,
        unreadable,
        target_list,
        ignore_list,
    )


def _scheme(group: Mapping[str, Any], top_format: Any) -> str | None:
    """The scheme of one config group, as the compressed-tensors loader chooses it."""
    weights = group.get("weights")
    if not isinstance(weights, dict):
        return None
    fmt = group.get("format") or top_format
    kind, bits = weights.get("type"), weights.get("num_bits")
    if fmt == "nvfp4-pack-quantized" or (kind == "float" and bits == 4):
        return NVFP4
    if fmt == "pack-quantized" and kind == "int" and bits in (4, 8):
        return PACK_QUANTIZED
    if kind == "float" and bits == 8:
        return FP8
    inputs = group.get("input_activations")
    if kind == "int" and bits == 8 and isinstance(inputs, dict) and inputs.get("num_bits") == 8:
        return INT8
    return None


def quant_suffix(name: str) -> str | None:
    """The quantization suffix of a stored tensor name (`weight_scale` for
    `layers.0.mlp.up_proj.weight_scale`), or None for any other tensor."""
    suffix = name.rsplit(".", 1)[-1]
    return suffix if suffix in QUANT_SUFFIXES else None


def add_quantized_parameters(
    view: EngineView,
    q: DraftQuant,
    params: list[str],
    quantizable: Callable[[str], bool],
    citations: tuple[str, ...],
) -> None:
    """Add to `view` the parameters the scheme registers on every linear module the engine
    builds with the draft's quantization config (`quantizable`) and the config covers:
    `weight_scale`, `input_scale`, ... beside `weight`, or `weight_packed` instead of it
    (the `weight` expectation is then removed). Their shapes are not checked; `weight_packed`
    and `weight_scale` stay uninitialised when missing, the optional ones are fine absent."""
    for canonical in list(view.expectations):
        module = canonical.removesuffix(".weight")
        if module == canonical or not quantizable(module) or not q.covers(module):
            continue
        if "weight" not in params:
            del view.expectations[canonical]
        for name in params:
            if name == "weight":
                continue
            full = f"{module}.{name}"
            required = name in ("weight_packed", "weight_scale")
            view.expectations[full] = Expectation(
                full,
                full,
                None,
                f"{q.scheme} scheme parameter",
                UNINITIALISED if required else None,
                citations=citations,
            )


# Stored dtypes of quantized weights (FP8, INT8, packed integers, FP4): values that mean
# nothing without their scales.
QUANTIZED_DTYPES = frozenset({"F8_E4M3", "F8_E5M2", "I8", "U8", "I32", "F4", "F8_E8M0"})


def required_data(q: DraftQuant) -> tuple[str, ...]:
    """The tensors the scheme needs beside each quantized layer's weight: its scales, the
    zero points of asymmetric weights, NVFP4's global scale; () when the scheme is unknown."""
    if q.scheme is None:
        return ()
    names = ["weight_scale"]
    if q.asymmetric:
        names.append("weight_zero_point")
    if q.scheme == NVFP4:
        names.append("weight_global_scale")
    return tuple(names)


@frozen
class MissingData:
    """A linear layer the draft's `quantization_config` quantizes whose data is not stored.

    Attributes:
        module: the canonical module (`layers.0.self_attn.q_proj`).
        weight: its stored weight (canonical: `....weight` or `....weight_packed`).
        dtype: that weight's stored dtype.
        missing: the scheme's tensor names not stored (`weight_scale`, ...).
    """

    module: str
    weight: str
    dtype: str
    missing: tuple[str, ...]


def _is_linear(module: str) -> bool:
    leaf = module.rsplit(".", 1)[-1]
    return leaf.endswith("_proj") or leaf in ("fc", "lm_head")


def missing_quant_data(q: DraftQuant, dtypes: Mapping[str, str]) -> list[MissingData]:
    """The linear layers `q` quantizes whose scheme data (:func:`required_data`) is not all
    stored; `dtypes` maps every stored canonical tensor name to its dtype."""
    needed = required_data(q)
    found: list[MissingData] = []
    for name, dtype in dtypes.items():
        module, _, leaf = name.rpartition(".")
        if leaf not in ("weight", "weight_packed") or not module or not _is_linear(module):
            continue
        if leaf == "weight" and f"{module}.weight_packed" in dtypes:
            continue
        if not q.covers(module):
            continue
        missing = tuple(n for n in needed if f"{module}.{n}" not in dtypes)
        if missing:
            found.append(MissingData(module, name, dtype, missing))
    return sorted(found, key=lambda m: m.module)
