"""Serving a Gradio app (the hub or one demo's Space) with the public-deployment rules of ``ServeSettings``.

Gradio gives the upload limit, login, monitoring switch, cache deletion and the queue. On top of it:
- queue admission (``admit``): a bounded queue with a sentence when busy, a cap on pending jobs per session, and no
  file input that names a web address (the server would fetch it) unless the operator allows it;
- ``HubGuard``, an ASGI middleware: every request's body within its route's budget and sent without long pauses, and
  every error response a sentence (``apps.limits``); upload requests need a declared size and leave the disk a
  reserve; ``/demohub/operator/stats`` answers only with the operator's token (written to a file only the operator
  can read); the MCP routes (``/gradio_api/mcp/``, ``/gradio_api/mcp/sse``) take the hub's login as HTTP Basic
  credentials (Gradio's ``auth`` does not cover them) and declared bodies; example files are served by name.
- every event's inputs checked for their form before Gradio reads them, and every handler's error a sentence
  (``apps.event_inputs``); each connection counted and given a deadline for its headers (``guard_connections``).
- MCP (``settings.mcp``): Gradio serves each public named endpoint as a tool and runs a queued tool call through a
  ``gradio_client`` loopback into the hub's own queue, so validators, admission and downloads rules hold for agents
  too. Our loopback client logs in behind ``--auth`` and carries a per-launch secret; with it, HubGuard's note of who
  called the tool reaches ``admit``, which counts an MCP caller's jobs per caller (login name, else address) rather
  than in the loopback's one shared session. Tool results are the endpoint's JSON (not Python's repr), with any PNG
  data URL also given as an image.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import importlib.util
import json
import logging
import os
import re
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from apps import gradio_internals
from apps.limits import (
    BODY_TOO_BIG,
    INTERNAL,
    BoundedRequest,
    declared_length,
    guard_connections,
    log_quietly,
    respond,
    shorten,
)
from apps.settings import ServeSettings
from apps.shares import (
    JOBS_FULL,
    LOGIN_NEEDED,
    Refusal,
    Shares,
    address_of,
    client_of,
    logged_in_user,
    trusted_proxies,
)
from shared.errors import report
from shared.registry import human_bytes
from shared.weights import free_bytes

log = logging.getLogger("demohub")

NO_ENDPOINT = "This hub has no API endpoint named {name!r}; the page's \"Use via API\" link lists those it has."
BUSY = "The hub is busy right now ({waiting} requests are waiting); please try again in a minute."
TOO_MANY = ("You already have {pending} requests waiting or running (the limit is {limit}); wait for them to "
            "finish, then try again.")
URL_REFUSED = ("This hub does not fetch files from web addresses ({url}); download the file and upload it "
               "instead.")
URL_REFUSED_MCP = ("This hub does not fetch files from web addresses ({url}); send the file itself as a data URI "
                   "(data:image/png;base64,...) instead.")
UPLOAD_TOO_BIG = "This upload is {size}; one upload may hold at most {limit}. Send fewer or smaller files."
UPLOAD_NO_SIZE = "Uploads must declare their size (Content-Length); send the files as an ordinary form upload."
DISK_LOW = "The server is short of disk space right now, so it cannot take uploads; please try again later."
OPERATOR_PATH = "/demohub/operator/stats"
EXAMPLES_ROUTE = "/demohub/examples"  # apps.ui.image_examples' thumbnails, by demo and file name
FILES_PER_UPLOAD = 8  # an upload request may carry this many maximum-size files' worth of bytes
UPLOAD_DISK_RESERVE = 1_000_000_000
MCP_LOGIN = ("This hub needs a login: send your hub username and password as HTTP Basic credentials "
             "(an Authorization: Basic header), the same login as the web page.")
MCP_TOO_BIG = ("This MCP request is {size}; one request may hold at most {limit} (files travel as base64, about 4/3 "
               "of their size). Send fewer or smaller files.")
MCP_NO_SIZE = "MCP requests must declare their size (Content-Length)."
MCP_OFF_NO_PACKAGE = "MCP is off: the mcp package is missing; install it with pip install 'gradio[mcp]'."
MCP_BODY_SLACK = 1_000_000  # bytes of JSON around the base64 files of one MCP request
_MCP_PATH = re.compile(r"^[^=]*/gradio_api/mcp(?:/|$)")  # the MCP mount under any root path (not a /file= path)
LOOPBACK_HEADER = b"x-demohub-loopback"  # carries the per-launch secret of our own MCP loopback client
CALLER_HEADER = b"x-demohub-mcp-caller"  # who called an MCP tool; trusted only on the loopback's requests
LOOPBACK_USER = "demohub-mcp-loopback"  # the loopback client's login behind --auth (its password: the secret)


def state_dir() -> Path:
    """Where a running hub leaves the operator's token (``DEMOHUB_STATE_DIR``, default ``~/.cache/demohub``)."""
    return Path(os.environ.get("DEMOHUB_STATE_DIR") or Path.home() / ".cache" / "demohub")


