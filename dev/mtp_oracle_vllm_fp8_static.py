"""Run the MTP oracle (`mtp_oracle.py`) on a ModelOpt FP8 or Quark FP8 target under vLLM with
the FP8 methods' step after loading skipped, so that the run reaches its end on a CPU.

vLLM's ModelOpt and Quark FP8 methods requantize the loaded weights after loading (one
per-tensor scale for a merged module, `requantize_with_max_scale`, through the CUDA op
`scaled_fp8_quant`, which vLLM's CPU wheel lacks): the run stopped there, after every weight
was loaded. This script skips that step (it only rewrites bytes already loaded); the build,
which modules are quantized, and the loaders that fill them are vLLM's own. A refusal that
only the skipped step would raise is not seen (none was read in it for these configs).

    VLLM_0_34_VENV/bin/python dev/mtp_oracle_vllm_fp8_static.py ORACLE TARGET [oracle args]

A development aid only (read in dev/mtp-schemes-oracle-results.md); the product never
imports vLLM.
"""

from __future__ import annotations

import os

from oracle_patching import run_patched, skip_after_loading


def _patch() -> None:
    """Skip the ModelOpt and Quark FP8 methods' requantization after loading."""
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import vllm.model_executor.layers.quantization.modelopt as modelopt
    import vllm.model_executor.layers.quantization.quark.quark_moe as quark_moe
    import vllm.model_executor.layers.quantization.quark.schemes.quark_w8a8_fp8 as quark_fp8

    skip_after_loading(modelopt, quark_moe, quark_fp8)


def main() -> None:
    """Patch, then run the oracle at `sys.argv[1]` with the rest."""
    run_patched(_patch, __doc__)


if __name__ == "__main__":
    main()
