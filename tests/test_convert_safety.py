"""`draftfit convert` never loses data: --force replaces only draftfit's own output, the swap
is atomic, signals clean up, leftovers of a kill are recognised, OS errors are one line."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from draftfit.cli.main import main
from draftfit.conversion import convert_path
from draftfit.conversion.output import MARKER
from draftfit.errors import DamagedInputError, OutputExistsError, UsageError
from tests import factory as f
from tests.test_convert import tensor_hashes
from tests.timeouts import scaled

ROOT = os.geteuid() == 0
REPO = Path(__file__).resolve().parents[1]


def tree_hash(path: Path) -> dict[str, str]:
    """sha256 of every file under `path` (the folder itself included by its listing)."""
    return {
        str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def siblings(out: Path) -> list[str]:
    """Temporary siblings of `out` (anything draftfit may have left beside it)."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def run_cli(*args: str, preexec_fn=None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "draftfit", *args],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=preexec_fn,
        timeout=scaled(),
    )


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "internal error" not in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def draft(tmp_path: Path) -> Path:
    return f.specforge(nested_aux=[1, 3, 6]).write(tmp_path / "in")


@pytest.fixture(scope="module")
def big_draft(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A draft with a 256 MiB embedding of real (non-zero) bytes, so writing its output
    takes a moment even where holes and kernel copies cost nothing."""
    source = f.specforge()
    source.add("embed_tokens.weight", "BF16", (f.VOCAB, 512 * 1024))
    folder = source.write(tmp_path_factory.mktemp("big") / "in")
    shard = folder / "model.safetensors"
    with shard.open("r+b") as handle:
        size = int.from_bytes(handle.read(8), "little")
        header = json.loads(handle.read(size))
        start, end = header["embed_tokens.weight"]["data_offsets"]
        handle.seek(8 + size + start)
        block = b"\x3c\x3c" * (1 << 19)  # 1 MiB of bf16 0.0115
        for _ in range((end - start) // len(block)):
            handle.write(block)
    return folder


# ------------------------------------------------------------------ --force


def test_force_refuses_a_folder_with_foreign_files(draft: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    (out / "train.log").write_text("step 1")
    (out / "runs").mkdir()
    before = tree_hash(out)
    code = main(["convert", str(draft), "--to", "vllm", "--anyway", "-o", str(out), "--force"])
    line = one_error_line(capsys.readouterr().err)
    assert code == 2
    assert "notes.txt" in line and "train.log" in line and str(out) in line
    assert tree_hash(out) == before and (out / "runs").is_dir()
    assert siblings(out) == []


def test_force_refuses_foreign_files_beside_a_draftfit_output(
    draft: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "out"
    convert_path(draft, "vllm", out)
    for i in range(5):
        (out / f"eval-{i}.json").write_text("{}")
    before = tree_hash(out)
    code = main(["convert", str(draft), "--to", "sglang", "--anyway", "-o", str(out), "--force"])
    line = one_error_line(capsys.readouterr().err)
    assert code == 2
    assert "5 file(s)" in line and "eval-0.json" in line and "and 2 more" in line
    assert "config.json" not in line.split("write:")[1]
    assert tree_hash(out) == before


def test_force_refuses_a_listed_name_that_is_not_a_file(draft: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    convert_path(draft, "vllm", out)
    (out / "config.json").unlink()
    (out / "config.json").mkdir()  # a folder where draftfit wrote a file
    (out / "config.json" / "mine.txt").write_text("keep")
    with pytest.raises(OutputExistsError, match=r"config\.json"):
        convert_path(draft, "vllm", out, force=True)
    assert (out / "config.json" / "mine.txt").read_text() == "keep"


def test_force_replaces_a_previous_draftfit_output(tmp_path: Path) -> None:
    sharded = f.specforge().write(tmp_path / "sharded", shards=3)
    single = f.speculators(aux=[2, 4, 7]).write(tmp_path / "single")
    out = tmp_path / "out"
    convert_path(sharded, "vllm", out)
    assert len(list(out.glob("model-*.safetensors"))) == 3
    with pytest.raises(OutputExistsError, match="--force"):
        convert_path(single, "sglang", out)
    result = convert_path(single, "sglang", out, force=True)
    assert result.written
    marker = json.loads((out / MARKER).read_text())
    assert marker["state"] == "complete" and marker["convention"] == "sglang"
    assert marker["source"] == str(single.resolve())
    assert marker["engines"] == [result.report.engines[0].label]
    assert len(marker["plan_sha256"]) == 64
    assert sorted(p.name for p in out.iterdir()) == sorted([*marker["files"], MARKER])
    assert not list(out.glob("model-*.safetensors"))  # the old shards went with the old output
    assert siblings(out) == []


def test_an_empty_folder_is_used_without_force(draft: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    convert_path(draft, "vllm", out)
    assert (out / "config.json").is_file() and siblings(out) == []


def test_a_draftfit_output_can_be_the_input(draft: Path, tmp_path: Path) -> None:
    """The marker of a converted input is the input's record, not copied as a draft file."""
    convert_path(draft, "vllm", tmp_path / "a")
    convert_path(tmp_path / "a", "sglang", tmp_path / "b")
    marker = json.loads((tmp_path / "b" / MARKER).read_text())
    assert marker["source"] == str((tmp_path / "a").resolve())
    assert MARKER not in marker["files"]


# ------------------------------------------------------------------ leftovers


def test_marked_leftover_is_removed_and_reported_unmarked_left_alone(
    draft: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "out"
    # What a kill during the removal of a replaced output leaves: a marked old output.
    convert_path(draft, "vllm", tmp_path / "old")
    marked = tmp_path / ".out.draftfit-k1ll3d00"
    (tmp_path / "old").rename(marked)
    unmarked = tmp_path / ".out.draftfit-us3r0wn5"
    unmarked.mkdir()
    (unmarked / "model.safetensors").write_bytes(b"user bytes")
    foreign = tmp_path / ".out.draftfit-f0r31gn0"
    convert_path(draft, "vllm", foreign)
    (foreign / "notes.txt").write_text("mine")
    code = main(
        ["convert", str(draft), "--to", "vllm", "--anyway", "-o", str(out), "--format", "json"]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["removed_leftovers"] == [str(marked)]
    assert not marked.exists()
    assert (unmarked / "model.safetensors").read_bytes() == b"user bytes"
    assert (foreign / "notes.txt").read_text() == "mine" and (foreign / MARKER).is_file()


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_leftover_removal_is_one_line_on_stderr(
    draft: Path, tmp_path: Path, capsys, fmt: str
) -> None:
    convert_path(draft, "vllm", tmp_path / "old")
    (tmp_path / "old").rename(tmp_path / ".out.draftfit-abcdefgh")
    argv = [
        "convert",
        str(draft),
        "--to",
        "vllm",
        "--anyway",
        "-o",
        str(tmp_path / "out"),
        "--format",
        fmt,
    ]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0
    assert err == (
        f"draftfit: removed {tmp_path / '.out.draftfit-abcdefgh'} (left by an interrupted "
        "convert)\n"
    )
    assert "interrupted convert" not in out


def _leftover(draft: Path, tmp_path: Path, **marker: object) -> Path:
    """A temporary sibling of `out` as a convert killed mid-write leaves it, its marker
    then edited to name another writer."""
    convert_path(draft, "vllm", tmp_path / "old")
    temp = tmp_path / ".out.draftfit-w41t1ng0"
    (tmp_path / "old").rename(temp)
    data = json.loads((temp / MARKER).read_text())
    data.update({"state": "writing", **marker})
    (temp / MARKER).write_text(json.dumps(data))
    return temp


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def test_a_reused_pid_does_not_keep_a_leftover(draft: Path, tmp_path: Path) -> None:
    """The pid in the marker now belongs to another process (started later): removed."""
    other = _sleeper()
    try:
        temp = _leftover(draft, tmp_path, pid=other.pid, started=1)
        result = convert_path(draft, "vllm", tmp_path / "out")
        assert result.removed_leftovers == [temp] and not temp.exists()
    finally:
        other.kill()
        other.wait()


def test_a_live_writer_keeps_its_folder(draft: Path, tmp_path: Path) -> None:
    from draftfit.conversion.output import boot_id, process_start

    writer = _sleeper()
    try:
        start = process_start(writer.pid)
        temp = _leftover(draft, tmp_path, pid=writer.pid, started=start, boot=boot_id())
        assert convert_path(draft, "vllm", tmp_path / "out").removed_leftovers == []
        assert (temp / MARKER).is_file()
    finally:
        writer.kill()
        writer.wait()


def test_a_finished_writer_leaves_a_leftover(draft: Path, tmp_path: Path) -> None:
    done = _sleeper()
    done.kill()
    done.wait()
    temp = _leftover(draft, tmp_path, pid=done.pid)
    assert convert_path(draft, "vllm", tmp_path / "out").removed_leftovers == [temp]


@pytest.mark.parametrize(
    "marker", [{"pid": "1"}, {"pid": 10**30}, {"pid": True}, {"started": "x"}, {"host": 7}]
)
def test_a_marker_of_the_wrong_types_is_left_alone_or_judged_dead(
    draft: Path, tmp_path: Path, capsys, marker: dict[str, object]
) -> None:
    temp = _leftover(draft, tmp_path, **marker)
    assert (
        main(["convert", str(draft), "--to", "vllm", "--anyway", "-o", str(tmp_path / "out")]) == 0
    )
    err = capsys.readouterr().err
    assert "internal error" not in err
    # A pid no process can have is a dead writer; any other ill-typed marker is not draftfit's.
    assert temp.exists() == (marker != {"pid": 10**30})


# ------------------------------------------------------------------ permissions


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o002])
def test_permissions_follow_the_umask(draft: Path, tmp_path: Path, mask: int) -> None:
    (draft / "tokenizer.json").write_text("{}")
    os.chmod(draft / "tokenizer.json", 0o600)
    out = tmp_path / "deep" / "out"
    previous = os.umask(mask)
    try:
        convert_path(draft, "vllm", out)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~mask
    assert stat.S_IMODE(out.parent.stat().st_mode) == 0o777 & ~mask
    files = sorted(out.iterdir())
    assert {p.name for p in files} >= {"config.json", "model.safetensors", MARKER, "tokenizer.json"}
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask, path.name


# ------------------------------------------------------------------ signals


def _default_stop_signals() -> None:
    """Undo an ignored SIGINT/SIGHUP inherited from the runner (`nohup`, a background job),
    which draftfit would rightly keep ignoring."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _start(draft: Path, out: Path, *extra: str, preexec=None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "draftfit", "convert", str(draft), "--to", "vllm", "--anyway"]
    return subprocess.Popen(
        [*command, "-o", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=preexec or _default_stop_signals,
    )


def _write_seen(proc: subprocess.Popen[str], out: Path) -> Path | None:
    """The temporary folder once the weights are being written into it; None when the
    process ended first."""
    deadline = time.monotonic() + scaled(120)
    while time.monotonic() < deadline and proc.poll() is None:
        for path in out.parent.glob(f".{out.name}.draftfit-*"):
            if (path / "model.safetensors").exists():
                return path
        time.sleep(0.005)
    return None


def _wait_for_write(proc: subprocess.Popen[str], out: Path) -> Path:
    """The temporary folder once the weights are being written into it."""
    seen = _write_seen(proc, out)
    if seen is None:
        proc.kill()
        raise AssertionError(f"no write seen; exit {proc.poll()}: {proc.communicate()}")
    return seen


# SIGINT in the quick run; SIGTERM and SIGHUP take the same path (`slow`).
@pytest.mark.parametrize(
    "signum",
    [
        pytest.param(signal.SIGTERM, marks=pytest.mark.slow),
        signal.SIGINT,
        pytest.param(signal.SIGHUP, marks=pytest.mark.slow),
    ],
)
def test_signal_mid_write_cleans_up_and_keeps_the_old_output(
    draft: Path, big_draft: Path, tmp_path: Path, signum: int
) -> None:
    out = tmp_path / "out"
    convert_path(draft, "vllm", out)
    before = tree_hash(out)
    inputs = tree_hash(big_draft)
    proc = _start(big_draft, out, "--force")
    _wait_for_write(proc, out)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=scaled())
    assert proc.returncode == 128 + signum, stderr
    line = one_error_line(stderr)
    assert signal.Signals(signum).name in line
    assert siblings(out) == []
    if tree_hash(out) != before:
        # On a loaded machine the kernel copy can finish, and the output be swapped into
        # place, before the signal lands (it then stops the check of the output): the
        # output is then the whole conversion, never a part of one.
        assert tensor_hashes(out) == tensor_hashes(big_draft)
    assert tree_hash(big_draft) == inputs


def test_an_ignored_sighup_stays_ignored(big_draft: Path, tmp_path: Path) -> None:
    """Under `nohup` SIGHUP is ignored: draftfit keeps it so (SIGTERM still stops it)."""

    def nohup() -> None:
        _default_stop_signals()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    out = tmp_path / "out"
    # A loaded machine may let the copy finish before a write is seen: then it tries again.
    for _ in range(5):
        proc = _start(big_draft, out, preexec=nohup)
        if _write_seen(proc, out) is not None:
            break
        _, stderr = proc.communicate(timeout=scaled())
        # finished (exit 1 only because the check of the output flags the big embedding)
        assert proc.returncode in (0, 1) and out.exists(), stderr
        shutil.rmtree(out)
    else:
        pytest.fail("every conversion finished before a write was seen")
    proc.send_signal(signal.SIGHUP)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=scaled())
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert not out.exists() and siblings(out) == []


@pytest.mark.slow
def test_sigkill_leftover_is_removed_by_the_next_convert(
    draft: Path, big_draft: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    convert_path(draft, "vllm", out)
    before = tree_hash(out)
    proc = _start(big_draft, out, "--force")
    temp = _wait_for_write(proc, out)
    proc.kill()
    proc.communicate(timeout=scaled())
    assert siblings(out) == [temp.name]
    assert json.loads((temp / MARKER).read_text())["state"] == "writing"
    assert tree_hash(out) == before  # the old output is untouched
    result = run_cli("convert", str(draft), "--to", "sglang", "--anyway", "-o", str(out), "--force")
    assert result.returncode == 0, result.stderr
    assert f"draftfit: removed {temp} (left by an interrupted convert)" in result.stderr
    assert siblings(out) == []
    assert json.loads((out / MARKER).read_text())["convention"] == "sglang"


@pytest.mark.slow
def test_a_running_converts_temp_folder_is_not_taken_for_a_leftover(
    draft: Path, big_draft: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    proc = _start(big_draft, out, "--force")
    temp = _wait_for_write(proc, out)
    proc.send_signal(signal.SIGSTOP)  # hold it mid-write
    try:
        other = run_cli(
            "convert", str(draft), "--to", "vllm", "--anyway", "-o", str(out), "--force"
        )
        assert other.returncode == 0, other.stderr
        assert "interrupted convert" not in other.stdout + other.stderr
        assert (temp / MARKER).is_file() and (temp / "model.safetensors").is_file()
    finally:
        proc.send_signal(signal.SIGCONT)
    stdout, stderr = proc.communicate(timeout=scaled())
    # Written (exit 1 only because the check of the output flags the oversized embedding).
    assert proc.returncode in (0, 1) and "written to" in stdout, stderr
    assert siblings(out) == []
    assert json.loads((out / MARKER).read_text())["source"] == str(big_draft.resolve())


# ------------------------------------------------------------------ OS errors


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


def test_file_too_large_is_one_line_and_leaves_nothing(draft: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    inputs = tree_hash(draft)
    result = run_cli(
        "convert",
        str(draft),
        "--to",
        "vllm",
        "--anyway",
        "-o",
        str(out),
        preexec_fn=_limit_file_size,
    )
    assert result.returncode == 2
    line = one_error_line(result.stderr)
    assert line.startswith(f"draftfit: error: {os.strerror(errno.EFBIG)}: ")
    assert str(out / "model.safetensors") in line and "ulimit" in line
    assert not out.exists() and siblings(out) == []
    assert tree_hash(draft) == inputs


def test_file_too_large_keeps_the_old_output(draft: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    convert_path(draft, "vllm", out)
    before = tree_hash(out)
    result = run_cli(
        "convert", str(draft), "--to", "sglang", "--anyway", "-o", str(out), "--force",
        preexec_fn=_limit_file_size,
    )  # fmt: skip
    assert result.returncode == 2 and "File too large" in one_error_line(result.stderr)
    assert tree_hash(out) == before and siblings(out) == []


def _not_a_dir(tmp: Path) -> tuple[Path, Path]:
    (tmp / "plain").write_text("a file")
    return tmp / "plain" / "out", tmp / "plain"


def _too_long(tmp: Path) -> tuple[Path, Path]:
    out = tmp / ("x" * 300)
    return out, out


def _loop(tmp: Path) -> tuple[Path, Path]:
    (tmp / "a").symlink_to(tmp / "b")
    (tmp / "b").symlink_to(tmp / "a")
    return tmp / "a" / "out", tmp / "a"


@pytest.mark.parametrize(
    ("make", "code"),
    [(_not_a_dir, errno.ENOTDIR), (_too_long, errno.ENAMETOOLONG), (_loop, errno.ELOOP)],
)
def test_unusable_output_path_is_one_line(
    draft: Path, tmp_path: Path, capsys, make, code: int
) -> None:
    place = tmp_path / "place"
    place.mkdir()
    out, named = make(place)
    inputs = tree_hash(draft)
    before = sorted(p.name for p in place.iterdir())
    assert main(["convert", str(draft), "--to", "vllm", "--anyway", "-o", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == f"draftfit: error: {os.strerror(code)}: {named}"
    assert sorted(p.name for p in place.iterdir()) == before
    assert tree_hash(draft) == inputs


@pytest.mark.skipif(ROOT, reason="root bypasses permission bits")
def test_unwritable_parent_is_one_line(draft: Path, tmp_path: Path, capsys) -> None:
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(0o500)
    try:
        assert (
            main(["convert", str(draft), "--to", "vllm", "--anyway", "-o", str(parent / "out")])
            == 2
        )
        line = one_error_line(capsys.readouterr().err)
        assert line.startswith(f"draftfit: error: {os.strerror(errno.EACCES)}: {parent}")
        assert "permissions" in line and list(parent.iterdir()) == []
    finally:
        parent.chmod(0o700)


def test_immutable_parent_is_one_line_even_for_root(draft: Path, tmp_path: Path, capsys) -> None:
    """`chattr +i` makes a folder unwritable for root too (EPERM) where the filesystem
    supports it."""
    parent = tmp_path / "frozen"
    parent.mkdir()
    done = subprocess.run(
        ["chattr", "+i", str(parent)], capture_output=True, check=False, timeout=scaled()
    )
    if done.returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        assert (
            main(["convert", str(draft), "--to", "vllm", "--anyway", "-o", str(parent / "out")])
            == 2
        )
        line = one_error_line(capsys.readouterr().err)
        assert line.startswith(f"draftfit: error: {os.strerror(errno.EPERM)}: {parent}")
        assert list(parent.iterdir()) == []
    finally:
        subprocess.run(["chattr", "-i", str(parent)], check=True, timeout=scaled())


# ------------------------------------------------------------------ what -o may name


def listing(place: Path) -> dict[str, tuple[int, dict[str, str]]]:
    """Each entry of `place` by its type, and a folder's files by their hashes."""
    return {
        p.name: (os.lstat(p).st_mode, {} if p.is_symlink() or not p.is_dir() else tree_hash(p))
        for p in sorted(place.iterdir())
    }


def _fifo(place: Path) -> tuple[Path, str]:
    os.mkfifo(place / "pipe")  # stands for /dev/null and other special files
    return place / "pipe", "is a FIFO; draftfit writes only to a folder or a new path"


def _dangling(place: Path) -> tuple[Path, str]:
    (place / "dangling").symlink_to(place / "nowhere")
    return place / "dangling", "is a symbolic link"


def _link_to_empty_folder(place: Path) -> tuple[Path, str]:
    (place / "empty").mkdir()
    (place / "link").symlink_to(place / "empty")
    return place / "link", "is a symbolic link"


def _link_to_an_output(place: Path) -> tuple[Path, str]:
    """A link to a previous draftfit output: even --force does not write through it."""
    convert_path(f.specforge().write(place / "src"), "vllm", place / "old")
    (place / "link").symlink_to(place / "old")
    return place / "link", "is a symbolic link"


@pytest.mark.parametrize("make", [_fifo, _dangling, _link_to_empty_folder, _link_to_an_output])
def test_output_onto_a_link_or_special_file_is_refused(
    draft: Path, tmp_path: Path, capsys, make
) -> None:
    place = tmp_path / "place"
    place.mkdir()
    out, said = make(place)
    before = listing(place)
    argv = ["convert", str(draft), "--to", "vllm", "--anyway", "-o", str(out), "--force"]
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"draftfit: error: output {out} {said}"), line
    assert listing(place) == before and siblings(out) == []
    with pytest.raises(UsageError, match=r"output .* is a"):
        convert_path(draft, "vllm", out, force=True)