def operator_file(port: int) -> Path:
    return state_dir() / f"hub-{port}.json"


def write_operator_file(port: int, url: str, token: str) -> Path:
    """The hub's local URL and operator token, readable by the operator's user only."""
    path = operator_file(port)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump({"url": url.rstrip("/"), "token": token, "pid": os.getpid()}, fh)
    os.chmod(path, 0o600)
    return path


def read_operator_stats(port: int, timeout: float = 10) -> dict:
    """``demohub stats``: ask the hub on ``port`` of this machine for its pool and queue figures."""
    import httpx

    from shared.errors import DemoHubError

    path = operator_file(port)
    if not path.is_file():
        raise DemoHubError(f"No hub on port {port} has left its operator file here ({path}); start one with "
                           f"`demohub serve --port {port}` as this user, or pass the right --port.")
    info = json.loads(path.read_text())
    try:
        response = httpx.get(info["url"] + OPERATOR_PATH, headers={"Authorization": f"Bearer {info['token']}"},
                             timeout=timeout)
    except httpx.HTTPError as error:
        raise DemoHubError(f"The hub at {info['url']} did not answer ({type(error).__name__}); "
                           "is it running?") from None
    if response.status_code != 200:
        raise DemoHubError(f"The hub at {info['url']} refused the operator token (HTTP {response.status_code}); "
                           "it was probably restarted by another user or on another port.")
    return response.json()


def _url_in(value: Any) -> str | None:
    """A web address that a file input in ``value`` names (Gradio would fetch it server-side), or None."""
    if isinstance(value, dict):
        for key in ("path", "url"):
            text = value.get(key)
            if isinstance(text, str) and text.lower().startswith(("http://", "https://")) and (
                    key == "path" or not value.get("path")):
                return text
        values = value.values()
    elif isinstance(value, (list, tuple)):
        values = value
    else:
        return None
    return next((url for url in map(_url_in, values) if url), None)


def job_owner(session_hash: str | None, request: Any = None) -> str | None:
    """Whose job an event is, for the per-session limit: its session, or for an MCP tool call the tool's caller.

    Every MCP tool call reaches the queue through Gradio's one loopback client, i.e. one session for all agents; the
    caller header (set by HubGuard, dropped from any request but the loopback's) tells the agents apart."""
    caller = _mcp_caller(request)
    return f"mcp:{caller}" if caller else session_hash


def _mcp_caller(request: Any) -> str | None:
    headers = getattr(request, "headers", None)
    return headers.get(CALLER_HEADER.decode()) if headers is not None else None


def job_client(request: Any, username: str | None) -> str:
    """Whose share an event counts against (``apps.shares.client_of``): an MCP tool's caller, else the login, else the
    address (a trusted proxy's forwarded one)."""
    caller = _mcp_caller(request)
    if caller:
        return caller
    if username:
        return f"user:{username}"
    client = getattr(request, "client", None)
    return f"addr:{getattr(client, 'host', None) or 'unknown'}"


def _events(queue):
    """Every event waiting in any concurrency group or running."""
    yield from (e for q in queue.event_queue_per_concurrency_id.values() for e in q.queue)
    yield from (e for job in queue.active_jobs if job for e in job)


def pending_jobs(queue, owner: str) -> int:
    """Events of one owner (``job_owner``) that wait in any concurrency group or are running."""
    return sum(job_owner(e.session_hash, getattr(e, "request", None)) == owner for e in _events(queue))


def client_jobs(queue, client: str) -> int:
    """Events of one client (``job_client``), all its sessions together, waiting or running."""
    return sum(job_client(getattr(e, "request", None), getattr(e, "username", None)) == client for e in _events(queue))


