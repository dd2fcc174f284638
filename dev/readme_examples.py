"""Regenerate the examples of the README and the manual from real runs, or report drift.

Every example block in README.md and in the manual's pages (`docs/**/*.md`) is preceded by
a marker line

    <!-- example: NAME [lines=SPEC] [commands-only] -->

and is a fenced block whose command lines start with `$ ` (a block may hold several
commands, each followed by its output). This script builds the checkpoints the examples
name in a temporary folder — full-size *sparse* drafts and target configs written with
draftfit's own demo builder (`draftfit.draft.synth`, `draftfit.commands.demo`): real
headers, holes for the weights — then runs each displayed command line with bash in that
folder, with `draftfit`
meaning this source tree's draftfit, exactly as shown (pipes included). The output (stdout
and stderr, as a terminal shows them) replaces the lines under the command:

* `lines=1-12,30-` keeps only those lines of each command's output (1-based, inclusive);
  skipped lines become one `...` line, indented like the first line it stands for.
* `commands-only`: the block shows commands, no output; each must exit 0 or 1 (a usage
  error, exit 2, fails the check).

Example names are unique across all those files. A block whose first line starts with
`>>> ` is a doctest, run with Python in the same
folder: `--check` and `--write` both report a failure (exit 1); its expected values are
never rewritten.

Paths inside the temporary folder are printed as the relative paths the commands give;
any absolute path left in an output is an error. Examples must be stable: no timings.

    python dev/readme_examples.py --check   # exit 1 and a diff when a block drifted
    python dev/readme_examples.py --write   # rewrite the blocks in place (atomically)
    python dev/readme_examples.py --check --readme docs/ci.md   # only that file's examples

`tests/test_readme_examples.py` runs `--check`.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SRC = ROOT / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(ROOT))  # tests.factory writes the value examples' real-byte tensors

from tests import factory  # noqa: E402

from draftfit.commands.demo import build_demo, demo_config  # noqa: E402
from draftfit.draft.synth import (  # noqa: E402
    eagle3_tensor_table,
    speculators_table,
    write_sparse_checkpoint,
)
from draftfit.output.atomic_write import write_text_atomic  # noqa: E402

# Programs a displayed pipeline may use beyond bash and coreutils; without them the example
# is left as it is (and said so), not reported as drift.
OPTIONAL_TOOLS = ("jq",)
MARKER = re.compile(r"^<!-- example: (?P<name>[\w.-]+)(?P<options>[^>]*?)\s*-->$")
FENCE = re.compile(r"^(?P<fence>```+)\S*$")
PROMPT = "$ "
DOCTEST_PROMPT = ">>> "

# ------------------------------------------------------------------ the example checkpoints

LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "hidden_act": "silu",
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}

DRAFT_VOCAB = 32000

SETTINGS = """\
[ignore]
DF108 = "our serving config always passes the method"
"""


def specforge_llama_8b(root: Path, nested_aux: list[int]) -> Path:
    """A SpecForge EAGLE-3 draft for Llama-3.1-8B-Instruct (`LlamaForCausalLMEagle3`,
    `midlayer.*`, `d2t` and `t2d`, aux ids in the nested `eagle_config` list, output-of
    counting), without an embedding of its own."""
    keys = ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim")
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        **{k: LLAMA_8B[k] for k in keys},
        "intermediate_size": 14336,
        "num_hidden_layers": 1,
        "vocab_size": 128256,
        "hidden_act": "silu",
        "rms_norm_eps": 1e-05,
        "max_position_embeddings": 131072,
        "rope_theta": 500000.0,
        "tie_word_embeddings": False,
        "draft_vocab_size": DRAFT_VOCAB,
        "torch_dtype": "bfloat16",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": nested_aux},
    }
    table = eagle3_tensor_table(
        4096, 32, 8, 128, 14336, 128256, DRAFT_VOCAB, prefix="midlayer.", embed=False
    )
    return write_sparse_checkpoint(root, config, table, vocab=128256, draft_vocab=DRAFT_VOCAB)


def kimi_head_dim_112(root: Path) -> Path:
    """`draftfit demo`'s speculators Kimi-K2 draft (64 heads of 128) with
    `transformer_layer_config.head_dim` written as 7168/64 = 112: the DF212 example."""
    config = demo_config("speculators-kimi-k2-eagle3.config.json")
    table = speculators_table(config)
    layer = config["transformer_layer_config"]
    layer["head_dim"] = 112
    return write_sparse_checkpoint(
        root, config, table, vocab=layer["vocab_size"], draft_vocab=config["draft_vocab_size"]
    )


def kimi_values_pair(root: Path) -> None:
    """The `--values` example: the small-scale Kimi-K2 / K2.5 sibling pair of the test
    factory (`kimi-k2-draft`, `Kimi-K2`, `Kimi-K2.5`)."""
    factory.kimi_sibling_pair(root)


def kimi_k25_download(folder: Path) -> None:
    """Kimi-K2.5's config.json as `hf download moonshotai/Kimi-K2.5 --local-dir` leaves it:
    multimodal, the language model (Kimi-K2's shapes, a 262,144-token context) under
    `text_config`, and the download's `.cache/huggingface/` metadata beside it."""
    text_config = {**demo_config("kimi-k2-instruct.config.json"), "_name_or_path": ""}
    text_config["max_position_embeddings"] = 262144
    config = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "text_config": text_config,
        "vision_config": {"mm_hidden_size": 1152, "text_hidden_size": 7168},
        "tie_word_embeddings": False,
    }
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    metadata = folder / ".cache" / "huggingface" / "download"
    metadata.mkdir(parents=True)
    commit = "54383e83fa343a1331754112fb9e3410c55efa2f"
    (metadata / "config.json.metadata").write_text(f"{commit}\n{'0' * 64}\n1769000000.0\n")


