"""Temporary files and folders beside an output: new, private, never an existing path."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from draftfit.output import temporary
from draftfit.output.temporary import make_private_folder, open_private_file


def test_folder_is_new_empty_and_private(tmp_path: Path) -> None:
    first = make_private_folder(tmp_path, ".out.draftfit-")
    second = make_private_folder(tmp_path, ".out.draftfit-")
    assert first != second
    for path in (first, second):
        assert path.parent == tmp_path and path.name.startswith(".out.draftfit-")
        assert path.is_dir() and not any(path.iterdir())
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


def test_file_is_new_private_and_writable(tmp_path: Path) -> None:
    fd, path = open_private_file(tmp_path, ".report.", ".tmp")
    try:
        os.write(fd, b"x")
    finally:
        os.close(fd)
    assert path.name.startswith(".report.") and path.name.endswith(".tmp")
    assert path.read_bytes() == b"x"
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


def test_a_taken_name_is_skipped_never_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The OS's random bytes are made to repeat: the second call must pass over the name
    the first took (and the file in it) rather than open or replace it."""
    monkeypatch.setattr(temporary.os, "urandom", lambda n: b"\x01" * n)
    taken = make_private_folder(tmp_path, "t-")
    (taken / "keep").write_text("mine")
    with pytest.raises(FileExistsError):
        make_private_folder(tmp_path, "t-")
    fd, path = open_private_file(tmp_path, "f-", "")
    os.close(fd)
    with pytest.raises(FileExistsError):
        open_private_file(tmp_path, "f-", "")
    assert (taken / "keep").read_text() == "mine" and path.read_bytes() == b""


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_link_at_the_name_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("precious")
    monkeypatch.setattr(temporary.os, "urandom", lambda n: b"\x02" * n)
    (tmp_path / f"f-{'02' * 8}").symlink_to(target)
    with pytest.raises(FileExistsError):
        open_private_file(tmp_path, "f-", "")
    assert target.read_text() == "precious"
