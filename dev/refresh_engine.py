"""Re-read the engine source lines draftfit's data cites, in a release from the package index.

Every data entry's `source` cites code locations (`path:lines@vX.Y.Z`, see
`draftfit.engines.citation`), and beside it `anchors` stores one short snippet per location:
the stripped text of the first cited line that says something (a line of 8 characters or more
with a letter or digit in it, else the first line with a letter or digit; none when the
cited lines are blank or punctuation only), at most 80 characters. With those,
a new release takes minutes to review:

    PYTHONPATH=src python dev/refresh_engine.py vllm 0.34.1
    PYTHONPATH=src python dev/refresh_engine.py vllm 0.34.0 --against 0.33.0

downloads the release's wheel (`pip download --no-deps --only-binary=:all:`) and that of
the `--against` release (default: the newest release in the data), reads the cited files
straight out of them (nothing is installed or run), and prints, for every entry in effect at
`--against` (`--all`: every entry), whether each cited location is

* `unchanged` — the anchor is at the same line in both releases,
* `moved`     — it is at another line (both lines are printed),
* `changed`   — the file is there but the anchor is not,
* `vanished`  — the file is not in the release,
* `stale`     — the anchor (or, for a location without one, the file) is not there at
  `--against` already (the citation is out of date; nothing this release did),
* `file kept` / `unanchored` — a location without an anchor (no line cited, or its release
  could not be read: the entry's `anchor_missing` says why); only the file's presence is
  checked;
* `superseded` — the entry cites the same file at a newer release too (the older location
  records where the behaviour began); not re-read;
* `no release` — a location outside the engine (no release tag); not re-read.

With `--cited` (or when VERSION is the `--against` release) only VERSION is read and each
anchor is looked for within the lines its location cites (`moved` then prints the new line).
A fact whose locations are all unchanged takes one line.

Exit status: 0 when nothing moved, changed or vanished, 1 when something did, 2 when a
release cannot be read or the arguments are wrong.

    PYTHONPATH=src python dev/refresh_engine.py vllm --index

lists the releases on the package index (`pip index versions --pre`) that are newer than the
data or missing from it, other than those its `not_read` list records (exit 1 when any).

    PYTHONPATH=src python dev/refresh_engine.py vllm --write-anchors

fills `anchors` (and `anchor_missing` with the reason wherever a location gets none) for every
entry, from the releases the citations cite, and rewrites only those two fields of each entry
line in `src/draftfit/engines/ENGINE/data.toml` (atomically). Each cited release is downloaded
once. Anchors are never invented: a location without a cited line, without a release, whose
release cannot be downloaded, whose file is not in the wheel or whose lines are past the end of
the file gets a reason instead.

Downloads go to `--cache-dir` (default `~/.cache/draftfit-refresh`), one wheel at a time, and
are deleted after use unless `--keep` is given (a kept wheel is reused by the next run).
TensorRT-LLM's package on PyPI is a stub that fetches the real wheel elsewhere at install
time, so its releases are read from a local git clone instead:

    PYTHONPATH=src python dev/refresh_engine.py trtllm 1.2.0rc2 --cited --repo-snapshot GIT_DIR

reads each cited file with `git --git-dir GIT_DIR show COMMIT:PATH`, COMMIT being the one the
data's `commits` pins the release to (a bare clone of NVIDIA/TensorRT-LLM will do; nothing is
fetched). A release without a pinned commit is unreadable; without `--repo-snapshot` so is
every TensorRT-LLM release.

Where an engine's code cannot be read at a release, an entry may cite the release's own
documentation instead: a page of the documentation as built for that release
(`https://nvidia.github.io/TensorRT-LLM/1.4.0rc4/llm-api/reference/Eagle3DecodingConfig.html`),
with the quoted signature line or field as its anchor. The code modes above list such a
location as `page`;

    PYTHONPATH=src python dev/refresh_engine.py trtllm --documented [--pages DIR]

reads each cited page (from DIR, where a page is saved under its address without the
scheme, `DIR/nvidia.github.io/TensorRT-LLM/1.4.0rc4/...html`; else fetched over HTTPS, at
most 8 MiB and 30 seconds a page) and prints whether each anchor is `found` in its text
(whitespace ignored), `missing`, or the page `unreachable`. Exit status: 1 when an anchor is
missing, 2 when no page could be read, else 0.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from draftfit.engines.citation import Location, parse_locations
from draftfit.engines.profile import Entry
from draftfit.engines.registry import engine_names, load_engine

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PACKAGES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt-llm"}
STUB = {
    "trtllm": "TensorRT-LLM's PyPI package is a stub that fetches its wheel from pypi.nvidia.com"
}
ENGINES_DIR = Path(__file__).resolve().parent.parent / "src" / "draftfit" / "engines"
ANCHOR_CHARS = 80
_SOURCE_FIELD = re.compile(r'source = "(?:[^"\\]|\\.)*"')
_ANCHOR_FIELDS = re.compile(
    r', anchors = \[(?:"(?:[^"\\]|\\.)*"(?:, )?)*\]|, anchor_missing = "(?:[^"\\]|\\.)*"'
)


# Statuses that need no review.
QUIET = frozenset({"unchanged", "file kept", "superseded", "no release", "page"})
# How much of a documentation page is read, and how long a fetch may take.
PAGE_BYTES = 8 << 20
PAGE_SECONDS = 30


class Unreadable(Exception):
    """A release whose source cannot be read; the message says why."""


class Release:
    """The Python files of one downloaded release, read from its wheel on demand."""

    def __init__(self, engine: str, version: str, wheel: Path) -> None:
        self.engine, self.version = engine, version
        self._zip = zipfile.ZipFile(wheel)
        self._names = set(self._zip.namelist())
        self._cache: dict[str, list[str] | None] = {}

    def lines(self, path: str) -> list[str] | None:
        """The file's lines, or None when the release has no such file."""
        if path not in self._cache:
            found = path if path in self._names else None
            if found is None:
                found = next((n for n in sorted(self._names) if n.endswith("/" + path)), None)
            text = self._zip.read(found).decode("utf-8", "replace") if found else None
            self._cache[path] = text.splitlines() if text is not None else None
        return self._cache[path]

    def close(self) -> None:
        self._zip.close()


