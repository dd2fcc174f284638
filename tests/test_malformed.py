"""Every damaged checkpoint of `tests/malformed.py` through the commands, in a subprocess.

Each case runs in its own interpreter (with a timeout), so a hang, a stack overflow or a
signal fails that case instead of the suite. Inside it, the CLI's `main` runs `check` (and,
for the cases marked `full`, `check --recipe`, `diff` against a clean draft, `matrix`,
`inspect` and `convert --to vllm`). The test asserts, per case: every exit status is 0, 1
or 2 with no traceback and no "internal error"; `check` reports the case's codes; no file
of the input changed (hashed before and after); and `convert` of a damaged input writes
nothing. Cases run a few at a time; the quick run (`-m "not slow"`) takes a sample of
them (QUICK), the full run all of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests import factory as f
from tests.malformed import CASES, Case
from tests.timeouts import scaled

ROOT = Path(__file__).resolve().parents[1]
# Run in the case's interpreter: each command through the CLI's main, capturing its output.
DRIVER = r"""
import contextlib, io, json, sys
from draftfit.cli.main import main

def peak_kb():
    # VmHWM belongs to this program's memory map (ru_maxrss would carry the forking
    # parent's peak across exec).
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0

results = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except BaseException as exc:  # reported, then the test fails on it
        rc = f"raised {type(exc).__name__}: {exc}"[:500]
    try:
        codes = sorted({f["code"] for f in json.loads(out.getvalue())["findings"]})
    except Exception:
        codes = None
    results.append({"argv": argv, "rc": rc, "stdout": out.getvalue()[-200000:], "codes": codes,
                    "stderr": err.getvalue()[-4000:], "max_rss_kb": peak_kb()})
print(json.dumps(results))
"""


def fingerprint(folder: Path) -> dict[str, str]:
    """A hash of every regular file under `folder` (large sparse files: size, mtime, ends)."""
    result: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        try:
            status = path.lstat()
        except OSError:
            continue
        if stat.S_ISLNK(status.st_mode):
            result[str(path)] = "link:" + os.readlink(path)
        elif stat.S_ISREG(status.st_mode):
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                if status.st_size <= 64 * 1024 * 1024:
                    digest.update(handle.read())
                else:
                    digest.update(handle.read(1 << 20))
                    handle.seek(-(1 << 20), os.SEEK_END)
                    digest.update(handle.read())
            result[str(path)] = f"{status.st_size}:{status.st_mtime_ns}:{digest.hexdigest()}"
        else:
            result[str(path)] = f"mode:{stat.S_IFMT(status.st_mode)}"
    return result


def commands(item: Case, draft: Path, clean: Path, target: Path, out: Path) -> list[list[str]]:
    d, t = str(draft), str(target)
    check = ["check", d, "--target", t, "--format", "json"]
    if item.target is not None:  # a damaged target: its weights are read too
        check.append("--values")
    if not item.full:
        return [check]
    return [
        check,
        ["check", d, "--target", t, "--recipe", "--format", "json"],
        ["diff", d, str(clean), "--target", t, "--format", "json"],
        ["matrix", d, "--target", t, "--format", "json"],
        ["inspect", d, "--format", "json"],
        [
            "convert",
            d,
            "--to",
            "vllm",
            "-o",
            str(out),
            "--target",
            t,
            "--format",
            "json",
            "--anyway",
        ],
    ]


def run_case(item: Case, folder: Path, clean: Path, target: Path) -> dict[str, Any]:
    draft = item.write(folder)
    if item.target is not None:
        target = folder / "target"
    out = folder / "converted"
    before = fingerprint(folder)
    argv = commands(item, draft, clean, target, out)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DRAFTFIT_DEBUG": ""}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", DRIVER, json.dumps(argv)],
            capture_output=True,
            text=True,
            timeout=scaled(),
            env=env,
            cwd=folder,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {scaled():.0f} s"}
    after = fingerprint(folder)
    changed = sorted(
        k for k in before.keys() | after.keys() if before.get(k) != after.get(k) and k != str(out)
    )
    changed = [k for k in changed if not k.startswith(str(out) + os.sep)]
    if proc.returncode != 0:
        return {"error": f"interpreter exit {proc.returncode}: {proc.stderr[-2000:]}"}
    return {
        "results": json.loads(proc.stdout),
        "changed": changed,
        "out_exists": out.exists(),
        "readme_copied": (out / "README.md").exists(),
    }


# The cases the quick run (`-m "not slow"`) takes: one of each kind of input (safetensors,
# config, shard index, PyTorch .bin) with `check`, and one with every command. The full run
# takes all of them.
QUICK = frozenset(
    {
        "st-four-bytes",
        "cfg-list",
        "idx-not-json",
        "bin-symlink-outside",
        "other-file-symlink-outside",
        "tgt-index-120k-shards",
        "cfg-quant-ct-ignore-backtracking-regex",
    }
)
# Of the tests that run a list of inputs, the quick run takes a sample ("sample") and the
# full run the rest too ("rest").
PARTS = ("sample", pytest.param("rest", marks=pytest.mark.slow))


def _part(labels: list[str], sample: set[str], part: str) -> list[str]:
    """The labels of `part`: those in `sample`, or the others."""
    return [label for label in labels if (label in sample) == (part == "sample")]


def _in_quick_run(case_id: str) -> tuple[pytest.MarkDecorator, ...]:
    return () if case_id in QUICK else (pytest.mark.slow,)


def _wanted(items: list[pytest.Item]) -> set[str]:
    """The corpus cases the selected tests of this file read (`item` or `case_id`)."""
    wanted: set[str] = set()
    for test in items:
        if test.path != Path(__file__) or not hasattr(test, "callspec"):
            continue
        params = test.callspec.params
        if "item" in params:
            wanted.add(params["item"].id)
        if "case_id" in params:
            wanted.add(params["case_id"])
    return wanted


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """Each selected case's outcome, the cases run a few at a time."""
    wanted = _wanted(request.session.items)
    root = tmp_path_factory.mktemp("malformed")
    clean = f.specforge().write(root / "clean")
    target = f.llama_target(root / "target")
    workers = max(2, min(4, (os.cpu_count() or 2)))
    with ThreadPoolExecutor(workers) as pool:
        futures = {
            item.id: pool.submit(run_case, item, root / item.id, clean, target)
            for item in CASES
            if item.id in wanted
        }
        return {key: future.result() for key, future in futures.items()}


