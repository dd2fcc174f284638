"""Run a command with its stderr on a pseudo-terminal, as a user at a terminal sees it."""

from __future__ import annotations

import os
import pty
import subprocess

from tests.timeouts import scaled


def stderr_on_a_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Run `argv` with stdout discarded and stderr on a pseudo-terminal; returns the exit
    status and everything written to the terminal."""
    leader, follower = pty.openpty()
    try:
        run = subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=follower, env=env, check=False, timeout=scaled()
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the follower side is closed: nothing more to read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    return run.returncode, b"".join(chunks)
