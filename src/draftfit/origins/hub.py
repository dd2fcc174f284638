"""Hugging Face Hub sources: `hf://OWNER/NAME[@REVISION]` or a bare `OWNER/NAME`.

Only `config.json`, the shard index and the safetensors *headers* are fetched (and, for a
target, its ModelSlim `quant_model_description.json` when it has one within the JSON
reader's cap): the header of each weight file is read with HTTP range requests (one request
when the header is under 16 KB, two otherwise), through huggingface_hub's session, so `HF_TOKEN`,
`HF_ENDPOINT`, `HF_HUB_OFFLINE` and the cache behave as in every HF tool. The MTP check of a
target reads only the shards its index places MTP tensors in (:func:`load_hub_scoped`), with
those header reads at once. With
`HF_HUB_OFFLINE=1` the local cache is read instead. Every failure to reach the repository
becomes a :class:`HubAccessError` with one clear line (the CLI exits 2).

Nothing waits without bound: every request has a connect and read timeout
(`DRAFTFIT_HUB_TIMEOUT`, 10 s), a Hub that does not answer is told at the first request
(huggingface_hub's own retries, about 24 s, are not waited for), and reading a repository
has a total deadline (`DRAFTFIT_HUB_DEADLINE`, 60 s). Progress and notices (the cache read
instead of the Hub) go to the `draftfit` logger, which the CLI prints on stderr.
"""

from __future__ import annotations

import errno
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from draftfit.checkpoint.access import LocalAccess, read_regular
from draftfit.checkpoint.limits import MAX_JSON_FILE_BYTES
from draftfit.checkpoint.local import load_checkpoint, load_from_access
from draftfit.checkpoint.model import Checkpoint
from draftfit.draft.target import Target, load_target
from draftfit.draft.target_rotation import DESCRIPTION_FILE, RotationCheck, check_rotation
from draftfit.errors import HubAccessError, UsageError
from draftfit.escape import clip
from draftfit.output.notices import notice
from draftfit.records import frozen

PREFIX = "hf://"
HEADER_PREFETCH = 16_384  # one request covers a draft header; big ones take two
WEIGHT_PATTERNS = ("*.json", "*.safetensors", "*.bin")
TIMEOUT_ENV = "DRAFTFIT_HUB_TIMEOUT"  # seconds to connect, and between bytes read
DEADLINE_ENV = "DRAFTFIT_HUB_DEADLINE"  # seconds for reading one repository, all requests
DEFAULT_TIMEOUT = 10.0
DEFAULT_DEADLINE = 60.0
MAX_SECONDS = 86_400.0

if TYPE_CHECKING:
    from draftfit.checkpoint.access import FileAccess
    from draftfit.checkpoint.safetensors import HeaderResult
    from draftfit.checkpoint.scoped import QueryFor, ScopedCheckpoint, Selector

T = TypeVar("T")


@frozen
class HubRef:
    """A Hub repository at a revision (None: the default branch)."""

    repo_id: str
    revision: str | None

    @property
    def display(self) -> str:
        return PREFIX + self.repo_id + (f"@{self.revision}" if self.revision else "")


# The Hub's own rule for an owner or a repository name (what huggingface_hub validates
# before any request; no `--` or `..` either), and a revision: a branch, tag or commit,
# printable with no space.
_HUB_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?")
_REVISION = re.compile(r"[^\x00-\x20\x7f]{1,256}")


def parse_hub_reference(text: str) -> HubRef:
    body = text[len(PREFIX) :] if text.startswith(PREFIX) else text
    repo, _, revision = body.partition("@")
    parts = repo.strip("/").split("/")
    named = len(parts) == 2 and all(
        _HUB_NAME.fullmatch(part) and "--" not in part and ".." not in part for part in parts
    )
    if not named or (revision and not _REVISION.fullmatch(revision)):
        shown = ascii(text[:200])[1:-1]
        raise HubAccessError(
            f"{shown}: expected hf://OWNER/NAME[@REVISION] (letters, digits, '-', '_', '.')"
        )
    return HubRef("/".join(parts), revision or None)


