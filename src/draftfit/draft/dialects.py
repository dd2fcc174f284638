"""Recognise which producer convention wrote a draft checkpoint, with the evidence.

The fingerprints are tried in a fixed order (see :func:`detect_dialect`): the speculators
library (trained `Eagle3DraftModel` or converted `Eagle3Speculator`), NVIDIA ModelOpt,
AngelSlim, SpecForge / SGLang, the official EAGLE repository (EAGLE-3 and EAGLE-1/2), the
legacy vLLM EAGLE-1 format (`model_type: eagle` with a nested `model`), NeMo Automodel
(`*Eagle3DraftModel` without speculators keys), EAGLE-4 (`LlamaForCausalLMEagle4`), DFlash
drafters, or unknown. :func:`non_eagle_kind` tells drafters that are not EAGLE drafts at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from draftfit.checkpoint.model import Checkpoint
from draftfit.draft.config_schema import DRAFT_SCHEMA, scrub
from draftfit.records import field, frozen, record

if TYPE_CHECKING:
    from typing import Any

SPECULATORS = "speculators"
SPECFORGE = "specforge"
EAGLE_OFFICIAL = "eagle-official"
MODELOPT = "modelopt"
ANGELSLIM = "angelslim"
VLLM_LEGACY_EAGLE = "vllm-legacy-eagle"
SGLANG_EAGLE1 = "sglang-eagle"
NEMO_AUTOMODEL = "nemo-automodel"
EAGLE4 = "eagle4"
DFLASH = "dflash"
UNKNOWN = "unknown"

DIALECT_TITLES = {
    SPECULATORS: "speculators library",
    SPECFORGE: "SpecForge / SGLang",
    EAGLE_OFFICIAL: "official EAGLE repository (SafeAILab)",
    MODELOPT: "NVIDIA ModelOpt export",
    ANGELSLIM: "AngelSlim",
    VLLM_LEGACY_EAGLE: "legacy vLLM EAGLE-1 format",
    SGLANG_EAGLE1: "SGLang EAGLE-1 format",
    NEMO_AUTOMODEL: "NeMo Automodel export",
    EAGLE4: "EAGLE-4 (eagle-harness)",
    DFLASH: "DFlash drafter",
    UNKNOWN: "unknown convention",
}

# speculators algorithms that are not EAGLE drafts, with what they are
# (speculators 0.9.0: `speculators/models/*/config.py`).
NON_EAGLE_SPECULATORS = {
    "xpress": "an XPress refiner head",
    "dflash": "a DFlash block-diffusion drafter",
    "dflash2": "a DFlash-2 block-diffusion drafter",
    "dspark": "a DSpark drafter",
    "mtp": "a multi-token-prediction head",
}
# Architecture-name fragments of drafters that are not EAGLE drafts.
NON_EAGLE_ARCHITECTURES = {
    "DFlash": "a DFlash block-diffusion drafter",
    "DSpark": "a DSpark drafter",
    "XPress": "an XPress refiner head",
}


def is_eagle4_architecture(arch: object) -> bool:
    """Whether an architecture name is an EAGLE-4 draft class (`LlamaForCausalLMEagle4`)."""
    return isinstance(arch, str) and ("Eagle4" in arch or "EAGLE4" in arch)


def non_eagle_kind(config: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """`(what it is called, what it is)` for a drafter that is not an EAGLE draft:
    a speculators `xpress` / `dflash` / `dflash2` / `dspark` / `mtp` config, or a DFlash /
    DSpark / XPress architecture; None for anything else."""
    if config is None:
        return None
    kind = config.get("speculators_model_type")
    if isinstance(kind, str) and kind in NON_EAGLE_SPECULATORS:
        return f"speculators `{kind}`", NON_EAGLE_SPECULATORS[kind]
    for arch in _architectures(config)[:1]:
        for fragment, what in NON_EAGLE_ARCHITECTURES.items():
            if fragment in arch or fragment.upper() in arch:
                return f"`{arch}`", what
    return None


MODELOPT_EAGLE_KEYS = (
    "use_input_layernorm_in_first_layer",
    "use_last_layernorm",
    "use_mtp_layernorm",
)


@frozen
class Dialect:
    """The convention that wrote a checkpoint.

    Attributes:
        name: one of the module constants (`speculators`, `specforge`, ...).
        variant: finer detail, e.g. `trained`, `converted`, `eagle3`, `eagle1`, `>=0.43`.
        evidence: human-readable facts that led to the verdict, strongest first.
        version_hint: the producer version the evidence points to, when known.
    """

    name: str
    variant: str | None = None
    evidence: tuple[str, ...] = ()
    version_hint: str | None = None

    @property
    def title(self) -> str:
        base = DIALECT_TITLES.get(self.name, self.name)
        return f"{base} ({self.variant})" if self.variant else base


@record
class _Evidence:
    """The observations that identified a dialect, in the order they were made."""

    items: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.items.append(text)


def _architectures(config: Mapping[str, Any]) -> list[str]:
    arch = config.get("architectures")
    if isinstance(arch, list):
        return [a for a in arch if isinstance(a, str)]
    return []


def detect_dialect(checkpoint: Checkpoint) -> Dialect:
    """Apply the ordered fingerprint rules to the config and tensor names."""
    config = scrub(checkpoint.config, DRAFT_SCHEMA).config
    names = set(checkpoint.tensors)
    arch = _architectures(config)
    arch0 = arch[0] if arch else None
    ev = _Evidence()
    nested = config.get("eagle_config")
    eagle_config: Mapping[str, Any] = nested if isinstance(nested, dict) else {}

    if "speculators_model_type" in config:
        return _speculators(config, arch0, names, ev)

    if config.get("model_type") == "eagle" and isinstance(config.get("model"), dict):
        ev.add("`model_type` is `eagle` with a nested `model` config")
        return Dialect(VLLM_LEGACY_EAGLE, "eagle1", tuple(ev.items))

    if any(key in eagle_config for key in MODELOPT_EAGLE_KEYS):
        present = [k for k in MODELOPT_EAGLE_KEYS if k in eagle_config]
        ev.add(f"`eagle_config` carries ModelOpt export keys ({', '.join(present)})")
        version = None
        if "next_layer_regular" in eagle_config:
            ev.add("`eagle_config.next_layer_regular` is present (ModelOpt >= 0.41)")
            version = ">=0.41"
        if any(n.startswith("layers.") for n in names):
            ev.add("decoder tensors are named `layers.N.*` (ModelOpt >= 0.43)")
            version = ">=0.43"
        elif any(n.startswith("midlayer") for n in names):
            ev.add("decoder tensors are named `midlayer.*` (ModelOpt <= 0.42)")
            version = "<=0.42" if version is None else "0.41-0.42"
        if "t2d" not in names:
            ev.add("no `t2d` tensor (ModelOpt never writes one)")
        variant = "mla" if arch0 == "Eagle3DeepseekV2ForCausalLM" else "eagle3"
        return Dialect(MODELOPT, variant, tuple(ev.items), version)

    if arch0 == "Eagle3LlamaForCausalLM" and "target_model_type" in config:
        ev.add("`architectures` is `Eagle3LlamaForCausalLM` with a `target_model_type` key")
        return Dialect(ANGELSLIM, "eagle3", tuple(ev.items))

    if arch0 == "LlamaForCausalLMEagle3":
        ev.add("`architectures` is `LlamaForCausalLMEagle3` (SpecForge / SGLang class name)")
        if any(n.startswith("midlayer.") for n in names):
            ev.add("decoder tensors are named `midlayer.*`")
        if "t2d" in names and "d2t" in names:
            ev.add("both `d2t` and `t2d` are stored")
        if "embed_tokens.weight" in names:
            ev.add("`embed_tokens.weight` is stored (SpecForge before 2025-08 or `export --to hf`)")
        return Dialect(SPECFORGE, "eagle3", tuple(ev.items))

    if arch0 is not None and arch0.endswith("Eagle3DraftModel") and arch0 != "Eagle3DraftModel":
        ev.add(f"`architectures` is `{arch0}` (NeMo Automodel's draft class name)")
        if any(n.startswith("model.") for n in names):
            ev.add("decoder tensors carry a `model.` prefix")
        if "d2t" in names and "t2d" in names:
            ev.add("both `d2t` and `t2d` are stored")
        return Dialect(NEMO_AUTOMODEL, "eagle3", tuple(ev.items))

    if is_eagle4_architecture(arch0):
        ev.add(f"`architectures` is `{arch0}` (an EAGLE-4 draft, served by eagle-harness)")
        return Dialect(EAGLE4, "eagle4", tuple(ev.items))

    if arch0 is not None and non_eagle_kind(config) is not None:
        ev.add(f"`architectures` is `{arch0}` (a DFlash-family drafter, not an EAGLE draft)")
        return Dialect(DFLASH, None, tuple(ev.items))

    if arch0 == "LlamaForCausalLMEagle":
        ev.add("`architectures` is `LlamaForCausalLMEagle` (SGLang EAGLE-1 class name)")
        return Dialect(SGLANG_EAGLE1, "eagle1", tuple(ev.items))

    official = _official_eagle(config, arch0, names, ev)
    if official is not None:
        return official

    if arch0:
        ev.add(f"`architectures` is `{arch0}`, which no known producer writes for drafts")
    else:
        ev.add("no `architectures` and no producer-specific keys")
    return Dialect(UNKNOWN, None, tuple(ev.items))


def _speculators(
    config: Mapping[str, Any], arch0: str | None, names: set[str], ev: _Evidence
) -> Dialect:
    kind = config.get("speculators_model_type")
    version = config.get("speculators_version")
    version = version if isinstance(version, str) else None
    ev.add(f"`speculators_model_type` is `{kind}`")
    if version:
        ev.add(f"`speculators_version` is `{version}`")
    variant: str | None
    if arch0 == "Eagle3DraftModel":
        ev.add("`architectures` is `Eagle3DraftModel` (written by speculators training, >= 0.3.0)")
        variant = "trained"
    elif arch0 == "Eagle3Speculator":
        if version == "0.1.0.dev14" and config.get("norm_before_residual") is True:
            ev.add(
                "`Eagle3Speculator` with the hard-coded version `0.1.0.dev14`: written by "
                "ModelOpt's `convert_to_vllm_ckpt.py`"
            )
            variant = "converted-from-modelopt"
        else:
            ev.add("`architectures` is `Eagle3Speculator` (written by `speculators convert`)")
            variant = "converted"
    elif arch0 == "EagleSpeculator":
        ev.add("`architectures` is `EagleSpeculator` (EAGLE-1 conversion, speculators <= 0.6)")
        variant = "eagle1-converted"
    else:
        ev.add(f"`architectures` is `{arch0}`")
        variant = str(kind) if kind else None
    auto_map = config.get("auto_map")
    if isinstance(auto_map, dict) and isinstance(auto_map.get(""), str):
        module = auto_map[""].split(".")[0]
        if module == "eagle3":
            ev.add("`auto_map` points at `eagle3.…` (speculators <= 0.2.x)")
        elif module == "config":
            ev.add("`auto_map` points at `config.…` (speculators >= 0.3.0)")
    if "midlayer.self_attn.q_proj.weight" in names:
        ev.add("tensors still use `midlayer.*` names")
    return Dialect(SPECULATORS, variant, tuple(ev.items), version)


def _official_eagle(
    config: Mapping[str, Any], arch0: str | None, names: set[str], ev: _Evidence
) -> Dialect | None:
    """Official EAGLE repo: a plain one-layer HF config (usually `LlamaForCausalLM`)."""
    if arch0 is None or "Eagle" in arch0 or "eagle" in arch0:
        return None
    fc = "fc.weight"
    has_midlayer = any(n.startswith("midlayer.") for n in names)
    hidden = config.get("hidden_size")
    if has_midlayer or ("draft_vocab_size" in config and ("d2t" in names or "t2d" in names)):
        ev.add(f"plain `{arch0}` config with `draft_vocab_size`")
        if has_midlayer:
            ev.add("decoder tensors are named `midlayer.*`")
        if "d2t" in names:
            ev.add("`d2t`/`t2d` vocabulary mapping stored")
        return Dialect(EAGLE_OFFICIAL, "eagle3", tuple(ev.items))
    if fc in names and "layers.0.self_attn.q_proj.weight" in names:
        ev.add(f"plain `{arch0}` config without `draft_vocab_size`")
        ev.add("`fc.weight` plus `layers.0.*` decoder tensors (EAGLE-1/2 layout)")
        if "fc.bias" in names:
            ev.add("`fc.bias` stored (EAGLE-1 trains `fc` with a bias unless `bias: false`)")
        if "layers.0.input_layernorm.weight" not in names:
            ev.add("no `layers.0.input_layernorm` (EAGLE-1 skips it)")
        if isinstance(hidden, int):
            ev.add(f"`hidden_size` {hidden}")
        return Dialect(EAGLE_OFFICIAL, "eagle1", tuple(ev.items))
    return None
