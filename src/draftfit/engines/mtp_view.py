"""The typed MTP part of an engine view (`EngineView.mtp`): what a release makes of a
target's own MTP layers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from draftfit.records import field, record

if TYPE_CHECKING:
    from typing import Any


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
            "not_read": list(self.not_read),
        }


__all__ = ["MtpView"]