class RemoteAccess:
    """Ranged reads of one repository's files through huggingface_hub's HTTP session."""

    prefetch = HEADER_PREFETCH

    def __init__(self, ref: HubRef, commit: str | None, sizes: dict[str, int]) -> None:
        self.ref = ref
        self.commit = commit
        self.sizes = sizes
        self.bytes_received = 0
        self._count = threading.Lock()  # headers may be read from several threads at once

    def size(self, rel: str) -> int:
        if rel not in self.sizes:
            raise FileNotFoundError(rel)
        return self.sizes[rel]

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        return self._get(rel, {"Range": f"bytes={start}-{end - 1}"})

    def read_all(self, rel: str) -> bytes:
        from huggingface_hub import hf_hub_download

        with _hub_errors(self.ref):
            path = hf_hub_download(
                self.ref.repo_id,
                rel,
                revision=self.commit or self.ref.revision,
                etag_timeout=_timeout(),
            )
        try:
            return read_regular(Path(path), MAX_JSON_FILE_BYTES)
        except ValueError as exc:  # a cached file larger than any JSON draftfit reads
            raise OSError(errno.EFBIG, f"{rel}: {exc}") from None

    def local_path(self, rel: str) -> Path | None:
        return None

    def names(self) -> list[str]:
        return sorted(self.sizes)

    def _get(self, rel: str, extra: dict[str, str]) -> bytes:
        from huggingface_hub import get_session, hf_hub_url, hf_raise_for_status
        from huggingface_hub.utils import build_hf_headers

        url = hf_hub_url(self.ref.repo_id, rel, revision=self.commit or self.ref.revision)
        with _hub_errors(self.ref):
            response = get_session().get(
                url, headers={**build_hf_headers(), **extra}, timeout=_timeout()
            )
            hf_raise_for_status(response)
        data = response.content
        with self._count:
            self.bytes_received += len(data)
        return data


class ListedLaterAccess:
    """A repository's files, listed (one Hub request) only when a name or a size is first
    asked for: a target's config is read without the listing, the value checks read its
    weights through it. Failures to reach the Hub raise :class:`HubAccessError`."""

    prefetch = HEADER_PREFETCH

    def __init__(self, ref: HubRef) -> None:
        self.ref = ref
        self._listed: RemoteAccess | None = None

    def listed(self) -> RemoteAccess:
        if self._listed is None:
            commit, sizes = list_files(self.ref)
            self._listed = RemoteAccess(self.ref, commit, sizes)
        return self._listed

    def size(self, rel: str) -> int:
        return self.listed().size(rel)

    def read_range(self, rel: str, start: int, end: int) -> bytes:
        return self.listed().read_range(rel, start, end)

    def read_all(self, rel: str) -> bytes:
        return self.listed().read_all(rel)

    def local_path(self, rel: str) -> Path | None:
        return None

    def names(self) -> list[str]:
        return self.listed().names()


class HubUnreachableError(HubAccessError):
    """The Hub did not answer (no network, DNS, a timeout): the local cache may still serve."""


def load_hub_checkpoint(text: str) -> Checkpoint:
    """Read a draft from the Hub (headers only), or from the local cache when offline or
    when the Hub cannot be reached (saying so in a notice), within the Hub deadline."""
    ref = parse_hub_reference(text)
    return within_deadline(ref, lambda: _load_hub_checkpoint(ref))


def _load_hub_checkpoint(ref: HubRef) -> Checkpoint:
    return _remote_else_cached(
        ref,
        lambda: _load_remote_checkpoint(ref),
        lambda cached: _load_cached_checkpoint(cached, ref),
    )


