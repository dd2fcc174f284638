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
        [--engine vllm|sglang] [--batch] [--oracle ../shared/oracle/launch_oracle.py] \\
        [--json OUT.json]

`--batch` runs every line in one process of the venv (`launch_oracle_batch.py`: the engine
is imported once) instead of one `launch_oracle.py` process per line.

Some lines carry their own target or draft (Kimi-K2.5- and Kimi-K2-shaped targets whose
config names its own code in `auto_map`, a target and a draft of a model type no registry
knows, with that code beside them), and draftfit checks that pair. A line whose draft or
target is a name shaped like a Hub id that is no folder here is marked `hub`: the engine
looks it up on the Hub (the oracle runs offline and cannot), draftfit does not judge it, and
it is counted apart from the agreement.

A development aid: it needs a vLLM or SGLang venv (../shared/oracle/setup_venv.sh) and never
runs in the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FAILING = {"incompatible", "drafts-garbage"}


class Case(NamedTuple):
    """A launch line, the draft and target draftfit checks it for (None: the corpus's
    own), and whether it names a Hub-shaped path the engine would look up on the Hub."""

    line: str
    target: str | None = None
    draft: str | None = None
    hub: bool = False


class Fixtures(NamedTuple):
    """The folders a corpus's lines name, written in one temporary folder."""

    draft: str
    other: str
    target: str
    kimi_k25: str
    kimi_k2: str
    custom_target: str
    custom_draft: str


# A config class for the model type `llama_custom`, which no registry knows: the code a
# config's `auto_map` names, run by the engine only with --trust-remote-code.
CUSTOM_CODE = """from transformers import LlamaConfig


class CustomConfig(LlamaConfig):
    model_type = "llama_custom"
"""
# Kimi-K2.5's own config class, reduced to what the engine reads (the Hub's
# configuration_kimi_k25.py builds the same object: a text_config of DeepSeek-V3's class).
KIMI_K25_CODE = """from transformers import DeepseekV3Config, PretrainedConfig


class KimiK25Config(PretrainedConfig):
    model_type = "kimi_k25"

    def __init__(self, text_config=None, **kwargs):
        if isinstance(text_config, dict):
            text_config = DeepseekV3Config(**text_config)
        self.text_config = text_config or DeepseekV3Config()
        super().__init__(**kwargs)
"""
KIMI_K2_CODE = """from transformers import DeepseekV3Config as _Base


class DeepseekV3Config(_Base):
    model_type = "kimi_k2"
"""


def fixtures(root: Path, engine: str) -> Fixtures:
    """The tiny checkpoints of the corpus (tests/factory.py), with the code their configs
    name written beside them."""
    from tests import factory as f

    make = f.speculators if engine == "vllm" else f.specforge
    draft = str(make().write(root / "draft"))
    other = str(make().write(root / "other"))
    target = str(f.llama_target(root / "target"))
    custom = {"AutoConfig": "configuration_custom.CustomConfig"}
    custom_target = f.llama_target(
        root / "custom-target", model_type="llama_custom", auto_map=custom
    )
    (custom_target / "configuration_custom.py").write_text(CUSTOM_CODE)
    specforge = f.specforge()
    specforge.config.update(model_type="llama_custom", auto_map=custom)
    custom_draft = specforge.write(root / "custom-draft")
    (custom_draft / "configuration_custom.py").write_text(CUSTOM_CODE)
    k2_code = {"AutoConfig": "configuration_deepseek.DeepseekV3Config"}
    kimi_k2 = f.kimi_mla_target(root / "kimi-k2", auto_map=k2_code)
    (kimi_k2 / "configuration_deepseek.py").write_text(KIMI_K2_CODE)
    kimi_k25 = f.kimi_k25_target(root / "kimi-k25")
    (kimi_k25 / "configuration_kimi_k25.py").write_text(KIMI_K25_CODE)
    (kimi_k25 / "configuration_deepseek.py").write_text(KIMI_K2_CODE)
    return Fixtures(
        draft, other, target, str(kimi_k25), str(kimi_k2), str(custom_target), str(custom_draft)
    )


