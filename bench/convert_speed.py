"""How fast does `draftfit convert` copy a draft, next to `cp` of the same files?

Writes a SpecForge-style EAGLE-3 draft of the requested size (real bytes, not holes: an
embedding table, lm_head, fc and one decoder layer, 8B-class from 1.5 GB, 1B-class below),
then, each in a fresh process (draftfit's with its bytecode cached, as an installed package
has it), in alternating order over a few rounds:

* `draftfit convert DRAFT --to vllm --anyway -o OUT` (new headers, tensor bytes copied
  verbatim, fsync, atomic rename, then the output is checked; `--anyway` because this draft
  already loads as is in vLLM, and convert then writes nothing);
* `cp -r DRAFT OUT` and `cp -r DRAFT OUT && sync` (the convert fsyncs its files; plain cp does
  not, so both baselines are shown).

It prints the median throughput of each, the ratio, and the converter's peak RSS. Run:
`python bench/convert_speed.py [--gb 2]`. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from draftfit.checkpoint.safetensors import build_header
from draftfit.draft.synth import vocab_maps

BLOCK = os.urandom(16 * 1024 * 1024)


def write_real_draft(root: Path, gigabytes: float) -> int:
    """A draft whose bytes are real (pseudo-random blocks), ~`gigabytes` in size."""
    # An 8B-class layer from 1.5 GB up; below, a 1B-class one (Llama-3.2-1B's shapes), so
    # that `--gb 0.4` writes ~0.4 GB rather than the 8B-class layer's ~1.1 GB floor.
    if gigabytes >= 1.5:
        hidden, heads, kv_heads, head_dim, inter, draft_vocab = 4096, 32, 8, 128, 14336, 32000
    else:
        hidden, heads, kv_heads, head_dim, inter, draft_vocab = 2048, 32, 8, 64, 8192, 16000
    q_rows, kv_rows = heads * head_dim, kv_heads * head_dim
    fixed = (
        draft_vocab * hidden  # lm_head
        + hidden * 3 * hidden  # fc
        + (q_rows + 2 * kv_rows) * 2 * hidden  # q, k, v
        + hidden * q_rows  # o
        + 3 * inter * hidden  # gate, up, down
    ) * 2
    # The embedding table takes whatever the other tensors leave of the requested size.
    vocab = max(int((gigabytes * 1e9 - fixed) / (hidden * 2)), draft_vocab + 1024)
    embed_rows = vocab
    d2t, t2d = vocab_maps(vocab, draft_vocab)
    table = [
        ("embed_tokens.weight", "BF16", (embed_rows, hidden), None),
        ("fc.weight", "BF16", (hidden, 3 * hidden), None),
        ("midlayer.self_attn.q_proj.weight", "BF16", (q_rows, 2 * hidden), None),
        ("midlayer.self_attn.k_proj.weight", "BF16", (kv_rows, 2 * hidden), None),
        ("midlayer.self_attn.v_proj.weight", "BF16", (kv_rows, 2 * hidden), None),
        ("midlayer.self_attn.o_proj.weight", "BF16", (hidden, q_rows), None),
        ("midlayer.mlp.gate_proj.weight", "BF16", (inter, hidden), None),
        ("midlayer.mlp.up_proj.weight", "BF16", (inter, hidden), None),
        ("midlayer.mlp.down_proj.weight", "BF16", (hidden, inter), None),
        ("midlayer.input_layernorm.weight", "BF16", (hidden,), None),
        ("midlayer.hidden_norm.weight", "BF16", (hidden,), None),
        ("midlayer.post_attention_layernorm.weight", "BF16", (hidden,), None),
        ("norm.weight", "BF16", (hidden,), None),
        ("lm_head.weight", "BF16", (draft_vocab, hidden), None),
        ("d2t", "I64", (draft_vocab,), d2t),
        ("t2d", "BOOL", (vocab,), t2d),
    ]
    root.mkdir(parents=True)
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate_size": inter,
        "num_hidden_layers": 1,
        "vocab_size": embed_rows,
        "draft_vocab_size": draft_vocab,
        "rms_norm_eps": 1e-5,
        "max_position_embeddings": 131072,
        "rope_theta": 500000.0,
        "torch_dtype": "bfloat16",
    }
    (root / "config.json").write_text(json.dumps(config, indent=2))
    prefix, layout = build_header((n, d, s) for n, d, s, _ in table)
    with (root / "model.safetensors").open("wb") as handle:
        handle.write(prefix)
        for (_, _, _, data), (_, begin, end) in zip(table, layout, strict=True):
            if data is not None:
                handle.write(data)
                continue
            remaining = end - begin
            while remaining:
                chunk = BLOCK[: min(len(BLOCK), remaining)]
                handle.write(chunk)
                remaining -= len(chunk)
    return (root / "model.safetensors").stat().st_size


def timed(
    argv: list[str], shell: bool = False, env: dict[str, str] | None = None
) -> tuple[float, int]:
    """Wall seconds and this child's peak RSS (bytes)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, shell=shell, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, _, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if proc.stderr is not None:
        proc.stderr.close()
    return wall, usage.ru_maxrss * 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=2.0, help="draft size in GB (default 2)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="draftfit-convert-bench-", dir=".") as tmp:
        root = Path(tmp)
        print("writing the draft ...", file=sys.stderr)
        size = write_real_draft(root / "draft", args.gb)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
        # --anyway: this draft already loads as is in vLLM, and convert writes nothing then.
        convert = [sys.executable, "-m", "draftfit", "convert", str(root / "draft")]
        convert += ["--to", "vllm", "--anyway"]
        warm = root / "out-warm"  # an unmeasured run first: it writes the bytecode cache
        first = subprocess.run([*convert, "-o", str(warm)], env=env, capture_output=True)
        if first.returncode != 0 or not (warm / "model.safetensors").is_file():
            sys.exit(f"convert wrote no output (exit {first.returncode}): {first.stderr!r}")
        shutil.rmtree(warm, ignore_errors=True)
        results: dict[str, list[float]] = {"convert": [], "cp": [], "cp+sync": []}
        peak_rss = 0
        for round_ in range(args.rounds):
            for name in (
                ("convert", "cp", "cp+sync") if round_ % 2 == 0 else ("cp+sync", "cp", "convert")
            ):
                out = root / f"out-{name}"
                shutil.rmtree(out, ignore_errors=True)
                if name == "convert":
                    wall, rss = timed([*convert, "-o", str(out)], env=env)
                    peak_rss = max(peak_rss, rss)
                    if not (out / "model.safetensors").is_file():
                        sys.exit("convert wrote no output; nothing to compare")
                elif name == "cp":
                    wall, _ = timed(["cp", "-r", str(root / "draft"), str(out)])
                else:
                    wall, _ = timed(f"cp -r '{root / 'draft'}' '{out}' && sync", shell=True)
                results[name].append(wall)
                shutil.rmtree(out, ignore_errors=True)
        med = {k: statistics.median(v) for k, v in results.items()}
        print(f"draft: {size / 1e9:.2f} GB (real bytes), {args.rounds} rounds, median wall time")
        for name in ("convert", "cp", "cp+sync"):
            print(f"  {name:8} {med[name]:7.2f} s   {size / med[name] / 1e9:6.2f} GB/s")
        print(
            f"convert throughput = {med['cp'] / med['convert'] * 100:5.1f} % of cp, "
            f"{med['cp+sync'] / med['convert'] * 100:5.1f} % of cp+sync"
        )
        print(
            f"convert peak RSS   = {peak_rss / 1e6:.0f} MB (whole process: interpreter, "
            "imports, the check of the output)"
        )


if __name__ == "__main__":
    main()
