"""Agreement of draftfit's MTP verdicts with the engines' own code, per engine release.

    PYTHONPATH=src python dev/mtp_agreement.py [--targets DIR] [--oracle ENGINE=VENV_PYTHON ...]

Builds the tiny MTP targets of `make_mtp_targets.py` (the very bytes the oracle runs of
`mtp-oracle-results.md` were made on: DeepSeek-V3 style with and without YaRN for SGLang),
turns each oracle run of `run_mtp_oracle.RUNS` into the launch the oracle emulated (vLLM
`--speculative-config`, SGLang `--speculative-algorithm NEXTN` with its step flags), runs
`draftfit check` on it, and compares the verdict with the engine's.

The engine's verdicts are those recorded from the oracle runs (`LABELS`, from
`mtp-oracle-results.md`; runs that stopped on a CPU limit, not on the MTP logic, are left
out). With `--oracle vllm-0.34.0=/path/to/venv/bin/python` (or `vllm-0.10.2=`,
`sglang-0.5.23=`) the oracle is run again for that release instead (one run at a time,
~40 s each, under `nice`). Prints a row per run, then per release: runs, agreements, and
false `compatible`s (draftfit compatible where the engine refused or drafted garbage).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from run_mtp_oracle import ORACLE, RUNS

from draftfit.checker import check_path
from draftfit.engines.launch import settings_from

HERE = Path(__file__).parent
C, X, G = "compatible", "incompatible", "drafts-garbage"
RELEASES = {
    "vllm-0.34.0": "vllm==0.34.0",
    "vllm-0.10.2": "vllm==0.10.2",
    "sglang-0.5.23": "sglang==0.5.23",
}
# What each release's own code did with each run (mtp-oracle-results.md).
LABELS: dict[str, dict[str, str]] = {
    "vllm-0.34.0": {
        "ds_v3_k1": C,
        "ds_v3_k2": C,
        "ds_v3_nokey": X,
        "ds_v3_alias_deepseek_mtp": C,
        "ds_v3_nextn2_k2": C,
        "ds_v3_nextn2_k3": X,
        "ds_v3_nextn2_k4": C,
        "ds_v3_depth0_k1": X,
        "ds_v3_depth_absent_k1": C,
        "ds_v3_no_mtp_k1": X,
        "ds_v3_missing_eh_k1": X,
        "ds_v3_fp8_k1": G,
        "ds_v3_fp8_mtp_fp8_k1": C,
        "ds_v3_fp8_excluded_k1": C,
        "ds_v3_fp8_excluded_partial_k1": X,
        "ds_v3_fp8_excluded_runtime_names_k1": G,
        "ds_v3_fp8_draft_bf16_k1": G,
        "glm45_k1": C,
        "glm45_deepseek_mtp_k1": C,
        "glm45_depth_absent_k1": C,
        "glm45_depth0_k1": X,
        "glm46_no_head_k1": C,
        "qwen3_next_k1": C,
        "qwen3_next_method_k1": C,
        "qwen3_next_nextn1_k1": C,
        "qwen3_next_nokey": X,
    },
    "vllm-0.10.2": {
        "glm45_k1": X,
        "glm45_deepseek_mtp_k1": X,
        "glm46_no_head_draft_self_k1": X,
        "glm46_no_head_k1": X,
        "glm45_depth_absent_draft_self_k1": X,
        "glm45_depth0_draft_self_k1": X,
    },
    "sglang-0.5.23": {
        "ds_v3_k1": C,
        "ds_v3_nokey": C,
        "ds_v3_nextn2_k2": X,
        "ds_v3_depth0_k1": X,
        "ds_v3_depth_absent_k1": C,
        "ds_v3_no_mtp_k1": G,
        "ds_v3_missing_eh_k1": G,
        "ds_v3_fp8_k1": X,
        "ds_v3_fp8_excluded_k1": X,
        "ds_v3_fp8_excluded_runtime_names_k1": C,
        "ds_v3_fp8_draft_unquant": X,
        "glm45_k1": C,
        "glm46_no_head_k1": C,
        "glm45_depth_absent_k1": C,
    },
}


def launch(release: str, args: list[str], targets: Path, case: str) -> str:
    """The launch the oracle emulated for a run's arguments."""
    path = targets / case
    method, k, draft, extra = "mtp", None, None, []
    rest = list(args)
    while rest:
        word = rest.pop(0)
        if word == "--method":
            method = rest.pop(0)
        elif word == "--num-speculative-tokens":
            k = int(rest.pop(0))
        elif word == "--draft":
            draft = rest.pop(0).replace("{targets}", str(targets))
        elif word == "--extra":
            extra, rest = rest, []
    if release.startswith("sglang"):
        flags = f" --speculative-num-steps {k} --speculative-eagle-topk 1" if k else ""
        flags += f" --speculative-num-draft-tokens {k + 1}" if k else ""
        flags += f" --speculative-draft-model-path {draft}" if draft else ""
        return (
            f"python -m sglang.launch_server --model-path {path} --speculative-algorithm NEXTN"
            + flags
            + "".join(f" {e}" for e in extra)
        )
    keys = [f'"method": "{method}"']
    if draft:
        keys.append(f'"model": "{draft}"')
    if k is not None:
        keys.append(f'"num_speculative_tokens": {k}')
    return f"vllm serve {path} --speculative-config '{{{', '.join(keys)}}}'"


def oracle_verdict(python: str, targets: Path, case: str, args: list[str]) -> str:
    out = subprocess.run(
        ["nice", "-n", "10", python, str(ORACLE), str(targets / case)]
        + [a.replace("{targets}", str(targets)) for a in args],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        return str(json.loads(out.stdout.strip().splitlines()[-1])["verdict"])
    except (IndexError, ValueError, KeyError):
        return "oracle-failed"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", type=Path)
    parser.add_argument("--oracle", action="append", default=[], metavar="RELEASE=PYTHON")
    ns = parser.parse_args(argv)
    live = dict(item.split("=", 1) for item in ns.oracle)
    root = ns.targets or Path(tempfile.mkdtemp(prefix="mtp-agreement-"))
    plain, yarn = root / "plain", root / "yarn"
    make = [sys.executable, str(HERE / "make_mtp_targets.py")]
    if not plain.exists():
        subprocess.run([*make, str(plain)], check=True, capture_output=True)
    if not yarn.exists():
        subprocess.run([*make, "--deepseek-yarn", str(yarn)], check=True, capture_output=True)
    totals: list[str] = []
    for release, labels in LABELS.items():
        targets = yarn if release.startswith("sglang") else plain
        agree = false_compatible = 0
        for run, recorded in labels.items():
            case, args = RUNS[run]
            expected = (
                oracle_verdict(live[release], targets, case, args) if release in live else recorded
            )
            serve = settings_from(serve_args=launch(release, args, targets, case))
            report = check_path(targets / case, engines=[RELEASES[release]], serve=serve)
            got = report.engines[0].verdict.value
            codes = ",".join(sorted({f.code for f in report.findings})) or "-"
            same = got == expected
            agree += same
            false_compatible += got == C and expected != C
            mark = "ok " if same else "DIFF"
            print(f"{mark} {release:14} {run:38} engine {expected:15} draftfit {got:15} {codes}")
        totals.append(
            f"{release}: {agree}/{len(labels)} agree ({100 * agree / len(labels):.0f}%), "
            f"{false_compatible} false compatible"
        )
    print()
    print("\n".join(totals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