def corpus(fx: Fixtures) -> list[str | Case]:
    """Launch lines for `fx.draft` (an EAGLE-3 draft in a folder without "eagle" in its
    name) next to `fx.target`; `fx.other` is a second draft folder. Settings files the lines
    name are written beside the draft's folder."""
    draft, other, target = fx.draft, fx.other, fx.target
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
    with_model = folder / "with-model.yaml"
    with_model.write_text(f"model: {target}\ntensor-parallel-size: 1\n")

    def draft_at(path: str) -> str:
        return f"{serve} --speculative-config {spec(model=path, method='eagle3', **n3)}"

    def served(at: str, *flags: str) -> str:
        return " ".join(["vllm serve", at, *flags, "--speculative-config", good])

    lines: list[str | Case] = [
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
    # The launch's own paths: a draft or target path that is no folder here (relative ones
    # resolved from the working folder, the engine's and draftfit's), and Hub-shaped names.
    name = Path(draft).name
    lines += [
        draft_at(str(folder / "no-such-draft")),
        draft_at("./no-such-draft"),
        draft_at("no-such-draft/"),
        draft_at("~/no-such-draft"),
        draft_at("a/b/no-such-draft"),
        draft_at(f"./{name}/"),
        draft_at(f"{folder}/./{name}"),
        Case(draft_at("no-such-draft"), hub=True),
        Case(draft_at("some-org/no-such-draft"), hub=True),
        served(str(folder / "no-such-target")),
        served("./no-such-target"),
        Case(served("some-org/no-such-target"), hub=True),
        served("./" + Path(target).name),
        f"VLLM_USE_V2_MODEL_RUNNER=1 {draft_at('./no-such-draft')}",
        # The target given with `--model`, alone or with the positional one.
        f"vllm serve --model {target} --speculative-config {good}",
        f"vllm serve --model={target} --speculative-config {good}",
        f"vllm serve -tp 1 --model {target} --speculative-config {good}",
        f"vllm serve {target} --model {target} --speculative-config {good}",
        f"VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve --model {target} "
        f"--speculative-config {good}",
        f"vllm serve --config {with_model} --speculative-config {good}",
        # Configs that name code of their own (`auto_map`), with and without the flag.
        Case(served(fx.custom_target), target=fx.custom_target),
        Case(served(fx.custom_target, "--trust-remote-code"), target=fx.custom_target),
        Case(served(fx.custom_target, "--no-trust-remote-code"), target=fx.custom_target),
        Case(served(fx.kimi_k25), target=fx.kimi_k25),
        Case(served(fx.kimi_k25, "--trust-remote-code"), target=fx.kimi_k25),
        Case(served(fx.kimi_k2), target=fx.kimi_k2),
        Case(served(fx.kimi_k2, "--trust-remote-code"), target=fx.kimi_k2),
        Case(
            f"{serve} --speculative-config {spec(model=fx.custom_draft, method='eagle3', **n3)}",
            draft=fx.custom_draft,
        ),
        Case(
            f"{serve} --trust-remote-code --speculative-config "
            + spec(model=fx.custom_draft, method="eagle3", **n3),
            draft=fx.custom_draft,
        ),
    ]
    return lines


def sglang_corpus(fx: Fixtures) -> list[str | Case]:
    """`python -m sglang.launch_server` lines for `fx.draft` (an EAGLE-3 draft SGLang runs)."""
    draft, other, target = fx.draft, fx.other, fx.target
    base = f"python -m sglang.launch_server --model-path {target}"
    good = f"{base} --speculative-algorithm EAGLE3 --speculative-draft-model-path {draft}"
    folder = Path(draft).parent

    def draft_at(path: str) -> str:
        return f"{base} --speculative-algorithm EAGLE3 --speculative-draft-model-path {path}"

    def served(at: str, *flags: str, draft_path: str = draft) -> str:
        return " ".join(
            [
                "python -m sglang.launch_server --model-path",
                at,
                *flags,
                "--speculative-algorithm EAGLE3 --speculative-draft-model-path",
                draft_path,
            ]
        )

    lines: list[str | Case] = [
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
    name = Path(draft).name
    lines += [
        draft_at(str(folder / "no-such-draft")),
        draft_at("./no-such-draft"),
        draft_at("no-such-draft/"),
        draft_at("'~/no-such-draft'"),
        draft_at("a/b/no-such-draft"),
        draft_at(f"./{name}/"),
        Case(draft_at("no-such-draft"), hub=True),
        Case(draft_at("some-org/no-such-draft"), hub=True),
        served(str(folder / "no-such-target")),
        served("./no-such-target"),
        Case(served("some-org/no-such-target"), hub=True),
        served("./" + Path(target).name),
        f"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 {draft_at('./no-such-draft')}",
        good.replace("--model-path", "--model"),
        Case(served(fx.custom_target), target=fx.custom_target),
        Case(served(fx.custom_target, "--trust-remote-code"), target=fx.custom_target),
        Case(served(fx.kimi_k25), target=fx.kimi_k25),
        Case(served(fx.kimi_k25, "--trust-remote-code"), target=fx.kimi_k25),
        Case(served(fx.kimi_k2), target=fx.kimi_k2),
        Case(served(target, draft_path=fx.custom_draft), draft=fx.custom_draft),
        Case(
            served(target, "--trust-remote-code", draft_path=fx.custom_draft),
            draft=fx.custom_draft,
        ),
    ]
    return lines


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


def run_oracle(args: argparse.Namespace, lines: list[str], cwd: str) -> list[dict[str, object]]:
    """The oracle's answer for each line: one process per line, or all in one (`--batch`)."""
    python = str(args.venv / "bin" / "python")
    if args.batch:
        batch = Path(__file__).with_name("launch_oracle_batch.py")
        done = subprocess.run(
            [python, str(batch), str(args.oracle)],
            input=json.dumps(lines),
            capture_output=True,
            text=True,
            cwd=cwd,
            timeout=300 + 60 * len(lines),
        )
        answers = [json.loads(row) for row in done.stdout.splitlines() if row.startswith("{")]
        if len(answers) != len(lines):
            raise SystemExit(f"the batch oracle stopped early: {done.stderr[-2000:]}")
        return answers
    out: list[dict[str, object]] = []
    for line in lines:
        done = subprocess.run(
            [python, str(args.oracle), line], capture_output=True, text=True, cwd=cwd, timeout=300
        )
        text = done.stdout[done.stdout.find("{") :]
        out.append(json.loads(text) if text else {"parsed_ok": False, "error": done.stderr})
    return out


def draftfit_verdict(case: Case, fx: Fixtures, engine: str, release: str, cwd: str) -> str:
    """draftfit's verdict on the line for the case's draft and target."""
    ours = subprocess.run(
        [
            sys.executable,
            "-m",
            "draftfit",
            "check",
            case.draft or fx.draft,
            "--target",
            case.target or fx.target,
            "--engine",
            f"{engine}=={release}",
            "--serve-args",
            case.line,
            "--format",
            "json",
            # the corpus's draft stands in for a draft of every target it names: what is
            # measured is the launch, not which model the draft was trained for (DF507)
            "--draft-is-for-target",
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )
    try:
        verdict = json.loads(ours.stdout)["engines"][0]["verdict"]
    except (ValueError, KeyError, IndexError):
        verdict = f"exit {ours.returncode}: {ours.stderr.strip()[:120]}"
    return str(verdict)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", required=True, type=Path)
    parser.add_argument("--release", required=True)
    parser.add_argument("--engine", choices=("vllm", "sglang"), default="vllm")
    parser.add_argument(
        "--oracle", type=Path, default=ROOT.parent / "shared" / "oracle" / "launch_oracle.py"
    )
    parser.add_argument("--batch", action="store_true", help="one oracle process for all lines")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        fx = fixtures(Path(tmp), args.engine)
        cases = [
            item if isinstance(item, Case) else Case(item)
            for item in (corpus if args.engine == "vllm" else sglang_corpus)(fx)
        ]
        answers = run_oracle(args, [case.line for case in cases], tmp)
        for case, oracle in zip(cases, answers, strict=True):
            label = engine_label(oracle, case.draft or fx.draft)
            verdict = draftfit_verdict(case, fx, args.engine, args.release, tmp)
            failing = verdict in FAILING
            agree = not failing if case.hub else failing == (label != "runs")
            shown = case.line.replace(tmp, "<tmp>")
            rows.append(
                {
                    "line": shown,
                    "engine": label,
                    "hub": case.hub,
                    "error": oracle.get("error"),
                    "method": oracle.get("resolved_method"),
                    "draftfit": verdict,
                    "agree": agree,
                }
            )
            mark = ("ok " if agree else "XX ") + ("hub " if case.hub else "")
            print(f"{mark}{label:8} {verdict:15} {shown[:150]}", flush=True)
    judged = [r for r in rows if not r["hub"]]
    agreed = sum(bool(r["agree"]) for r in judged)
    false_ok = sum(1 for r in judged if r["engine"] != "runs" and r["draftfit"] not in FAILING)
    hub_ok = sum(bool(r["agree"]) for r in rows if r["hub"])
    print(
        f"{args.engine} {args.release}: {agreed}/{len(judged)} agree; {false_ok} passed where "
        f"the engine refuses or misruns; Hub-shaped names (looked up on the Hub, not judged): "
        f"{hub_ok}/{len(rows) - len(judged)} not failed"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