def _remote_else_cached(ref: HubRef, remote: Callable[[], T], cached: Callable[[Path], T]) -> T:
    """`remote()`; offline, the local cache snapshot read by `cached`; and when the Hub
    cannot be reached, that snapshot too, saying so."""
    if _offline():
        return cached(_cached_snapshot(ref))
    try:
        return remote()
    except HubUnreachableError as exc:
        try:
            snapshot = _cached_snapshot(ref)
        except HubAccessError:
            raise HubAccessError(
                f"{exc}, and {ref.display} is not in the local Hugging Face cache"
            ) from exc
        _say(f"{exc}; read {ref.display} from the local Hugging Face cache instead")
        return cached(snapshot)


def _load_cached_checkpoint(snapshot: Path, ref: HubRef) -> Checkpoint:
    """The checkpoint in a local cache snapshot. Snapshot files are symlinks into the
    repository's `blobs/` folder (`models--OWNER--NAME/snapshots/REV/x -> ../../blobs/HASH`):
    reads stay inside the repository's cache folder."""
    return load_checkpoint(snapshot, origin=ref.display, confine=snapshot.parent.parent)


def _load_remote_checkpoint(ref: HubRef) -> Checkpoint:
    with _progress(f"reading {ref.display} (config and safetensors headers)"):
        commit, sizes = list_files(ref)
        if not any(name.endswith(".safetensors") for name in sizes) and any(
            name.endswith(".bin") for name in sizes
        ):
            raise HubAccessError(
                f"{ref.display} holds only PyTorch .bin weights; draftfit reads remote "
                "safetensors headers only. Download it (`hf download "
                f"{ref.repo_id}`) and check the local copy"
            )
        access = RemoteAccess(ref, commit, sizes)
        root = Path(ref.repo_id.replace("/", "--"))
        return load_from_access(access, list(sizes), ref.display, root)


def load_hub_scoped(text: str, select: Selector, query: QueryFor | None = None) -> ScopedCheckpoint:
    """Read a Hub repository in part: its file list, `config.json`, its shard index (with
    `query`, only the names it picks) and the headers of the shards holding a tensor that
    `select` picks, those header reads at once (a 163-shard target costs the time of about
    five requests, not 170). Offline, or
    when the Hub cannot be reached, the local cache is read the same way (saying so). A
    repository without an index is read as any draft (every header)."""
    ref = parse_hub_reference(text)
    return within_deadline(ref, lambda: _load_hub_scoped(ref, select, query))


def _load_hub_scoped(ref: HubRef, select: Selector, query: QueryFor | None) -> ScopedCheckpoint:
    from draftfit.checkpoint.scoped import load_scoped

    return _remote_else_cached(
        ref,
        lambda: _load_remote_scoped(ref, select, query),
        lambda cached: load_scoped(cached, select, origin=ref.display, query=query),
    )


def _load_remote_scoped(ref: HubRef, select: Selector, query: QueryFor | None) -> ScopedCheckpoint:
    from draftfit.checkpoint.local import SAFETENSORS_INDEX
    from draftfit.checkpoint.scoped import ScopedCheckpoint, scoped_from_access

    with _progress(f"reading {ref.display} (config, shard index and the headers needed)"):
        commit, sizes = list_files(ref)
        if SAFETENSORS_INDEX not in sizes:
            return ScopedCheckpoint(_load_remote_checkpoint(ref))
        access = RemoteAccess(ref, commit, sizes)
        root = Path(ref.repo_id.replace("/", "--"))
        files = list(sizes)
        return scoped_from_access(
            access,
            files,
            ref.display,
            root,
            select,
            read_at_once,
            lambda: load_from_access(access, files, ref.display, root),
            query,
        )


# At most this many header reads in flight at once (a target's MTP layers span a few
# shards; a repository whose index spreads them over hundreds is read in rounds).
MAX_PARALLEL_READS = 16