def build_workspace(root: Path) -> None:
    """Every checkpoint the examples name, at the path they name it by.

    * `Llama-3.1-8B-Instruct/`, also `target/`: the target's config.json.
    * `specforge-draft/`, also `draft/`: a SpecForge draft trained on the default layers
      (nested output-of ids [1, 15, 28], i.e. capture-before [2, 16, 29]).
    * `my-eagle3-draft/`: the same, trained on other layers (nested [3, 15, 27]).
    * `Kimi-K2-Instruct/`, `my-kimi-draft/` and `Kimi-K2-Instruct-eagle3/`: `draftfit
      demo`'s target, speculators-trained draft and AQ-MedAI reference.
    * `drafts/llama-v1`, `drafts/llama-v2`: the same two drafts in one folder, with a
      settings file `drafts/draftfit.toml`, for the CI examples;
      `checkpoints/epoch_1/hf`, `checkpoints/epoch_2/hf`: a training run's folders.
    * `kimi-k2-draft/`, `Kimi-K2/`, `Kimi-K2.5/`: the `--values` example (real bytes, small).
    * `kimi-draft-head-dim-112/`: the demo's draft with `head_dim` written 112 (DF212).
    * `downloads/Kimi-K2.5/`: Kimi-K2.5's config.json, as a `--local-dir` download leaves it.
    """
    target = root / "Llama-3.1-8B-Instruct"
    target.mkdir(parents=True)
    (target / "config.json").write_text(json.dumps(LLAMA_8B, indent=2) + "\n")
    (root / "target").symlink_to("Llama-3.1-8B-Instruct")
    specforge_llama_8b(root / "specforge-draft", [1, 15, 28])
    (root / "draft").symlink_to("specforge-draft")
    specforge_llama_8b(root / "my-eagle3-draft", [3, 15, 27])
    demo = build_demo(root / "demo")
    demo.target.rename(root / "Kimi-K2-Instruct")
    demo.draft.rename(root / "my-kimi-draft")
    demo.reference.rename(root / "Kimi-K2-Instruct-eagle3")
    specforge_llama_8b(root / "drafts" / "llama-v1", [3, 15, 27])
    specforge_llama_8b(root / "drafts" / "llama-v2", [1, 15, 28])
    (root / "drafts" / "draftfit.toml").write_text(SETTINGS)
    for epoch in (1, 2):
        folder = root / "checkpoints" / f"epoch_{epoch}"
        folder.mkdir(parents=True)
        (folder / "hf").symlink_to("../../specforge-draft")
    kimi_values_pair(root)
    kimi_head_dim_112(root / "kimi-draft-head-dim-112")
    kimi_k25_download(root / "downloads" / "Kimi-K2.5")