@dataclass(frozen=True)
class Snapshot:
    """A local git directory (`--repo-snapshot`) to read releases from instead of wheels."""

    git_dir: Path


class SnapshotRelease:
    """The files of one release at the commit the data pins it to, read from a git snapshot."""

    def __init__(self, engine: str, version: str, snapshot: Snapshot, commit: str) -> None:
        self.engine, self.version = engine, version
        self._git_dir, self._commit = snapshot.git_dir, commit
        self._cache: dict[str, list[str] | None] = {}

    def lines(self, path: str) -> list[str] | None:
        """The file's lines at the pinned commit, or None when the commit has no such file."""
        if path not in self._cache:
            cmd = ["git", "--git-dir", str(self._git_dir), "show", f"{self._commit}:{path}"]
            done = subprocess.run(cmd, capture_output=True, check=False)
            text = done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None
            self._cache[path] = text.splitlines() if text is not None else None
        return self._cache[path]

    def close(self) -> None:
        pass


def _pinned_commit(engine: str, version: str, snapshot: Snapshot) -> str:
    """The commit `version` is pinned to, present in the snapshot. Raises Unreadable."""
    commit = load_engine(engine).commit_for(version)
    if commit is None:
        raise Unreadable(f"v{version} is not pinned to a commit in the data's `commits`")
    cmd = ["git", "--git-dir", str(snapshot.git_dir), "cat-file", "-e", f"{commit}^{{commit}}"]
    try:
        done = subprocess.run(cmd, capture_output=True, check=False)
    except OSError as exc:
        raise Unreadable(f"git cannot run: {exc}") from exc
    if done.returncode != 0:
        raise Unreadable(f"commit {commit[:12]} (v{version}) is not in {snapshot.git_dir}")
    return commit