def read_at_once(access: FileAccess, shards: list[str]) -> list[HeaderResult]:
    """The headers of `shards`, read at once (each is one or two requests): the round trips
    of one header, not of all of them, in the time to a verdict."""
    from draftfit.checkpoint.safetensors import read_header_via

    if len(shards) <= 1:
        return [read_header_via(access, shard) for shard in shards]
    from concurrent.futures import ThreadPoolExecutor

    workers = min(MAX_PARALLEL_READS, len(shards))
    with ThreadPoolExecutor(workers, thread_name_prefix="draftfit-hub-header") as pool:
        return list(pool.map(lambda shard: read_header_via(access, shard), shards))


def load_hub_target(text: str) -> Target:
    """A target's config.json from the Hub, or from the cache when offline or when the Hub
    cannot be reached (saying so in a notice), within the Hub deadline."""
    ref = parse_hub_reference(text)
    return within_deadline(ref, lambda: _load_hub_target(ref))


def _load_hub_target(ref: HubRef) -> Target:
    """The Hub is asked once, without retries, whether it answers for config.json: a Hub
    that cannot be reached is then told as fast as for a draft, and the cached copy (when
    there is one) is read instead."""
    from huggingface_hub import hf_hub_download

    offline = _offline()
    if not offline:
        try:
            _answers(ref, "config.json")
        except HubUnreachableError as exc:
            cached = _cached_file(ref, "config.json")
            if cached is None:
                raise HubAccessError(
                    f"{exc}, and {ref.display} is not in the local Hugging Face cache"
                ) from exc
            _say(f"{exc}; read {ref.display} from the local Hugging Face cache instead")
            return load_target(
                cached.parent,
                origin=ref.display,
                rotation=_cached_rotation(ref),
                access=ListedLaterAccess(ref),
            )
    try:
        with _progress(f"reading {ref.display} config.json"), _hub_errors(ref):
            path = hf_hub_download(
                ref.repo_id,
                "config.json",
                revision=ref.revision,
                local_files_only=offline,
                etag_timeout=_timeout(),
            )
    except HubUnreachableError as exc:
        raise HubAccessError(
            f"{exc}, and {ref.display} is not in the local Hugging Face cache"
        ) from exc
    snapshot = Path(path).parent
    rotation = _cached_rotation(ref) if _offline() else _remote_rotation(ref, snapshot)
    return load_target(
        snapshot, origin=ref.display, rotation=rotation, access=ListedLaterAccess(ref)
    )


def _remote_rotation(ref: HubRef, snapshot: Path) -> RotationCheck:
    """The target's ModelSlim description (`quant_model_description.json`), fetched when
    the repository has one no larger than the JSON reader's cap; no other target file is
    fetched. A failure to fetch it is said, not guessed past."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    meta = None
    try:
        with _hub_errors(ref):
            meta = get_hf_file_metadata(
                hf_hub_url(ref.repo_id, DESCRIPTION_FILE, revision=ref.revision),
                timeout=_timeout(),
            )
            if meta.size is not None and meta.size > MAX_JSON_FILE_BYTES:
                return RotationCheck(
                    unchecked=f"`{DESCRIPTION_FILE}` is larger than {MAX_JSON_FILE_BYTES} bytes"
                )
            hf_hub_download(
                ref.repo_id, DESCRIPTION_FILE, revision=ref.revision, etag_timeout=_timeout()
            )
    except FileNotFoundError:
        return RotationCheck()
    except (HubAccessError, OSError) as exc:
        return RotationCheck(
            unchecked=f"`{DESCRIPTION_FILE}` could not be fetched ({exc})",
            present=meta is not None,
        )
    return check_rotation(LocalAccess(snapshot, confine=snapshot.parent.parent))


def _cached_rotation(ref: HubRef) -> RotationCheck:
    """The target's ModelSlim description from the local cache (offline, or the Hub not
    answering): read when cached, nothing when the cache records that the repository has
    none, and otherwise said to be unchecked."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(ref.repo_id, DESCRIPTION_FILE, revision=ref.revision)
    if isinstance(found, str):
        cached = Path(found).parent
        return check_rotation(LocalAccess(cached, confine=cached.parent.parent))
    if found is not None:  # the cache knows the file does not exist
        return RotationCheck()
    return RotationCheck(
        unchecked=f"`{DESCRIPTION_FILE}` is not in the local Hugging Face cache", present=False
    )