# ------------------------------------------------------------------ the marked blocks


@dataclass
class Block:
    """One marked example: its file, name, options and the lines between its fences."""

    file: Path
    name: str
    options: dict[str, str]
    start: int  # index of the first line inside the fence
    end: int  # index of the closing fence
    lines: list[str]


def parse_options(text: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for word in text.split():
        key, _, value = word.partition("=")
        if key not in ("lines", "commands-only"):
            raise ValueError(f"unknown example option {word!r}")
        options[key] = value
    return options


def find_blocks(file: Path, lines: list[str]) -> Iterator[Block]:
    """The marked examples of one file's lines, in order."""
    where = display_name(file)
    index = 0
    while index < len(lines):
        marker = MARKER.match(lines[index])
        index += 1
        if not marker:
            continue
        fence = FENCE.match(lines[index]) if index < len(lines) else None
        if not fence:
            raise ValueError(f"{where}:{index}: an example marker not followed by a fence")
        close = fence.group("fence")
        end = index + 1
        while end < len(lines) and lines[end] != close:
            end += 1
        if end == len(lines):
            raise ValueError(f"{where}:{index + 1}: the example's fence is not closed")
        body = lines[index + 1 : end]
        if not body or not body[0].startswith((PROMPT, DOCTEST_PROMPT)):
            raise ValueError(f"{where}:{index + 2}: an example starts with `$ ` or `>>> `")
        options = parse_options(marker.group("options"))
        yield Block(file, marker.group("name"), options, index + 1, end, body)
        index = end + 1


def select_lines(output: list[str], spec: str) -> list[str]:
    """The lines `spec` names (`1-12,30-`, 1-based), `...` where lines were skipped."""
    keep: list[int] = []
    for part in spec.split(","):
        first, dash, last = part.partition("-")
        lo = int(first)
        hi = (int(last) if last else len(output)) if dash else lo
        keep += range(lo - 1, min(hi, len(output)))
    shown: list[str] = []
    previous = -1
    for number in sorted(set(keep)):
        if number > previous + 1:
            shown.append(_ellipsis(output[previous + 1]))
        shown.append(output[number])
        previous = number
    if previous < len(output) - 1:
        shown.append(_ellipsis(output[previous + 1]))
    return shown


def _ellipsis(line: str) -> str:
    return " " * (len(line) - len(line.lstrip())) + "..."


# ------------------------------------------------------------------ running


class Runner:
    """Runs displayed command lines with bash in the example folder."""

    def __init__(self, workspace: Path, bin_dir: Path) -> None:
        self.workspace = workspace
        shim = bin_dir / "draftfit"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m draftfit "$@"\n')
        shim.chmod(0o755)
        self.env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
            "HF_HUB_OFFLINE": "1",
            "DRAFTFIT_ENGINE_PATH": "",  # no engine installed: the default is the newest vLLM
            "NO_COLOR": "1",
            "COLUMNS": "100",
            "LC_ALL": "C.UTF-8",
        }
        self.env.pop("DRAFTFIT_DEBUG", None)
        self.hidden = [str(workspace.resolve()), str(workspace), str(bin_dir)]

    def run(self, command: str) -> tuple[int, list[str]]:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.workspace,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        text = done.stdout
        for path in self.hidden:
            text = text.replace(path + "/", "./").replace(path, ".")
        if "/tmp" in text or tempfile.gettempdir() in text:
            raise ValueError(f"`{command}` printed a temporary path")
        return done.returncode, text.rstrip("\n").split("\n") if text.strip() else []


