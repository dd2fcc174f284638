"""How untrusted text is written in each output kind, so that it cannot drive what reads it.

Checkpoints, paths, settings and Hub ids are written by anyone. A tensor name holding an ANSI
escape sequence must not drive the user's terminal; a folder name holding a newline and
`::error::` must not print a line that a CI runner takes as a workflow command of its own; a
control character must not make a JUnit report unreadable XML; a space or `%` in a path must
not make a SARIF URI invalid. Each output kind has one function here:

* terminal text — :func:`escape_field` for one value (every control character, newlines
  included, shown as a visible escape such as `\\n` or `\\x1b`; a very long value cut short);
  :func:`escape_controls` for a whole block draftfit wrote itself (its own newlines kept);
* GitHub workflow commands — :func:`annotation_data` for a message,
  :func:`annotation_property` for a property value;
* JUnit XML — :func:`xml_text`;
* SARIF — :func:`uri_reference` for an `artifactLocation.uri`;
* Markdown — :func:`markdown_text` and :func:`markdown_code`.

Whatever a value holds, no line draftfit writes in a text format starts (after blanks) with
`::`, which is how a workflow command starts: :func:`guard_line_starts` shows such a leading
colon as `\\x3a`. This module has no dependencies so that error lines can use it too.
"""

from __future__ import annotations

import re
from urllib.parse import quote

# The patterns below are text, used through `re`'s functions: each is compiled on first use
# and kept in `re`'s own cache, so a run compiles only those of the formats it writes.

# C0 controls but tab and newline, DEL, C1 controls, lone surrogates (no encoding can write
# them), the Unicode line and paragraph separators, and the bidi controls that can reorder
# what a terminal shows.
UNSAFE_CHARACTERS = (
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)
# The same and tab and newline: nothing in one value may break or indent a line.
UNSAFE_IN_FIELD = "[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
# In a workflow command: the same but CR and LF, which the command's own escaping encodes.
ANNOTATION_UNSAFE = (
    "[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)
SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# How long one value may be when shown: longer ones keep their start and say their length.
FIELD_LIMIT = 2000
NAME_LIMIT = 200
#: Characters of a value quoted in a message.
SHOWN_CHARS = 60

# A line whose first non-blank characters are `::` (a workflow command, to a CI runner).
COMMAND_START = r"(?m)^([ \t]*):(?=:)"

# XML 1.0 holds only tab, newline and carriage return of the C0 controls, and no surrogate
# or U+FFFE / U+FFFF. Of these, tab and newline are kept; a carriage return and the C1
# controls XML allows are shown escaped too (they are controls).
XML_UNSAFE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]"

# Outside code spans: the characters that make Markdown (or the HTML it may hold) act. An
# underscore between letters or digits cannot start or end emphasis, and a bracket makes a
# link or an image only as `](` (no line of ours defines a reference): those stay as they are.
MARKDOWN_ACTIVE = r"([\\`*<>|~]|(?<![^\W_])_|_(?![^\W_])|\](?=\())"
CODE_SPAN = r"`[^`\n]+`"


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char in SHORT_ESCAPES:
        return SHORT_ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """`text` with terminal control and bidi characters shown as `\\xNN` / `\\uNNNN`; tab
    and newline are kept (for a block of draftfit's own lines)."""
    return re.sub(UNSAFE_CHARACTERS, _visible, text)


def clip(text: str, limit: int = SHOWN_CHARS, *, at_word: bool = False) -> str:
    """`text`, or its start and `…` within `limit` characters: the one way draftfit shortens
    what it quotes. With `at_word`, the start ends at a whole word where one ends in the
    second half (and without the punctuation before the cut), for prose such as another
    library's message."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if at_word:
        space = cut.rfind(" ")
        if space > limit // 2:
            cut = cut[:space]
        cut = cut.rstrip(" ,;:(")
    return cut + "…"


def guard_line_starts(text: str) -> str:
    """`text` with the first colon of every line that starts (after blanks) with `::` shown
    as `\\x3a`, so that no line reads as a workflow command."""
    return re.sub(COMMAND_START, r"\1\\x3a", text)


def escape_field(text: str, limit: int = FIELD_LIMIT) -> str:
    """One untrusted value for a line of terminal text: every control character (newline,
    carriage return and tab included) shown as a visible escape, cut short past `limit`
    characters (its start, `…` and its length), and a leading `::` shown as `\\x3a:`."""
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text):,} characters)"
    return guard_line_starts(re.sub(UNSAFE_IN_FIELD, _visible, text))


def escape_name(text: str) -> str:
    """A name (tensor, file, path) for terminal text: :func:`escape_field`, cut shorter."""
    return escape_field(text, NAME_LIMIT)


def annotation_data(text: str) -> str:
    """A GitHub workflow command's message: `%`, CR and LF as `%25`, `%0D` and `%0A` (as the
    runner decodes them), every other control character shown as a visible escape."""
    visible = re.sub(ANNOTATION_UNSAFE, _visible, text)
    return visible.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotation_property(text: str) -> str:
    """A GitHub workflow command's property value: escaped as a message, and `:` and `,` as
    `%3A` and `%2C`."""
    return annotation_data(text).replace(":", "%3A").replace(",", "%2C")


def xml_text(text: str) -> str:
    """Text for a JUnit XML element or attribute: the characters XML 1.0 cannot hold (and
    the other controls) shown as visible escapes; tab and newline kept (the XML writer
    escapes `<`, `&` and, in attributes, the line breaks)."""
    return re.sub(XML_UNSAFE, _visible, text)


def uri_reference(path: str) -> str:
    """A relative POSIX path as an RFC 3986 relative URI reference: every byte of its UTF-8
    form but the unreserved characters and `/` percent-encoded (`sp ace` → `sp%20ace`,
    `%41` → `%2541`; a colon too, so the first segment never reads as a scheme). A name
    that is not valid UTF-8 (read with surrogate escapes) keeps its original bytes."""
    try:
        data = path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = path.encode("utf-8", "backslashreplace")
    return quote(data, safe="/")


def markdown_text(text: str) -> str:
    """Untrusted text in Markdown (a table cell, a list item): controls shown visibly, and
    outside code spans every character that makes Markdown or HTML act backslash-escaped;
    `|`, which ends a table cell even inside a code span, is escaped everywhere."""
    text = escape_field(text)
    out: list[str] = []
    last = 0
    for span in re.finditer(CODE_SPAN, text):
        out.append(re.sub(MARKDOWN_ACTIVE, r"\\\1", text[last : span.start()]))
        out.append(span.group().replace("|", "\\|"))
        last = span.end()
    out.append(re.sub(MARKDOWN_ACTIVE, r"\\\1", text[last:]))
    return "".join(out)


def markdown_code(text: str) -> str:
    """Untrusted text as one Markdown code span: controls shown visibly, fenced by more
    backticks than the longest run inside it (and padded where it starts or ends with one),
    so nothing in it can end the span."""
    text = escape_field(text).replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def strip_line_ends(text: str) -> str:
    """`text` without the blanks at the end of each line, in time linear in its length
    (a regex anchored at line ends rescans each run of blanks from every position in it)."""
    return "\n".join(line.rstrip(" \t") for line in text.split("\n"))
