"""What do value checks (`--values`) cost, next to baselines measured in the same run?

1. Sampled mode on the full-size sparse Kimi-K2 pair (the demo's 4.7 GB speculators draft
   and a 64-shard, ~1 TB sparse Kimi-K2 target whose embedding is a real tensor of the right
   shape): in-process time of `check_path(..., values="sampled")` beside a plain check plus
   a raw `os.pread` of exactly the byte ranges the sampled check read; the whole CLI call;
   the bytes a sampled check moves when both sit on the Hub-shaped test server.
2. Full mode on drafts with real (random) bytes, 1 GB by default (`--sizes 1,10` adds
   10 GB): wall time and peak RSS of a fresh `draftfit check --values=full` process beside
   `cat FILE > /dev/null` of the same file (page cache warm for both, alternating order).

Ratios are printed against the baselines of the same run; nothing is asserted.
Run: `python bench/values_speed.py [--sizes 1,10]` (needs the test extras for the Hub part).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))  # this tree's draftfit, not an installed one
sys.path.insert(0, str(ROOT / "bench"))

from check_speed import kimi_target_table  # noqa: E402
from draftfit.checker import check_path  # noqa: E402
from draftfit.checkpoint import access as access_module  # noqa: E402
from draftfit.checkpoint.safetensors import TensorToWrite, write_safetensors  # noqa: E402
from draftfit.demo import build_demo, demo_config  # noqa: E402
from draftfit.synth import write_sparse_checkpoint  # noqa: E402

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


def cli(args: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one fresh `python -m draftfit` process."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "w = time.perf_counter() - t\n"
        "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "draftfit", *args],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.split()
    return float(out[0]), int(out[1])


def cat_seconds(path: Path) -> float:
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(["cat", str(path)], stdout=sink, check=True)
    return time.perf_counter() - start


def real_draft(root: Path, gigabytes: float) -> Path:
    """A speculators-layout draft of ~`gigabytes` GB with random trained-like BF16 bytes."""
    config = demo_config("speculators-kimi-k2-eagle3.config.json")
    hidden = 4096
    rows = int(gigabytes * 1e9 / (hidden * 2) / 8)
    table = [(f"layers.0.mlp.w{k}.weight", "BF16", (rows, hidden)) for k in range(8)]
    path = root / f"draft-{gigabytes:g}gb"
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config))
    file = path / "model.safetensors"
    write_safetensors(file, [TensorToWrite(n, d, s, None) for n, d, s in table])
    rng = np.random.default_rng(0)
    n = int.from_bytes(file.open("rb").read(8), "little")
    block = 8 * 1024 * 1024
    with file.open("r+b") as handle:
        handle.seek(8 + n)
        remaining = file.stat().st_size - 8 - n
        while remaining > 0:
            count = min(block, remaining) // 2
            values = rng.laplace(0, 0.03, count).astype(np.float32)
            handle.write((values.view(np.uint32) >> 16).astype("<u2").tobytes())
            remaining -= count * 2
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
    cli_plain, rss_plain = cli(["check", str(draft), "--target", str(target)])
    cli_sampled, rss_sampled = cli(["check", str(draft), "--target", str(target), "--values"])

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
        code = "import sys; from draftfit.cli import main; sys.exit(main(sys.argv[1:]))"
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


def full_section(root: Path, sizes: list[float]) -> None:
    for gigabytes in sizes:
        print(f"writing a {gigabytes:g} GB real-byte draft ...", file=sys.stderr)
        draft = real_draft(root, gigabytes)
        file = draft / "model.safetensors"
        size = file.stat().st_size
        cat_seconds(file)  # warm the page cache
        cats, fulls, rss = [], [], 0
        for _ in range(3):
            cats.append(cat_seconds(file))
            wall, peak = cli(["check", str(draft), "--values=full", "--format", "json"])
            fulls.append(wall)
            rss = max(rss, peak)
        cat_t, full_t = statistics.median(cats), statistics.median(fulls)
        print(f"Full mode, {size / 1e9:.2f} GB draft (page cache warm)")
        print(f"  cat > /dev/null                     {size / cat_t / 1e9:6.2f} GB/s")
        print(
            f"  check --values=full (fresh process) {size / full_t / 1e9:6.2f} GB/s  "
            f"= {cat_t / full_t:.0%} of cat; peak RSS {rss / 1e6:.0f} MB"
        )
        for child in draft.iterdir():
            child.unlink()
        draft.rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1", help="full-mode draft sizes in GB (e.g. 1,10)")
    parser.add_argument("--skip-sampled", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="draftfit-values-bench-") as tmp:
        root = Path(tmp)
        if not args.skip_sampled:
            sampled_section(root)
        full_section(root, [float(s) for s in args.sizes.split(",") if s])


if __name__ == "__main__":
    main()