def run_doctest(block: Block, runner: Runner) -> list[str]:
    """A `>>>` block is a doctest, run in the example folder: it is checked, not rewritten
    (an expected value that differs is reported as the block's drift)."""
    program = (
        "import doctest, sys\n"
        "text = sys.stdin.read()\n"
        "test = doctest.DocTestParser().get_doctest(text, {}, 'README', 'README.md', 0)\n"
        "runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)\n"
        "runner.run(test)\n"
        "sys.exit(1 if runner.failures else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        input="\n".join(block.lines) + "\n",
        cwd=runner.workspace,
        env=runner.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        return block.lines
    return [*block.lines, "# doctest failed:", *done.stdout.rstrip("\n").split("\n")]


def regenerate(block: Block, runner: Runner) -> list[str]:
    """The block's lines as a real run prints them."""
    if block.lines[0].startswith(DOCTEST_PROMPT):
        return run_doctest(block, runner)
    commands = [line[len(PROMPT) :] for line in block.lines if line.startswith(PROMPT)]
    lines: list[str] = []
    for command in commands:
        missing = [tool for tool in OPTIONAL_TOOLS if tool in command and not shutil.which(tool)]
        if missing:
            print(f"example {block.name}: not run, {missing[0]} is not installed", file=sys.stderr)
            return block.lines
        status, output = runner.run(command)
        lines.append(PROMPT + command)
        if "commands-only" in block.options:
            if status not in (0, 1):
                raise ValueError(f"example {block.name}: `{command}` exited {status}: {output}")
            continue
        if "lines" in block.options:
            output = select_lines(output, block.options["lines"])
        lines += [line.rstrip() for line in output]
    return lines


def display_name(file: Path) -> str:
    """A file's name as messages give it: relative to the repository when inside it."""
    try:
        return str(file.resolve().relative_to(ROOT))
    except ValueError:
        return str(file)


def example_files() -> list[Path]:
    """README.md, then every page of the manual, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="report drift, exit 1 if any")
    mode.add_argument("--write", action="store_true", help="rewrite the blocks in place")
    parser.add_argument(
        "--readme",
        type=Path,
        action="append",
        help="only this file's examples (repeatable; default: README.md and docs/**/*.md)",
    )
    parser.add_argument("--only", action="append", help="only the examples with this name")
    args = parser.parse_args(argv)
    files = args.readme or example_files()
    texts = {file: file.read_text("utf-8").split("\n") for file in files}
    blocks = [
        b
        for file, lines in texts.items()
        for b in find_blocks(file, lines)
        if not args.only or b.name in args.only
    ]
    names = [b.name for b in blocks]
    if len(set(names)) != len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        print(f"readme_examples: two examples share a name: {', '.join(twice)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="draftfit-readme-") as tmp:
        workspace, bin_dir = Path(tmp) / "w", Path(tmp) / "bin"
        workspace.mkdir()
        bin_dir.mkdir()
        build_workspace(workspace)
        runner = Runner(workspace, bin_dir)
        fresh = {b.name: regenerate(b, runner) for b in blocks}
        shutil.rmtree(workspace, ignore_errors=True)
    drifted = failed = 0
    rewritten: set[Path] = set()
    for block in reversed(blocks):
        new = fresh[block.name]
        if new == block.lines:
            continue
        drifted += 1
        doctest_block = block.lines[0].startswith(DOCTEST_PROMPT)
        if args.check or doctest_block:
            label = f"{display_name(block.file)} {block.name}"
            diff = difflib.unified_diff(block.lines, new, label, "a real run", lineterm="")
            print("\n".join(diff))
        if doctest_block:
            failed += 1  # a doctest's expected values are written by hand, never rewritten
            continue
        texts[block.file][block.start : block.end] = new
        rewritten.add(block.file)
    if args.write:
        for file in files:
            if file in rewritten:
                write_text_atomic(file, "\n".join(texts[file]))
    verb = "rewrote" if args.write else "drifted:"
    print(
        f"{len(blocks)} examples in {len(files)} files, {verb} "
        f"{drifted - failed if args.write else drifted}",
        file=sys.stderr,
    )
    if failed:
        print(f"{failed} doctest example(s) failed: fix them by hand", file=sys.stderr)
    return 1 if (args.check and drifted) or failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
