"""Run the shared MTP oracle over the tiny targets of `make_mtp_targets.py`, one at a time.

    PYTHONPATH=src python dev/make_mtp_targets.py /tmp/mtp-targets
    python dev/run_mtp_oracle.py VENV_PYTHON /tmp/mtp-targets OUT_DIR [RUN ...]
    python dev/run_mtp_oracle.py --report OUT_DIR [RUN ...]   # markdown summary

VENV_PYTHON is an engine venv's interpreter (vLLM 0.34.0 / 0.10.2 or SGLang 0.5.23: the
oracle picks the engine by what it can import). Each run writes OUT_DIR/<run>.json (the
oracle's JSON) and OUT_DIR/<run>.log (engine logs); a summary table goes to stdout. Runs are
sequential under `nice -n 10` (the oracle imports a whole engine: ~40 s, one CPU core).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ORACLE = Path(__file__).resolve().parents[1] / ".." / "shared" / "oracle" / "mtp_oracle.py"

# run name -> (target case, oracle arguments)
RUNS: dict[str, tuple[str, list[str]]] = {
    "ds_v3_k1": ("ds_v3", ["--num-speculative-tokens", "1"]),
    "ds_v3_k2": ("ds_v3", ["--num-speculative-tokens", "2"]),
    "ds_v3_nokey": ("ds_v3", []),
    "ds_v3_alias_deepseek_mtp": (
        "ds_v3",
        ["--method", "deepseek_mtp", "--num-speculative-tokens", "1"],
    ),
    "ds_v3_nextn2_k2": ("ds_v3_nextn2", ["--num-speculative-tokens", "2"]),
    "ds_v3_nextn2_k3": ("ds_v3_nextn2", ["--num-speculative-tokens", "3"]),
    "ds_v3_nextn2_k4": ("ds_v3_nextn2", ["--num-speculative-tokens", "4"]),
    "ds_v3_depth0_k1": ("ds_v3_depth0", ["--num-speculative-tokens", "1"]),
    "ds_v3_depth_absent_k1": ("ds_v3_depth_absent", ["--num-speculative-tokens", "1"]),
    "ds_v3_no_mtp_k1": ("ds_v3_no_mtp", ["--num-speculative-tokens", "1"]),
    "ds_v3_missing_eh_k1": ("ds_v3_missing_eh", ["--num-speculative-tokens", "1"]),
    "ds_v3_fp8_k1": ("ds_v3_fp8", ["--num-speculative-tokens", "1", "--cpu-fp8"]),
    "ds_v3_fp8_mtp_fp8_k1": ("ds_v3_fp8_mtp_fp8", ["--num-speculative-tokens", "1", "--cpu-fp8"]),
    "ds_v3_fp8_excluded_k1": ("ds_v3_fp8_excluded", ["--num-speculative-tokens", "1", "--cpu-fp8"]),
    "ds_v3_fp8_excluded_partial_k1": (
        "ds_v3_fp8_excluded_partial",
        ["--num-speculative-tokens", "1", "--cpu-fp8"],
    ),
    "ds_v3_fp8_excluded_runtime_names_k1": (
        "ds_v3_fp8_excluded_runtime_names",
        ["--num-speculative-tokens", "1", "--cpu-fp8"],
    ),
    "ds_v3_fp8_draft_bf16_k1": (
        "ds_v3_fp8",
        ["--num-speculative-tokens", "1", "--cpu-fp8", "--draft", "{targets}/ds_v3"],
    ),
    "glm45_k1": ("glm45", ["--num-speculative-tokens", "1"]),
    "glm45_deepseek_mtp_k1": (
        "glm45",
        ["--method", "deepseek_mtp", "--num-speculative-tokens", "1"],
    ),
    "glm45_draft_self_k1": (
        "glm45",
        ["--method", "deepseek_mtp", "--num-speculative-tokens", "1", "--draft", "{targets}/glm45"],
    ),
    "glm46_no_head_draft_self_k1": (
        "glm46_no_head",
        [
            "--method",
            "deepseek_mtp",
            "--num-speculative-tokens",
            "1",
            "--draft",
            "{targets}/glm46_no_head",
        ],
    ),
    "glm46_no_head_k1": ("glm46_no_head", ["--num-speculative-tokens", "1"]),
    "glm45_depth_absent_k1": ("glm45_depth_absent", ["--num-speculative-tokens", "1"]),
    "glm45_depth_absent_draft_self_k1": (
        "glm45_depth_absent",
        [
            "--method",
            "deepseek_mtp",
            "--num-speculative-tokens",
            "1",
            "--draft",
            "{targets}/glm45_depth_absent",
        ],
    ),
    "glm45_depth0_k1": ("glm45_depth0", ["--num-speculative-tokens", "1"]),
    "glm45_depth0_draft_self_k1": (
        "glm45_depth0",
        [
            "--method",
            "deepseek_mtp",
            "--num-speculative-tokens",
            "1",
            "--draft",
            "{targets}/glm45_depth0",
        ],
    ),
    "qwen3_next_k1": ("qwen3_next", ["--num-speculative-tokens", "1"]),
    "qwen3_next_nokey": ("qwen3_next", []),
    "qwen3_next_nextn1_k1": ("qwen3_next_nextn1", ["--num-speculative-tokens", "1"]),
    "qwen3_next_method_k1": (
        "qwen3_next",
        ["--method", "qwen3_next_mtp", "--num-speculative-tokens", "1"],
    ),
    "ds_v3_fp8_draft_unquant": (
        "ds_v3_fp8",
        [
            "--num-speculative-tokens",
            "1",
            "--extra",
            "--speculative-draft-model-quantization",
            "unquant",
        ],
    ),
    "qwen3_next_draft_self_k1": (
        "qwen3_next",
        ["--num-speculative-tokens", "1", "--draft", "{targets}/qwen3_next"],
    ),
    "glm45_draft_unquant": (
        "glm45",
        ["--extra", "--speculative-draft-model-quantization", "unquant"],
    ),
}

SUMMARY_KEYS = ("accepted", "stage", "verdict", "error")


def summarise(out: dict) -> dict:
    """The fields recorded per run in dev/mtp-oracle-results.md."""
    res = {k: out.get(k) for k in SUMMARY_KEYS}
    if isinstance(res.get("error"), str):
        res["error"] = res["error"].splitlines()[0][:300]
    res["error_origin"] = out.get("error_origin")
    res["resolved"] = out.get("resolved")
    res["unloaded_params"] = out.get("unloaded_params")
    res["unused_tensors"] = out.get("unused_tensors")
    res["unused_tensors_replaced_by_target"] = out.get("unused_tensors_replaced_by_target")
    res["dtype_mismatches"] = len(out.get("dtype_mismatches") or [])
    res["shape_mismatches"] = len(out.get("shape_mismatches") or [])
    res["overwritten_params"] = out.get("overwritten_params")
    res["notes"] = out.get("notes")
    res["vllm_strict_weight_check_ran"] = out.get("vllm_strict_weight_check_ran")
    res["never_written_params"] = out.get("never_written_params")
    res["shared_from_target"] = out.get("shared_from_target") or out.get("shared_from_verifier")
    return res


def report(out_dir: Path, names: list[str]) -> str:
    """Markdown: per run, the oracle command line and the summary of its JSON."""
    lines = []
    for name in names or sorted(p.stem for p in out_dir.glob("*.json")):
        path = out_dir / f"{name}.json"
        if not path.exists():
            continue
        try:
            out = json.loads(path.read_text())
        except json.JSONDecodeError:
            lines += [f"#### `{name}`", "", "no JSON (the oracle died)", ""]
            continue
        case, args = RUNS.get(name, ("?", []))
        shown = " ".join(a.replace("{targets}", "$T") for a in args)
        res = {k: v for k, v in summarise(out).items() if v not in (None, [], 0, {})}
        for key, value in res.items():
            if isinstance(value, list) and len(value) > 10:
                res[key] = [*value[:10], f"... ({len(value)} in all)"]
        if isinstance(res.get("resolved"), dict):
            keep = (
                "method",
                "n_predict",
                "num_speculative_tokens",
                "draft_architecture",
                "draft_model_class",
                "draft_quantization",
                "speculator_instance",
                "target_init",
                "draft_path",
                "speculative_algorithm",
                "speculative_num_steps",
                "speculative_eagle_topk",
                "speculative_num_draft_tokens",
                "speculative_draft_model_quantization",
                "target_quantization",
            )
            res["resolved"] = {k: v for k, v in res["resolved"].items() if k in keep}
        lines += [
            f"#### `{name}`",
            "",
            f"`$PY mtp_oracle.py $T/{case} {shown}`".replace("  ", " "),
            "",
            "```json",
            json.dumps(res, indent=1, default=str),
            "```",
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--report"] and len(argv) >= 2:
        print(report(Path(argv[1]), argv[2:]))
        return 0
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    python, targets, out_dir = argv[0], Path(argv[1]), Path(argv[2])
    names = argv[3:] or list(RUNS)
    out_dir.mkdir(parents=True, exist_ok=True)
    oracle = ORACLE
    for name in names:
        case, args = RUNS[name]
        args = [a.replace("{targets}", str(targets)) for a in args]
        # --log before the run's arguments: `--extra` takes everything after it
        log = ["--log", str(out_dir / f"{name}.log")]
        cmd = ["nice", "-n", "10", python, str(oracle), str(targets / case), *log, *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
        (out_dir / f"{name}.json").write_text(proc.stdout)
        try:
            out = json.loads(proc.stdout)
        except json.JSONDecodeError:
            print(f"{name}: no JSON (rc {proc.returncode}): {proc.stderr[-300:]}")
            continue
        s = summarise(out)
        print(
            f"{name}: rc={proc.returncode} verdict={s['verdict']} stage={s['stage']} "
            f"error={s['error']}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
