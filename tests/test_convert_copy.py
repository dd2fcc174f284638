"""How convert moves tensor bytes: the kernel copies what is unchanged, Python writes what
changes (hashed as it goes and read back), and `--verify` re-reads everything."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from draftfit.checkpoint import load_checkpoint
from draftfit.cli.main import main
from draftfit.conversion import convert_path
from draftfit.conversion.write import OutputMismatchError, Region, verify_regions
from tests import factory as f
from tests.timeouts import scaled


@pytest.fixture
def draft(tmp_path: Path) -> Path:
    """A SpecForge draft with trained-looking values in every matrix (no two bytes alike)."""
    return f.fill(f.specforge(nested_aux=[1, 3, 6])).write(tmp_path / "specforge")


def tensor_bytes(folder: Path) -> dict[str, bytes]:
    """Each tensor's stored bytes, by name (read through the header, as any reader would)."""
    checkpoint = load_checkpoint(folder)
    out = {}
    for tensor in checkpoint.tensors.values():
        assert tensor.byte_range is not None
        begin, end = tensor.byte_range
        with (folder / tensor.file).open("rb") as handle:
            handle.seek(begin)
            out[tensor.name] = handle.read(end - begin)
    return out


def converted(draft: Path, out: Path, **options: bool) -> dict[str, bytes]:
    result = convert_path(draft, "vllm", out, **options)
    assert result.written and result.exit_code() == 0
    return tensor_bytes(out)


def test_every_copied_tensor_keeps_its_bytes(draft: Path, tmp_path: Path) -> None:
    before = tensor_bytes(draft)
    after = set(converted(draft, tmp_path / "out").values())
    matrices = [name for name, data in before.items() if len(data) > 4096]
    assert len(matrices) >= 5
    for name in matrices:  # renamed or not, every matrix's bytes are in the output
        assert before[name] in after, name


def test_verify_rereads_and_changes_nothing(draft: Path, tmp_path: Path, capsys) -> None:
    plain = converted(draft, tmp_path / "plain")
    verified = converted(draft, tmp_path / "verified", verify=True)
    assert plain == verified
    assert main(["convert", str(draft), "--to", "vllm", "-o", str(tmp_path / "a")]) == 0
    text = capsys.readouterr().out
    args = ["convert", str(draft), "--to", "vllm", "-o", str(tmp_path / "b"), "--verify"]
    assert main(args) == 0
    assert capsys.readouterr().out == text.replace(str(tmp_path / "a"), str(tmp_path / "b"))


def test_without_a_kernel_copy_python_copies_and_hashes(
    draft: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the kernel cannot copy (another filesystem, an old kernel), bytes go through a
    buffer instead; the output is the same."""
    kernel = converted(draft, tmp_path / "kernel")

    def unsupported(*_args: object) -> int:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "copy_file_range", unsupported, raising=False)
    assert converted(draft, tmp_path / "buffered") == kernel
    assert converted(draft, tmp_path / "buffered-verified", verify=True) == kernel


def _written_file(tmp_path: Path) -> tuple[Path, Path, list[Region]]:
    """A source file and an output file holding 4 KB copied from it after a 16-byte header
    written by Python, with the regions a write would record."""
    source = tmp_path / "source.bin"
    source.write_bytes(os.urandom(8192))
    folder = tmp_path / "out"
    folder.mkdir()
    header = b"0123456789abcdef"
    (folder / "w.bin").write_bytes(header + source.read_bytes()[100:4196])
    from draftfit.conversion.write import _digest_of

    regions = [
        Region("w.bin", 0, len(header), _digest_of(header)),
        Region("w.bin", 16, 4096, None, (source, 100)),
    ]
    return source, folder, regions


def test_bytes_python_wrote_are_read_back_against_their_hash(tmp_path: Path) -> None:
    _source, folder, regions = _written_file(tmp_path)
    verify_regions(folder, regions)
    verify_regions(folder, regions, full=True)
    damaged = bytearray((folder / "w.bin").read_bytes())
    damaged[3] ^= 0xFF
    (folder / "w.bin").write_bytes(bytes(damaged))
    with pytest.raises(OutputMismatchError, match="bytes 0-16 do not read back as they were"):
        verify_regions(folder, regions)


def test_kernel_copies_are_compared_with_the_source_only_when_asked(tmp_path: Path) -> None:
    source, folder, regions = _written_file(tmp_path)
    changed = bytearray(source.read_bytes())
    changed[200] ^= 0xFF
    source.write_bytes(bytes(changed))
    verify_regions(folder, regions)  # not read back by default
    with pytest.raises(OutputMismatchError, match="bytes 16-4112 do not read back as bytes 100-"):
        verify_regions(folder, regions, full=True)


def test_anyway_judges_the_input_while_copying(draft: Path, tmp_path: Path) -> None:
    """With `anyway`, the input's own verdict is worked out while the bytes are copied: the
    result says the same as a convert that judges first and then stops."""
    stopped = convert_path(draft, "vllm", tmp_path / "stopped", anyway=False)
    assert not stopped.written and stopped.not_needed is not None
    assert not (tmp_path / "stopped").exists()
    written = convert_path(draft, "vllm", tmp_path / "written", anyway=True)
    assert written.written and written.not_needed == stopped.not_needed
    assert tensor_bytes(tmp_path / "written") == converted(draft, tmp_path / "again")


def test_work_beside_the_copy_runs_and_its_error_comes_after_the_write(
    draft: Path, tmp_path: Path
) -> None:
    done: list[str] = []
    convert_path(draft, "vllm", tmp_path / "a", while_writing=lambda: done.append("ran"))
    assert done == ["ran"]

    def failing() -> None:
        raise LookupError("beside the copy")

    with pytest.raises(LookupError, match="beside the copy"):
        convert_path(draft, "vllm", tmp_path / "b", while_writing=failing)
    assert tensor_bytes(tmp_path / "b") == tensor_bytes(tmp_path / "a")  # written, checked


def test_a_failure_before_the_swap_leaves_nothing(draft: Path, tmp_path: Path) -> None:
    """`before_swap` runs when every byte is written: when it raises, the temporary folder
    goes and the output keeps what it held (here: nothing)."""
    from draftfit.conversion.planner import plan_conversion
    from draftfit.conversion.write import write_plan
    from draftfit.draft.description import describe

    checkpoint = load_checkpoint(draft)
    plan = plan_conversion(checkpoint, describe(checkpoint), "vllm", None, None, False)
    started: list[bool] = []

    def refuse() -> None:
        raise LookupError("refused before the swap")

    with pytest.raises(LookupError, match="refused before the swap"):
        write_plan(
            plan,
            checkpoint,
            tmp_path / "out",
            before_copy=lambda: started.append(True),
            before_swap=refuse,
        )
    assert started == [True]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["specforge"]


def test_the_converter_loads_the_checker_only_to_check() -> None:
    """Planning and copying need no checker: it is loaded when the input or the output is
    judged (with `--anyway`, while the bytes are copied)."""
    code = (
        "import json, sys\n"
        "import draftfit.conversion\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('draftfit.'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=scaled()
    )
    loaded = json.loads(done.stdout)
    assert "draftfit.conversion.write" in loaded
    assert "draftfit.checker" not in loaded and "draftfit.report" not in loaded


def test_the_marker_names_this_machine_as_the_socket_module_does() -> None:
    import socket

    from draftfit.conversion.output import host_name

    assert host_name() == socket.gethostname()
