"""The typed MTP parts of an engine's inputs and view: what an MTP procedure reads
(`BuildInputs.mtp`: the target's own MTP facts and the launch as the MTP steps read it) and
what it writes (`EngineView.mtp`: what a release makes of the target's MTP layers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.records import field, frozen, record

if TYPE_CHECKING:
    from typing import Any

    from draftfit.draft.mtp import MtpTarget
    from draftfit.draft.nextn_export import NextnExport


@frozen
class MtpLaunch:
    """The launch as the MTP steps read it (None: not given, the release's default).

    Attributes:
        given: whether a launch was given for this engine (else `--method mtp` alone).
        method: the method or algorithm as written (`mtp`, `deepseek_mtp`, `NEXTN`).
        tokens: the number of draft tokens per step (vLLM `num_speculative_tokens`, SGLang
            `--speculative-num-steps`).
        draft_model: the draft the launch names (vLLM `model`, SGLang
            `--speculative-draft-model-path`).
        target_model: the target the launch serves.
        pointer: where the method is written, for locations.
        serves_checked: the draft the launch names is the checkpoint checked (a NextN
            export given as the draft), not another one.
        layers: the MTP layers the launch asks to build (TensorRT-LLM
            `num_nextn_predict_layers`).
        vanilla: whether it asks for every layer in turn (TensorRT-LLM `use_mtp_vanilla`).
        one_model: whether one-layer MTP runs in the target's engine (TensorRT-LLM
            `mtp_eagle_one_model`).
        max_draft_len: the draft tokens per step the launch writes as `max_draft_len`
            (TensorRT-LLM releases that read the MTP depth from it).
        whole: the launch is a whole one (a command or a whole config file), not some flags.
        trust_remote_code: the launch passes the release's trust-remote-code flag.
        tensor_parallel: the tensor-parallel size the MTP layers run at (the draft's own where
            the launch gives one, else the target's; None: not given, 1).
        quantization: the quantization method the launch names for the target (vLLM and
            SGLang `--quantization`), as written.
        draft_quantization: the one it names for the draft (vLLM's speculative config
            `quantization`, SGLang `--speculative-draft-model-quantization`), as written.
    """

    given: bool = False
    method: str | None = None
    tokens: int | None = None
    draft_model: str | None = None
    target_model: str | None = None
    pointer: str = "--speculative-config"
    serves_checked: bool = False
    layers: int | None = None
    vanilla: bool | None = None
    one_model: bool | None = None
    max_draft_len: int | None = None
    whole: bool = False
    trust_remote_code: bool = False
    tensor_parallel: int | None = None
    quantization: str | None = None
    draft_quantization: str | None = None

    @property
    def other_draft(self) -> str | None:
        """The draft the launch names when it is neither the target itself nor the
        checkpoint checked, else None."""
        if self.draft_model is None or self.draft_model == self.target_model:
            return None
        return None if self.serves_checked else self.draft_model


@frozen
class MtpInputs:
    """What an MTP procedure resolves the target's own MTP layers from.

    The launch's MTP settings are judged by the MTP steps themselves (method name, token
    count, draft path), so an MTP build's `BuildInputs.serve` stays None.

    Attributes:
        target: the target's MTP facts (family, declared depth, shipped layers, quantization).
        launch: the launch as the MTP steps read it.
        eagle_draft: what makes the checkpoint an EAGLE draft rather than a target carrying
            MTP layers, or None.
        export: the checkpoint is a stand-alone NextN export served beside a target (its
            facts; `target` is then the export as a NextN loader reads it), or None.
    """

    target: MtpTarget
    launch: MtpLaunch = field(default_factory=MtpLaunch)
    eagle_draft: str | None = None
    export: NextnExport | None = None


@record
class MtpView:
    """The typed MTP part of an engine view: what the release makes of the target's MTP
    layers (None: not reached, the procedure stopped before)."""

    family: str | None = None
    method: str | None = None
    tokens: int | None = None
    depth_declared: int | None = None
    depth_present: bool = False
    depth_used: int | None = None
    layers_built: tuple[int, ...] | None = None
    layers_shipped: tuple[int, ...] = ()
    layer_reused: bool = False
    quantization: str | None = None
    exclusion_names: str | None = None
    # per shipped MTP layer built (by index), the modules the release builds quantized that
    # the layer stores quantized (None: not judged)
    stored_and_built_quantized: dict[int, frozenset[str]] | None = None
    # a NextN export: how this release reads it (`layer-zero`, `layer-index`), else None
    export_reading: str | None = None
    # why a part of the check was not made at this release (the verdict is then unverified)
    not_read: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "method": self.method,
            "num_speculative_tokens": self.tokens,
            "depth_declared": self.depth_declared,
            "depth_present": self.depth_present,
            "depth_used": self.depth_used,
            "layers_built": list(self.layers_built) if self.layers_built is not None else None,
            "layers_shipped": list(self.layers_shipped),
            "layer_reused": self.layer_reused,
            "quantization": self.quantization,
            "exclusion_names": self.exclusion_names,
            **({"export_reading": self.export_reading} if self.export_reading else {}),
            "not_read": list(self.not_read),
        }


__all__ = ["MtpInputs", "MtpLaunch", "MtpView"]
