"""Shared test setup: a deterministic environment (no colour, no debug tracebacks)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("DRAFTFIT_DEBUG", raising=False)
    # No engine counts as installed, whatever this machine has: the default of --engine is
    # the newest vLLM (tests of the installed default set their own search path).
    monkeypatch.setenv("DRAFTFIT_ENGINE_PATH", "")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--snapshot-update",
        action="store_true",
        default=False,
        help="rewrite tests/snapshots/ from what the rule cases render now (review the diff)",
    )


@pytest.fixture
def snapshot_update(request: pytest.FixtureRequest) -> bool:
    """Whether this run rewrites the snapshot files instead of comparing with them."""
    return bool(request.config.getoption("--snapshot-update"))