@pytest.mark.parametrize("inside", ["", "sub", "config.json"])
def test_output_in_the_target_is_refused(draft: Path, tmp_path: Path, capsys, inside) -> None:
    target = f.llama_target(tmp_path / "target")
    before = tree_hash(target)
    out = target / inside if inside else target
    argv = [
        "convert",
        str(draft),
        "--to",
        "vllm",
        "--anyway",
        "--target",
        str(target),
        "-o",
        str(out),
    ]
    assert main([*argv, "--force"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == (
        f"draftfit: error: output {out} is inside the target {target}, an input; write it elsewhere"
    )
    assert tree_hash(target) == before and sorted(os.listdir(tmp_path)) == ["in", "target"]


def test_a_linked_parent_folder_is_followed(draft: Path, tmp_path: Path) -> None:
    """Only the output's own name may not be a link; folders above it may (as /tmp on macOS)."""
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    convert_path(draft, "vllm", tmp_path / "alias" / "out")
    assert (tmp_path / "real" / "out" / MARKER).is_file()


# ------------------------------------------------------------------ free space, sparse sources


def _sparse_with_data(path: Path) -> Path:
    """A draft whose 256 MiB embedding is mostly a hole, with data at its start, in its
    middle and at its very end (written over the hole, so the bytes are not all zero)."""
    source = f.specforge()
    source.add("embed_tokens.weight", "BF16", (f.VOCAB, 512 * 1024))
    draft = source.write(path)
    weights = draft / "model.safetensors"
    raw = weights.read_bytes()[:8]
    size = int.from_bytes(raw, "little")
    header = json.loads(weights.read_bytes()[8 : 8 + size])
    begin, end = (8 + size + o for o in header["embed_tokens.weight"]["data_offsets"])
    with weights.open("r+b") as handle:
        for at, length in ((begin, 70_000), ((begin + end) // 2, 4096), (end - 3000, 3000)):
            handle.seek(at)
            handle.write(os.urandom(length))
    return draft


def allocated(path: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


@pytest.mark.slow
def test_holes_stay_holes_and_the_bytes_stay_the_same(tmp_path: Path) -> None:
    from tests.test_convert import tensor_hashes

    draft = _sparse_with_data(tmp_path / "in")
    out = tmp_path / "out"
    convert_path(draft, "vllm", out)
    assert tensor_hashes(out) == tensor_hashes(draft)
    length = (out / "model.safetensors").stat().st_size
    assert length > 256 * 1024 * 1024
    assert allocated(out) < 16 * 1024 * 1024  # the holes were not written as zeros


def test_a_sparse_source_counts_at_its_written_size(tmp_path: Path) -> None:
    from draftfit.checkpoint import load_checkpoint
    from draftfit.conversion.planner import plan_conversion
    from draftfit.conversion.space import OVERHEAD, bytes_needed
    from draftfit.draft.description import describe

    draft = _sparse_with_data(tmp_path / "in")
    checkpoint = load_checkpoint(draft)
    plan = plan_conversion(checkpoint, describe(checkpoint), "vllm", None, None, False)
    needed = bytes_needed(plan, checkpoint)
    assert needed <= OVERHEAD + allocated(draft)
    assert needed < (draft / "model.safetensors").stat().st_size // 10


def test_too_little_free_space_is_one_line(tmp_path: Path) -> None:
    import shutil

    from draftfit.conversion.space import check_free_space

    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(UsageError) as caught:
        check_free_space(free + 2 * 10**9, tmp_path / "new" / "out", Path("out"))
    message = str(caught.value)
    assert message.startswith("not enough free space for out: needs ")
    assert " GB free on that filesystem; nothing written" in message
    assert not (tmp_path / "new").exists()


@pytest.fixture
def small_filesystem(tmp_path: Path):
    """An 8 MiB tmpfs (root with mount rights only): a real filesystem to run out of."""
    place = tmp_path / "small"
    place.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(place)],
        capture_output=True,
        check=False,
        timeout=scaled(),
    )
    if done.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        yield place
    finally:
        subprocess.run(["umount", str(place)], check=True, timeout=scaled())


def test_an_output_that_does_not_fit_is_refused_before_writing(
    tmp_path: Path, small_filesystem: Path, capsys
) -> None:
    source = f.specforge()
    shape = (f.VOCAB, 12 * 1024)  # 6 MiB of data that is not zero
    source.add("embed_tokens.weight", "BF16", shape, data=os.urandom(shape[0] * shape[1] * 2))
    draft = source.write(tmp_path / "in")
    out = small_filesystem / "out"
    assert main(["convert", str(draft), "--to", "vllm", "--anyway", "-o", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert re.fullmatch(
        rf"draftfit: error: not enough free space for {re.escape(str(out))}: needs "
        r"0\.\d{3} GB, 0\.00\d GB free on that filesystem; nothing written \(.*\)",
        line,
    ), line
    assert list(small_filesystem.iterdir()) == []


@pytest.mark.slow
def test_a_sparse_draft_fits_where_its_length_would_not(
    tmp_path: Path, small_filesystem: Path
) -> None:
    from tests.test_convert import tensor_hashes

    draft = _sparse_with_data(tmp_path / "in")  # 256 MiB long, 8 MiB of room
    convert_path(draft, "vllm", small_filesystem / "out")
    assert tensor_hashes(small_filesystem / "out") == tensor_hashes(draft)


# ------------------------------------------------------------------ damaged input


def _truncate(path: Path, keep_data: int) -> None:
    raw = path.read_bytes()
    header = 8 + int.from_bytes(raw[:8], "little")
    path.write_bytes(raw[: header + keep_data])


def _gap_then_truncate(path: Path) -> None:
    """Shift the last tensor's offsets past a gap: its bytes run off the end of the file."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    last = max((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"])
    begin, end = header[last]["data_offsets"]
    header[last]["data_offsets"] = [begin + 64, end + 64]
    f.raw_safetensors(path, header, raw[8 + size :])


@pytest.mark.parametrize(
    ("damage", "code"),
    [(lambda p: _truncate(p, 1000), "DF002"), (_gap_then_truncate, "DF007")],
)
def test_damaged_input_is_refused_before_writing(
    draft: Path, tmp_path: Path, capsys, damage, code: str
) -> None:
    damage(draft / "model.safetensors")
    inputs = tree_hash(draft)
    out = tmp_path / "out"
    with pytest.raises(DamagedInputError, match=code):
        convert_path(draft, "vllm", out)
    assert main(["convert", str(draft), "--to", "vllm", "--anyway", "-o", str(out)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert code in line and "model.safetensors" in line and "nothing written" in line
    assert not out.exists() and siblings(out) == []
    assert tree_hash(draft) == inputs


@pytest.mark.slow
def test_convert_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    """The bytes convert copies show a progress bar on a terminal's stderr, none in a pipe."""
    import subprocess
    import sys

    from tests.terminal import stderr_on_a_terminal

    root = Path(__file__).resolve().parent.parent
    draft = f.speculators(aux=[2, 4, 5]).write(tmp_path / "draft")
    env = {"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin", "TERM": "xterm"}

    def argv(out: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "draftfit",
            "convert",
            str(draft),
            "--to",
            "vllm",
            "--anyway",
            "-o",
            out,
        ]

    returncode, seen = stderr_on_a_terminal(argv(str(tmp_path / "on-a-terminal")), env)
    assert returncode == 0
    assert b"writing" in seen
    piped = subprocess.run(
        argv(str(tmp_path / "piped")), capture_output=True, env=env, check=False, timeout=scaled()
    )
    assert piped.returncode == 0 and piped.stderr == b""
