"""How fast is the MTP check of a 671B target, next to baselines measured in the same run?

Builds, in a temporary folder, full-size *sparse* checkpoints (real safetensors headers,
holes for the data): DeepSeek-V3 as released (FP8, 163 shards, ~690 GB, ~90,000 tensors,
its MTP layer 61 in the last four shards; tests/mtp_replicas.py), and the Kimi-K2 pair of
`check_speed.py` (the demo's 4.7 GB EAGLE-3 draft, a 64-shard ~1 TB target). Then prints:

* local: the MTP check of the DeepSeek-V3 replica (`--serve-args` with `"method": "mtp"`,
  vLLM 0.34.0) against today's EAGLE check of the Kimi pair (same release), in process and
  as whole fresh CLI processes run alternately; goal: MTP ≤ 2× EAGLE;
* flat in target size: the same MTP check with the backbone in 40, 163 and 280 shards
  (the MTP layer always in its own four);
* from the Hub: the same target served by the test suite's fake Hub (tests/fake_hub.py)
  on 127.0.0.1 with 50 ms added to every request, time to verdict (in process, a fresh
  Hugging Face cache each run) against the critical path: its round trips × 50 ms plus
  the local check; goal: ≤ 2×. The round trips are the file list, then the config and the
  index (read at once; huggingface_hub asks for each with a HEAD then a GET), then the
  MTP shards' headers (read at once; one range request each, or two when a header is
  larger than the first 16 KB read).

Medians of `--rounds` runs (default 7). Nothing here asserts; it prints ratios.

Run: `python bench/mtp_speed.py [--rounds N]` (needs the test extras: huggingface_hub).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_hub import FakeHub, hub_env
from tests.mtp_replicas import deepseek_v3_fp8, mtp_shards

from draftfit.commands.demo import build_demo, demo_config
from draftfit.draft.synth import write_sparse_checkpoint

ENGINE = "vllm==0.34.0"
MTP_LAUNCH = 'vllm serve T --speculative-config \'{"method": "mtp", "num_speculative_tokens": 1}\''
DELAY = 0.05
PREFETCH = 16_384


def median_seconds(fn: Callable[[], object], rounds: int) -> float:
    fn()  # warm the page cache and imports
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def header_requests(path: Path) -> int:
    with path.open("rb") as handle:
        length = int.from_bytes(handle.read(8), "little")
    return 1 if 8 + length <= PREFETCH else 2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7, help="runs per figure (default 7)")
    args = parser.parse_args()
    rounds = args.rounds
    with tempfile.TemporaryDirectory(prefix="draftfit-mtp-bench-") as tmp:
        root = Path(tmp)
        print("building sparse checkpoints ...", file=sys.stderr)
        target = deepseek_v3_fp8(root / "DeepSeek-V3")
        variants = {
            n: deepseek_v3_fp8(root / f"DeepSeek-V3-{n}", backbone_shards=n) for n in (40, 280)
        }
        demo = build_demo(root)
        kimi = root / "Kimi-K2-64-shards"
        from bench.check_speed import alternate, kimi_target_table

        write_sparse_checkpoint(
            kimi, demo_config("kimi-k2-instruct.config.json"), kimi_target_table(), shards=64
        )
        # huggingface_hub reads its endpoint and cache at import: set them first
        os.environ.update(hub_env("http://127.0.0.1:9", root / "hf-home"))
        from draftfit.checker import check_checkpoint, check_path
        from draftfit.checkpoint import load_checkpoint
        from draftfit.draft.target import load_target
        from draftfit.engines.installed import resolve_engines
        from draftfit.engines.launch import settings_from

        serve = settings_from(serve_args=MTP_LAUNCH)
        profiles = resolve_engines([ENGINE])

        def mtp(path: Path = target) -> str:
            return str(check_path(path, engines=[ENGINE], serve=serve).engines[0].verdict)

        def eagle() -> object:
            return check_checkpoint(load_checkpoint(demo.draft), load_target(kimi), profiles)

        shards = len(list(target.glob("*.safetensors")))
        total = sum(p.stat().st_size for p in target.glob("*.safetensors"))
        index = target / "model.safetensors.index.json"
        read = sorted(mtp_shards(target))
        print(
            f"target  {target.name}: {total / 1e9:.0f} GB in {shards} shards, index "
            f"{index.stat().st_size / 1e6:.1f} MB; the MTP check reads {len(read)} shard "
            f"headers ({read[0]} .. {read[-1]})"
        )
        print(f"verdict {ENGINE} (mtp, k=1): {mtp()}")
        print()
        t_mtp = median_seconds(mtp, rounds)
        t_eagle = median_seconds(eagle, rounds)
        print(f"local, in process (median of {rounds}):")
        print(f"  MTP check, DeepSeek-V3 671B FP8     {t_mtp * 1e3:8.1f} ms")
        print(f"  EAGLE check, Kimi-K2 pair           {t_eagle * 1e3:8.1f} ms")
        print(f"  ratio                               {t_mtp / t_eagle:8.2f}x")
        mtp_cli = ["check", str(target), "--serve-args", MTP_LAUNCH]
        eagle_cli = ["check", str(demo.draft), "--target", str(kimi)]
        tail = ["--engine", ENGINE, "--format", "json"]
        cli, cli_cpu = alternate(
            {
                "mtp": ["-m", "draftfit", *mtp_cli, *tail],
                "eagle": ["-m", "draftfit", *eagle_cli, *tail],
                "python -c pass": ["-c", "pass"],
            },
            rounds,
        )
        print(f"local, whole CLI processes (median of {rounds} alternating rounds):")
        print(f"  MTP check, DeepSeek-V3 671B FP8     {cli['mtp'] * 1e3:8.1f} ms")
        print(f"  EAGLE check, Kimi-K2 pair           {cli['eagle'] * 1e3:8.1f} ms")
        print(f"  python -c pass                      {cli['python -c pass'] * 1e3:8.1f} ms")
        print(
            f"  ratio                               {cli['mtp'] / cli['eagle']:8.2f}x   "
            "(goal: <= 2x)"
        )
        print(f"the same, CPU time (user + system; median of {rounds}):")
        print(f"  MTP check, DeepSeek-V3 671B FP8     {cli_cpu['mtp'] * 1e3:8.1f} ms")
        print(f"  EAGLE check, Kimi-K2 pair           {cli_cpu['eagle'] * 1e3:8.1f} ms")
        print(f"  python -c pass                      {cli_cpu['python -c pass'] * 1e3:8.1f} ms")
        print(
            f"  ratio                               {cli_cpu['mtp'] / cli_cpu['eagle']:8.2f}x   "
            f"(goal: <= 2x; load average {os.getloadavg()[0]:.1f})"
        )
        print("flat in target size, in process (the MTP layer in four shards of its own):")
        for n, path in sorted({**variants, 163: target}.items()):
            t = median_seconds(lambda path=path: mtp(path), rounds)
            print(f"  backbone in {n:3d} shards             {t * 1e3:8.1f} ms   {t / t_mtp:5.2f}x")

        hub = FakeHub()
        hub.add_repo("deepseek-ai/DeepSeek-V3", target)
        hub.delay = DELAY
        cache = root / "hf-home" / "hub"
        with hub:
            os.environ.update(hub_env(hub.endpoint, root / "hf-home"))
            from huggingface_hub import constants

            constants.ENDPOINT = hub.endpoint
            constants.HUGGINGFACE_CO_URL_TEMPLATE = (
                hub.endpoint + "/{repo_id}/resolve/{revision}/{filename}"
            )

            def from_hub() -> str:
                shutil.rmtree(cache, ignore_errors=True)  # a cold cache each run
                report = check_path("hf://deepseek-ai/DeepSeek-V3", engines=[ENGINE], serve=serve)
                return str(report.engines[0].verdict)

            verdict = from_hub()
            before = len(hub.requests)
            from_hub()
            requests = len(hub.requests) - before
            t_hub = median_seconds(from_hub, rounds)
        trips = 1 + 2 + max(header_requests(target / shard) for shard in read)
        baseline = trips * DELAY + t_mtp
        print(
            f"from the fake Hub, {DELAY * 1e3:.0f} ms a request (median of {rounds}, cold cache):"
        )
        print(f"  verdict {verdict}; {requests} requests (of {shards} shards, {len(read)} read)")
        print(f"  time to verdict                     {t_hub * 1e3:8.1f} ms")
        print(
            f"  critical path: {trips} round trips × {DELAY * 1e3:.0f} ms + the local check "
            f"{t_mtp * 1e3:.1f} ms = {baseline * 1e3:.1f} ms"
        )
        print(f"  ratio                               {t_hub / baseline:8.2f}x   (goal: <= 2x)")


if __name__ == "__main__":
    main()
