"""The Python API: what a script calling draftfit gets, without the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftfit.checker import check_path
from tests import factory as f


def test_exit_code_takes_the_threshold_by_name_as_the_command_line_spells_it(
    tmp_path: Path,
) -> None:
    draft = f.specforge().write(tmp_path / "draft")
    report = check_path(draft, engines=["vllm"])  # no target: unverified, nothing wrong
    assert report.engines[0].verdict == "unverified"
    assert report.exit_code("error") == report.exit_code() == 0
    assert report.exit_code("unverified") == 1
    with pytest.raises(ValueError, match="choose from error, warning, unverified, info"):
        report.exit_code("fatal")