class Arriving:
    """Per client, admitted jobs that are not in the queue yet (Gradio's push still runs their validator): counted
    with the queue's own, so a burst of joins cannot all pass admission before the first is queued."""

    def __init__(self):
        self.counts: Counter = Counter()

    @contextlib.contextmanager
    def hold(self, body, request: Any, username: str | None):
        client = job_client(request, username)
        self.counts[client] += 1
        try:
            yield
        finally:
            self.counts[client] -= 1
            if self.counts[client] <= 0:
                del self.counts[client]


def admit(queue, body, settings: ServeSettings, request: Any = None, username: str | None = None,
          arriving: Arriving | None = None):
    """Why the queue refuses this event, as (Gradio's refusal state, detail), or None to let it in. A client past its
    share of jobs (``--client-jobs``, all its sessions together) is refused with a 429 and Retry-After (an
    ``HTTPException``; an MCP caller reads the sentence as a refused input)."""
    owner = job_owner(body.session_hash, request)
    agent = bool(owner and owner.startswith("mcp:"))
    if not settings.allow_url_inputs and (url := _url_in(body.data)):
        log.info("refused a file input naming a URL (%s)", url[:200])
        return "validator_error", [_invalid((URL_REFUSED_MCP if agent else URL_REFUSED).format(url=url[:80]))]
    if len(queue) >= settings.queue_size:
        return _queue_full(BUSY.format(waiting=len(queue)), agent)
    pending = pending_jobs(queue, owner) if owner else 0
    if pending >= settings.session_jobs:
        return _queue_full(TOO_MANY.format(pending=pending, limit=settings.session_jobs), agent)
    client = job_client(request, username)
    held = client_jobs(queue, client) + (arriving.counts[client] if arriving is not None else 0)
    if held >= settings.client_jobs:
        sentence = JOBS_FULL.format(pending=held, limit=settings.client_jobs)
        log.info("refused a job of %s: %d waiting or running", client, held)
        if agent:
            return _queue_full(sentence, agent)
        from fastapi import HTTPException

        raise HTTPException(429, detail=sentence, headers={"Retry-After": "10"})
    return None


def _invalid(message: str, **fields: str) -> dict:
    return {"__type__": "validate", "is_valid": False, "message": message, **fields}


def _queue_full(message: str, agent: bool) -> tuple[str, Any]:
    """A full queue's refusal. gradio_client drops a full queue's detail ("Queue is full! Please try again."), so the
    MCP loopback gets it as a refused input instead, and the agent reads our sentence."""
    return ("validator_error", [_invalid(message, parameter_name="queue")]) if agent else ("queue_full", message)


def install_queue_rules(blocks, settings: ServeSettings) -> None:
    """``admit`` at the queue's one door (``/queue/join`` and ``/call/*``)."""
    arriving = Arriving()
    gradio_internals.wrap_queue_push(
        blocks, lambda queue, body, request, username: admit(queue, body, settings, request, username, arriving),
        arriving.hold)


def loopback_client(settings: ServeSettings, secret: str) -> Callable[[str], Any]:
    """How Gradio's MCP server reaches the hub's own queue: a ``gradio_client.Client`` that logs in behind --auth
    (the hidden loopback login) and carries the per-launch secret that lets HubGuard trust its caller header."""

    def make(local_url: str):
        from gradio_client import Client

        return Client(local_url, auth=(LOOPBACK_USER, secret) if settings.auth else None, download_files=False,
                      verbose=False, analytics_enabled=False, ssl_verify=False, _skip_components=False,
                      headers={"x-gradio-user": "mcp", LOOPBACK_HEADER.decode(): secret})

    return make