AnyRelease = Release | SnapshotRelease


@contextmanager
def open_release(
    engine: str, version: str, cache: Path | Snapshot, keep: bool
) -> Iterator[AnyRelease]:
    """Download `engine==version`'s wheel into `cache` (or reuse a kept one) and read it;
    the wheel is deleted afterwards unless `keep`. With a Snapshot instead of a cache, read
    the release at its pinned commit. Raises Unreadable."""
    if isinstance(cache, Snapshot):
        yield SnapshotRelease(engine, version, cache, _pinned_commit(engine, version, cache))
        return
    package = PACKAGES[engine]
    folder = cache / f"{engine}-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += [
            "--quiet",
            "--disable-pip-version-check",
            f"{package}=={version}",
            "-d",
            str(folder),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wheels = sorted(folder.glob("*.whl"))
        if done.returncode != 0 or not wheels:
            _remove(folder)
            if engine in STUB:
                raise Unreadable(STUB[engine])
            why = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise Unreadable(f"pip download {package}=={version}: {why}")
    release = Release(engine, version, wheels[0])
    try:
        yield release
    finally:
        release.close()
        if not keep:
            _remove(folder)


def _remove(folder: Path) -> None:
    for item in folder.iterdir():
        item.unlink()
    folder.rmdir()


def matches(line: str, anchor: str) -> bool:
    stripped = line.strip()
    return stripped == anchor or (len(anchor) >= ANCHOR_CHARS and stripped.startswith(anchor))


def choose_anchor(lines: list[str], first: int, last: int) -> str | None:
    """The anchor of the cited lines `first`..`last` (1-based), or None when they hold nothing."""
    cited = [line.strip() for line in lines[first - 1 : last]]
    telling = [s for s in cited if len(s) >= 8 and re.search(r"\w", s)]
    some = telling or [s for s in cited if re.search(r"\w", s)]
    return some[0][:ANCHOR_CHARS] if some else None


@dataclass(frozen=True)
class Status:
    kind: str  # unchanged, moved, changed, vanished, file kept, unanchored
    detail: str = ""


def locate(release: AnyRelease, location: Location, anchor: str) -> Status:
    """Where `location`'s anchor is in `release`."""
    lines = release.lines(location.path)
    if lines is None:
        return Status("vanished", f"{location.path} is not in {release.version}")
    if not anchor:
        return Status("file kept" if not location.ranges else "unanchored")
    first, last = location.first_range or (1, len(lines))
    if any(matches(line, anchor) for line in lines[first - 1 : last]):
        return Status("unchanged")
    found = [n for n, line in enumerate(lines, 1) if matches(line, anchor)]
    if not found:
        return Status("changed", f"`{anchor}` not found")
    nearest = min(found, key=lambda n: abs(n - first))
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return Status("moved", f"now at line {nearest}{more}, cited {first}")


@dataclass(frozen=True)
class Place:
    """Where an anchor is in one release: `present` is False when the file is not there;
    `line` is the occurrence nearest to where it was looked for, None when there is none."""

    present: bool
    line: int | None = None


def find(release: AnyRelease, location: Location, anchor: str, near: int | None = None) -> Place:
    """The occurrence of `anchor` in `location`'s file nearest to line `near` (default: the
    first cited line)."""
    lines = release.lines(location.path)
    if lines is None:
        return Place(False)
    if not anchor:
        return Place(True)
    found = [n for n, line in enumerate(lines, 1) if matches(line, anchor)]
    target = near or (location.first_range or (1, 1))[0]
    return Place(True, min(found, key=lambda n: abs(n - target)) if found else None)


