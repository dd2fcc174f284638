"""Run the MTP oracle (`mtp_oracle.py`) on a Qwen3-Next target under SGLang on a CPU.

SGLang's Qwen3-Next builds the gated delta-net's output norm on the current device of the
accelerator module (`torch.get_device_module().current_device()`), which asks CUDA for a device
on a machine without a GPU and stops the target's build before any weight is loaded. This
script answers with the CPU module when no device is named; everything else, the MTP class and
its loader included, is SGLang's own.

    SGLANG_0_5_23_VENV/bin/python dev/mtp_oracle_sglang_qwen3_next.py ORACLE TARGET [oracle args]

A development aid only (read in dev/mtp-oracle-results.md); the product never imports SGLang.
"""

from __future__ import annotations

from types import ModuleType

from oracle_patching import run_patched


def _patch() -> None:
    """Answer `torch.get_device_module()` with the CPU module."""
    import torch

    named = torch.get_device_module

    def device_module(device: object = None) -> ModuleType:
        return torch.cpu if device is None else named(device)  # type: ignore[arg-type]

    torch.get_device_module = device_module  # type: ignore[assignment]


def main() -> None:
    """Patch, then run the oracle at `sys.argv[1]` with the rest."""
    run_patched(_patch, __doc__)


if __name__ == "__main__":
    main()
