"""A client's share: what one client may hold of a public hub at once, so that every other visitor still finds room.

Budgets per request (``apps.limits``) bound what one request costs; a share bounds what one *client* holds in total:

- **Who a client is** (``client_of``): its login; else its address; behind a reverse proxy, the address that the proxy
  forwards when the proxy is one of ``--forwarded-allow-ips`` (uvicorn rewrites the client's address from the
  forwarding headers of those addresses only; anyone else's forwarding headers are ignored).
- **What it may hold at once**: open event streams (``--client-streams``), queued and running jobs
  (``--client-jobs``, a fraction of ``--queue-size``), stored upload bytes (``--client-upload-quota``; a client
  without a login has its uploads deleted after ``--anonymous-upload-retention`` seconds), and wrong passwords
  (``--login-attempts`` free, then each next try waits twice as long). Connections are shared at the protocol level
  (``apps.limits.guarded_protocol``): a full hub makes room for a newcomer by closing a connection of the client that
  holds the most.
- Past its share a client reads 429 with a sentence saying what to do, and ``Retry-After`` says when; no other client
  notices.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any

from shared.registry import human_bytes

log = logging.getLogger("demohub")

STREAMS_FULL = ("You already have {open} live connections to this hub's results open (the limit is {limit}); close "
                "some tabs or clients, then try again.")
JOBS_FULL = ("You already have {pending} requests waiting or running on this hub (the limit is {limit} per visitor, "
             "so that others find room); wait for them to finish, then try again.")
UPLOADS_FULL = ("You have {stored} of uploads on this hub and this upload is {size}; one visitor may keep at most "
                "{limit} at once. Older uploads are deleted after {retention}; try again then{login}.")
UPLOADS_LOGIN = ", or log in"
LOGIN_WAIT = "Too many wrong passwords from here; wait {seconds} s before the next try."
LOGIN_NEEDED = ("This hub needs a login: open its page and log in, or send your hub username and password (API "
                "clients: Client(url, auth=(user, password)); MCP: an Authorization: Basic header).")

LOGIN_FORGET = 900.0  # seconds after its last wrong password that a client's (or a name's) count starts again
LOGIN_MAX_WAIT = 900.0  # the longest wait between two tries
NAME_ATTEMPTS_FACTOR = 4  # a user name is slowed after this many times --login-attempts wrong passwords for it


@dataclass(frozen=True)
class Refusal:
    """A client past its share: HTTP 429, a sentence, and when to try again."""

    sentence: str
    retry_after: int  # seconds
    status: int = 429

    @property
    def headers(self) -> list[tuple[bytes, bytes]]:
        return [(b"retry-after", str(max(1, self.retry_after)).encode())]


def cookie_token(headers: dict[bytes, bytes], cookie_id: str) -> str | None:
    """Gradio's login token from the request's cookies (``access-token[-unsecure]-<cookie_id>``), or None."""
    raw = headers.get(b"cookie", b"").decode("latin-1")
    if not raw:
        return None
    jar = SimpleCookie()
    try:
        jar.load(raw)
    except CookieError:
        return None
    for name in (f"access-token-{cookie_id}", f"access-token-unsecure-{cookie_id}"):
        if name in jar:
            return jar[name].value
    return None


def logged_in_user(scope: dict) -> str | None:
    """The user a request is logged in as through Gradio's login cookie (the app's own token table), or None."""
    app = scope.get("app")
    tokens, cookie_id = getattr(app, "tokens", None), getattr(app, "cookie_id", None)
    if not tokens or cookie_id is None:
        return None
    token = cookie_token(dict(scope.get("headers") or []), cookie_id)
    return tokens.get(token) if token else None


def address_of(scope: dict) -> str:
    """The client's address: the peer, or what a trusted proxy forwarded (uvicorn has already put it in the scope)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def client_of(scope: dict, user: str | None = None) -> str:
    """Who a request's client is, for its share: ``user:<login>``, else ``addr:<address>``."""
    user = user or logged_in_user(scope)
    return f"user:{user}" if user else f"addr:{address_of(scope)}"


def trusted_proxies(allowed: str) -> Callable[[str], bool]:
    """Whether an address is one of ``--forwarded-allow-ips`` (addresses and networks, comma-separated; ``*``: any),
    as uvicorn reads the same setting."""
    items = [item.strip() for item in allowed.split(",") if item.strip()]
    if "*" in items:
        return lambda host: True
    networks = []
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            continue  # a literal uvicorn would compare as text: never a peer address here

    def trusted(host: str) -> bool:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in networks)

    return trusted


@dataclass
class _Upload:
    path: Path
    size: int
    at: float


@dataclass
class _Failures:
    count: int = 0
    last: float = -math.inf