def compare(
    release: AnyRelease, location: Location, anchor: str, before: Place, base: str
) -> Status:
    """`location`'s status in `release` relative to where its anchor was in release `base`."""
    if not before.present:
        return Status("stale", f"{location.path} is not in {base} already")
    if not anchor:
        return locate(release, location, anchor)
    if before.line is None:
        return Status("stale", f"`{anchor}` is not in {location.path} at {base} already")
    after = find(release, location, anchor, before.line)
    if not after.present:
        return Status("vanished", f"{location.path} is not in {release.version}")
    if after.line is None:
        return Status("changed", f"`{anchor}` was at line {before.line} in {base}, is gone")
    if after.line == before.line:
        return Status("unchanged")
    return Status("moved", f"line {before.line} in {base} -> {after.line} in {release.version}")


# ----------------------------------------------------------------------------- check mode


def check(
    engine: str,
    version: str,
    against: str | None,
    every: bool,
    cache: Path | Snapshot,
    keep: bool,
    cited: bool = False,
) -> int:
    data = load_engine(engine)
    base = against or data.latest
    if base not in data.versions:
        print(f"--against {base}: not a release in the {engine} data", file=sys.stderr)
        return 2
    entries = [
        (key, entry)
        for key, fact in data.facts.items()
        for entry in fact.entries
        if every or entry.applies(data.releases[base])
    ]
    scope = "every entry" if every else f"the entries in effect at {base}"
    against_base = not cited and version != base
    reading = base
    try:
        before: dict[tuple[Location, str], Place] | None = None
        if against_base:
            with open_release(engine, base, cache, keep) as old:
                before = {
                    (location, anchor): find(old, location, anchor)
                    for _, entry in entries
                    for location, anchor in _anchored(entry)
                }
        reading = version
        with open_release(engine, version, cache, keep) as release:
            how = f"compared with {base}" if against_base else "compared with the cited lines"
            print(f"{data.title} {version}: the citations of {scope}, {how}")
            counts = _report(release, entries, before, base)
    except Unreadable as exc:
        print(f"{data.title} {reading} cannot be read: {exc}", file=sys.stderr)
        return 2
    summary = ", ".join(f"{kind} {n}" for kind, n in counts.items() if n)
    review = counts["moved"] + counts["changed"] + counts["vanished"]
    print(f"summary: {summary}; {'review the facts above' if review else 'nothing to review'}")
    return 1 if review else 0


def _report(
    release: AnyRelease,
    entries: list[tuple[str, Entry]],
    before: dict[tuple[Location, str], Place] | None,
    base: str,
) -> dict[str, int]:
    """Print each fact's re-read locations (one line for a fact whose cited code is all
    unchanged) and count the statuses."""
    kinds = ["unchanged", "moved", "changed", "vanished", "file kept", "unanchored"]
    kinds += ["superseded", "no release", "stale", "page"]
    counts = dict.fromkeys(kinds, 0)
    by_fact: dict[str, list[Entry]] = {}
    for key, entry in entries:
        by_fact.setdefault(key, []).append(entry)
    for key, fact_entries in by_fact.items():
        lines: list[str] = []
        located = 0
        for entry in fact_entries:
            results = _statuses(release, entry, before, base)
            located += len(results)
            for _, status in results:
                counts[status.kind] += 1
            if all(s.kind in QUIET for _, s in results):
                continue
            value = repr(entry.value)
            span = f"[{entry.since or ''}, {entry.until or ''})"
            lines.append(f"    entry {span} value {value[:60]}{'...' if len(value) > 60 else ''}")
            for location, status in results:
                detail = f": {status.detail}" if status.detail else ""
                lines.append(f"      {status.kind:<10} {location}{detail}")
            if entry.anchor_missing and any(s.kind == "unanchored" for _, s in results):
                lines.append(f"      (no anchor: {entry.anchor_missing})")
        if lines:
            print(f"  {key}:")
            print("\n".join(lines))
        else:
            print(f"  {key}: unchanged ({len(fact_entries)} entries, {located} locations)")
    return counts


