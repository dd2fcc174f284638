"""Compare draftfit's verdict with what vLLM's own loader does, case by case.

A development aid, not part of the product or the tests: it needs a vLLM venv and the
oracle script that runs vLLM's config, model-build and weight-loading code on a CPU
(`../shared/oracle/`). For every rule case in `tests/cases/` that targets vLLM 0.34.0
and has a target, it builds the checkpoint, runs `draftfit check` and the oracle, and
derives vLLM's verdict from what the oracle saw:

* incompatible   — vLLM refused the checkpoint, or the smoke forward raised;
* drafts-garbage — it loaded, but left parameters uninitialised, dropped stored tensors
                   (other than `t2d` and P-EAGLE's `mask_hidden`), produced non-finite
                   drafts, or captured other aux layers than the draft was trained on;
* compatible     — none of that.

draftfit's `degraded` (a condition-dependent warning) is compared as `compatible`: the
loader cannot see a condition such as a prompt longer than the draft's context.

Usage:
    python dev/oracle_compare.py --python ~/vllm-venv/bin/python \
        --oracle ../shared/oracle/vllm_oracle.py [--only CASE_ID ...]
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
from draftfit.report import COMPATIBLE, DEGRADED

EXPECTED_UNUSED = {"t2d", "mask_hidden"}


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
    if not result.get("accepted"):
        return "incompatible", f"{result.get('stage')}: {str(result.get('error'))[:90]}"
    runtime = result.get("runtime") or {}
    if runtime.get("error"):
        return "incompatible", f"runtime: {str(runtime['error'])[:90]}"
    reasons = []
    unloaded = [p for p in result.get("unloaded_params") or [] if "layers.1.hidden_norm" not in p]
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", required=True, help="python of the vLLM venv")
    parser.add_argument("--oracle", required=True, help="path to vllm_oracle.py")
    parser.add_argument("--only", nargs="*", help="case ids to run")
    args = parser.parse_args()
    rows, agree, unsafe = [], 0, []
    for case in CASES:
        if case.engines != ("vllm==0.34.0",) or (args.only and case.id not in args.only):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            draft, target = case.build(Path(tmp))
            if target is None:
                continue
            ours = check_path(draft, target=target, engines=case.engines, method=case.method)
            method = case.method or ours.method or "eagle3"
            run = subprocess.run(
                [
                    args.python,
                    args.oracle,
                    str(draft),
                    "--verifier",
                    str(target),
                    "--method",
                    method,
                    "--quiet",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            try:
                result = json.loads(run.stdout)
            except ValueError:
                rows.append((case.id, ours.engines[0].verdict, "harness-failed", ""))
                continue
            truth, why = oracle_verdict(result, draft, target)
        mine = ours.engines[0].verdict
        agree += (COMPATIBLE if mine == DEGRADED else mine) == truth
        if mine in (COMPATIBLE, DEGRADED) and truth != COMPATIBLE:
            unsafe.append(case.id)
        rows.append((case.id, mine, truth, why))
        print(f"{case.id:45} draftfit={mine:12} vllm={truth:12} {why}", flush=True)
    judged = [r for r in rows if r[2] != "harness-failed"]
    print(
        f"\nagreement {agree}/{len(judged)}; draftfit said compatible where vLLM did not: "
        f"{unsafe or 'none'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
