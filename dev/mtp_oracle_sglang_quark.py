"""Run the MTP oracle (`mtp_oracle.py`) on a Quark target under SGLang with the GPU's compute
capability answered as an sm_90 GPU's and the Quark schemes' step after loading skipped, so
that SGLang's own build and loader run on a CPU.

SGLang's Quark config asks CUDA for the device's capability while it picks each layer's
scheme, and its schemes requantize or repack the loaded weights after loading with CUDA ops.
This script answers the question as an sm_90 GPU would and skips that step (it only rewrites
bytes already loaded); it also lets the oracle wrap the weight loader of SGLang's quantized
parameters, as `mtp_oracle_sglang_modelopt.py` does (Quark's per-tensor scales are scalars,
which the oracle's search by value skips). The parameters each layer registers, which layers
are built quantized, and the loaders that fill them are SGLang's own.

    SGLANG_0_5_23_VENV/bin/python dev/mtp_oracle_sglang_quark.py ORACLE TARGET [oracle args]

A development aid only (read in dev/mtp-schemes-oracle-results.md); the product never
imports SGLang.
"""

from __future__ import annotations

import importlib
import pkgutil

from mtp_oracle_sglang_modelopt import track_quantized_parameters
from oracle_patching import run_patched, skip_after_loading


def _patch() -> None:
    """Answer the capability as an sm_90 GPU would, skip the schemes' steps after loading and
    let the oracle see the quantized parameters' loads."""
    import sglang.srt.layers.quantization.quark.quark as config
    import sglang.srt.layers.quantization.quark.schemes as schemes
    import torch

    torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)
    config.get_device_capability = lambda *args, **kwargs: (9, 0)  # type: ignore[attr-defined]
    skip_after_loading(
        config,
        *(
            importlib.import_module(f"{schemes.__name__}.{info.name}")
            for info in pkgutil.iter_modules(schemes.__path__)
        ),
    )
    track_quantized_parameters()


def main() -> None:
    """Patch, then run the oracle at `sys.argv[1]` with the rest."""
    run_patched(_patch, __doc__)


if __name__ == "__main__":
    main()