def _anchored(entry: Entry) -> list[tuple[Location, str]]:
    """Each location `entry` cites with its anchor ("" for none)."""
    locations = parse_locations(entry.source)
    anchors = entry.anchors or ("",) * len(locations)
    return list(zip(locations, anchors, strict=True))


def _statuses(
    release: AnyRelease,
    entry: Entry,
    before: dict[tuple[Location, str], Place] | None,
    base: str,
) -> list[tuple[Location, Status]]:
    """Each location of `entry` with its status in `release` (relative to release `base`
    when `before` holds the anchors' places there, else to the cited lines); a location is
    `superseded` when the same entry cites the same file at a newer release (it records
    history)."""
    pairs = _anchored(entry)
    locations = [location for location, _ in pairs]
    out = []
    for location, anchor in pairs:
        newer = [
            other.tag
            for other in locations
            if other.path == location.path
            and other.tag
            and location.tag
            and Version(other.tag) > Version(location.tag)
        ]
        if location.page:
            out.append((location, Status("page", "a documentation page: see --documented")))
        elif location.tag is None:
            out.append((location, Status("no release", "cites no release of the engine")))
        elif newer:
            out.append((location, Status("superseded", f"by @v{max(newer, key=Version)}")))
        elif before is not None:
            out.append(
                (location, compare(release, location, anchor, before[location, anchor], base))
            )
        else:
            out.append((location, locate(release, location, anchor)))
    return out


# ----------------------------------------------------------------------------- page mode


def page_text(address: str, pages: Path | None) -> str:
    """The text of a documentation page (its tags dropped, entities decoded): read from
    `pages` (the address without its scheme, below it) when given, else fetched over
    HTTPS. Raises Unreadable when it cannot be had."""
    import html
    import urllib.request
    from html.parser import HTMLParser

    if pages is not None:
        local = pages / address.split("://", 1)[1].split("#", 1)[0]
        try:
            with open(local, "rb") as handle:
                raw = handle.read(PAGE_BYTES)
        except OSError as exc:
            raise Unreadable(f"{local}: {exc.strerror or exc}") from exc
    else:
        try:
            with urllib.request.urlopen(address, timeout=PAGE_SECONDS) as reply:
                raw = reply.read(PAGE_BYTES)
        except OSError as exc:
            raise Unreadable(f"{address}: {exc}") from exc

    class _Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.parts: list[str] = []

        def handle_data(self, data: str) -> None:
            self.parts.append(data)

    parser = _Text()
    parser.feed(raw.decode("utf-8", "replace"))
    return html.unescape("".join(parser.parts))


def _squeezed(text: str) -> str:
    """`text` without whitespace: a signature's line breaks and spacing differ by theme."""
    return re.sub(r"\s+", "", text)


def documented(engine: str, pages: Path | None) -> int:
    """Look for every page anchor of `engine`'s data in its page's text; print each
    location's status and a summary. Exit 1 when an anchor is missing, 2 when no page
    could be read."""
    data = load_engine(engine)
    cited: dict[str, list[tuple[str, str]]] = {}
    for key, fact in data.facts.items():
        for entry in fact.entries:
            for location, anchor in _anchored(entry):
                if location.page:
                    cited.setdefault(location.path, []).append((key, anchor))
    counts = dict.fromkeys(["found", "missing", "unreachable", "unanchored"], 0)
    for address in sorted(cited):
        try:
            text = _squeezed(page_text(address, pages))
        except Unreadable as exc:
            counts["unreachable"] += len(cited[address])
            print(f"  unreachable {address}: {exc}")
            continue
        for key, anchor in cited[address]:
            kind = (
                "unanchored"
                if not anchor
                else ("found" if _squeezed(anchor) in text else "missing")
            )
            counts[kind] += 1
            if kind != "found":
                print(f"  {kind:<11} {key}: `{anchor}` in {address}")
    summary = ", ".join(f"{kind} {n}" for kind, n in counts.items() if n)
    print(f"{data.title}: documentation anchors: {summary or 'none cited'}")
    if counts["missing"]:
        return 1
    reached = counts["found"] + counts["missing"] + counts["unanchored"]
    return 2 if cited and not reached else 0


