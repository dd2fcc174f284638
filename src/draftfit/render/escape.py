"""Show terminal control characters from untrusted text as visible escapes.

Checkpoints are written by anyone: a tensor name or config value holding an ANSI escape
sequence or a bidirectional-override character must not drive the user's terminal when
draftfit prints it. This module has no dependencies so that error lines can use it too.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidi controls that can
# reorder what a terminal shows.
UNSAFE_CHARACTERS = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """`text` with terminal control and bidi characters shown as `\\xNN` / `\\uNNNN`."""
    return UNSAFE_CHARACTERS.sub(_visible, text)