class HubGuard:
    """ASGI middleware: every request's body budget and deadline and clean error responses, each client's share
    (``apps.shares``: streams, uploads, login tries; its jobs are counted at the queue), uploads with a disk reserve,
    the login on every route that takes or gives data, the operator-only stats route, example files by name, and the
    MCP routes' login and caller note."""

    def __init__(self, app, settings: ServeSettings, token: str, stats: Callable[[], dict], upload_dir: str,
                 loopback_secret: str = "", examples: Callable[[str, str], Path | None] = lambda demo, name: None,
                 shares: Shares | None = None):
        self.app, self.settings, self.token, self.stats, self.upload_dir = app, settings, token, stats, upload_dir
        self.loopback_secret, self.examples = loopback_secret, examples
        self.shares = shares or Shares.from_settings(settings)
        self._swept = 0.0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = scope["path"], scope["method"]
        if path.rstrip("/") == OPERATOR_PATH:
            return await self._operator(scope, send)
        scope = self._trusted(scope)
        user = logged_in_user(scope)
        client = client_of(scope, user)
        mcp = self.settings.mcp and bool(_MCP_PATH.match(path))  # its login is HTTP Basic, checked here
        if mcp:
            refusal, client = self._mcp_refusal(scope)
            if refusal is not None:
                return await respond(send, *refusal)
            scope = {**scope, "headers": [*scope["headers"], (CALLER_HEADER, client.encode())]}
            user = client.removeprefix("user:") if client.startswith("user:") else user
        limit = body_limit(path, self.settings)
        declared = declared_length(dict(scope["headers"]))
        if declared is not None and declared > limit:  # before the login: a stranger's huge body costs nothing
            log.info("refused a %s body on %s", human_bytes(declared), path)
            return await respond(send, 413, self._too_big(path, declared, limit), close=True)
        if self.settings.auth and user is None and not mcp and not _open_without_login(method, path):
            log_quietly("401", "answered a request without a login (%s %s)", method, path[:100])
            return await respond(send, 401, json.dumps({"detail": {"error": LOGIN_NEEDED,
                                                                   "auth_message": LOGIN_NEEDED}}),
                                 "application/json", close=True)
        if path.startswith(EXAMPLES_ROUTE + "/") and method in ("GET", "HEAD"):
            return await self._example(path, send)
        self._sweep()
        upload = method == "POST" and _is_upload(path)
        if upload:
            refusal = self._upload_refusal(dict(scope["headers"]), client)
            if refusal is not None:
                return await respond(send, *refusal, close=True)
        stream = stream_limits(method, path, self.settings)
        if stream is not None and self._loopback(scope):
            counted = None  # the MCP loopback's own streams carry every agent's calls: each agent's count is its own
        else:
            counted = client if stream is not None else None
        if counted is not None and (refusal := self.shares.open_stream(counted)) is not None:
            return await _respond_share(send, refusal)
        idle, total = stream or (None, None)
        request = BoundedRequest(receive, send, limit=limit, timeout=self.settings.read_timeout, path=path,
                                 min_rate=self.settings.min_body_rate, stream_idle=idle, stream_total=total)
        try:
            if method == "POST" and _is_login(path) and self.settings.auth:
                return await self._login(scope, request, client)
            answer = _Answer(request.send) if upload else None
            await self.app(scope, request.receive, answer.send if answer else request.send)
            if answer is not None and answer.status == 200:
                self.shares.record_upload(client, answer.paths())
        except Exception as error:
            if request.refused:
                return  # the client was answered (413/408); the route only learnt that it left
            if request.started:
                raise
            if type(error).__name__ == "FnIndexInferError":  # gradio.route_utils: /call/<name> of no named endpoint
                name = shorten(path.rstrip("/").rsplit("/", 1)[-1][:80], markup=False)
                return await respond(send, 404, json.dumps({"detail": NO_ENDPOINT.format(name=name)}),
                                     "application/json")
            await respond(send, 500, json.dumps({"detail": INTERNAL.format(error_id=report(error))}),
                          "application/json")
        finally:
            request.close()
            if counted is not None:
                self.shares.close_stream(counted)

    async def _login(self, scope, request: BoundedRequest, client: str) -> None:
        """Gradio's login route, with the tries of each client (and each user name) slowed past their share."""
        body = b""
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        user = _login_name(body, dict(scope["headers"]))
        refusal = self.shares.login_refusal(client, user)
        if refusal is not None:
            return await _respond_share(request.send, refusal)
        replay = [{"type": "http.request", "body": body, "more_body": False}]
        answer = _Answer(request.send, keep_body=False)

        async def receive():
            return replay.pop() if replay else await request.receive()

        await self.app(scope, receive, answer.send)
        if answer.status is not None:
            self.shares.login_result(client, user, answer.status < 400)

    def _sweep(self) -> None:
        """Delete the expired uploads of clients without a login, checked as requests arrive (every 10 s at most, and
        three times per retention)."""
        now = time.monotonic()
        if now - self._swept >= min(10.0, self.shares.anonymous_upload_retention / 3):
            self._swept = now
            self.shares.sweep()

    def _too_big(self, path: str, size: int, limit: int) -> str:
        """The sentence for a body of ``size`` bytes over ``path``'s budget of ``limit``."""
        sizes = {"size": human_bytes(size), "limit": human_bytes(limit)}
        if _is_upload(path):
            return UPLOAD_TOO_BIG.format(**sizes)
        if self.settings.mcp and _MCP_PATH.match(path):
            return MCP_TOO_BIG.format(**sizes)
        return BODY_TOO_BIG.format(**sizes, upload=human_bytes(self.settings.max_file_size * FILES_PER_UPLOAD))

    def _loopback(self, scope) -> bool:
        """Whether this is our MCP loopback client's request (it carries the per-launch secret)."""
        given = dict(scope["headers"]).get(LOOPBACK_HEADER, b"").decode("latin-1")
        return bool(self.loopback_secret) and secrets.compare_digest(given, self.loopback_secret)

    def _trusted(self, scope) -> dict:
        """``scope`` without our internal headers, unless it is our MCP loopback's request (it knows the secret)."""
        headers = scope["headers"]
        if not any(key in (LOOPBACK_HEADER, CALLER_HEADER) for key, _ in headers):
            return scope
        if self._loopback(scope):
            return scope
        return {**scope, "headers": [(k, v) for k, v in headers if k not in (LOOPBACK_HEADER, CALLER_HEADER)]}

    def _mcp_refusal(self, scope) -> tuple[tuple[int, str, str, list] | None, str]:
        """(refusal, caller): the login behind --auth (wrong passwords count against the client's login tries, as on
        the page) and a declared body (its budget is every route's check); the caller is the login name, else the
        client's address."""
        headers = dict(scope["headers"])
        caller = f"addr:{address_of(scope)}"  # until its Basic login says who it is
        if self.settings.auth:
            header = headers.get(b"authorization", b"")
            named = _basic_name(header)
            if named is not None and (refusal := self.shares.login_refusal(caller, named)) is not None:
                return (429, refusal.sentence, "text/plain; charset=utf-8", refusal.headers), caller
            user = _basic_login(header, self.settings.auth)
            if named is not None:
                self.shares.login_result(caller, named, user is not None)
            if user is None:
                return (401, MCP_LOGIN, "text/plain; charset=utf-8",
                        [(b"www-authenticate", b'Basic realm="Paper Demo Hub", charset="UTF-8"')]), caller
            caller = f"user:{user}"
        if scope["method"] == "POST" and declared_length(headers) is None:
            return (411, MCP_NO_SIZE), caller
        return None, caller

    def _upload_refusal(self, headers: dict[bytes, bytes], client: str) -> tuple | None:
        length = declared_length(headers)
        if length is None:
            return 411, UPLOAD_NO_SIZE
        if length > body_limit("/gradio_api/upload", self.settings):
            return None  # the body budget answers it (413)
        if (share := self.shares.upload_refusal(client, length)) is not None:
            return 429, share.sentence, "text/plain; charset=utf-8", share.headers
        if free_bytes(Path(self.upload_dir)) - length < UPLOAD_DISK_RESERVE:
            log.warning("refusing uploads: less than %s free on the upload disk", human_bytes(UPLOAD_DISK_RESERVE))
            return 507, DISK_LOW
        return None

    async def _example(self, path: str, send):
        """An example file a page registered (``apps.ui.image_examples``), by demo and name; nothing else."""
        demo, _, name = path[len(EXAMPLES_ROUTE) + 1:].partition("/")
        file = self.examples(demo, name)
        if file is None or not file.is_file():
            return await respond(send, 404, "Not Found")
        data = file.read_bytes()
        kind = {".png": "image/png", ".webp": "image/webp"}.get(file.suffix.lower(), "image/jpeg")
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", kind.encode()), (b"content-length", str(len(data)).encode()),
                                (b"cache-control", b"public, max-age=3600")]})
        await send({"type": "http.response.body", "body": data})

    async def _operator(self, scope, send):
        given = dict(scope["headers"]).get(b"authorization", b"").decode()
        if not secrets.compare_digest(given, f"Bearer {self.token}"):
            return await respond(send, 404, "Not Found")  # no hint that an operator route exists
        return await respond(send, 200, json.dumps(self.stats()), "application/json")