# ----------------------------------------------------------------------------- index mode


def index(engine: str) -> int:
    """List the releases on the package index from the first one in the data on that the
    data neither read (`versions`) nor records as not read (`not_read`); exit 1 when any."""
    data = load_engine(engine)
    cmd = [sys.executable, "-m", "pip", "index", "versions", "--pre", PACKAGES[engine]]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    listed = [
        line.split(":", 1)[1] for line in done.stdout.splitlines() if "Available versions:" in line
    ]
    if done.returncode != 0 or not listed:
        print(f"pip index versions {PACKAGES[engine]} failed", file=sys.stderr)
        return 2
    known = set(data.versions) | {item.version for item in data.not_read}
    first = Version(data.versions[0])
    unknown = sorted(
        (v.strip() for v in listed[0].split(",") if Version(v.strip()) >= first),
        key=Version,
    )
    unknown = [v for v in unknown if v not in known]
    newer = [v for v in unknown if Version(v) > Version(data.latest)]
    print(f"{data.title}: newest read {data.latest}; data date {data.data_date}")
    print(f"  on the index, not in the data: {', '.join(unknown) or 'none'}")
    print(f"  of which newer than the data: {', '.join(newer) or 'none'}")
    return 1 if unknown else 0


# ----------------------------------------------------------------------------- write mode


def write_anchors(engine: str, cache: Path | Snapshot, keep: bool) -> int:
    path = ENGINES_DIR / engine / "data.toml"
    text = path.read_text("utf-8")
    citations = _entry_sources(text)
    wanted: dict[str, list[Location]] = {}
    for source in citations:
        for location in parse_locations(source):
            if location.page:
                continue  # a page's anchor is quoted from the page by hand (see --documented)
            if location.tag and (location.ranges or engine in STUB):
                wanted.setdefault(location.tag, []).append(location)
    found: dict[Location, str] = {}
    why: dict[Location, str] = {}
    for tag in sorted(wanted, key=Version):
        try:
            with open_release(engine, tag, cache, keep) as release:
                for location in wanted[tag]:
                    if location.ranges:
                        _anchor_one(release, location, found, why)
        except Unreadable as exc:
            print(f"v{tag}: {exc}", file=sys.stderr)
            for location in wanted[tag]:
                why[location] = f"v{tag} unreadable ({exc})"
        print(f"v{tag}: {len(wanted[tag])} location(s) read", file=sys.stderr)
    out = [_with_anchors(line, found, why) for line in text.splitlines(keepends=True)]
    _write_atomically(path, "".join(out))
    print(f"{path}: anchors for {len(found)} location(s), {len(why)} recorded without one")
    return 0


def _entry_sources(text: str) -> list[str]:
    citations = []
    for line in text.splitlines():
        entry = _entry(line)
        if entry is not None:
            citations.append(str(entry["source"]))
    return citations


def _entry(line: str) -> dict[str, object] | None:
    """The inline-table data entry on `line`, or None for any other line."""
    stripped = line.strip().rstrip(",")
    if not (stripped.startswith("{") and stripped.endswith("}") and "source = " in stripped):
        return None
    table: dict[str, object] = tomllib.loads(f"entry = {stripped}")["entry"]
    return table


def _anchor_one(
    release: AnyRelease, location: Location, found: dict[Location, str], why: dict[Location, str]
) -> None:
    lines = release.lines(location.path)
    first, last = location.ranges[0]
    if lines is None:
        why[location] = f"{location.path} is not in the v{location.tag} wheel"
    elif first > len(lines):
        why[location] = f"line {first} is past the end of the file ({len(lines)} lines)"
    else:
        anchor = choose_anchor(lines, first, last)
        if anchor is None:
            why[location] = "the cited lines hold no code"
        else:
            found[location] = anchor