def _cached_file(ref: HubRef, rel: str) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(ref.repo_id, rel, revision=ref.revision)
    return Path(found) if isinstance(found, str) else None


def _answers(ref: HubRef, rel: str) -> None:
    """Ask the Hub about `rel` once (one HEAD request, no retries); raise
    :class:`HubUnreachableError` when it does not answer. Any answer, an error status
    included, returns: the download that follows reports what the Hub said
    (huggingface_hub would otherwise retry for about 24 s, or fall back to a cached copy
    without a word)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url

    try:
        with _hub_errors(ref):
            get_hf_file_metadata(
                hf_hub_url(ref.repo_id, rel, revision=ref.revision), timeout=_timeout()
            )
    except HubUnreachableError:
        raise
    except (HubAccessError, FileNotFoundError):
        return


# ---------------------------------------------------------------------- helpers


def list_files(ref: HubRef) -> tuple[str | None, dict[str, int]]:
    """The commit `ref` resolves to, and the size of each file at the repository's top."""
    from huggingface_hub import HfApi

    with _hub_errors(ref):
        info = HfApi().model_info(
            ref.repo_id, revision=ref.revision, files_metadata=True, timeout=_timeout()
        )
    sizes = {s.rfilename: int(s.size or 0) for s in info.siblings or [] if "/" not in s.rfilename}
    return info.sha, sizes


def _cached_snapshot(ref: HubRef) -> Path:
    from huggingface_hub import snapshot_download

    with _hub_errors(ref):
        path = snapshot_download(
            ref.repo_id,
            revision=ref.revision,
            local_files_only=True,
            allow_patterns=list(WEIGHT_PATTERNS),
        )
    return Path(path)


def cache_folder(text: str) -> Path | None:
    """The local cache folder of the Hub repository `text` names (`…/models--OWNER--NAME`),
    whether or not it exists yet; None when `text` names no repository. Nothing is fetched:
    what a run reads from the cache is an input that an output must not replace."""
    try:
        ref = parse_hub_reference(text)
    except HubAccessError:
        return None
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE) / ("models--" + ref.repo_id.replace("/", "--"))


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def _timeout() -> float:
    """Seconds each Hub request may take to connect, and between bytes read."""
    return _seconds(TIMEOUT_ENV, DEFAULT_TIMEOUT)


def hub_deadline() -> float:
    """Seconds reading one Hub repository may take in all."""
    return _seconds(DEADLINE_ENV, DEFAULT_DEADLINE)


