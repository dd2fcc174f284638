"""Measure how often draftfit's verdict on a launch line agrees with the engine's own parser.

Each line of a small corpus of `vllm serve …` (or `python -m sglang.launch_server …`,
`--engine sglang`) launches (written for one tiny EAGLE-3 draft
from the test factory next to one tiny target) goes through both:

* the engine: `../shared/oracle/launch_oracle.py` in a vLLM (or SGLang) venv (the
  release's own argument parser, `EngineArgs.from_cli_args` and the speculative config,
  or SGLang's `prepare_server_args`; no server), which says whether the launch is accepted
  and which method it resolves;
* draftfit: `draftfit check DRAFT --target TARGET --engine vllm==X --serve-args LINE`.

The engine's label is `refused` (the parser or a config class raises), `misruns` (accepted,
but the checked draft is not run as EAGLE-3: no draft, another method, another draft) or
`runs`. draftfit agrees when a `refused` or `misruns` launch gets a failing verdict
(`incompatible`, `drafts-garbage`) and a `runs` launch does not. Usage:

    PYTHONPATH=src python dev/launch_agreement.py --venv ~/vllm-venv --release 0.34.0 \\
        [--oracle ../shared/oracle/launch_oracle.py] [--json OUT.json]

A development aid: it needs a vLLM venv (../shared/oracle/setup_venv.sh) and never runs in
the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FAILING = {"incompatible", "drafts-garbage"}


def corpus(draft: str, other: str, target: str) -> list[str]:
    """Launch lines for `draft` (an EAGLE-3 draft in a folder without "eagle" in its name)
    next to `target`; `other` is a second draft folder. Settings files the lines name are
    written beside the draft's folder."""
    folder = Path(draft).parent
    nested = folder / "nested.yaml"
    nested.write_text(
        f"tensor-parallel-size: 1\nspeculative-config:\n  model: {draft}\n"
        "  method: eagle3\n  num_speculative_tokens: 3\n"
    )
    as_json = folder / "as-json.yaml"
    as_json.write_text(
        "speculative-config: '"
        + json.dumps({"model": draft, "method": "eagle3", "num_speculative_tokens": 3})
        + "'\n"
    )
    unknown_key = folder / "unknown-key.yaml"
    unknown_key.write_text("tensor-parallel: 2\n")

    def spec(**fields: object) -> str:
        return "'" + json.dumps(fields) + "'"

    n3 = {"num_speculative_tokens": 3}
    good = spec(model=draft, method="eagle3", **n3)
    serve = f"vllm serve {target}"
    return [
        f"{serve} --speculative-config {good}",
        f"{serve} --speculative-config {spec(model=draft, **n3)}",
        f"{serve} --speculative-config {spec(model=draft, method='eagle-3', **n3)}",
        f"{serve} --speculative-config {spec(model=draft, method='EAGLE3', **n3)}",
        f"{serve} --speculative-config {spec(model=draft, method='eagle', **n3)}",
        f"{serve} --speculative-config {spec(model=draft, method='eagle3', num_spec_tokens=3)}",
        f"{serve} --speculative-config {spec(model=draft, method='eagle3')}",
        f"{serve} --speculative-config {spec(model=other, method='eagle3', **n3)}",
        f"{serve} --speculative-config {spec(method='eagle3', **n3)}",
        f"{serve} --tp 2 --speculative-config {good}",
        f"{serve} -tp 2 --speculative-config {good}",
        f"{serve} --tensor-parallel 2 --speculative-config {good}",
        f"{serve} --tensor_parallel_size 2 --speculative-config {good}",
        f"{serve} --max-num 8 --speculative-config {good}",
        f"{serve} --max-num-seqs 8 --port 8000 --host 0.0.0.0 --speculative-config {good}",
        f"{serve} --gpu-memory-utilization 0.8 --enforce-eager --speculative-config {good}",
        f"{serve} --enable-prefix 1 --speculative-config {good}",
        f"{serve} --no-such-flag --speculative-config {good}",
        f"{serve} --speculative-model {draft} --num-speculative-tokens 3",
        f"{serve} -tp 2",
        f"{serve}",
        f"{serve} --speculative_config {good}",
        f"{serve} -sc {good}",
        f"{serve} --speculative-config.method eagle3 --speculative-config.model {draft} "
        "--speculative-config.num_speculative_tokens 3",
        f"{serve} --speculative-config "
        + spec(model=draft, method="eagle3", **n3, draft_tensor_parallel_size=2),
        f"{serve} -tp 2 --speculative-config "
        + spec(model=draft, method="eagle3", **n3, draft_tensor_parallel_size=1),
        f"{serve} -tp 2 --speculative-config "
        + spec(model=draft, method="eagle3", **n3, draft_tensor_parallel_size=2),
        f"VLLM_USE_V2_MODEL_RUNNER=1 {serve} --speculative-config {good}",
        f"{serve} --trust-remote-code --speculative-config {good}",
        f"{serve} --speculative-config "
        + spec(model=draft, method="eagle3", num_speculative_tokens=0),
        # relative to the working directory (the engine's and draftfit's: the draft's parent)
        f"{serve} --speculative-config " + spec(model=Path(draft).name, method="eagle3", **n3),
        f"{serve} --speculative-config "
        + spec(model="./" + Path(draft).name, method="eagle3", **n3),
        f"{serve} --speculative-config {spec(model=draft + '/', method='eagle3', **n3)}",
        f"{serve} --speculative-config {spec(model=draft, method='draft_model', **n3)}",
        f"{serve} --speculative-config {spec(model=draft, method='mtp', **n3)}",
        f"{serve} --speculative-config {spec(model=draft, method='ngram', **n3)}",
        f"{serve} --speculative-config "
        + spec(model=draft, method="eagle3", **n3, draft_tensor_parallel_size=1),
        f"{serve} --speculative-config "
        + spec(model=draft, method="eagle3", num_speculative_tokens=-1),
        f'{serve} --speculative-config \'{{"model": "{draft}", "method": eagle3}}\'',
        f"{serve} -tp=2 --speculative-config {good}",
        f"{serve} --tensor-parallel-size=2 --dtype bfloat16 --speculative-config {good}",
        f"{serve} --max-model-len 4096 --seed 0 --speculative-config {good}",
        f"{serve} --enable-chunked-prefill --speculative-config {good}",
        f"{serve} --pipeline-parallel-size 2 --speculative-config {good}",
        f"VLLM_ATTENTION_BACKEND=FLASH_ATTN {serve} --speculative-config {good}",
        f"{serve} --config {nested}",
        f"{serve} --config {as_json}",
        f"{serve} --config {unknown_key} --speculative-config {good}",
        f"{serve} --speculative-config "
        + spec(model=draft, method="eagle3", **n3, max_model_len=2048),
    ]


