"""Run the MTP oracle (`mtp_oracle.py`) on a GPTQ or AWQ target with vLLM's int4 kernel
choice forced, so that vLLM's own build and loader run on a CPU.

vLLM's CPU wheel has no WNA16 kernel for these layers (`No WNA16 MoE backend supports the
deployment configuration`, `Failed to find a kernel that can implement the WNA16 linear
layer`), and the build stops before any weight is loaded. The kernel only computes; the
parameters a layer registers and the loader that fills them do not depend on it. This
script makes the MoE kernel oracle and the linear kernel choice return a kernel class
without probing the device, then runs the oracle unchanged.

    VLLM_0_34_VENV/bin/python dev/mtp_oracle_wna16.py ORACLE TARGET [oracle args]

A development aid only (read in dev/mtp-schemes-oracle-results.md); the product never
imports vLLM.
"""

from __future__ import annotations

import os

from oracle_patching import run_patched


def _patch() -> None:
    """Run on the CPU and choose the int4 kernels without probing the device."""
    for key, value in (
        ("VLLM_TARGET_DEVICE", "cpu"),
        ("HF_HUB_OFFLINE", "1"),
        ("TRANSFORMERS_OFFLINE", "1"),
        ("VLLM_NO_USAGE_STATS", "1"),
        ("DO_NOT_TRACK", "1"),
    ):
        os.environ.setdefault(key, value)
    import vllm.model_executor.layers.fused_moe.oracle.int_wna16 as moe
    import vllm.model_executor.layers.quantization.auto_awq as auto_awq
    import vllm.model_executor.layers.quantization.auto_gptq as auto_gptq
    from vllm.model_executor.kernels.linear import CPUWNA16LinearKernel

    emulation = moe.WNA16MoEBackend.EMULATION
    moe._get_priority_backends = lambda: [emulation]
    moe.WNA16MoEKernelOracle.try_backend = lambda self, backend, *args, **kwargs: (
        moe.backend_to_kernel_cls(backend)[0],
        [],
    )
    auto_gptq.choose_mp_linear_kernel = lambda config, compute_capability=None: CPUWNA16LinearKernel
    auto_awq.choose_mp_linear_kernel = auto_gptq.choose_mp_linear_kernel


def main() -> None:
    """Patch, then run the oracle at `sys.argv[1]` with the rest."""
    run_patched(_patch, __doc__)


if __name__ == "__main__":
    main()
