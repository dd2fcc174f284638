"""Run the MTP oracle (`mtp_oracle.py`) on a compressed-tensors target under SGLang with the
GPU's compute capability answered as an sm_90 GPU's, so that SGLang's own build and loader
run on a CPU.

SGLang's compressed-tensors config asks CUDA for the device's capability while it picks each
layer's scheme (`_check_scheme_supported`), which stops the build on a machine without a GPU
before any weight is loaded. This script answers the question as an sm_90 GPU would and skips
the schemes' step after loading (the FP8 and int kernels' repacking, CUDA ops that only
rearrange the loaded bytes); the parameters each layer registers and the loaders that fill
them are SGLang's own.

    SGLANG_0_5_23_VENV/bin/python dev/mtp_oracle_sglang_ct.py ORACLE TARGET [oracle args]

A development aid only (read in dev/mtp-schemes-oracle-results.md); the product never
imports SGLang.
"""

from __future__ import annotations

import importlib
import pkgutil

from oracle_patching import run_patched, skip_after_loading


def _patch() -> None:
    """Answer the capability as an sm_90 GPU would and skip the steps after loading."""
    import sglang.srt.layers.quantization.compressed_tensors.compressed_tensors as config
    import sglang.srt.layers.quantization.compressed_tensors.schemes as schemes
    import torch

    torch.cuda.get_device_capability = lambda *args, **kwargs: (9, 0)

    skip_after_loading(
        config,
        *(
            importlib.import_module(f"{schemes.__name__}.{info.name}")
            for info in pkgutil.iter_modules(schemes.__path__)
        ),
    )


def main() -> None:
    """Patch, then run the oracle at `sys.argv[1]` with the rest."""
    run_patched(_patch, __doc__)


if __name__ == "__main__":
    main()