def sglang_corpus(draft: str, other: str, target: str) -> list[str]:
    """`python -m sglang.launch_server` lines for `draft` (an EAGLE-3 draft SGLang runs)."""
    base = f"python -m sglang.launch_server --model-path {target}"
    good = f"{base} --speculative-algorithm EAGLE3 --speculative-draft-model-path {draft}"
    return [
        good,
        f"{good} --speculative-num-steps 3 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 4",
        f"{base} --speculative-algo EAGLE3 --speculative-draft-model-path {draft}",
        f"{base} --speculative-algorithm eagle3 --speculative-draft-model-path {draft}",
        f"{base} --speculative-algorithm EAGLE --speculative-draft-model-path {draft}",
        f"{base} --speculative-algorithm EAGLE-3 --speculative-draft-model-path {draft}",
        f"{base} --speculative-draft-model-path {draft}",
        f"{base} --speculative-algorithm EAGLE3",
        f"{base} --speculative-algorithm EAGLE3 --speculative-draft {draft}",
        f"{good} --cuda-graph-max-bs 8",
        f"{good} --tp 2",
        f"{good} --tp-size 2",
        f"{good} --tensor-parallel-size 2",
        f"{good} --pp 2",
        f"{good} --no-such-flag",
        f"{good} --mem-fraction-static 0.8 --port 30000",
        f"{good} --disable-cuda-graph",
        f"{good} --disable-cuda-graph true",
        f"{base} --speculative-algorithm EAGLE3 --speculative-draft-model-path {other}",
        f"{good} --context-length 1024",
        f"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 {good}",
        f"{good} --trust-remote-code",
        f"{good} --speculative-num-steps 0",
        f"{good} --speculative-eagle-topk 0",
        f"{base} --speculative-algorithm EAGLE3 --speculative-draft-model-path " + Path(draft).name,
        f"{base} --speculative-algorithm NEXTN --speculative-draft-model-path {draft}",
        f"{base} --speculative-algorithm STANDALONE --speculative-draft-model-path {draft}",
        f"{base} --speculative-algorithm NGRAM",
        f"{good} --speculative-num-steps 3 --speculative-eagle-topk 4 "
        "--speculative-num-draft-tokens 8",
        f"{good} --speculative-num-draft-tokens 4",
        f"{good} --dp 2",
        f"{good} --tp 2 --enable-dp-attention --dp 2",
        f"{good} --speculative-draft-model-revision main",
        f"{good} --dtype bfloat16 --max-running-requests 8",
        f"{good} --speculative-num-steps",
        f"{good} --context-length 8192",
    ]