# Cases whose declared sizes are huge: reading them must stay small (their speed is
# measured in bench/, not asserted here).
BOUNDED = (
    "st-sparse-1tb",
    "st-claims-1m-tensors",
    "st-header-over-cap",
    "cfg-huge-file",
    "tgt-index-120k-shards",
    "tgt-index-1m-tensors",
    "tgt-index-sparse-1tb",
    "tgt-shard-sparse-1tb",
    "tgt-quant-ct-ignore-huge",
)
MAX_RSS_KB = 200 * 1024


@pytest.mark.parametrize("case_id", [pytest.param(c, marks=_in_quick_run(c)) for c in BOUNDED])
def test_huge_declarations_stay_small(case_id: str, outcomes: dict[str, dict[str, Any]]) -> None:
    check = outcomes[case_id]["results"][0]
    assert check["max_rss_kb"] < MAX_RSS_KB, check["max_rss_kb"]


@pytest.mark.parametrize("case_id", ["other-file-symlink-outside"])
def test_convert_copies_nothing_from_outside_the_folder(
    case_id: str, outcomes: dict[str, dict[str, Any]]
) -> None:
    outcome = outcomes[case_id]
    convert = outcome["results"][-1]
    assert convert["rc"] in (0, 1), convert["stderr"]
    plan = json.loads(convert["stdout"])["plan"]
    assert any("README.md" in json.dumps(edit) for edit in plan["edits"]), plan
    assert outcome["out_exists"] and not outcome["readme_copied"]


def test_corpus_is_large_and_varied() -> None:
    assert len(CASES) >= 80
    assert len({c.id for c in CASES}) == len(CASES)
    assert sum(c.full for c in CASES) >= 20
    codes = set().union(*(c.codes for c in CASES))
    assert {"DF001", "DF002", "DF003", "DF019", "DF020", "DF022", "DF023"} <= codes


@pytest.mark.parametrize(
    "item", [pytest.param(c, id=c.id, marks=_in_quick_run(c.id)) for c in CASES]
)
def test_case(item: Case, outcomes: dict[str, dict[str, Any]]) -> None:
    outcome = outcomes[item.id]
    assert "error" not in outcome, outcome.get("error")
    assert outcome["changed"] == [], f"input files changed: {outcome['changed']}"
    for result in outcome["results"]:
        command = " ".join(result["argv"][:1])
        assert result["rc"] in (0, 1, 2), f"{command}: {result['rc']}\n{result['stderr']}"
        assert "Traceback" not in result["stderr"], result["stderr"]
        assert "internal error" not in result["stderr"], result["stderr"]
    check = outcome["results"][0]
    if check["rc"] == 2:
        pytest.fail(f"check refused the draft: {check['stderr']}")
    assert check["codes"] is not None, check["stdout"][-2000:]
    codes = set(check["codes"])
    assert item.codes <= codes, f"expected {sorted(item.codes)}, got {sorted(codes)}"
    if item.full:
        convert = outcome["results"][-1]
        if not item.may_convert:
            assert not outcome["out_exists"], "convert wrote an output for a damaged input"
            assert convert["rc"] == 2, convert["stderr"]
            assert convert["stderr"].count("\n") == 1, convert["stderr"]


