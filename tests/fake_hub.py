"""A local, in-process stand-in for the Hugging Face Hub, for tests that must not touch the network.

`FakeHub` serves repositories built from local directories over HTTP on 127.0.0.1, speaking the
subset of the Hub protocol that `huggingface_hub` uses to read a model: model info, tree listing,
`resolve` HEAD/GET with byte ranges, and the Hub's error headers (`X-Error-Code`), so the real
client raises its real exception classes. `configure_hf_env` points an already-imported
`huggingface_hub` at the server and at a temporary cache.

The server module itself is stdlib-only; `huggingface_hub` is imported only by `configure_hf_env`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

if TYPE_CHECKING:
    import pytest

# Files the Hub stores in LFS (their ETag is the content's sha256, and the API reports `lfs` info).
LFS_SUFFIXES = frozenset(
    {".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".onnx", ".msgpack"}
)
_DATE = "2024-01-01T00:00:00.000Z"


class RecordedRequest(NamedTuple):
    """One request the server received: method, raw target (path + query) and `Range` header."""

    method: str
    path: str
    range: str | None


@dataclass(frozen=True)
class _File:
    """A served file. Bytes are read from disk on demand, so large (sparse) benchmark
    checkpoints are served without holding them in memory."""

    name: str
    path: Path
    lfs: bool

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    @property
    def data(self) -> bytes:
        return self.path.read_bytes()

    def read(self, start: int, end: int) -> bytes:
        """Bytes `[start, end)`."""
        with self.path.open("rb") as handle:
            handle.seek(start)
            return handle.read(end - start)

    @property
    def git_sha1(self) -> str:
        """The git blob id, which the Hub reports as `blobId`/`oid` and uses as non-LFS ETag."""
        if self.size > 16 * 1024 * 1024:
            return hashlib.sha1(f"{self.path}:{self.size}".encode()).hexdigest()
        return hashlib.sha1(b"blob %d\0" % self.size + self.data).hexdigest()

    @property
    def sha256(self) -> str:
        if self.size > 16 * 1024 * 1024:  # large benchmark files: a stable stand-in digest
            return hashlib.sha256(f"{self.path}:{self.size}".encode()).hexdigest()
        return hashlib.sha256(self.data).hexdigest()

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.git_sha1


@dataclass
class _Repo:
    repo_id: str
    private: bool
    gated: str | bool
    token: str | None
    revisions: dict[str, tuple[str, dict[str, _File]]] = field(default_factory=dict)

    def resolve(self, revision: str) -> tuple[str, dict[str, _File]] | None:
        """Map a branch name or a commit sha to `(sha, files)`; None if unknown."""
        if revision in self.revisions:
            return self.revisions[revision]
        return next((rev for rev in self.revisions.values() if rev[0] == revision), None)


class _HubError(Exception):
    """An HTTP error answered the way the Hub does: status, `X-Error-Code`, JSON `error` body."""

    def __init__(self, status: int, code: str | None, message: str, commit: str | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.commit = status, code, message, commit


class FakeHub:
    """A threaded HTTP server that serves Hub-shaped model repositories from local directories.

    Use as a context manager: the server runs on an ephemeral 127.0.0.1 port between `__enter__`
    and `__exit__`, and `__exit__` joins every thread it started. `lfs_redirect=True` answers
    `resolve` of LFS files with a 302 to a "CDN" origin (`localhost` instead of `127.0.0.1`, so the
    client treats it as a foreign host), like the real Hub does.
    """

    def __init__(self, *, lfs_redirect: bool = False) -> None:
        self.lfs_redirect = lfs_redirect
        self.delay: float = 0.0  # seconds to wait before answering each request (timeout tests)
        self.requests: list[RecordedRequest] = []
        # the most requests being answered at one moment (a client reading in parallel
        # has several in flight while `delay` holds each)
        self.max_in_flight = 0
        self._in_flight = 0
        self._repos: dict[str, _Repo] = {}
        self._blobs: dict[str, _File] = {}  # sha256 -> file, for the CDN route
        self._lock = threading.Lock()
        self._bytes_sent = 0
        self._fail: list[int] = []
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- configuration ----------------------------------------------------------------------

    def add_repo(
        self,
        repo_id: str,
        directory: Path,
        *,
        revision: str = "main",
        gated: bool | str = False,
        private: bool = False,
        token: str | None = None,
    ) -> str:
        """Serve every file under `directory` as `repo_id` at `revision`; return its commit sha.

        Calling again with another `revision` adds a branch. `gated`/`private` apply to the whole
        repo and are unlocked by `Authorization: Bearer <token>`. Files are read on demand.
        """
        if (gated or private) and token is None:
            token = "hf_test"
        repo = self._repos.setdefault(
            repo_id, _Repo(repo_id, private, "manual" if gated is True else gated, token)
        )
        sha = hashlib.sha1(f"{repo_id}@{revision}".encode()).hexdigest()
        files = {
            p.relative_to(directory).as_posix(): _File(
                p.relative_to(directory).as_posix(), p, p.suffix in LFS_SUFFIXES
            )
            for p in sorted(Path(directory).rglob("*"))
            if p.is_file()
        }
        repo.revisions[revision] = (sha, files)
        self._blobs.update({f.sha256: f for f in files.values() if f.lfs})
        return sha

    def commit_sha(self, repo_id: str, revision: str = "main") -> str:
        """The fake commit sha that `revision` of `repo_id` resolves to."""
        return self._repos[repo_id].revisions[revision][0]

    def fail_next(self, n: int = 1, status: int = 500) -> None:
        """Answer the next `n` requests with `status` (no error code), e.g. to test retries."""
        with self._lock:
            self._fail.extend([status] * n)

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """Base URL to use as `HF_ENDPOINT`, e.g. `http://127.0.0.1:54321`."""
        assert self._server is not None, "FakeHub is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def bytes_sent(self) -> int:
        """Total response-body bytes written so far (headers excluded)."""
        with self._lock:
            return self._bytes_sent

    def __enter__(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            fake_hub = hub

        self._stopping.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = False  # so server_close() joins the handler threads
        # a short poll interval makes shutdown() quick (the default costs 0.5 s per test)
        serve = self._server.serve_forever
        self._thread = threading.Thread(target=serve, args=(0.05,), name="FakeHub")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._stopping.set()  # cut short any `delay` wait
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._server = self._thread = None

    # -- request handling (called from handler threads) -------------------------------------

    def _record(self, method: str, path: str, range_header: str | None) -> int | None:
        with self._lock:
            self.requests.append(RecordedRequest(method, path, range_header))
            return self._fail.pop(0) if self._fail else None

    def _count(self, n: int) -> None:
        with self._lock:
            self._bytes_sent += n

    def _repo(self, repo_id: str, auth: str | None, *, files: bool) -> _Repo:
        """Look up a repo, enforcing access like the Hub: private hides it, gated hides files."""
        repo = self._repos.get(repo_id)
        if repo is None:
            raise _HubError(404, "RepoNotFound", "Repository not found")
        ok = auth == f"Bearer {repo.token}"
        if repo.private and not ok:
            raise _HubError(401 if auth is None else 404, "RepoNotFound", "Repository not found")
        if repo.gated and files and not ok:
            message = (
                f"Access to model {repo_id} is restricted and you are not in the authorized list."
            )
            raise _HubError(401 if auth is None else 403, "GatedRepo", message)
        return repo

    @staticmethod
    def _revision(repo: _Repo, revision: str) -> tuple[str, dict[str, _File]]:
        found = repo.resolve(revision)
        if found is None:
            raise _HubError(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return found

    def model_info(
        self, repo_id: str, revision: str, query: dict[str, list[str]], auth: str | None
    ) -> dict[str, Any]:
        """JSON body of `GET /api/models/{repo_id}[/revision/{revision}]`."""
        repo = self._repo(repo_id, auth, files=False)
        sha, files = self._revision(repo, revision)
        blobs = query.get("blobs", ["false"])[0].lower() == "true"
        siblings: list[dict[str, Any]] = []
        for f in files.values():
            sibling: dict[str, Any] = {"rfilename": f.name}
            if blobs:
                sibling |= {"size": f.size, "blobId": f.git_sha1}
                if f.lfs:
                    sibling["lfs"] = {"sha256": f.sha256, "size": f.size, "pointerSize": 134}
            siblings.append(sibling)
        info: dict[str, Any] = {
            "_id": sha[:24],
            "id": repo_id,
            "modelId": repo_id,
            "author": repo_id.split("/")[0] if "/" in repo_id else None,
            "sha": sha,
            "lastModified": _DATE,
            "createdAt": _DATE,
            "private": repo.private,
            "gated": repo.gated,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": siblings,
            "spaces": [],
            "usedStorage": sum(f.size for f in files.values()),
        }
        if "config.json" in files:  # the Hub echoes a few config keys in model info
            try:
                config = json.loads(files["config.json"].data)
                info["config"] = {
                    k: config[k] for k in ("architectures", "model_type") if k in config
                }
            except (ValueError, TypeError):
                pass
        return info

    def tree(
        self, repo_id: str, revision: str, prefix: str, recursive: bool, auth: str | None
    ) -> list[dict[str, Any]]:
        """JSON body of `GET /api/models/{repo_id}/tree/{revision}[/{path}]` (a single page)."""
        repo = self._repo(repo_id, auth, files=False)
        _, files = self._revision(repo, revision)
        base = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        entries: dict[str, dict[str, Any]] = {}
        for f in files.values():
            if not f.name.startswith(base):
                continue
            parts = f.name[len(base) :].split("/")
            for depth in range(1, len(parts)):  # parent folders
                if depth == 1 or recursive:
                    path = base + "/".join(parts[:depth])
                    folder_id = hashlib.sha1(path.encode()).hexdigest()
                    entries.setdefault(path, {"type": "directory", "oid": folder_id, "path": path})
            if len(parts) == 1 or recursive:
                entry = {"type": "file", "oid": f.git_sha1, "size": f.size, "path": f.name}
                if f.lfs:
                    entry["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": 134}
                entries[f.name] = entry
        if base and not entries:
            raise _HubError(404, "EntryNotFound", f"{prefix} does not exist on {revision}")
        return list(entries.values())


class _Handler(BaseHTTPRequestHandler):
    """Routes one request (HTTP/1.0: one request per connection, so no idle keep-alive threads)."""

    fake_hub: FakeHub
    timeout = 10  # a client that connects and sends nothing cannot block shutdown for long

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr logging
        pass

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def do_GET(self) -> None:
        self._handle(head=False)

    def _send(self, status: int, headers: dict[str, str], body: bytes, head: bool) -> None:
        self.send_response(status)
        headers = {"Content-Length": str(len(body)), **headers}  # HEAD passes the real length
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if not head and body:
            # count before writing: the client may read the body before this thread runs again
            self.fake_hub._count(len(body))
            try:
                self.wfile.write(body)
            except OSError:  # client went away (e.g. it timed out during `delay`)
                self.fake_hub._count(-len(body))

    def _json(self, obj: Any, head: bool, status: int = 200) -> None:
        self._send(status, {"Content-Type": "application/json"}, json.dumps(obj).encode(), head)

    def _handle(self, head: bool) -> None:
        hub = self.fake_hub
        with hub._lock:
            hub._in_flight += 1
            hub.max_in_flight = max(hub.max_in_flight, hub._in_flight)
        try:
            self._answer(head)
        finally:
            with hub._lock:
                hub._in_flight -= 1

    def _answer(self, head: bool) -> None:
        hub = self.fake_hub
        range_header = self.headers.get("Range")
        fail = hub._record(self.command, self.path, range_header)
        if hub.delay and hub._stopping.wait(hub.delay):
            return  # server is shutting down
        if fail is not None:
            self._json({"error": "injected failure"}, head, status=fail)
            return
        raw, _, query_string = self.path.partition("?")
        query = parse_qs(query_string)
        auth = self.headers.get("Authorization")
        try:
            if raw.startswith("/api/models/"):
                self._api(raw[len("/api/models/") :], query, auth, head)
            elif raw.startswith("/cdn/"):
                blob = hub._blobs.get(raw[len("/cdn/") :])
                if blob is None:
                    raise _HubError(404, None, "Not found")
                self._content(blob, {}, range_header, head)
            elif "/resolve/" in raw:
                self._resolve(raw, auth, range_header, head)
            else:
                raise _HubError(404, None, "Not found")
        except _HubError as e:
            headers = {"Content-Type": "application/json", "X-Error-Message": e.message}
            if e.code:
                headers["X-Error-Code"] = e.code
            if e.commit:
                headers["X-Repo-Commit"] = e.commit
            self._send(e.status, headers, json.dumps({"error": e.message}).encode(), head)

    def _api(self, rest: str, query: dict[str, list[str]], auth: str | None, head: bool) -> None:
        hub = self.fake_hub
        # repo ids are "owner/name", or a bare "name" for legacy repos we know about
        segments = rest.split("/")
        n = 1 if segments[0] in hub._repos else 2
        repo_id, tail = "/".join(segments[:n]), segments[n:]
        if not tail:
            self._json(hub.model_info(repo_id, "main", query, auth), head)
        elif tail[0] == "revision" and len(tail) == 2:
            self._json(hub.model_info(repo_id, unquote(tail[1]), query, auth), head)
        elif tail[0] == "tree" and len(tail) >= 2:
            recursive = query.get("recursive", ["false"])[0].lower() == "true"
            prefix = unquote("/".join(tail[2:]))
            self._json(hub.tree(repo_id, unquote(tail[1]), prefix, recursive, auth), head)
        else:
            raise _HubError(404, None, "Not found")

    def _resolve(self, raw: str, auth: str | None, range_header: str | None, head: bool) -> None:
        hub = self.fake_hub
        repo_id, _, rest = raw[1:].partition("/resolve/")
        revision, _, filename = rest.partition("/")
        repo = hub._repo(repo_id, auth, files=True)
        sha, files = hub._revision(repo, unquote(revision))
        f = files.get(unquote(filename))
        if f is None:
            raise _HubError(404, "EntryNotFound", "Entry not found", commit=sha)
        headers = {"X-Repo-Commit": sha, "ETag": f'"{f.etag}"'}
        if f.lfs and hub.lfs_redirect:
            port = urlsplit(hub.endpoint).port
            headers |= {
                "Location": f"http://localhost:{port}/cdn/{f.sha256}",
                "X-Linked-Etag": f'"{f.sha256}"',
                "X-Linked-Size": str(f.size),
            }
            self._send(302, headers, b"", head)
            return
        self._content(f, headers, range_header, head)

    def _content(
        self, f: _File, headers: dict[str, str], range_header: str | None, head: bool
    ) -> None:
        """Send a file, honouring a single `bytes=a-b`, `bytes=a-` or `bytes=-n` range on GET."""
        total = f.size
        headers = {
            **headers,
            "ETag": headers.get("ETag", f'"{f.etag}"'),
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        span = _parse_range(range_header, total) if range_header and not head else None
        if span == "unsatisfiable":
            self._send(416, {"Content-Range": f"bytes */{total}"}, b"", head)
        elif isinstance(span, tuple):
            start, end = span
            headers["Content-Range"] = f"bytes {start}-{end}/{total}"
            self._send(206, headers, f.read(start, end + 1), head)
        elif head:
            self._send(200, {**headers, "Content-Length": str(total)}, b"", head)
        else:
            self._send(200, headers, f.data, head)


def _parse_range(header: str, total: int) -> tuple[int, int] | str | None:
    """Parse one byte range: `(start, end)` inclusive, "unsatisfiable", or None to ignore it."""
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None  # like most servers: ignore what we do not understand, send 200
    first, _, last = spec.strip().partition("-")
    try:
        if first == "":  # suffix range: last n bytes
            n = int(last)
            return (max(total - n, 0), total - 1) if n > 0 and total else "unsatisfiable"
        start = int(first)
        end = min(int(last), total - 1) if last else total - 1
    except ValueError:
        return None
    if start >= total or end < start:
        return "unsatisfiable"
    return start, end


class StalledHub:
    """A listener on 127.0.0.1 that accepts every connection and never answers: a Hub
    endpoint that has stalled. Use as a context manager; `connections` counts the accepted
    connections, and `__exit__` closes them (a client still waiting then sees the
    connection end) and joins its thread."""

    def __init__(self) -> None:
        import socket

        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.05)
        self._accepted: list[Any] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="StalledHub")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    @property
    def connections(self) -> int:
        return len(self._accepted)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._accepted.append(connection)  # held open, never read from or written to

    def __enter__(self) -> StalledHub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join()
        for connection in self._accepted:
            connection.close()
        self._listener.close()


def hub_env(endpoint: str, home: Path, *, offline: bool = False) -> dict[str, str]:
    """The environment that points a fresh `huggingface_hub` (a subprocess, or one not yet
    imported) at `endpoint`, with its cache under `home`; no telemetry, Xet or progress bars."""
    return {
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(home / "hub"),
        "HF_HUB_OFFLINE": "1" if offline else "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }


def configure_hf_env(
    monkeypatch: pytest.MonkeyPatch,
    endpoint: str,
    cache_dir: Path,
    *,
    offline: bool = False,
    token: str | None = None,
) -> Path:
    """Point `huggingface_hub` at `endpoint`, caching under `cache_dir`; return the hub cache dir.

    `huggingface_hub.constants` computes ENDPOINT, the resolve-URL template, cache and token paths
    and the offline flag once, at import, so setting env vars alone is not enough in a test process
    that already imported it: this sets the env vars (for subprocesses and lazy readers) and patches
    the constants. It also hides any real user token (HF_TOKEN, token file, OIDC) unless `token`.
    """
    from huggingface_hub import constants
    from huggingface_hub.utils import _cache_manager, _http

    hf_tqdm = importlib.import_module("huggingface_hub.utils.tqdm")  # the module, not the class

    home, hub_cache = Path(cache_dir), Path(cache_dir) / "hub"
    for key, value in hub_env(endpoint, home, offline=offline).items():
        monkeypatch.setenv(key, value)
    for key in ("HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE", "HF_OIDC_ID_TOKEN", "HF_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    if token is not None:
        monkeypatch.setenv("HF_TOKEN", token)

    patches: dict[str, Any] = {
        "ENDPOINT": endpoint,
        "HUGGINGFACE_CO_URL_TEMPLATE": endpoint + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_HOME": str(home),
        "HF_HUB_CACHE": str(hub_cache),
        "HF_ASSETS_CACHE": str(home / "assets"),
        "HF_XET_CACHE": str(home / "xet"),
        "HF_TOKEN_PATH": str(home / "token"),
        "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"),
        "HF_HUB_OFFLINE": offline,
        "HF_HUB_DISABLE_XET": True,
        "HF_HUB_DISABLE_TELEMETRY": True,
        "HF_HUB_DISABLE_PROGRESS_BARS": True,
    }
    for name, value in patches.items():
        monkeypatch.setattr(constants, name, value, raising=False)
    monkeypatch.setattr(constants, "HF_URL_HOSTS", constants.HF_URL_HOSTS | {"127.0.0.1"})
    # imported by value at import time elsewhere
    monkeypatch.setattr(_cache_manager, "HF_HUB_CACHE", str(hub_cache), raising=False)
    monkeypatch.setattr(hf_tqdm, "HF_HUB_DISABLE_PROGRESS_BARS", True, raising=False)
    if hasattr(_http, "_HUB_ORIGINS") and hasattr(_http, "_url_origin"):
        origins = _http._HUB_ORIGINS | {_http._url_origin(endpoint)}
        monkeypatch.setattr(_http, "_HUB_ORIGINS", origins)
    return hub_cache