class _Answer:
    """A route's answer on its way out: its status, and (``keep_body``) its body, to read once it is sent."""

    def __init__(self, send, keep_body: bool = True):
        self._send, self.keep_body = send, keep_body
        self.status: int | None = None
        self._body: list[bytes] = []

    async def send(self, message: dict) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif self.keep_body and message["type"] == "http.response.body" and sum(map(len, self._body)) < 1_000_000:
            self._body.append(message.get("body", b""))
        await self._send(message)

    def paths(self) -> list[str]:
        """The file paths an upload's answer names (Gradio answers a JSON list of them)."""
        try:
            value = json.loads(b"".join(self._body))
        except ValueError:
            return []
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


async def _respond_share(send, refusal: Refusal) -> None:
    await respond(send, refusal.status, json.dumps({"detail": refusal.sentence}), "application/json",
                  headers=refusal.headers)


_RESULT_STREAM = re.compile(r"/gradio_api/(?:queue/data|call/(?:v2/)?[^/]+/[^/]+)/?$")
_HEARTBEAT = re.compile(r"/gradio_api/heartbeat/[^/]+/?$")


def stream_limits(method: str, path: str, settings: ServeSettings) -> tuple[float | None, float | None] | None:
    """(idle, total) seconds for an event stream this request opens, or None when it opens none. Result streams get
    both; a page's heartbeat only the idle limit (it sends every 15 s while the page is open, and its end would end
    the page's session); an MCP stream only the total (the protocol sends nothing while an agent thinks)."""
    if method != "GET":
        return None
    if _RESULT_STREAM.search(path):
        return settings.stream_idle, settings.stream_timeout
    if _HEARTBEAT.search(path):
        return settings.stream_idle, None
    if settings.mcp and _MCP_PATH.match(path):
        return None, settings.stream_timeout
    return None