@pytest.mark.parametrize("part", PARTS)
def test_named_paths_fail_in_one_line(tmp_path: Path, part: str) -> None:
    """A path the user names that is a FIFO, a symlink loop, or a target whose config is a
    FIFO, a nesting bomb or a 20,000-digit number: one line on stderr, exit 2, no hang."""
    draft = f.specforge().write(tmp_path / "draft")
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "loop-a", tmp_path / "loop-b")
    os.symlink(tmp_path / "loop-b", tmp_path / "loop-a")
    targets = {name: tmp_path / name for name in ("fifo-config", "bomb", "digits")}
    for folder in targets.values():
        folder.mkdir()
    os.mkfifo(targets["fifo-config"] / "config.json")
    (targets["bomb"] / "config.json").write_text("[" * 100_000)
    (targets["digits"] / "config.json").write_text('{"hidden_size": ' + "9" * 20_000 + "}")
    runs = {
        "fifo draft": ["check", str(tmp_path / "fifo")],
        "symlink loop": ["inspect", str(tmp_path / "loop-a")],
        **{f"{n} target": ["check", str(draft), "--target", str(t)] for n, t in targets.items()},
        "fifo target": ["check", str(draft), "--target", str(tmp_path / "fifo")],
    }
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DRAFTFIT_DEBUG": ""}
    for label in _part(list(runs), {"fifo draft", "digits target"}, part):
        argv = runs[label]
        proc = subprocess.run(
            [sys.executable, "-m", "draftfit", *argv],
            capture_output=True,
            text=True,
            timeout=scaled(),
            env=env,
        )
        assert proc.returncode == 2, (argv, proc.stderr)
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("draftfit: error:"), (
            argv,
            proc.stderr,
        )


# A YAML "billion laughs": 520 bytes naming 9**9 values through nested aliases.
BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{before}'] * 9)}]\n"
    for before, name in zip("abcdefgh", "bcdefghi", strict=True)
)


def _settings_inputs(tmp_path: Path, draft: Path) -> dict[str, list[str]]:
    """Settings documents past a cap, each as the command that reads it."""
    d = str(draft)
    files = {
        "deep.yaml": "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "digits.yaml": "num_speculative_tokens: " + "9" * 100_000 + "\n",
        "laughs.yaml": BILLION_LAUGHS + "num_speculative_tokens: *i\n",
        "merge.yaml": BILLION_LAUGHS + "speculative_config:\n  <<: *i\n",
        "recursive.yaml": "a: &a [1, *a]\n",
        "spec.yaml": BILLION_LAUGHS + "speculative_config: {decoding_type: Eagle3}\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    settings = {
        "utf8": b'select = ["DF"]\n\xff\xfe = 1\n',
        "deep": b"a = " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
        "inline-deep": b"a = " + b"{b = " * 100_000 + b"1" + b"}" * 100_000 + b"\n",
        "dotted-deep": b"a" + b".a" * 100_000 + b" = 1\n",
        "digits": b"a = " + b"9" * 100_000 + b"\n",
        "glob-brackets": b'[per-checkpoint-ignores]\n"' + b"[" * 400_000 + b'" = ["DF903"]\n',
        "many-globs": b"[per-checkpoint-ignores]\n"
        + b"".join(b'"d%d" = ["DF903"]\n' % i for i in range(1_001)),
    }
    runs: dict[str, list[str]] = {}
    for name, body in settings.items():
        folder = tmp_path / f"settings-{name}"
        shutil.copytree(draft, folder)
        (folder / "draftfit.toml").write_bytes(body)
        runs[f"draftfit.toml {name}"] = ["check", str(folder)]
    big = tmp_path / "settings-big"
    shutil.copytree(draft, big)
    with (big / "pyproject.toml").open("wb") as handle:
        handle.truncate(100 * 1024 * 1024)  # sparse: 100 MB that cost no disk
    runs["pyproject.toml 100 MB"] = ["check", str(big)]
    for name in files:
        runs[name] = ["check", d, "--serve-config", name]
    runs["trtllm options alias bomb"] = [
        "check",
        d,
        "--serve-args",
        "trtllm-serve T --extra_llm_api_options spec.yaml",
    ]
    runs["1e999"] = ["check", d, "--serve-config", '{"num_speculative_tokens": 1e999}']
    runs["tensor parallel 1e999"] = [
        "check",
        d,
        "--serve-config",
        '{"tensor_parallel_size": 1e999}',
    ]
    runs["surrogate setting"] = ["check", d, "--serve-config", '{"method": "\\ud800"}']
    runs["surrogate key"] = ["check", d, "--serve-config", '{"\\udfff": 1}']
    runs["hf control"] = ["check", "hf://org/na\x01me"]
    runs["hf newline"] = ["check", "hf://org/name\n::error::x"]
    runs["hf target control"] = ["check", d, "--target", "hf://org/name@ma\x1bin"]
    return runs


