"""Serving a Gradio app (the hub or one demo's Space) with the public-deployment rules of ``ServeSettings``.

Gradio gives the upload limit, login, monitoring switch, cache deletion and the queue. On top of it:
- queue admission (``admit``): a bounded queue with a sentence when busy, a cap on pending jobs per session, and no
  file input that names a web address (the server would fetch it) unless the operator allows it;
- ``HubGuard``, an ASGI middleware: upload requests need a declared size within bounds and leave the disk a reserve;
  ``/demohub/operator/stats`` answers only with the operator's token (written to a file only the operator can read).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from apps.settings import ServeSettings
from shared.registry import human_bytes
from shared.weights import free_bytes

log = logging.getLogger("demohub")

BUSY = "The hub is busy right now ({waiting} requests are waiting); please try again in a minute."
TOO_MANY = ("You already have {pending} requests waiting or running (the limit is {limit}); wait for them to "
            "finish, then try again.")
URL_REFUSED = ("This hub does not fetch files from web addresses ({url}); download the file and upload it "
               "instead.")
UPLOAD_TOO_BIG = "This upload is {size}; one upload may hold at most {limit}. Send fewer or smaller files."
UPLOAD_NO_SIZE = "Uploads must declare their size (Content-Length); send the files as an ordinary form upload."
DISK_LOW = "The server is short of disk space right now, so it cannot take uploads; please try again later."
OPERATOR_PATH = "/demohub/operator/stats"
FILES_PER_UPLOAD = 8  # an upload request may carry this many maximum-size files' worth of bytes
UPLOAD_DISK_RESERVE = 1_000_000_000


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


def pending_jobs(queue, session_hash: str) -> int:
    """Events of one session that wait in any concurrency group or are running."""
    waiting = sum(e.session_hash == session_hash for q in queue.event_queue_per_concurrency_id.values()
                  for e in q.queue)
    running = sum(e.session_hash == session_hash for job in queue.active_jobs if job for e in job)
    return waiting + running


def admit(queue, body, settings: ServeSettings) -> tuple[str, Any] | None:
    """Why the queue refuses this event, as (Gradio's refusal state, detail), or None to let it in."""
    if not settings.allow_url_inputs and (url := _url_in(body.data)):
        message = URL_REFUSED.format(url=url[:80])
        log.info("refused a file input naming a URL (%s)", url[:200])
        return "validator_error", [{"__type__": "validate", "is_valid": False, "message": message}]
    if len(queue) >= settings.queue_size:
        return "queue_full", BUSY.format(waiting=len(queue))
    pending = pending_jobs(queue, body.session_hash) if body.session_hash else 0
    if pending >= settings.session_jobs:
        return "queue_full", TOO_MANY.format(pending=pending, limit=settings.session_jobs)
    return None


def install_queue_rules(blocks, settings: ServeSettings) -> None:
    """Wrap the queue's ``push`` (the one door of /queue/join and /call/*) with ``admit``."""
    queue = blocks._queue
    push = queue.push

    async def admitted_push(body, request, username):
        refusal = admit(queue, body, settings)
        if refusal is not None:
            state, detail = refusal
            return False, detail, state
        return await push(body, request, username)

    queue.push = admitted_push


class HubGuard:
    """ASGI middleware: bounded uploads with a disk reserve, and the operator-only stats route."""

    def __init__(self, app, settings: ServeSettings, token: str, stats: Callable[[], dict], upload_dir: str):
        self.app, self.settings, self.token, self.stats, self.upload_dir = app, settings, token, stats, upload_dir

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            path = scope["path"]
            if path.rstrip("/") == OPERATOR_PATH:
                return await self._operator(scope, send)
            if scope["method"] == "POST" and path.rstrip("/").endswith("/gradio_api/upload"):
                refusal = self._upload_refusal(dict(scope["headers"]))
                if refusal is not None:
                    return await _respond(send, *refusal)
        return await self.app(scope, receive, send)

    def _upload_refusal(self, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        length = headers.get(b"content-length", b"").decode()
        if not length.isdigit():
            return 411, UPLOAD_NO_SIZE
        limit = self.settings.max_file_size * FILES_PER_UPLOAD
        if int(length) > limit:
            return 413, UPLOAD_TOO_BIG.format(size=human_bytes(int(length)), limit=human_bytes(limit))
        if free_bytes(Path(self.upload_dir)) - int(length) < UPLOAD_DISK_RESERVE:
            log.warning("refusing uploads: less than %s free on the upload disk", human_bytes(UPLOAD_DISK_RESERVE))
            return 507, DISK_LOW
        return None

    async def _operator(self, scope, send):
        given = dict(scope["headers"]).get(b"authorization", b"").decode()
        if not secrets.compare_digest(given, f"Bearer {self.token}"):
            return await _respond(send, 404, "Not Found")  # no hint that an operator route exists
        return await _respond(send, 200, json.dumps(self.stats()), "application/json")


async def _respond(send, status: int, body: str, content_type: str = "text/plain; charset=utf-8") -> None:
    data = body.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


def launch(blocks, settings: ServeSettings, stats: Callable[[], dict], *, prevent_thread_lock: bool = False,
           **launch_kwargs):
    """Queue and launch ``blocks`` under ``settings``; returns what ``Blocks.launch`` returns."""
    from gradio.utils import get_upload_folder
    from starlette.middleware import Middleware

    token = secrets.token_urlsafe(32)
    blocks.delete_cache = settings.delete_cache_pair
    blocks.queue(max_size=settings.queue_size, api_open=False,  # api_open=True would let /run/* skip the queue
                 default_concurrency_limit=settings.demo_concurrency)
    install_queue_rules(blocks, settings)
    upload_dir = get_upload_folder()
    Path(upload_dir).mkdir(parents=True, exist_ok=True)
    guard = Middleware(HubGuard, settings=settings, token=token, stats=lambda: _operator_stats(blocks, stats),
                       upload_dir=upload_dir)
    result = blocks.launch(
        server_name=settings.host, server_port=settings.port, share=settings.share,
        prevent_thread_lock=True, quiet=prevent_thread_lock,
        auth=list(settings.auth) or None, max_file_size=settings.max_file_size,
        enable_monitoring=settings.monitoring, app_kwargs={"middleware": [guard]},
        show_error=True,  # Gradio's own input checks (wrong types through the API) then say what was wrong
        **launch_kwargs,
    )
    write_operator_file(blocks.server_port, f"http://127.0.0.1:{blocks.server_port}", token)
    if not prevent_thread_lock:
        blocks.block_thread()
    return result


def _operator_stats(blocks, stats: Callable[[], dict]) -> dict:
    queue = blocks._queue
    return {**stats(), "queue_waiting": len(queue), "queue_size": queue.max_size}
