"""Run the MTP oracle (`mtp_oracle.py`) on a GPTQ or AWQ target under SGLang with the int4
path chosen as on a CUDA GPU, so that SGLang's own build and loader run on a CPU.

On a CUDA GPU SGLang serves a `quant_method: gptq` config with GPTQ Marlin and an AWQ one
with AWQ Marlin (`override_quantization_method`, which asks the device's compute
capability); on a CPU the capability is unknown, `gptq` is then no method SGLang registers
for CUDA, and the build stops before any weight is loaded. This script answers the
capability question as an sm_90 GPU would, skips the Marlin repacking after loading (a CUDA
op that only rearranges the loaded bytes), and gives DeepSeek's loader a stand-in for the
AWQ dequantization it runs on `kv_b_proj` after loading (a CUDA op; its values feed only the
attention's absorbed weights). The parameters each layer registers and the loaders that fill
them are SGLang's own.

The oracle's report is read against what SGLang does after loading (`dev/mtp_corpus.py`,
`sglang_marlin_benign`): a `g_idx` parameter left unfilled where `desc_act` is false and a
symmetric config's zero points are replaced by empty ones in the Marlin step, so neither
makes the drafts wrong.

    SGLANG_0_5_23_VENV/bin/python dev/mtp_oracle_sglang_wna16.py ORACLE TARGET [oracle args]

A development aid only (read in dev/mtp-schemes-oracle-results.md); the product never
imports SGLang.
"""

from __future__ import annotations

from typing import Any

from oracle_patching import run_patched, skip_after_loading


def _patch() -> None:
    """Answer the device questions as an sm_90 GPU would and skip the CUDA-only steps."""
    import sglang.srt.layers.quantization.awq.awq as awq
    import sglang.srt.layers.quantization.marlin_utils as marlin_utils
    import sglang.srt.layers.quantization.moe_wna16 as moe_wna16
    import sglang.srt.models.deepseek_common.deepseek_weight_loader as deepseek_loader
    import torch
    from sglang.srt.layers.quantization.awq.schemes import awq_marlin, awq_moe
    from sglang.srt.layers.quantization.gptq.schemes import gptq_marlin, gptq_moe

    marlin_utils.get_device_capability = lambda *args, **kwargs: (9, 0)
    moe_wna16.get_device_capability = lambda *args, **kwargs: (9, 0)
    awq._is_cuda = True

    skip_after_loading(gptq_marlin, gptq_moe, awq_marlin, awq_moe, moe_wna16)

    def dequantize(qweight: Any, scales: Any, qzeros: Any) -> Any:
        out = scales.shape[1]
        rows = qweight.shape[0] * 8 if qweight.shape[1] == out else qweight.shape[0]
        return torch.zeros(rows, out, dtype=torch.bfloat16)

    deepseek_loader.awq_dequantize_func = lambda: dequantize


def main() -> None:
    """Patch, then run the oracle at `sys.argv[1]` with the rest."""
    run_patched(_patch, __doc__)


if __name__ == "__main__":
    main()
