"""Compare draftfit's verdict with what an engine's own loader does, case by case.

A development aid, not part of the product or the tests: it needs an engine venv and the
oracle script that runs the engine's config, model-build and weight-loading code on a CPU
(`../shared/oracle/`). For every rule case in `tests/cases/` that targets vLLM 0.34.0 (or
the `--engine` release itself) and has a target, it builds the checkpoint, runs `draftfit
check` for `--engine` (default `vllm==0.34.0`) and the oracle, and derives the engine's
verdict from what the oracle saw. For vLLM (0.34.0, or 0.10.2 through the oracle's port):

* incompatible   — vLLM refused the checkpoint, or the smoke forward raised;
* drafts-garbage — it loaded, but left parameters uninitialised (other than an attention
                   layer's KV-cache scales and zero points, which vLLM defaults: see
                   DEFAULTED_PARAMS), dropped stored tensors
                   (other than `t2d` and P-EAGLE's `mask_hidden`), produced non-finite
                   drafts, or captured other aux layers than the draft was trained on;
* compatible     — none of that;
* no verdict     — the oracle failed (`harness-failed`), or only the CPU build's own kernels
                   failed (`oracle-unavailable`: a missing `_C` op, CPU_ONLY_FORWARD_ERRORS).

For SGLang (`--engine sglang==0.5.23`, `sglang_oracle.py`, EAGLE-3 drafts only: the
oracle launches `--speculative-algorithm EAGLE3`, so EAGLE-1 cases are skipped):

* incompatible   — SGLang raised at some stage (with or without
                   SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: a plain launch refuses), or
                   the oracle names a forward risk (a shape or index the first forward fails
                   on; no forward runs there);
* drafts-garbage — it loaded, but parameters were never or partly written, stored tensors
                   were skipped (other than `d2t`/`t2d`) or truncated, or the target
                   captures other aux layers than the draft was trained on;
* compatible     — none of that;
* no verdict     — the target class itself could not be built on the CPU
                   (`target_model.build_load`, `oracle-unavailable`: the oracle's LIMITS).

draftfit's `degraded` (a condition-dependent warning) is compared as `compatible`: the
loader cannot see a condition such as a prompt longer than the draft's context.
draftfit's `unverified` (a finding whose consequence draftfit's data does not settle, or a
skipped check) claims neither way: it is counted apart, never as agreement, and never as a
false `compatible`.

Usage:
    python dev/oracle_compare.py --python ~/vllm-venv/bin/python \
        --oracle ../shared/oracle/vllm_oracle.py [--engine vllm==0.10.2] \
        [--only CASE_ID ...] [--rules DF114 ...] [--jsonl OUT]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.cases import CASES

from draftfit.checker import check_path
from draftfit.report import COMPATIBLE, DEGRADED, UNVERIFIED

EXPECTED_UNUSED = {"t2d", "mask_hidden"}
# An attention layer's KV-cache quantization parameters, which a compressed-tensors draft's
# attention gets whatever its config quantizes: vLLM fills them with defaults (scales 1,
# zero points 0, "not used"), and uses the defaults for an unquantized KV cache, when the
# checkpoint has none (compressed_tensors.py:1144-1180@v0.34.0, kv_cache.py:78-125@v0.34.0;
# kv_cache.py:28-40@v0.10.2, where they start at -1 and are set to 1 after loading).
DEFAULTED_PARAMS = tuple(
    f".attn.{name}" for name in ("q_scale", "k_scale", "v_scale", "prob_scale")
) + tuple(f".attn.{kind}_zero_point" for kind in "qkv")
# Smoke-forward errors of the CPU build's own kernels, which no GPU launch runs: the W4A16
# CPU GEMM op missing from a wheel without vllm._C, and the CPU torch scaled-mm fallback for
# a static FP8 input scale (see quantized-drafts-oracle-results.md, q2). The oracle gives
# no verdict then (`oracle-unavailable`), counted apart like a harness failure.
CPU_ONLY_OP = "'_OpNamespace' '_C' object has no attribute"  # e.g. a MoE target's prepack
META_COPY = "Cannot copy out of meta tensor"
CPU_ONLY_FORWARD_ERRORS = (
    "'_C' object has no attribute 'cpu_gemm_wna16'",
    "narrow() cannot be applied to a 0-dim tensor",
)
SGLANG_EXPECTED_UNUSED = {"d2t", "t2d"}
DEFAULT_ENGINE = "vllm==0.34.0"


def trained_capture_ids(config: dict, num_layers: int) -> tuple[int, ...]:
    """The producers' conventions, applied independently of draftfit's code."""
    top = config.get("eagle_aux_hidden_state_layer_ids")
    if top:
        return tuple(sorted(set(top)))
    nested = (config.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    default = (2, num_layers // 2, num_layers - 3)
    if nested:
        if tuple(nested) == default:
            return default
        return tuple(sorted({i + 1 for i in nested}))
    layer_ids = (config.get("eagle_config") or {}).get("layer_ids")
    if layer_ids:
        return tuple(sorted(set(layer_ids)))
    return default


def oracle_verdict(result: dict, draft: Path, target: Path) -> tuple[str, str]:
    if not result.get("accepted") and CPU_ONLY_OP in str(result.get("error")):
        return "oracle-unavailable", f"CPU build lacks an op: {str(result.get('error'))[:80]}"
    if not result.get("accepted") and META_COPY in str(result.get("error")):
        # `--verifier-init meta`: the oracle's target has no data where this draft reads it
        return "oracle-unavailable", f"meta target: {str(result.get('error'))[:80]}"
    if not result.get("accepted"):
        return "incompatible", f"{result.get('stage')}: {str(result.get('error'))[:90]}"
    runtime = result.get("runtime") or {}
    if runtime.get("error"):
        if any(text in str(runtime["error"]) for text in CPU_ONLY_FORWARD_ERRORS):
            return "oracle-unavailable", f"CPU-only forward: {str(runtime['error'])[:90]}"
        return "incompatible", f"runtime: {str(runtime['error'])[:90]}"
    reasons = []
    unloaded = [
        p
        for p in result.get("unloaded_params") or []
        if "layers.1.hidden_norm" not in p and not p.endswith(DEFAULTED_PARAMS)
    ]
    if unloaded:
        reasons.append(f"unloaded {unloaded[:2]}")
    unused = [t for t in result.get("unused_tensors") or [] if t not in EXPECTED_UNUSED]
    if unused:
        reasons.append(f"unused {unused[:2]}")
    if runtime.get("check_failures"):
        reasons.append(str(runtime["check_failures"][:1]))
    used = (result.get("resolved") or {}).get("aux_layers_used")
    config = json.loads((draft / "config.json").read_text())
    layers = json.loads((target / "config.json").read_text()).get("num_hidden_layers", 0)
    trained = trained_capture_ids(config, layers) if layers else None
    if used is not None and trained is not None and tuple(sorted(set(used))) != trained:
        reasons.append(f"aux {used} != trained {trained}")
    return ("drafts-garbage", "; ".join(reasons)) if reasons else ("compatible", "")


def sglang_verdict(result: dict, draft: Path, target: Path) -> tuple[str, str]:
    """SGLang's verdict from `sglang_oracle.py`'s JSON (see the module docstring)."""
    if result.get("stage") == "target_model.build_load":
        # the target class itself cannot be built on this CPU (the oracle's LIMITS)
        return "oracle-unavailable", f"target not built: {str(result.get('error'))[:90]}"
    if not result.get("accepted"):
        return "incompatible", f"{result.get('stage')}: {str(result.get('error'))[:90]}"
    if not result.get("accepted_without_env"):
        error = (result.get("without_env") or {}).get("error")
        return "incompatible", f"without SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: {error}"[:120]
    if result.get("forward_risks"):
        return "incompatible", f"forward risk: {str(result['forward_risks'][:1])[:100]}"
    reasons = []
    for key in ("never_written_params", "partially_written_params", "truncated_tensors"):
        if result.get(key):
            reasons.append(f"{key} {result[key][:2]}")
    unused = [t for t in result.get("unused_tensors") or [] if t not in SGLANG_EXPECTED_UNUSED]
    if unused:
        reasons.append(f"unused {unused[:2]}")
    used = (result.get("aux") or {}).get("layers_to_capture")
    config = json.loads((draft / "config.json").read_text())
    layers = json.loads((target / "config.json").read_text()).get("num_hidden_layers", 0)
    trained = trained_capture_ids(config, layers) if layers else None
    if used is not None and trained is not None and tuple(sorted(set(used))) != trained:
        reasons.append(f"aux {used} != trained {trained}")
    return ("drafts-garbage", "; ".join(reasons)) if reasons else ("compatible", "")


def oracle_command(args: argparse.Namespace, draft: Path, target: Path, method: str) -> list[str]:
    """The oracle's command line for the engine under comparison."""
    if args.engine.startswith("sglang"):
        return [args.python, args.oracle, str(draft), "--target", str(target), "--quiet"]
    return [
        args.python,
        args.oracle,
        str(draft),
        "--verifier",
        str(target),
        "--method",
        method,
        "--quiet",
        *(["--verifier-init", args.verifier_init] if args.verifier_init else []),
    ]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", required=True, help="python of the vLLM venv")
    parser.add_argument("--oracle", required=True, help="path to vllm_oracle.py")
    parser.add_argument("--engine", default=DEFAULT_ENGINE, help="e.g. vllm==0.10.2")
    parser.add_argument("--only", nargs="*", help="case ids to run")
    parser.add_argument("--rules", nargs="*", help="only cases where one of these codes fires")
    parser.add_argument(
        "--verifier-init",
        choices=("dummy", "meta"),
        help="vLLM: how the oracle builds the target (meta: targets the CPU build cannot make)",
    )
    parser.add_argument("--jsonl", type=Path, help="also write one JSON row per case here")
    args = parser.parse_args()
    engine = args.engine.split("==")[0]
    judge = sglang_verdict if engine == "sglang" else oracle_verdict
    rows, agree, unsafe, unclaimed, failed = [], 0, [], [], []
    out = args.jsonl.open("w") if args.jsonl else None
    for case in CASES:
        if case.engines not in ((DEFAULT_ENGINE,), (args.engine,)):
            continue
        if args.only and case.id not in args.only:
            continue
        if args.rules and not case.fires & set(args.rules):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            draft, target = case.build(Path(tmp))
            if target is None:
                continue
            # as the case is checked, less its launch: the oracle runs the default launch
            ours = check_path(
                draft,
                target=target,
                engines=(args.engine,),
                method=case.method,
                draft_is_for_target=case.draft_is_for_target,
            )
            method = case.method or ours.method or "eagle3"
            if engine == "sglang" and method != "eagle3":
                continue
            run = subprocess.run(
                oracle_command(args, draft, target, method),
                capture_output=True,
                text=True,
                check=False,
            )
            mine = ours.engines[0].verdict
            codes = sorted({item.code for item in ours.findings if item.counts})
            try:
                result = json.loads(run.stdout)
                if result.get("harness_error"):
                    raise ValueError(result.get("error"))
            except ValueError as error:
                failed.append(case.id)
                truth, why = "harness-failed", str(error)[:100]
            else:
                truth, why = judge(result, draft, target)
        if truth == "oracle-unavailable":
            failed.append(case.id)
        elif truth != "harness-failed":
            if mine == UNVERIFIED:
                unclaimed.append(case.id)
            else:
                agree += (COMPATIBLE if mine == DEGRADED else mine) == truth
            if mine in (COMPATIBLE, DEGRADED) and truth != COMPATIBLE:
                unsafe.append(case.id)
        rows.append((case.id, mine, truth, why))
        print(f"{case.id:45} draftfit={mine:14} {engine}={truth:14} {why}", flush=True)
        if out:
            row = {"case": case.id, "draftfit": str(mine), "engine": truth, "why": why}
            out.write(json.dumps({**row, "codes": codes}) + "\n")
            out.flush()
    judged = len(rows) - len(failed) - len(unclaimed)
    print(
        f"\n{args.engine}: agreement {agree}/{judged}; unverified (no claim) {len(unclaimed)}"
        f"{' ' + str(unclaimed) if unclaimed else ''}; no oracle verdict {len(failed)}"
        f"{' ' + str(failed) if failed else ''}; draftfit said compatible where the engine "
        f"did not: {unsafe or 'none'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