@pytest.mark.parametrize("part", PARTS)
def test_settings_inputs_fail_in_one_line(tmp_path: Path, part: str) -> None:
    """Settings files, launch settings and Hub ids past a cap or not text (invalid UTF-8,
    100k-deep TOML and YAML, 100k-digit integers, alias bombs, 1e999, lone surrogates,
    control characters): one line on stderr naming the input, exit 2, never an internal
    error or a hang."""
    draft = f.specforge().write(tmp_path / "draft")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DRAFTFIT_DEBUG": ""}
    env["HF_HUB_OFFLINE"] = "1"
    failures = []
    runs = _settings_inputs(tmp_path, draft)
    sample = {
        "deep.yaml",
        "laughs.yaml",
        "draftfit.toml deep",
        "1e999",
        "draftfit.toml glob-brackets",
    }
    for label in _part(list(runs), sample, part):
        argv = runs[label]
        proc = subprocess.run(
            [sys.executable, "-m", "draftfit", *argv],
            capture_output=True,
            text=True,
            timeout=scaled(),
            env=env,
            cwd=tmp_path,
        )
        one_line = proc.stderr.count("\n") == 1 and proc.stderr.startswith("draftfit: error:")
        if proc.returncode != 2 or not one_line or "internal error" in proc.stderr:
            failures.append((label, proc.returncode, proc.stderr[-500:]))
    assert failures == []


SECRET = "hunter2-secret-value"
# Where a launch's file is named from, and what names it.
LAUNCH_FLAGS = {
    "serve-config": lambda name: ["--serve-config", name],
    "vllm --config": lambda name: ["--serve-args", f"vllm serve T --config {name}"],
    "sglang --config": lambda name: [
        "--serve-args",
        f"python -m sglang.launch_server --model-path T --config {name}",
    ],
    "trtllm options": lambda name: [
        "--serve-args",
        f"trtllm-serve T --extra_llm_api_options {name}",
    ],
    "trtllm --config": lambda name: ["--serve-args", f"trtllm-serve T --config {name}"],
}
FORMATS = ("text", "json", "sarif", "github", "junit", "markdown")
# Flags whose file draftfit does not open (listed as not read): nothing of it can show.
NOT_OPENED = frozenset({"sglang --config"})