@dataclass
class Shares:
    """The shares of one running hub: open streams and stored uploads per client, wrong passwords per client and per
    user name. Jobs are counted from the queue itself (``apps.serving.admit``), so nothing here can drift from it."""

    client_streams: int = 32
    client_upload_quota: int = 250_000_000
    anonymous_upload_retention: float = 600.0
    upload_retention: float = 3600.0  # --delete-cache: Gradio's own sweeper deletes every upload after this
    login_attempts: int = 5
    clock: Callable[[], float] = time.monotonic
    streams: Counter = field(default_factory=Counter)
    uploads: dict[str, list[_Upload]] = field(default_factory=dict)
    client_failures: dict[str, _Failures] = field(default_factory=dict)
    name_failures: dict[str, _Failures] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Any) -> Shares:
        return cls(client_streams=settings.client_streams, client_upload_quota=settings.client_upload_quota,
                   anonymous_upload_retention=settings.anonymous_upload_retention,
                   upload_retention=settings.delete_cache or math.inf, login_attempts=settings.login_attempts)

    # -- streams ---------------------------------------------------------------------------------------------------

    def open_stream(self, client: str) -> Refusal | None:
        """Count one more open stream for ``client``, or refuse it past its share (nothing counted then)."""
        if self.streams[client] >= self.client_streams:
            log.info("refused a stream to %s: %d open", client, self.streams[client])
            return Refusal(STREAMS_FULL.format(open=self.streams[client], limit=self.client_streams), 10)
        self.streams[client] += 1
        return None

    def close_stream(self, client: str) -> None:
        self.streams[client] -= 1
        if self.streams[client] <= 0:
            del self.streams[client]

    # -- uploads ---------------------------------------------------------------------------------------------------

    def _retention(self, client: str) -> float:
        anonymous = not client.startswith("user:")
        return min(self.anonymous_upload_retention, self.upload_retention) if anonymous else self.upload_retention

    def stored(self, client: str) -> int:
        """Bytes of ``client``'s uploads still kept (files deleted meanwhile, by anyone, no longer count)."""
        self.sweep(client)
        return sum(u.size for u in self.uploads.get(client, ()))

    def upload_refusal(self, client: str, size: int) -> Refusal | None:
        """Refuse an upload of ``size`` bytes that would take ``client`` past its quota."""
        stored = self.stored(client)
        if stored + size <= self.client_upload_quota:
            return None
        kept = self.uploads.get(client, [])
        retention = self._retention(client)
        wait = min((u.at + retention for u in kept), default=self.clock()) - self.clock() if kept else retention
        log.info("refused an upload of %s to %s: %s stored", human_bytes(size), client, human_bytes(stored))
        return Refusal(UPLOADS_FULL.format(stored=human_bytes(stored), size=human_bytes(size),
                                           limit=human_bytes(self.client_upload_quota),
                                           retention=_duration(retention),
                                           login="" if client.startswith("user:") else UPLOADS_LOGIN),
                       math.ceil(max(1.0, wait)))

    def record_upload(self, client: str, paths: list[str]) -> None:
        """The files one upload request stored for ``client`` (the paths Gradio's upload route answered). Gradio keeps
        one file per content: the same bytes uploaded again (an example image, by another visitor too) get the same
        path, which then belongs to its latest upload alone, so an older record's retention never deletes the file
        someone has just uploaded (found in a long run: a file uploaded ten minutes apart was deleted at once)."""
        now = self.clock()
        fresh = {Path(name) for name in paths}
        for who in list(self.uploads):
            self.uploads[who] = [u for u in self.uploads[who] if u.path not in fresh]
            if not self.uploads[who]:
                del self.uploads[who]
        kept = self.uploads.setdefault(client, [])
        for path in fresh:
            try:
                kept.append(_Upload(path, path.stat().st_size, now))
            except OSError:
                continue
        if not kept:
            del self.uploads[client]

    def sweep(self, client: str | None = None) -> int:
        """Forget uploads that are gone, and delete those of clients without a login once their retention passed
        (``client``: only that client's). Returns how many files were deleted."""
        deleted, now = 0, self.clock()
        for who in [client] if client is not None else list(self.uploads):
            retention, left = self._retention(who), []
            for upload in self.uploads.get(who, ()):
                if not upload.path.exists():
                    continue
                if now - upload.at >= retention and not who.startswith("user:"):
                    upload.path.unlink(missing_ok=True)
                    deleted += 1
                    continue
                left.append(upload)
            if left:
                self.uploads[who] = left
            else:
                self.uploads.pop(who, None)
        return deleted

    # -- logins ----------------------------------------------------------------------------------------------------

    def login_refusal(self, client: str, user: str) -> Refusal | None:
        """Refuse a login try from ``client`` for ``user`` while its wait runs: past ``login_attempts`` wrong passwords
        from one client, each next try waits twice as long as the one before (at most ``LOGIN_MAX_WAIT``). A user
        name with many wrong passwords from everywhere slows only clients that got a password wrong themselves, so
        the real user logs in at once from elsewhere."""
        wait = self._wait(self.client_failures.get(client), self.login_attempts)
        if client in self.client_failures and self.client_failures[client].count:
            wait = max(wait, self._wait(self.name_failures.get(user), self.login_attempts * NAME_ATTEMPTS_FACTOR))
        if wait <= 0:
            return None
        log.info("slowed a login try from %s for %r: %.0f s to wait", client, user[:40], wait)
        return Refusal(LOGIN_WAIT.format(seconds=math.ceil(wait)), math.ceil(wait))

    def login_result(self, client: str, user: str, ok: bool) -> None:
        if ok:
            self.client_failures.pop(client, None)
            return
        now = self.clock()
        for table, key in ((self.client_failures, client), (self.name_failures, user)):
            failures = table.setdefault(key, _Failures())
            if now - failures.last > LOGIN_FORGET:
                failures.count = 0
            failures.count += 1
            failures.last = now
        if len(self.name_failures) > 10_000:  # made-up names cannot grow it for ever
            oldest = sorted(self.name_failures, key=lambda k: self.name_failures[k].last)[:5_000]
            for key in oldest:
                del self.name_failures[key]

    def _wait(self, failures: _Failures | None, free: int) -> float:
        """Seconds still to wait after ``failures`` when ``free`` wrong passwords cost nothing."""
        if failures is None or failures.count < free or self.clock() - failures.last > LOGIN_FORGET:
            return 0.0
        delay = min(LOGIN_MAX_WAIT, 2.0 ** (failures.count - free))
        return failures.last + delay - self.clock()


def _duration(seconds: float) -> str:
    if seconds == math.inf:
        return "the server's own clean-up"
    if seconds >= 120:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds:.0f} seconds"
