"""How fast is `draftfit check`, against baselines measured in the same run?

Builds, in a temporary folder, full-size *sparse* checkpoints (real safetensors headers,
holes for the data): the demo's Kimi-K2 EAGLE-3 draft (4.7 GB of tensors) and a 64-shard
Kimi-K2 target (~1 TB, ~140k tensors, FP8 experts with scales). Then prints:

* in-process `check` time and peak Python memory (tracemalloc), beside
  (a) the raw cost of reading the same header bytes draftfit reads (open, read the length
      prefix and the header, no parsing), and (a') the same plus `json.loads`;
  (b) listing the same tensors (names, dtypes, shapes) with the `safetensors` library;
* the whole CLI call (`python -m draftfit check ...`, a fresh process) wall time and peak RSS;
* the same check on drafts of 1 GB, 10 GB, 100 GB and 1 TB (same tensor list, larger
  shapes), to show time and memory stay flat as the checkpoint grows;
* start-up: whole fresh processes of `check` (text and JSON), `rule`, `engines`,
  `--version`, `--help` and `matrix`, each as a ratio to `python -c pass` (and `matrix` to
  `check`), run alternately in rounds, with their bytecode cached as an installed package
  has it (a temporary PYTHONPYCACHEPREFIX, warmed first); beside them the floor, a process
  that only imports the standard modules a check needs. Run it with the interpreter of a
  clean virtual environment: where `.pth` files import libraries at start-up, `python -c
  pass` is no bare start (the script says so);
* the two start-up guards, as measured in the same run: `check` no slower than 8× a bare
  interpreter (`python -c pass`), `matrix` no slower than 5× a `check`.

Run: `python bench/check_speed.py [--startup-only] [--rounds N]` (needs the test extras for
the safetensors baseline).
Nothing here asserts; it prints ratios for a human to read.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from draftfit.checker import check_checkpoint, resolve_engines
from draftfit.checkpoint import load_checkpoint
from draftfit.commands.demo import build_demo, demo_config
from draftfit.draft.synth import speculators_table, write_sparse_checkpoint
from draftfit.draft.target import load_target
from draftfit.engines.registry import ENGINES

REPEAT = 15


def median_seconds(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    fn()  # warm the page cache and imports
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_python_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def kimi_target_table() -> list[tuple[str, str, tuple[int, ...]]]:
    """Kimi-K2's tensor list (DeepSeek-V3 layout, FP8 block-quantized, 384 experts)."""
    H, V, L, experts, moe_inter, inter = 7168, 163840, 61, 384, 2048, 18432
    table: list[tuple[str, str, tuple[int, ...]]] = [("model.embed_tokens.weight", "BF16", (V, H))]

    def fp8(name: str, rows: int, cols: int) -> None:
        table.append((f"{name}.weight", "F8_E4M3", (rows, cols)))
        table.append((f"{name}.weight_scale_inv", "F32", (-(-rows // 128), -(-cols // 128))))

    for layer in range(L):
        p = f"model.layers.{layer}."
        table += [
            (p + "input_layernorm.weight", "BF16", (H,)),
            (p + "post_attention_layernorm.weight", "BF16", (H,)),
            (p + "self_attn.q_a_layernorm.weight", "BF16", (1536,)),
            (p + "self_attn.kv_a_layernorm.weight", "BF16", (512,)),
        ]
        fp8(p + "self_attn.q_a_proj", 1536, H)
        fp8(p + "self_attn.q_b_proj", 64 * 192, 1536)
        fp8(p + "self_attn.kv_a_proj_with_mqa", 576, H)
        fp8(p + "self_attn.kv_b_proj", 64 * 256, 512)
        fp8(p + "self_attn.o_proj", H, 64 * 128)
        if layer == 0:
            fp8(p + "mlp.gate_proj", inter, H)
            fp8(p + "mlp.up_proj", inter, H)
            fp8(p + "mlp.down_proj", H, inter)
            continue
        table += [
            (p + "mlp.gate.weight", "BF16", (experts, H)),
            (p + "mlp.gate.e_score_correction_bias", "F32", (experts,)),
        ]
        for e in range(experts):
            fp8(p + f"mlp.experts.{e}.gate_proj", moe_inter, H)
            fp8(p + f"mlp.experts.{e}.up_proj", moe_inter, H)
            fp8(p + f"mlp.experts.{e}.down_proj", H, moe_inter)
        fp8(p + "mlp.shared_experts.gate_proj", moe_inter, H)
        fp8(p + "mlp.shared_experts.up_proj", moe_inter, H)
        fp8(p + "mlp.shared_experts.down_proj", H, moe_inter)
    table += [("model.norm.weight", "BF16", (H,)), ("lm_head.weight", "BF16", (V, H))]
    return table


def files_draftfit_reads(draft: Path, target: Path) -> list[Path]:
    """The weight files whose headers `check` reads (draft shards; target embedding shards)."""
    files = [draft / f for f in load_checkpoint(draft).weight_files]
    index = json.loads((target / "model.safetensors.index.json").read_text())["weight_map"]
    shards = sorted(
        {s for n, s in index.items() if n.endswith(("embed_tokens.weight", "lm_head.weight"))}
    )
    return files + [target / s for s in shards]


def raw_header_read(paths: list[Path], parse: bool) -> None:
    for path in paths:
        with path.open("rb") as handle:
            n = int.from_bytes(handle.read(8), "little")
            header = handle.read(n)
        if parse:
            json.loads(header)


def safetensors_listing(paths: list[Path]) -> int:
    from safetensors import safe_open

    count = 0
    for path in paths:
        with safe_open(str(path), framework="numpy") as handle:
            for key in handle.keys():  # noqa: SIM118 - safe_open is not iterable
                s = handle.get_slice(key)
                s.get_shape()
                s.get_dtype()
                count += 1
    return count


def cli_call(draft: Path, target: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS bytes of one fresh `python -m draftfit check` process."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "draftfit", "check", str(draft), "--target", str(target)],
        check=False,
        capture_output=True,
    )
    wall = time.perf_counter() - start
    rss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, rss_kb * 1024


def scaled_draft(root: Path, factor: int) -> Path:
    """A draft with the demo's tensor list, every matrix `factor`× wider (same header size)."""
    config = demo_config("speculators-kimi-k2-eagle3.config.json")
    layer = config["transformer_layer_config"]
    table = speculators_table(config)
    scaled = [(n, d, (s[0], s[1] * factor) if len(s) == 2 else s) for n, d, s in table]
    return write_sparse_checkpoint(
        root / f"draft-x{factor}",
        config,
        scaled,
        vocab=layer["vocab_size"],
        draft_vocab=config["draft_vocab_size"],
    )


def startup_ratios(draft: Path, target: Path, rounds: int) -> None:
    """Fresh-process wall times of each command beside `python -c pass`, alternating."""
    d, t = str(draft), str(target)
    commands = {
        "python -c pass": ["-c", "pass"],
        # The standard modules any check needs (paths, the command line, JSON, versions):
        # what no change to draftfit's own code can take below.
        "floor: argparse, json, pathlib": ["-c", FLOOR_IMPORTS],
        "check (text)": ["-m", "draftfit", "check", d, "--target", t],
        "check --format json": ["-m", "draftfit", "check", d, "--target", t, "--format", "json"],
        "rule DF301": ["-m", "draftfit", "rule", "DF301"],
        "engines": ["-m", "draftfit", "engines"],
        "--version": ["-m", "draftfit", "--version"],
        "--help": ["-m", "draftfit", "--help"],
        "matrix (all releases, recipes)": ["-m", "draftfit", "matrix", d, "--target", t],
    }
    wall, cpu = alternate(commands, rounds)
    for label, med in (("wall", wall), ("CPU (user + system)", cpu)):
        base = med["python -c pass"]
        print(f"start-up, fresh processes, {label} median of {rounds} alternating rounds:")
        for name, value in med.items():
            print(f"  {name:32} {value * 1e3:7.1f} ms   {value / base:5.2f}x python -c pass")
        print(f"the start-up guards, measured in this run ({label}):")
        check = med["check (text)"] / base
        print(
            f"  check (text) / python -c pass    {check:5.2f}x   (guard: <= {CHECK_GUARD:g}x) "
            f"{_verdict(check, CHECK_GUARD)}"
        )
        matrix = med["matrix (all releases, recipes)"] / med["check (text)"]
        print(
            f"  matrix / check (text)            {matrix:5.2f}x   (guard: <= {MATRIX_GUARD:g}x) "
            f"{_verdict(matrix, MATRIX_GUARD)}"
        )
    print(f"  load average while measuring: {os.getloadavg()[0]:.1f} (1 min)")
    extra = site_imports({k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    if len(extra) > SITE_IMPORTS_USUAL:
        outside = sorted({name.split(".")[0] for name in extra} - set(sys.stdlib_module_names))
        print(
            f"  note: this interpreter's start-up imports {len(extra)} modules through its site "
            f"packages (for {', '.join(outside) or 'the standard library'}), so "
            "`python -c pass` is not a bare start and every ratio above is understated; "
            "measure from a clean virtual environment"
        )


# The start-up guards: a check is no slower than 8 bare interpreter starts (measured from a
# clean virtual environment), and `matrix` (every release, with recipes) no slower than 5
# checks. The script prints both ratios; it asserts neither (a loaded machine moves them).
CHECK_GUARD = 8.0
MATRIX_GUARD = 5.0


def alternate(
    commands: dict[str, list[str]], rounds: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall seconds and median CPU seconds (user + system) of each fresh process,
    run in alternating order, with bytecode cached (a temporary PYTHONPYCACHEPREFIX, warmed
    by a first round)."""
    with tempfile.TemporaryDirectory(prefix="draftfit-pycache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(rounds + 1):
            order = list(commands) if round_ % 2 == 0 else list(reversed(commands))
            for name in order:
                used = children_cpu_seconds()
                start = time.perf_counter()
                subprocess.run(
                    [sys.executable, *commands[name]], env=env, capture_output=True, check=False
                )
                if round_:
                    times[name].append(time.perf_counter() - start)
                    cpu[name].append(children_cpu_seconds() - used)
    return (
        {name: statistics.median(values) for name, values in times.items()},
        {name: statistics.median(values) for name, values in cpu.items()},
    )


def children_cpu_seconds() -> float:
    """CPU seconds (user + system) of the finished child processes so far: on a shared
    machine the load moves a process's CPU time far less than its wall time."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _verdict(ratio: float, guard: float) -> str:
    return "within" if ratio <= guard else "OVER"


# What `floor` imports: the modules a check cannot do without.
FLOOR_IMPORTS = "import argparse, json, pathlib, struct"
# `site` itself imports a handful of modules (os, stat, _sitebuiltins, codecs, ...).
SITE_IMPORTS_USUAL = 12


def site_imports(env: dict[str, str]) -> set[str]:
    """The modules this interpreter's start-up imports that a start without `site` does not:
    `.pth` files in its site-packages can import whole libraries before any code runs."""

    def modules(*flags: str) -> set[str]:
        done = subprocess.run(
            [sys.executable, *flags, "-c", "import sys; print(' '.join(sys.modules))"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        return set(done.stdout.split())

    return modules() - modules("-S")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--startup-only", action="store_true", help="only the start-up ratios")
    parser.add_argument("--rounds", type=int, default=10, help="start-up rounds (default 10)")
    args = parser.parse_args()
    if args.startup_only:
        with tempfile.TemporaryDirectory(prefix="draftfit-bench-") as tmp:
            root = Path(tmp)
            demo = build_demo(root)
            target = root / "Kimi-K2-64-shards"
            config = demo_config("kimi-k2-instruct.config.json")
            write_sparse_checkpoint(target, config, kimi_target_table(), shards=64)
            startup_ratios(demo.draft, target, args.rounds)
        return
    profiles = resolve_engines(["vllm"])
    with tempfile.TemporaryDirectory(prefix="draftfit-bench-") as tmp:
        root = Path(tmp)
        print("building sparse checkpoints ...", file=sys.stderr)
        demo = build_demo(root)
        target = root / "Kimi-K2-64-shards"
        write_sparse_checkpoint(
            target, demo_config("kimi-k2-instruct.config.json"), kimi_target_table(), shards=64
        )
        target_tensors = len(
            json.loads((target / "model.safetensors.index.json").read_text())["weight_map"]
        )
        target_bytes = sum(p.stat().st_size for p in target.glob("*.safetensors"))
        draft = demo.draft
        draft_bytes = (draft / "model.safetensors").stat().st_size

        def run_check() -> object:
            # A freshly read checkpoint holds no values yet: a cold check, as a fresh process
            # would run it.
            return check_checkpoint(load_checkpoint(draft), load_target(target), profiles)

        report = run_check()
        files = files_draftfit_reads(draft, target)
        header_bytes = sum(8 + int.from_bytes(p.open("rb").read(8), "little") for p in files)
        t_check = median_seconds(run_check)
        mem_check = peak_python_bytes(run_check)
        t_raw = median_seconds(lambda: raw_header_read(files, parse=False))
        t_raw_json = median_seconds(lambda: raw_header_read(files, parse=True))
        all_target = sorted(target.glob("*.safetensors"))
        t_all_raw = median_seconds(lambda: raw_header_read(all_target, parse=False), 3)
        try:
            t_st = median_seconds(lambda: safetensors_listing(files))
            st_line = f"{t_st * 1e3:9.2f} ms   (check = {t_check / t_st:5.1f}x)"
        except ImportError:
            st_line = "   n/a (pip install safetensors)"
        walls, rss = [], 0
        for _ in range(5):
            wall, peak = cli_call(draft, target)
            walls.append(wall)
            rss = max(rss, peak)

        print(
            f"draft   {draft.name}: {draft_bytes / 1e9:.1f} GB, "
            f"{len(load_checkpoint(draft).tensors)} tensors"
        )
        print(
            f"target  {target.name}: {target_bytes / 1e12:.2f} TB in 64 shards, "
            f"{target_tensors:,} tensors (draftfit reads {len(files) - 1} of its shard headers)"
        )
        print(f"verdict {report.engines[0].title}: {report.engines[0].verdict}")
        print()
        print(
            f"header bytes draftfit reads         {header_bytes / 1e6:9.2f} MB "
            f"in {len(files)} files"
        )
        print(
            f"draftfit check, in process          {t_check * 1e3:9.2f} ms   "
            f"peak Python memory {mem_check / 1e6:.1f} MB"
        )
        print(
            f"(a)  raw read of those header bytes {t_raw * 1e3:9.2f} ms   "
            f"(check = {t_check / t_raw:5.1f}x)"
        )
        print(
            f"(a') raw read + json.loads          {t_raw_json * 1e3:9.2f} ms   "
            f"(check = {t_check / t_raw_json:5.1f}x)"
        )
        print(f"(b)  safetensors library listing    {st_line}")
        print(
            f"     raw read of all 64 target headers (not needed by check) {t_all_raw * 1e3:.1f} ms"
        )
        print(
            f"whole CLI call (fresh process)      {statistics.median(walls) * 1e3:9.1f} ms   "
            f"peak RSS {rss / 1e6:.0f} MB   (median of 5)"
        )
        every_engine = resolve_engines(["all"])
        t_all_engines = median_seconds(
            lambda: check_checkpoint(load_checkpoint(draft), load_target(target), every_engine)
        )
        print(
            f"check, --engine all ({len(every_engine)} engines) {t_all_engines * 1e3:6.2f} ms  "
            f"(= {t_all_engines / t_check:.1f}x one engine)"
        )
        from draftfit.commands.release_matrix import build_matrix

        t_matrix = median_seconds(
            lambda: build_matrix(load_checkpoint(draft), load_target(target)),
            3,
        )
        n_versions = sum(len(e.versions) for e in ENGINES)
        print(
            f"matrix, {n_versions} engine versions with recipes {t_matrix * 1e3:7.0f} ms   "
            f"(= {t_matrix / t_check:.0f}x one check)"
        )
        print()
        print("flat as the checkpoint grows (same tensor list, wider matrices):")
        for factor, label in ((1, ""), (10, ""), (100, ""), (250, "")):
            path = scaled_draft(root, factor)
            size = (path / "model.safetensors").stat().st_size
            del label

            def scaled_check(path: Path = path) -> object:
                return check_checkpoint(load_checkpoint(path), load_target(target), profiles)

            t = median_seconds(scaled_check, 7)
            mem = peak_python_bytes(scaled_check)
            print(
                f"  draft {size / 1e9:8.1f} GB   check {t * 1e3:7.2f} ms   "
                f"peak Python memory {mem / 1e6:5.1f} MB"
            )
            os.remove(path / "model.safetensors")
        print()
        startup_ratios(draft, target, args.rounds)


if __name__ == "__main__":
    main()
