"""The locations an engine-data `source` cites, parsed out of its text.

A source reads like `vllm/config.py:2379@v0.8.5` or, for several places,
`vllm/x.py:413@v0.10.1; :366-371,449@v0.34.0; vllm/y.py@v0.34.0 (a remark)`: each location
is a file path (inherited from the previous location when omitted), optional cited lines and
the release tag. A location may also be a page of the engine's documentation as built for
one release (`https://nvidia.github.io/TensorRT-LLM/1.4.0rc4/llm-api/reference/X.html`): its
release is the version segment of its address, and its anchor (the quoted signature line or
field) is looked for in the page's text rather than at a line. Remarks in parentheses are
prose, not locations. The data loader uses this to check that an entry's `anchors` name one
anchor per location, and the maintainer's refresh script to re-read each location in a newer
release.
"""

from __future__ import annotations

import re

from draftfit.records import frozen

_LOCATION = re.compile(
    r"(?P<path>(?<![\w/.\-])[A-Za-z_][\w\-]*(?:/[\w\-.]+)*\.py)?"
    r"(?::(?P<lines>\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*))?"
    r"(?:@v?(?P<tag>\d[\w.]*\w))?"
)
# A page of versioned documentation: an https address whose path holds the release.
_PAGE = re.compile(r"https://[\w.\-]+/[^\s;()]*?\.html(?:#[\w.\-]*)?")
_PAGE_RELEASE = re.compile(r"/(?P<tag>\d+\.\d+(?:\.\d+)?(?:(?:rc|a|b|\.post|\.dev)\d+)*)/")


@frozen
class Location:
    """One cited place: a file, the cited line ranges (empty when none) and the release; or
    (`page`) a documentation page of one release, whose address is `path`."""

    path: str
    ranges: tuple[tuple[int, int], ...]
    tag: str | None
    page: bool = False

    @property
    def first_range(self) -> tuple[int, int] | None:
        return self.ranges[0] if self.ranges else None

    def __str__(self) -> str:
        if self.page:
            return self.path
        lines = ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in self.ranges)
        return f"{self.path}{':' + lines if lines else ''}{'@v' + self.tag if self.tag else ''}"


def _without_remarks(text: str) -> str:
    """`text` with every parenthesised remark blanked out (positions kept)."""
    out = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        if depth:
            out.append(" ")
        else:
            out.append(char)
        if char == ")" and depth:
            depth -= 1
    return "".join(out)


def page_release(address: str) -> str | None:
    """The release a versioned documentation page belongs to (`1.4.0rc4` in
    `https://nvidia.github.io/TensorRT-LLM/1.4.0rc4/...`), None for an unversioned page."""
    found = _PAGE_RELEASE.search(address)
    return found.group("tag") if found else None


def parse_locations(source: str) -> tuple[Location, ...]:
    """The locations `source` cites, in order (see the module docstring)."""
    found: list[tuple[int, Location]] = []
    text = _without_remarks(source)
    for match in _PAGE.finditer(text):
        address = match.group(0)
        found.append((match.start(), Location(address, (), page_release(address), page=True)))
    # Code locations are read in the text with the pages blanked out.
    text = _PAGE.sub(lambda m: " " * len(m.group(0)), text)
    path: str | None = None
    for match in _LOCATION.finditer(text):
        if not match.group(0) or not (match.group("path") or match.group("tag")):
            continue
        if match.group("path") is None and match.group("lines") is None and path is None:
            continue
        path = match.group("path") or path
        if path is None:
            continue
        ranges: list[tuple[int, int]] = []
        for part in (match.group("lines") or "").split(","):
            if part:
                first, _, last = part.partition("-")
                ranges.append((int(first), int(last or first)))
        found.append((match.start(), Location(path, tuple(ranges), match.group("tag"))))
    return tuple(location for _, location in sorted(found, key=lambda item: item[0]))
