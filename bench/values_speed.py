"""What do value checks (`--values`) cost, next to baselines measured in the same run?

1. Sampled mode on the full-size sparse Kimi-K2 pair (the demo's 4.7 GB speculators draft
   and a 64-shard, ~1 TB sparse Kimi-K2 target whose embedding is a real tensor of the right
   shape): in-process time of `check_path(..., values="sampled")` beside a plain check plus
   a raw `os.pread` of exactly the byte ranges the sampled check read; the whole CLI call;
   the bytes a sampled check moves when both sit on the Hub-shaped test server.
2. Full mode: first the fixed cost of a fresh process (the check of a draft with a few KB of
   weights, beside the bare interpreter and `import numpy`); then EAGLE-3 drafts with real
   (random) BF16 bytes, ~1 GB by default (`--sizes 1,10` adds a 10 GB, 3-shard draft shaped
   for Llama-3.3-70B): wall time and peak RSS of a fresh `draftfit check --values=full`
   process beside `cat FILES > /dev/null` of the same files, alternating, in the same page
   cache state for both (`--cache warm`, `cold` or `warm,cold`; cold evicts the files with
   `posix_fadvise(DONTNEED)` before each run). The draftfit processes run with their
   bytecode cached, as an installed package has it.

Ratios are printed against the baselines of the same run; nothing is asserted.
Run: `python bench/values_speed.py [--sizes 1,10] [--cache warm,cold] [--dir DIR]
[--skip-sampled]` (needs the test extras: the drafts are built with tests/factory.py).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))  # this tree's draftfit, not an installed one
sys.path.insert(0, str(ROOT / "bench"))

from check_speed import kimi_target_table  # noqa: E402
from draftfit.checker import check_path  # noqa: E402
from draftfit.checkpoint import access as access_module  # noqa: E402
from draftfit.checkpoint.dtypes import byte_size  # noqa: E402
from draftfit.checkpoint.safetensors import (  # noqa: E402
    TensorToWrite,
    build_header,
    write_safetensors,
)
from draftfit.commands.demo import build_demo, demo_config  # noqa: E402
from draftfit.draft.synth import write_sparse_checkpoint  # noqa: E402
from draftfit.values.stats import reduce_threads  # noqa: E402

REPEAT = 7


def median_seconds(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def recorded_ranges(fn: Callable[[], object]) -> list[tuple[Path, int, int]]:
    """Every local ranged read `fn` makes (file, start, end): through the checkpoint access
    layer, and through `os.pread` on descriptors it opens."""
    seen: list[tuple[Path, int, int]] = []
    original = access_module.LocalAccess.read_range
    os_open, os_pread = os.open, os.pread
    paths: dict[int, Path] = {}

    def record(self: access_module.LocalAccess, rel: str, start: int, end: int) -> bytes:
        seen.append((self.root / rel, start, end))
        return original(self, rel, start, end)

    def opened(path: object, flags: int, *args: object) -> int:
        fd = os_open(path, flags, *args)  # type: ignore[arg-type]
        paths[fd] = Path(str(path))
        return fd

    def pread(fd: int, size: int, offset: int) -> bytes:
        if fd in paths:
            seen.append((paths[fd], offset, offset + size))
        return os_pread(fd, size, offset)

    access_module.LocalAccess.read_range = record  # type: ignore[method-assign]
    os.open, os.pread = opened, pread  # type: ignore[assignment]
    try:
        fn()
    finally:
        access_module.LocalAccess.read_range = original  # type: ignore[method-assign]
        os.open, os.pread = os_open, os_pread  # type: ignore[assignment]
    return seen


def raw_pread(ranges: list[tuple[Path, int, int]]) -> int:
    total = 0
    handles: dict[Path, int] = {}
    try:
        for path, start, end in ranges:
            fd = handles.get(path)
            if fd is None:
                fd = handles[path] = os.open(path, os.O_RDONLY)
            total += len(os.pread(fd, end - start, start))
    finally:
        for fd in handles.values():
            os.close(fd)
    return total


def cli(args: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one fresh `python -m draftfit` process."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "w = time.perf_counter() - t\n"
        "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
    )
    env = env or {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "draftfit", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    return float(out[0]), int(out[1])


def cat_seconds(paths: list[Path]) -> float:
    """Wall seconds of `cat FILES > /dev/null`."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(["cat", *map(str, paths)], stdout=sink, check=True)
    return time.perf_counter() - start