def _with_anchors(line: str, found: dict[Location, str], why: dict[Location, str]) -> str:
    entry = _entry(line)
    if entry is None:
        return line
    line = _ANCHOR_FIELDS.sub("", line)
    locations = parse_locations(str(entry["source"]))
    kept = entry.get("anchors")
    quoted = [str(a) for a in kept] if isinstance(kept, list) else [""] * len(locations)
    anchors = [
        quoted[i] if location.page and i < len(quoted) else found.get(location, "")
        for i, location in enumerate(locations)
    ]
    reasons = []
    for i, location in enumerate(locations):
        if location in found or (location.page and anchors[i]):
            continue
        if location.page:
            reasons.append(f"{location}: no anchor quoted from the page")
            continue
        if location.tag is None:
            reason = "no release cited"
        elif not location.ranges:
            reason = "cites a file, not a line"
            reason += f"; {why[location]}" if location in why else ""
        else:
            reason = why.get(location, "not read")
        reasons.append(reason if len(locations) == 1 else f"{location}: {reason}")
    if not locations:
        reasons.append("cites no file")
    fields = ""
    if any(anchors):
        fields += ", anchors = [" + ", ".join(_toml_string(a) for a in anchors) + "]"
    if reasons:
        fields += ", anchor_missing = " + _toml_string("; ".join(reasons))
    matches_ = list(_SOURCE_FIELD.finditer(line))
    if len(matches_) != 1:
        raise SystemExit(f"cannot place anchors on: {line.strip()}")
    end = matches_[0].end()
    return line[:end] + fields + line[end:]


def _toml_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t")
    return f'"{escaped}"'


def _write_atomically(path: Path, text: str) -> None:
    tomllib.loads(text)  # never write data the loader cannot parse
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("engine", choices=engine_names())
    parser.add_argument("version", nargs="?", help="the release to re-read the citations in")
    parser.add_argument("--against", help="check the entries in effect at this release")
    parser.add_argument("--all", action="store_true", help="check every entry")
    parser.add_argument(
        "--cited",
        action="store_true",
        help="compare with the cited lines instead of the --against release",
    )
    parser.add_argument("--write-anchors", action="store_true")
    parser.add_argument(
        "--index", action="store_true", help="list releases on the index the data does not know"
    )
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache/draftfit-refresh")
    parser.add_argument("--keep", action="store_true", help="keep downloaded wheels")
    parser.add_argument(
        "--documented",
        action="store_true",
        help="look for the anchors of the cited documentation pages in the pages' text",
    )
    parser.add_argument(
        "--pages",
        type=Path,
        metavar="DIR",
        help="read the documentation pages from this folder (DIR/HOST/PATH) instead of HTTPS",
    )
    parser.add_argument(
        "--repo-snapshot",
        type=Path,
        metavar="GIT_DIR",
        help="read releases at their pinned commits from this git directory, not from wheels",
    )
    args = parser.parse_args(argv)
    source: Path | Snapshot = args.cache_dir
    if args.repo_snapshot is not None:
        if not args.repo_snapshot.is_dir():
            parser.error(f"--repo-snapshot {args.repo_snapshot}: not a directory")
        source = Snapshot(args.repo_snapshot)
    if args.write_anchors:
        return write_anchors(args.engine, source, args.keep)
    if args.index:
        return index(args.engine)
    if args.documented:
        return documented(args.engine, args.pages)
    if not args.version:
        parser.error("VERSION is required (or --write-anchors, --index)")
    version = args.version.lstrip("v")
    return check(args.engine, version, args.against, args.all, source, args.keep, args.cited)


if __name__ == "__main__":
    sys.exit(main())