def _linked_launch_files(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A working folder whose launch files are reached through links: to a file outside
    (`secret_link.yaml`), to a file in the same folder (`same_folder.yaml`, as a CI job's
    secrets written into its workspace), through a linked folder (`linkdir/...`, and
    `../linkdir/...` from a folder below), and into the draft's folder. Every file holds a
    secret value where draftfit would show it (the draft path, an unread key)."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "below").mkdir(parents=True)
    outside.mkdir()
    draft = f.specforge().write(tmp_path / "draft")
    body = (
        f"speculative_config:\n  method: eagle3\n  model: {SECRET}\n"
        f"  num_speculative_tokens: 3\n  decoding_type: Eagle3\n  speculative_model_dir: "
        f"{SECRET}\n{SECRET}: 1\n"
    )
    for folder in (outside, work, draft):
        (folder / "secret.yaml").write_text(body)
    (work / "secret_link.yaml").symlink_to(outside / "secret.yaml")
    (work / "same_folder.yaml").symlink_to("secret.yaml")
    (work / "draft_link.yaml").symlink_to(draft / "secret.yaml")
    (work / "linkdir").symlink_to(outside)
    names = {
        "link out": "secret_link.yaml",
        "link in the folder": "same_folder.yaml",
        "link into the draft": "draft_link.yaml",
        "linked folder": "linkdir/secret.yaml",
        "../linked folder": "../linkdir/secret.yaml",
    }
    return work, draft, names


@pytest.mark.parametrize(
    "flag",
    [
        # the quick run's share: `--serve-config`; every engine's own flags with the slow tests
        flag if flag == "serve-config" else pytest.param(flag, marks=pytest.mark.slow)
        for flag in sorted(LAUNCH_FLAGS)
    ],
)
def test_launch_files_through_links_are_refused(tmp_path: Path, flag: str) -> None:
    """Every file a launch names (`--serve-config`; vLLM and SGLang `--config`; TensorRT-LLM
    `--extra_llm_api_options` and `--config`) is refused when a link takes it elsewhere
    than its own path: one line, exit 2, in every format, and nothing of the linked file
    in any output."""
    work, draft, names = _linked_launch_files(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DRAFTFIT_DEBUG": ""}
    sample = {"link out", "../linked folder"}
    for label, name in names.items():
        cwd = work / "below" if name.startswith("../") else work
        for fmt in FORMATS if label in sample else ("text",):
            command = "matrix" if fmt == "markdown" else "check"  # markdown: matrix only
            argv = [command, str(draft), *LAUNCH_FLAGS[flag](name), "--format", fmt]
            proc = subprocess.run(
                [sys.executable, "-m", "draftfit", *argv],
                capture_output=True,
                text=True,
                timeout=scaled(),
                env=env,
                cwd=cwd,
            )
            assert SECRET not in proc.stdout + proc.stderr, (label, fmt)
            if proc.returncode != 2 and flag in NOT_OPENED:
                assert proc.returncode in (0, 1), (label, fmt, proc.stderr)
                continue
            assert proc.returncode == 2, (label, fmt, proc.stderr)
            assert proc.stderr.count("\n") == 1, (label, proc.stderr)
            assert "symbolic link" in proc.stderr, (label, proc.stderr)


def test_an_unlinked_launch_file_is_read_and_may_be_quoted(tmp_path: Path) -> None:
    """The user's own file, named by its path: read, and its values shown."""
    work, draft, _ = _linked_launch_files(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DRAFTFIT_DEBUG": ""}
    for argv in (["--serve-config", "secret.yaml"], ["--serve-config", "../draft/secret.yaml"]):
        proc = subprocess.run(
            [sys.executable, "-m", "draftfit", "check", str(draft), *argv],
            capture_output=True,
            text=True,
            timeout=scaled(),
            env=env,
            cwd=work,
        )
        assert proc.returncode in (0, 1), proc.stderr
        assert f"draft_model={SECRET}" in proc.stdout


def test_a_launch_file_in_a_hub_cache_snapshot_is_read(tmp_path: Path) -> None:
    """A snapshot's own link into its repository's `blobs/` is how the cache stores every
    file: read. A `blobs/` that is itself a link is not."""
    from tests.hub_layouts import cache_snapshot

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "launch.yaml").write_text("method: eagle3\nnum_speculative_tokens: 3\n")
    snapshot = cache_snapshot(plain, tmp_path / "hub", "org/launch")
    draft = f.specforge().write(tmp_path / "draft")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DRAFTFIT_DEBUG": ""}

    def run() -> subprocess.CompletedProcess[str]:
        argv = ["check", str(draft), "--serve-config", str(snapshot / "launch.yaml")]
        return subprocess.run(
            [sys.executable, "-m", "draftfit", *argv],
            capture_output=True,
            text=True,
            timeout=scaled(),
            env=env,
        )

    read = run()
    assert read.returncode in (0, 1), read.stderr
    assert "num_speculative_tokens=3" in read.stdout
    blobs = snapshot.parents[1] / "blobs"
    blobs.rename(tmp_path / "elsewhere")
    blobs.symlink_to(tmp_path / "elsewhere")
    refused = run()
    assert refused.returncode == 2 and "symbolic link" in refused.stderr, refused.stderr


def test_a_target_config_linked_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    """The target's config.json is read as the draft's is: a link out of its folder is not
    followed (one line, exit 2, nothing of the linked file shown); a Hugging Face cache
    snapshot's link into its own `blobs/` is."""
    from tests.hub_layouts import cache_snapshot

    draft = f.specforge().write(tmp_path / "draft")
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"model_type": SECRET, "hidden_size": 64}))
    linked = tmp_path / "linked-target"
    linked.mkdir()
    (linked / "config.json").symlink_to(secret)
    snapshot = cache_snapshot(f.llama_target(tmp_path / "plain"), tmp_path / "hub", "org/t")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DRAFTFIT_DEBUG": ""}

    def check(target: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "draftfit", "check", str(draft), "--target", str(target)],
            capture_output=True,
            text=True,
            timeout=scaled(),
            env=env,
        )

    refused = check(linked)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "symbolic link" in refused.stderr
    assert SECRET not in refused.stdout + refused.stderr
    read = check(snapshot)
    assert read.returncode in (0, 1), read.stderr