def evict(paths: list[Path]) -> None:
    """Drop the files' pages from the page cache (they are clean: written and synced), so
    the next read comes from the disk."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


# EAGLE-3 drafts shaped like those trained for Llama-3.1-8B and Llama-3.3-70B targets:
# (hidden, attention heads, KV heads, intermediate); head_dim 128, vocabulary 128256,
# draft vocabulary 32000.
LLAMA_8B = (4096, 32, 8, 14336)
LLAMA_70B = (8192, 64, 8, 28672)
SHARD_BYTES = 5 * 10**9  # what `save_pretrained(max_shard_size="5GB")` writes


def real_draft_table(
    gigabytes: float,
) -> tuple[dict[str, Any], list[tuple[str, str, tuple[int, ...]]]]:
    """Config and tensor table (SpecForge naming) of an EAGLE-3 draft of about `gigabytes`
    GB: Llama-3.1-8B-shaped below 4 GB (no embedding), Llama-3.3-70B-shaped above (with
    its 2.1 GB embedding), decoder layers added while they bring the size closer."""
    from tests.factory import eagle3_tensors, llama_layer_config

    hidden, heads, kv, inter = LLAMA_70B if gigabytes >= 4 else LLAMA_8B
    dims = {"hidden": hidden, "heads": heads, "kv": kv, "head_dim": 128, "inter": inter}
    vocab, draft_vocab = 128256, 32000

    def table(layers: int) -> dict[str, Any]:
        return eagle3_tensors(
            **dims,
            vocab=vocab,
            draft_vocab=draft_vocab,
            layers=layers,
            embed=gigabytes >= 4,
        )

    def size(layers: int) -> int:
        return sum(byte_size(t.dtype, t.shape) or 0 for t in table(layers).values())

    layers = 1
    while abs(size(layers + 1) - gigabytes * 1e9) < abs(size(layers) - gigabytes * 1e9):
        layers += 1
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        **llama_layer_config(hidden, heads, kv, 128, inter, vocab, layers),
        "draft_vocab_size": draft_vocab,
        "torch_dtype": "bfloat16",
    }
    return config, [(name, t.dtype, t.shape) for name, t in table(layers).items()]


def real_draft(root: Path, gigabytes: float) -> Path:
    """The draft of :func:`real_draft_table` with random trained-like BF16 values in every
    matrix (Laplace, scale 0.03), in shards of at most 5 GB; norms and vocabulary maps
    hold zeros."""
    config, table = real_draft_table(gigabytes)
    path = root / f"draft-{gigabytes:g}gb"
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config, indent=2))
    shards: list[list[tuple[str, str, tuple[int, ...]]]] = [[]]
    used = 0
    for item in table:
        item_bytes = byte_size(item[1], item[2]) or 0
        if shards[-1] and used + item_bytes > SHARD_BYTES:
            shards.append([])
            used = 0
        shards[-1].append(item)
        used += item_bytes
    rng = np.random.default_rng(0)
    # one pool of values, read at a random offset for each block: every block differs
    pool = rng.laplace(0, 0.03, 16 * 1024 * 1024).astype(np.float32).view(np.uint32) >> 16
    pool_bytes = pool.astype("<u2").tobytes() * 2
    block = 8 * 1024 * 1024
    weight_map = {}
    for k, shard in enumerate(shards):
        name = (
            "model.safetensors"
            if len(shards) == 1
            else f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        )
        file = path / name
        write_safetensors(file, [TensorToWrite(n, d, s, None) for n, d, s in shard])
        prefix, layout = build_header(shard)
        with file.open("r+b") as handle:
            for (tensor, dtype, shape), (_, begin, end) in zip(shard, layout, strict=True):
                weight_map[tensor] = name
                if dtype != "BF16" or len(shape) != 2:
                    continue
                handle.seek(len(prefix) + begin)
                for at in range(begin, end, block):
                    offset = 2 * int(rng.integers(0, len(pool_bytes) // 4))
                    handle.write(pool_bytes[offset : offset + min(block, end - at)])
            handle.flush()
            os.fsync(handle.fileno())
    if len(shards) > 1:
        index = {"metadata": {}, "weight_map": weight_map}
        (path / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return path


def sampled_section(root: Path) -> None:
    print("building the sparse Kimi-K2 pair ...", file=sys.stderr)
    demo = build_demo(root)
    target = root / "Kimi-K2-64-shards"
    write_sparse_checkpoint(
        target, demo_config("kimi-k2-instruct.config.json"), kimi_target_table(), shards=64
    )
    draft = demo.draft
    target_bytes = sum(p.stat().st_size for p in target.glob("*.safetensors"))
    draft_bytes = (draft / "model.safetensors").stat().st_size

    plain = median_seconds(lambda: check_path(draft, target=target))
    sampled = median_seconds(lambda: check_path(draft, target=target, values="sampled"))
    ranges = recorded_ranges(lambda: check_path(draft, target=target, values="sampled"))
    plain_ranges = recorded_ranges(lambda: check_path(draft, target=target))
    extra = [r for r in ranges if r not in set(plain_ranges)]
    read_bytes = sum(end - start for _, start, end in extra)
    raw = median_seconds(lambda: raw_pread(extra))
    env = child_env(root)
    cli(["check", str(draft)], env)  # writes the bytecode cache
    cli_plain, rss_plain = cli(["check", str(draft), "--target", str(target)], env)
    cli_sampled, rss_sampled = cli(["check", str(draft), "--target", str(target), "--values"], env)

    print(
        f"Sampled mode, Kimi-K2 pair: draft {draft_bytes / 1e9:.1f} GB, target "
        f"{target_bytes / 1e12:.2f} TB in 64 shards (sparse)"
    )
    print(f"  plain check (in-process)            {plain * 1e3:8.1f} ms")
    print(
        f"  raw pread of the sampled bytes      {raw * 1e3:8.1f} ms  "
        f"({len(extra)} ranges, {read_bytes / 1e6:.1f} MB)"
    )
    print(
        f"  check --values (in-process)         {sampled * 1e3:8.1f} ms  "
        f"= {sampled / (plain + raw):.2f}x (plain + raw read)"
    )
    print(
        f"  CLI check (fresh process)           {cli_plain * 1e3:8.1f} ms  "
        f"peak RSS {rss_plain / 1e6:.0f} MB"
    )
    print(
        f"  CLI check --values (fresh process)  {cli_sampled * 1e3:8.1f} ms  "
        f"peak RSS {rss_sampled / 1e6:.0f} MB  = {cli_sampled / cli_plain:.2f}x"
    )
    hub_section(root, draft, target)


def hub_section(root: Path, draft: Path, target: Path) -> None:
    try:
        from tests.fake_hub import FakeHub, hub_env
    except ImportError:  # pragma: no cover - the test extras are missing
        print("  (Hub part skipped: tests/fake_hub.py not importable)")
        return
    hub = FakeHub()
    hub.add_repo("bench/kimi-k2-eagle3", draft)
    hub.add_repo("bench/kimi-k2", target)
    with hub:
        os.environ.update(hub_env(hub.endpoint, root / "hf-home"))
        code = "import sys; from draftfit.cli.main import main; sys.exit(main(sys.argv[1:]))"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        results = {}
        for label, extra in (("plain", []), ("--values", ["--values"])):
            before = hub.bytes_sent
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    code,
                    "check",
                    "hf://bench/kimi-k2-eagle3",
                    "--target",
                    "hf://bench/kimi-k2",
                    *extra,
                    "--format",
                    "json",
                ],
                env=env,
                capture_output=True,
                check=False,
            )
            results[label] = (hub.bytes_sent - before, time.perf_counter() - start)
            os.environ["HF_HOME"] = str(root / f"hf-home-{label.strip('-')}")
    for label, (sent, wall) in results.items():
        print(
            f"  Hub check {label:<9} moved {sent / 1e6:7.2f} MB in {wall:.1f} s "
            "(both on the Hub-shaped test server)"
        )


def child_env(root: Path) -> dict[str, str]:
    """The environment of the timed draftfit processes: this tree's draftfit, with its
    bytecode cached (under `root`), as an installed package has it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    return env