# What a hub behind --auth serves without a login: the login page (at its root and at each demo's page) and the files
# it is drawn with, the login itself, and the start-up check Gradio's launch makes of its own server.
_OPEN_WITHOUT_LOGIN = re.compile(r"^/(?:[\w-]*/?|login/?|logout/?|favicon\.ico|robots\.txt|manifest\.json|theme\.css|"
                                 r"gradio_api/theme\.css|gradio_api/startup-events|pwa_icon(?:/\d+)?|"
                                 r"(?:assets|static|svelte)/.*)$")


def _open_without_login(method: str, path: str) -> bool:
    if method == "POST":
        return _is_login(path)
    return method in ("GET", "HEAD") and bool(_OPEN_WITHOUT_LOGIN.match(path))


def _is_login(path: str) -> bool:
    return path.rstrip("/") == "/login"


_MULTIPART_NAME = re.compile(rb'name="username"\r\n(?:[^\r\n]*\r\n)*?\r\n([^\r\n]*)')


def _login_name(body: bytes, headers: dict[bytes, bytes]) -> str:
    """The user name a login form names (form-encoded, or multipart as the page sends it); "" when none."""
    if b"multipart/form-data" in headers.get(b"content-type", b""):
        match = _MULTIPART_NAME.search(body)
        return match[1].decode("utf-8", "replace").strip()[:200] if match else ""
    return parse_qs(body.decode("latin-1")).get("username", [""])[0].strip()[:200]


def mcp_body_limit(settings: ServeSettings) -> int:
    """The largest MCP request body: an upload request's files (``FILES_PER_UPLOAD`` maximum-size files) as base64."""
    return settings.max_file_size * FILES_PER_UPLOAD * 4 // 3 + MCP_BODY_SLACK


def body_limit(path: str, settings: ServeSettings) -> int:
    """The most bytes a request body on ``path`` may hold: an upload's, an MCP call's, or any other request's."""
    if _is_upload(path):
        return settings.max_file_size * FILES_PER_UPLOAD
    if settings.mcp and _MCP_PATH.match(path):
        return mcp_body_limit(settings)
    return settings.max_request_size


def _is_upload(path: str) -> bool:
    return path.rstrip("/").endswith("/gradio_api/upload")


def _basic_credentials(header: bytes) -> tuple[str, str] | None:
    """(user, password) of an ``Authorization: Basic`` header, right or wrong, or None when it names none."""
    scheme, _, encoded = header.decode("latin-1").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (user, password) if sep else None


