"""Run the MTP oracle (`mtp_oracle.py`) on a ModelOpt FP8 target under SGLang with the
ModelOpt methods' step after loading skipped, so that SGLang's own build and loader run on a
CPU.

SGLang's ModelOpt FP8 linear and MoE methods requantize the loaded weights after loading
(`process_weights_after_loading`: one per-tensor scale for a merged module, through the CUDA
op `sgl_per_tensor_quant_fp8`), which stops the run on a machine without a GPU once the
target's dummy weights are in. This script skips that step (it only rewrites bytes already
loaded); the parameters each layer registers, which layers are built quantized, and the
loaders that fill them are SGLang's own.

The oracle sees which checkpoint tensor reaches which parameter by wrapping each
parameter's `weight_loader`, and finds the others by their values. SGLang's quantized
parameters (`BasevLLMParameter`) expose `weight_loader` as a read-only property, so the
wrapper is never installed on them; their weights are still found by value, but ModelOpt's
per-tensor scales are scalars, which the value search skips: every scale would be reported
as skipped. This script lets the wrapper be installed (and removed) on those parameters;
the loader it wraps is unchanged.

    SGLANG_0_5_23_VENV/bin/python dev/mtp_oracle_sglang_modelopt.py ORACLE TARGET [oracle args]

A development aid only (read in dev/mtp-schemes-oracle-results.md); the product never
imports SGLang.
"""

from __future__ import annotations

from typing import Any

from oracle_patching import run_patched, skip_after_loading


def _patch() -> None:
    """Skip the ModelOpt methods' requantization after loading, and let the oracle wrap the
    weight loader of SGLang's quantized parameters."""
    import sglang.srt.layers.quantization.modelopt_quant as modelopt

    skip_after_loading(modelopt)
    track_quantized_parameters()


def track_quantized_parameters() -> None:
    """Make `BasevLLMParameter.weight_loader` settable (and removable), so that the oracle's
    wrapper is installed on SGLang's quantized parameters; the loader it wraps is theirs."""
    from sglang.srt.layers.parameter import BasevLLMParameter

    def get(self: Any) -> Any:
        return self._weight_loader

    def put(self: Any, loader: Any) -> None:
        if "_loader_before_oracle" not in vars(self):
            self._loader_before_oracle = self._weight_loader
        self._weight_loader = loader

    def remove(self: Any) -> None:
        self._weight_loader = vars(self).pop("_loader_before_oracle", self._weight_loader)

    BasevLLMParameter.weight_loader = property(get, put, remove)


def main() -> None:
    """Patch, then run the oracle at `sys.argv[1]` with the rest."""
    run_patched(_patch, __doc__)


if __name__ == "__main__":
    main()