def fixed_cost(root: Path, env: dict[str, str]) -> float:
    """What a `--values=full` process costs whatever the draft's size: the same check on a
    draft with a few KB of weights, beside the interpreter alone and `import numpy`."""
    tiny = root / "draft-tiny"
    tiny.mkdir()
    weights = [TensorToWrite("fc.weight", "BF16", (64, 64), bytes(64 * 64 * 2))]
    write_safetensors(tiny / "model.safetensors", weights)
    (tiny / "config.json").write_text(json.dumps(real_draft_table(1)[0]))
    args = ["check", str(tiny), "--values=full", "--format", "json"]
    cli(args, env)  # writes the bytecode cache

    def fresh(command: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run(command, env=env, capture_output=True, check=False)
        return time.perf_counter() - start

    def median(command: list[str]) -> float:
        return statistics.median(fresh(command) for _ in range(REPEAT))

    bare = median([sys.executable, "-c", "pass"])
    numpy_import = median([sys.executable, "-c", "import numpy"])
    plain = median([sys.executable, "-m", "draftfit", *args[:2], "--format", "json"])
    full = median([sys.executable, "-m", "draftfit", *args])
    text = median([sys.executable, "-m", "draftfit", *args[:3]])
    print("Fixed cost of a fresh process (a draft with 8 KB of weights; bytecode cached)")
    print(f"  python -c pass                      {bare * 1e3:6.0f} ms")
    print(f"  python -c 'import numpy'            {numpy_import * 1e3:6.0f} ms")
    print(f"  check --format json                 {plain * 1e3:6.0f} ms")
    print(f"  check --values=full --format json   {full * 1e3:6.0f} ms")
    print(f"  check --values=full (text)          {text * 1e3:6.0f} ms")
    return full


def full_section(root: Path, sizes: list[float], caches: list[str]) -> None:
    env = child_env(root)
    fixed = fixed_cost(root, env)
    for gigabytes in sizes:
        print(f"writing a {gigabytes:g} GB real-byte draft ...", file=sys.stderr)
        draft = real_draft(root, gigabytes)
        files = sorted(draft.glob("*.safetensors"))
        size = sum(f.stat().st_size for f in files)
        args = ["check", str(draft), "--values=full", "--format", "json"]
        for cache in caches:
            cats, fulls, singles, rss = [], [], [], 0
            if cache == "warm":
                cat_seconds(files)  # read once: every later run finds the pages cached
            for _ in range(3):  # alternating, the same cache state before each
                if cache == "cold":
                    evict(files)
                cats.append(cat_seconds(files))
                if cache == "cold":
                    evict(files)
                wall, peak = cli(args, env)
                fulls.append(wall)
                rss = max(rss, peak)
                if cache == "cold":
                    evict(files)
                singles.append(cli(args, {**env, "DRAFTFIT_VALUE_THREADS": "1"})[0])
            cat_t, full_t = statistics.median(cats), statistics.median(fulls)
            single_t = statistics.median(singles)
            state = (
                "page cache warm for both"
                if cache == "warm"
                else "cold: the files evicted from the page cache before each run"
            )
            print(
                f"Full mode, {size / 1e9:.2f} GB draft in {len(files)} file(s) ({state}; "
                "medians of 3, alternating)"
            )
            print(
                f"  cat FILES > /dev/null               {size / cat_t / 1e9:6.2f} GB/s  "
                f"({cat_t:.2f} s)"
            )
            print(
                f"  check --values=full (fresh process) {size / full_t / 1e9:6.2f} GB/s  "
                f"({full_t:.2f} s) = {cat_t / full_t:.0%} of cat; peak RSS {rss / 1e6:.0f} MB"
            )
            print(
                f"  the same, less the fixed cost       {size / (full_t - fixed) / 1e9:6.2f} GB/s  "
                f"({full_t - fixed:.2f} s) = {cat_t / (full_t - fixed):.0%} of cat"
            )
            print(
                f"  the same, reductions in one thread  {size / single_t / 1e9:6.2f} GB/s  "
                f"({single_t:.2f} s) = {cat_t / single_t:.0%} of cat "
                f"(default here: {reduce_threads()} thread(s))"
            )
        shutil.rmtree(draft)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1", help="full-mode draft sizes in GB (e.g. 1,10)")
    parser.add_argument(
        "--cache", default="warm", help="page cache state(s) for full mode: warm, cold or warm,cold"
    )
    parser.add_argument("--skip-sampled", action="store_true")
    parser.add_argument("--dir", type=Path, help="where to write the drafts (a temporary folder)")
    args = parser.parse_args()
    caches = [c for c in args.cache.split(",") if c]
    if not set(caches) <= {"warm", "cold"}:
        parser.error("--cache takes warm, cold or warm,cold")
    with tempfile.TemporaryDirectory(prefix="draftfit-values-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        if not args.skip_sampled:
            sampled_section(root)
        full_section(root, [float(s) for s in args.sizes.split(",") if s], caches)


if __name__ == "__main__":
    main()