def engine_label(oracle: dict[str, object], draft: str) -> str:
    if not oracle.get("parsed_ok"):
        return "refused"
    resolved = oracle.get("resolved") or {}
    assert isinstance(resolved, dict)
    if str(oracle.get("resolved_method")).lower() != "eagle3":
        return "misruns"
    named = resolved.get("draft_model")  # relative to the folder the oracle ran in
    if not named:
        return "misruns"  # no draft: SGLang loads the target's own weights as the draft
    where = os.path.dirname(draft)
    if isinstance(named, str) and os.path.realpath(os.path.join(where, named)) != os.path.realpath(
        draft
    ):
        return "misruns"
    return "runs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", required=True, type=Path)
    parser.add_argument("--release", required=True)
    parser.add_argument("--engine", choices=("vllm", "sglang"), default="vllm")
    parser.add_argument(
        "--oracle", type=Path, default=ROOT.parent / "shared" / "oracle" / "launch_oracle.py"
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from tests import factory as f

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        make = f.speculators if args.engine == "vllm" else f.specforge
        draft = str(make().write(Path(tmp) / "draft"))
        other = str(make().write(Path(tmp) / "other"))
        target = str(f.llama_target(Path(tmp) / "target"))
        lines = (corpus if args.engine == "vllm" else sglang_corpus)(draft, other, target)
        for line in lines:
            done = subprocess.run(
                [str(args.venv / "bin" / "python"), str(args.oracle), line],
                capture_output=True,
                text=True,
                cwd=tmp,
                timeout=300,
            )
            text = done.stdout[done.stdout.find("{") :]
            oracle = json.loads(text) if text else {"parsed_ok": False, "error": done.stderr}
            label = engine_label(oracle, draft)
            ours = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "draftfit",
                    "check",
                    draft,
                    "--target",
                    target,
                    "--engine",
                    f"{args.engine}=={args.release}",
                    "--serve-args",
                    line,
                    "--format",
                    "json",
                ],
                capture_output=True,
                text=True,
                cwd=tmp,
                timeout=300,
            )
            try:
                verdict = json.loads(ours.stdout)["engines"][0]["verdict"]
            except (ValueError, KeyError, IndexError):
                verdict = f"exit {ours.returncode}: {ours.stderr.strip()[:120]}"
            agree = (verdict in FAILING) == (label != "runs")
            shown = line.replace(tmp, "<tmp>")
            rows.append(
                {
                    "line": shown,
                    "engine": label,
                    "error": oracle.get("error"),
                    "method": oracle.get("resolved_method"),
                    "draftfit": verdict,
                    "agree": agree,
                }
            )
            print(f"{'ok ' if agree else 'XX '} {label:8} {verdict:15} {shown[:150]}", flush=True)
    agreed = sum(r["agree"] for r in rows)
    false_ok = sum(1 for r in rows if r["engine"] != "runs" and r["draftfit"] not in FAILING)
    print(
        f"{args.engine} {args.release}: {agreed}/{len(rows)} agree; {false_ok} passed where the "
        "engine refuses or misruns"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