def _seconds(name: str, default: float) -> float:
    """A positive number of seconds from environment variable `name` (unset or empty:
    `default`); anything else is a usage error naming the variable. Above a day it counts
    as a day (sockets and threads refuse larger waits)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{name}={text[:40]!r}: expected a positive number of seconds")
    return min(value, MAX_SECONDS)


def within_deadline(ref: HubRef, work: Callable[[], T]) -> T:
    """The result of `work()` (one repository's Hub step), or a one-line
    :class:`HubAccessError` once `DRAFTFIT_HUB_DEADLINE` has passed.

    Each request already has a timeout, but a server that sends a byte now and then, or
    many requests in a row, could still take without bound: `work` runs in a worker thread
    that is left behind (a daemon; its next timeout ends it) when the deadline passes."""
    limit = hub_deadline()
    _timeout()  # a bad DRAFTFIT_HUB_TIMEOUT is said before any request
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="draftfit-hub", daemon=True)
    worker.start()
    worker.join(limit)
    if worker.is_alive():
        raise HubAccessError(
            f"{ref.display}: the Hub did not finish answering within {limit:g} s "
            f"({DEADLINE_ENV} sets this limit; retry, or raise it)"
        )
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


@contextmanager
def _hub_errors(ref: HubRef) -> Iterator[None]:
    """Translate huggingface_hub / HTTP failures into one-line HubAccessErrors."""
    from huggingface_hub import errors

    try:
        with _quiet_library_logs():
            yield
    except errors.GatedRepoError as exc:
        raise HubAccessError(
            f"{ref.display} is gated: accept its terms on the Hub and set HF_TOKEN "
            f"(HTTP {_status(exc)})"
        ) from exc
    except errors.RepositoryNotFoundError as exc:
        raise HubAccessError(
            f"{ref.display} not found (HTTP {_status(exc)}); if it is private, set HF_TOKEN"
        ) from exc
    except errors.RevisionNotFoundError as exc:
        raise HubAccessError(f"{ref.display}: revision {ref.revision!r} not found") from exc
    except errors.LocalEntryNotFoundError as exc:
        if _offline():
            raise HubAccessError(
                f"{ref.display} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set"
            ) from exc
        raise HubUnreachableError(f"{ref.display}: cannot reach the Hub ({_cause(exc)})") from exc
    except errors.EntryNotFoundError as exc:
        raise FileNotFoundError(str(exc).splitlines()[0]) from exc
    except errors.OfflineModeIsEnabled as exc:
        raise HubAccessError(
            f"{ref.display} is not in the local Hugging Face cache and HF_HUB_OFFLINE is set"
        ) from exc
    except errors.HfHubHTTPError as exc:
        status = _status(exc)
        if status in (401, 403):
            raise HubAccessError(
                f"{ref.display}: access denied (HTTP {status}); set HF_TOKEN"
            ) from exc
        raise HubAccessError(f"{ref.display}: Hub request failed (HTTP {status})") from exc
    except Exception as exc:
        if "Timeout" in type(exc).__name__:
            raise HubUnreachableError(
                f"{ref.display}: the Hub did not answer within {_timeout():g} s "
                f"({TIMEOUT_ENV} sets this limit; retry, or raise it)"
            ) from exc
        if type(exc).__name__ in ("ConnectError", "ConnectionError", "NetworkError"):
            raise HubUnreachableError(
                f"{ref.display}: cannot reach the Hub ({_cause(exc)})"
            ) from exc
        raise


def _status(exc: Any) -> Any:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", "?")


CAUSE_LIMIT = 160


def _cause(exc: BaseException) -> str:
    """The first line of the library's message, shortened at a word boundary."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return clip(text, CAUSE_LIMIT, at_word=True)


def _say(message: str) -> None:
    """A notice the user should see (the CLI prints it on stderr; the API only logs it)."""
    notice(message, warning=True)


@contextmanager
def _quiet_library_logs() -> Any:
    """huggingface_hub logs each retry and HTTP error as a warning; draftfit reports the
    outcome in one line instead, so its logger is raised to ERROR while draftfit reads."""
    import logging

    logger = logging.getLogger("huggingface_hub")
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(previous)


@contextmanager
def _progress(message: str, delay: float = 0.5) -> Iterator[None]:
    """Say what is being fetched (as progress in the `draftfit` log, which the CLI prints on
    stderr), but only if it takes more than a moment."""
    done = threading.Event()
    shown = threading.Event()

    def announce() -> None:
        if not done.wait(delay):
            shown.set()
            notice(f"{message} ...")

    _quiet_hf_progress_bars()
    started = time.monotonic()
    thread = threading.Thread(target=announce, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
    if shown.is_set():
        notice(f"done in {time.monotonic() - started:.1f} s")


def _quiet_hf_progress_bars() -> None:
    """draftfit fetches a few KB; huggingface_hub's per-file bars would only add noise."""
    from huggingface_hub.utils import disable_progress_bars

    disable_progress_bars()