def _basic_name(header: bytes) -> str | None:
    """The user name an ``Authorization: Basic`` header gives (right or wrong), or None."""
    credentials = _basic_credentials(header)
    return credentials[0][:200] if credentials else None


def _basic_login(header: bytes, logins: tuple[tuple[str, str], ...]) -> str | None:
    """The user an ``Authorization: Basic`` header logs in as, or None (compared in constant time per login)."""
    credentials = _basic_credentials(header)
    if credentials is None:
        return None
    user, password = credentials
    found = None
    for name, secret in logins:
        if secrets.compare_digest(name.encode(), user.encode()) & secrets.compare_digest(secret.encode(),
                                                                                          password.encode()):
            found = name
    return found


def mcp_available() -> bool:
    return importlib.util.find_spec("mcp") is not None


def launch(blocks, settings: ServeSettings, stats: Callable[[], dict], *, prevent_thread_lock: bool = False,
           on_serving: Callable[[], None] | None = None, **launch_kwargs):
    """Queue and launch ``blocks`` under ``settings``; returns what ``Blocks.launch`` returns. ``on_serving`` runs
    once the server answers (before this call blocks)."""
    from gradio.utils import get_upload_folder
    from starlette.middleware import Middleware

    from apps import event_inputs
    from apps.ui import example_file, page_errors, user_errors

    if warning := gradio_internals.startup_warning():
        log.warning(warning)
    token, loopback_secret = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    if settings.mcp and not mcp_available():
        log.warning(MCP_OFF_NO_PACKAGE)
        settings = replace(settings, mcp=False)
    gradio_internals.set_delete_cache(blocks, settings.delete_cache_pair)
    with gradio_internals.apps_at_launch_only():  # launch builds the app it serves
        blocks.queue(max_size=settings.queue_size, api_open=False,  # api_open=True would let /run/* skip the queue
                     default_concurrency_limit=settings.demo_concurrency)
    install_queue_rules(blocks, settings)
    gradio_internals.install_lazy_session_configs()
    gradio_internals.install_mcp_argument_sentences()
    event_inputs.install(blocks, user_errors, page_errors)
    upload_dir = get_upload_folder()
    Path(upload_dir).mkdir(parents=True, exist_ok=True)
    guard = Middleware(HubGuard, settings=settings, token=token, stats=lambda: _operator_stats(blocks, stats),
                       upload_dir=upload_dir, loopback_secret=loopback_secret, examples=example_file,
                       shares=Shares.from_settings(settings))
    logins = list(settings.auth)
    if logins and settings.mcp:  # the MCP loopback's own login; its password is a secret of this process
        logins.append((LOOPBACK_USER, loopback_secret))
    # uvicorn reads who may forward a client's address from its environment when Gradio builds the server (ours:
    # nobody unless --forwarded-allow-ips, where uvicorn's own default trusts loopback).
    with _environment(FORWARDED_ALLOW_IPS=settings.trusted_proxies):
        result = blocks.launch(
            server_name=settings.host, server_port=settings.port, share=settings.share,
            prevent_thread_lock=True, quiet=prevent_thread_lock,
            auth=logins or None, max_file_size=settings.max_file_size,
            enable_monitoring=settings.monitoring, mcp_server=settings.mcp,
            app_kwargs={"middleware": [guard], "lifespan": gradio_internals.mcp_lifespan(
                blocks, settings.mcp, loopback_client(settings, loopback_secret))},
            show_error=False,  # every handler's error is a gr.Error sentence (event_inputs); nothing else is shown
            **launch_kwargs,
        )
    guard_connections(blocks.server, max_connections=settings.max_connections,
                      per_address=None if settings.share else settings.max_connections_per_address,
                      header_timeout=settings.read_timeout,  # with --share every visitor arrives from the tunnel
                      exempt=trusted_proxies(settings.trusted_proxies))
    gradio_internals.say_less(blocks)
    write_operator_file(blocks.server_port, f"http://127.0.0.1:{blocks.server_port}", token)
    if on_serving is not None:
        on_serving()
    if not prevent_thread_lock:
        blocks.block_thread()
    return result


@contextlib.contextmanager
def _environment(**values: str):
    """Environment variables set for the duration of the block, then restored."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _operator_stats(blocks, stats: Callable[[], dict]) -> dict:
    queue = blocks._queue
    return {**stats(), "queue_waiting": len(queue), "queue_size": queue.max_size}
