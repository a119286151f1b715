"""Budgets every HTTP request of a hub meets before any route reads it, whatever the route.

- **Body**: each route has a byte budget (uploads: 8 files of ``--max-file-size``; MCP: those as base64; every other
  route ``--max-request-size``). A declared length over it is refused with 413 before a byte is read; an undeclared
  (chunked) body is counted while it arrives and refused the moment it passes the budget. Nothing is parsed first, so
  a login check behind it (Gradio parses JSON before checking ``--auth``) costs a stranger nothing either.
- **Time to send**: a client has ``--read-timeout`` seconds to send a request's headers (the connection guard, at the
  protocol level, where unfinished headers live), may pause no longer than that while sending its body, and once that
  time has passed must have sent ``--min-body-rate`` bytes a second on average (here): a total deadline for every
  body, so a slow drip is closed within seconds whatever length it declares.
- **Streams**: an event stream that sends nothing for ``--stream-idle`` seconds, or a result stream open for
  ``--stream-timeout`` seconds, is ended (``BoundedRequest``'s watchdog); how many one client holds is its share
  (``apps.shares``).
- **Connections**: at most ``--max-connections`` open at once, ``--max-connections-per-address`` from one address;
  a full hub makes room for a newcomer by closing a connection of the address that holds the most (when it holds at
  least two more), else the newcomer gets a one-line 503 (slowloris holds no file descriptor for long, and a crowd of
  drips from many addresses never locks another visitor out).
- **What an error says**: an error response from a route (Gradio's pydantic dumps, a library exception's text in a
  400 or 500) reaches the visitor as a sentence; the original goes to the log under an error id.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import html
import json
import logging
import re
import resource
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from apps.shares import LOGIN_NEEDED
from shared.errors import report
from shared.registry import human_bytes

log = logging.getLogger("demohub")

BODY_TOO_BIG = ("This request is {size}; this address takes at most {limit}. Send less (files go through an upload, "
                "which may hold {upload})." )
BODY_TOO_BIG_STREAMED = "This request passed {limit}, the most this address takes; send less."
TOO_SLOW = "The request took too long to arrive (over {seconds:g} s without data); send it again in one go."
TOO_SLOW_RATE = ("The request arrived too slowly (under {rate} a second on average); send it again over a faster "
                 "connection.")
ROOM_MADE = ("The hub closed this connection to make room for other visitors: your address held the most connections "
             "of a full hub. Open fewer at once.")
CONNECTIONS_FULL = "The hub has too many open connections right now; please try again in a minute."
ADDRESS_FULL = "Too many open connections from your address; close some tabs or clients and try again."
INTERNAL = ("Something went wrong on our side (error id {error_id}; the server log has the details). The hub is "
            "still running; please try again.")
FILE_NOT_SERVED = ("This hub serves only the files its pages made and the files you uploaded; the one asked for is "
                   "not among them.")
UNREADABLE = ("This request's inputs could not be read (error id {error_id}): check each value against the API page "
              "(the “Use via API” link at the foot of the page).")
MAX_SENTENCE = 500  # characters of one error message
LONG_RUN = 80  # characters without a space that a message may quote before they are cut
ERROR_BODY_CAP = 256_000  # error responses longer than this pass unread (none of Gradio's are)
FD_RESERVE = 200  # file descriptors kept for model files, uploads and the log when connections are counted

# Text that never belongs in what a visitor reads: tracebacks, exception class names, library and server paths,
# Python's own phrasing of a type error, pydantic's documentation links.
_INTERNAL_TEXT = re.compile(
    r"Traceback|File \"|site-packages|pydantic|Original error|\b[A-Z]\w*(?:Error|Exception)\b|object has no "
    r"attribute|object is not|' object|not supported between|unhashable|NoneType|(?:^|[\s'\"(=])/(?:tmp|root|home|"
    r"usr|work|var|opt|proc|etc)/")


_QUIET: dict[str, list[float]] = {}


def log_quietly(key: str, message: str, *args: Any, every: float = 60.0) -> None:
    """``message`` at INFO at most once every ``every`` seconds per ``key``, with how many were left out meanwhile
    (a stranger's 300 refused requests a second cannot fill the log)."""
    now = time.monotonic()
    last, skipped = _QUIET.get(key, (-every, 0))
    if now - last < every:
        _QUIET[key] = [last, skipped + 1]
        return
    _QUIET[key] = [now, 0]
    log.info(message + (f" (and {skipped} more like it in the last {every:.0f} s)" if skipped else ""), *args)


def looks_internal(text: str) -> bool:
    """Whether ``text`` carries something a visitor should never read (a library's words, a server path)."""
    return bool(_INTERNAL_TEXT.search(text))


_LONG_RUN = re.compile(rf"\S{{{LONG_RUN + 1},}}")


def shorten(sentence: str, markup: bool = True) -> str:
    """``sentence`` as a visitor reads it: every run of over ``LONG_RUN`` characters without a space (a visitor's
    300,000-character string or 4,000-digit number quoted back) cut to its start and length, at most
    ``MAX_SENTENCE`` long, and, where the page shows it as HTML (``markup``: Gradio's error toasts; its messages
    under an input are text), HTML-escaped, so a visitor's ``<img ...>`` quoted back reads as text."""
    if markup:
        sentence = html.unescape(sentence)  # escaped once, whatever passes here twice (the MCP loopback)
    sentence = _LONG_RUN.sub(lambda m: f"{m[0][:40]}… ({len(m[0]):,} characters)", sentence)
    sentence = sentence if len(sentence) <= MAX_SENTENCE else sentence[:MAX_SENTENCE - 1] + "…"
    return html.escape(sentence, quote=False) if markup else sentence


# -- error responses -----------------------------------------------------------------------------------------------


_PYDANTIC_SENTENCES = {
    "missing": "{field} is missing",
    "json_invalid": "the body is not valid JSON",
    "list_type": "{field} must be a list",
    "dict_type": "{field} must be a JSON object",
    "model_type": "{field} must be a JSON object",
    "model_attributes_type": "{field} must be a JSON object",
    "string_type": "{field} must be text",
    "int_type": "{field} must be a whole number",
    "int_parsing": "{field} must be a whole number",
    "float_type": "{field} must be a number",
    "bool_type": "{field} must be true or false",
}


def request_shape_sentence(errors: list[dict]) -> str:
    """Pydantic's list of body errors (what FastAPI answers for a wrong request shape) as one sentence."""
    parts = []
    for error in errors[:3]:
        loc = [str(p) for p in error.get("loc", ()) if p != "body"]
        field = f"“{'.'.join(loc)}”" if loc else "the body"
        template = _PYDANTIC_SENTENCES.get(str(error.get("type")), "{field} is not what this address takes")
        parts.append(template.format(field=field))
    sentence = "; ".join(parts) or "the body is not what this address takes"
    return (f"This request does not have the form this address takes: {sentence}. The API page (“Use via API” at "
            "the foot of the page) shows the form.")


def clean_error(status: int, body: bytes, path: str) -> bytes | None:
    """A body to send instead of an error response's, or None to send it as it is.

    Kept: the hub's own refusals (validator sentences, queue sentences), ``gr.Error`` sentences and route messages
    such as "Not Found". Replaced: pydantic's dumps (by a sentence saying what is wrong), and any error that says
    nothing (Gradio's null for an exception that is not a ``gr.Error``) or ``looks_internal`` (by a sentence with
    an error id; the original goes to the log under it)."""
    if status == 401:  # Gradio's login check: a sentence saying how to log in, in the shape its clients read
        log_quietly("401", "answered a request without a login on %s", path[:100])
        return json.dumps({"detail": {"error": LOGIN_NEEDED, "auth_message": LOGIN_NEEDED}}).encode()
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        payload = body.decode("utf-8", "replace")
    key = next((k for k in ("detail", "error") if isinstance(payload, dict) and k in payload), None)
    detail = _unquoted(payload[key] if key else payload)
    if isinstance(detail, list) and detail and all(isinstance(d, dict) and "is_valid" in d for d in detail):
        shortened = [{**d, "message": shorten(str(d.get("message") or ""), markup=False)} for d in detail]
        return None if shortened == detail else _with(payload, key, shortened)  # the demos' own sentences
    if isinstance(detail, list) and detail and all(isinstance(d, dict) and "loc" in d for d in detail):
        log.info("refused a request of the wrong form on %s: %s", path, str(detail)[:500])
        return _with(payload, key, request_shape_sentence(detail))
    sentence = visitor_sentence(detail, status, path)
    return None if sentence == (payload[key] if key else payload) else _with(payload, key, sentence)


def visitor_sentence(error: Any, status: int, path: str) -> str:
    """What a visitor reads for ``error``: its text cut and escaped (``shorten``) when it is a sentence, else a
    sentence with an error id (``INTERNAL`` for a server error or an empty one, ``UNREADABLE`` for a library's text
    in a 4xx); the original goes to the log under the id."""
    if "/file=" in path and status in (403, 404):  # Gradio's file route names the server path it refused
        return FILE_NOT_SERVED
    if isinstance(error, str) and error.strip() and not looks_internal(error):
        return shorten(error)
    error_id = _logged(status, path, error if isinstance(error, str) else json.dumps(error))
    return (INTERNAL if status >= 500 or not error else UNREADABLE).format(error_id=error_id)


def _unquoted(detail: Any) -> Any:
    """A ``gr.Error``'s sentence as Gradio's ``str()`` gives it (its repr: quoted, escapes doubled), unquoted."""
    if isinstance(detail, str) and len(detail) >= 2 and detail[0] == detail[-1] and detail[0] in "'\"":
        try:
            value = ast.literal_eval(detail)
        except (ValueError, SyntaxError):
            return detail
        return value if isinstance(value, str) else detail
    return detail


def _with(payload: Any, key: str | None, detail: Any) -> bytes:
    """``payload`` (a JSON object) with ``key`` set to ``detail``; ``{"detail": detail}`` for anything else."""
    if key is None:
        return json.dumps({"detail": detail}).encode()
    return json.dumps({**payload, key: detail}).encode()


def clean_stream(chunk: bytes, path: str) -> bytes:
    """One chunk of an event stream (``/queue/data``, ``/call/<name>/<id>``) with any failed event's error made a
    sentence: Gradio sends no text (null) for an exception that is not a ``gr.Error``, and the hub shows no
    library text either way."""
    if not any(mark in chunk for mark in (b'"success":false', b'"success": false', b"event: error", b'"isError":true')):
        return chunk
    lines, event = chunk.split(b"\n"), b""
    for i, line in enumerate(lines):
        if line.startswith(b"event:"):
            event = line[6:].strip()
        elif line.startswith(b"data:"):
            try:
                payload = json.loads(line[5:])
            except ValueError:
                continue
            clean = _clean_message(payload, event, path)
            if clean is not None:
                lines[i] = b"data: " + json.dumps(clean).encode()
    return b"\n".join(lines)


def _clean_message(payload: Any, event: bytes, path: str) -> Any:
    """``payload`` with its error made a sentence, or None when it needs nothing. Errors travel as the data of an
    ``error`` event (``/call`` streams: text, or an object with ``error``), in a failed ``process_completed``
    message's ``output`` (``/queue/data``), or as an MCP tool's error result (text an agent reads: cut, not
    escaped; the MCP library's own schema errors quote a visitor's whole argument)."""
    result = payload.get("result") if isinstance(payload, dict) else None
    if isinstance(result, dict) and result.get("isError") and isinstance(result.get("content"), list):
        content = [{**c, "text": shorten(mcp_sentence(c["text"]), markup=False)} if isinstance(c, dict) and isinstance(
            c.get("text"), str) else c for c in result["content"]]
        return None if content == result["content"] else {**payload, "result": {**result, "content": content}}
    if event == b"error":
        holder, key = (payload, "error") if isinstance(payload, dict) else (None, None)
    elif isinstance(payload, dict) and payload.get("msg") == "process_completed" and not payload.get("success"):
        holder, key = (payload.get("output") if isinstance(payload.get("output"), dict) else {}), "error"
    else:
        return None
    error = holder.get(key) if holder is not None else payload
    sentence = visitor_sentence(error, 500, path)
    if sentence == error:
        return None
    if holder is None:
        return sentence
    cleaned = {**holder, key: sentence}
    return cleaned if event == b"error" else {**payload, "output": cleaned}


MCP_FILE_FORMAT = ("A file argument must be the file itself as a data URI (data:image/png;base64,...); this hub does "
                   "not fetch files from web addresses or read paths.")


def mcp_sentence(text: str) -> str:
    """An MCP tool error as the hub's own sentence: the schema check's prefix dropped (its sentence names the
    argument: ``gradio_internals.install_mcp_argument_sentences``), Gradio's file-format complaint replaced."""
    if text.startswith("Input validation error: "):
        return text.removeprefix("Input validation error: ")
    if "Invalid file data format" in text:
        return MCP_FILE_FORMAT
    return text


def _logged(status: int, path: str, text: str) -> str:
    return report(RuntimeError(f"HTTP {status} on {path}: {text[:2000]}"))


# -- bodies --------------------------------------------------------------------------------------------------------


class BoundedRequest:
    """One request's ``receive``/``send`` with its body budget, its body deadline and clean error responses.

    ``receive`` counts body bytes; past ``limit`` (or after ``timeout`` seconds without data while the body is still
    arriving) it answers the client itself (413/408, ``Connection: close``) and tells the app the client left. ``send``
    drops what the app sends after that, and replaces the body of an error response that ``clean_error`` objects to."""

    def __init__(self, receive, send, *, limit: int, timeout: float, path: str, min_rate: int = 0,
                 stream_idle: float | None = None, stream_total: float | None = None):
        self._receive, self._send = receive, send
        self.limit, self.timeout, self.path, self.min_rate = limit, timeout, path, min_rate
        self.stream_idle, self.stream_total = stream_idle, stream_total
        self.received = 0
        self.body_done = False
        self.refused = False
        self.started = False
        self.began = time.monotonic()  # the request's headers are in: its body's clock starts
        self._held: dict | None = None  # an error response's start, held until its body is read
        self._stream = False  # the response is an event stream (each chunk cleaned on its way)
        self._chunks: list[bytes] = []
        self._last_sent = self.began
        self._gone = asyncio.Event()  # set when the hub ends this request (a refusal, a stream past its limits)
        self._watchdog: asyncio.Task | None = None

    def _body_wait(self) -> float:
        """Seconds the next body chunk may take: ``timeout`` for a pause, and no later than the point where the bytes
        received so far fall under ``min_rate`` a second after the first ``timeout`` seconds (a total deadline)."""
        wait = self.timeout
        if self.min_rate:
            wait = min(wait, self.began + self.timeout + self.received / self.min_rate - time.monotonic())
        return max(wait, 0.05)

    async def receive(self) -> dict:
        if self.refused:
            return {"type": "http.disconnect"}
        if self.body_done:  # e.g. a streaming response waiting for the client to leave, or for the hub to end it
            return await self._receive() if self._watchdog is None else await self._receive_until_gone()
        try:
            message = await asyncio.wait_for(self._receive(), self._body_wait())
        except asyncio.TimeoutError:
            if time.monotonic() - self.began > self.timeout + 0.01:
                sentence = TOO_SLOW_RATE.format(rate=human_bytes(self.min_rate))
            else:
                sentence = TOO_SLOW.format(seconds=self.timeout)
            await self.refuse(408, sentence)
            return {"type": "http.disconnect"}
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                await self.refuse(413, BODY_TOO_BIG_STREAMED.format(limit=human_bytes(self.limit)))
                return {"type": "http.disconnect"}
            self.body_done = not message.get("more_body", False)
        return message

    async def _receive_until_gone(self) -> dict:
        """The client's next message, or a disconnect as soon as the hub ends the stream (the route stops then)."""
        message, gone = asyncio.ensure_future(self._receive()), asyncio.ensure_future(self._gone.wait())
        done, _ = await asyncio.wait({message, gone}, return_when=asyncio.FIRST_COMPLETED)
        for task in (message, gone):
            if task not in done:
                task.cancel()
        return message.result() if message in done else {"type": "http.disconnect"}

    async def refuse(self, status: int, sentence: str) -> None:
        log.info("refused a request on %s: HTTP %d (%s)", self.path, status, sentence)
        self.refused = True
        self._gone.set()
        if not self.started:
            self.started = True
            await respond(self._send, status, sentence, close=True)

    def _watch_stream(self) -> None:
        if self._watchdog is None and (self.stream_idle or self.stream_total):
            self._watchdog = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        """End the event stream once it sent nothing for ``stream_idle`` seconds or was open ``stream_total``."""
        while not self.refused:
            due = min(t for t in (self._last_sent + self.stream_idle if self.stream_idle else None,
                                  self.began + self.stream_total if self.stream_total else None) if t is not None)
            if time.monotonic() < due:
                await asyncio.sleep(due - time.monotonic() + 0.01)
                continue
            idle = bool(self.stream_idle) and time.monotonic() >= self._last_sent + self.stream_idle
            log.info("ended an event stream on %s: %s", self.path,
                     f"nothing sent for {self.stream_idle:g} s" if idle else f"open for {self.stream_total:g} s")
            self.refused = True
            self._gone.set()
            with contextlib.suppress(Exception):
                await self._send({"type": "http.response.body", "body": b"", "more_body": False})
            return

    def close(self) -> None:
        """The route is done: stop the stream's watchdog."""
        if self._watchdog is not None:
            self._watchdog.cancel()

    async def send(self, message: dict) -> None:
        if self.refused:
            return
        if message["type"] == "http.response.start":
            self.started = True
            self._stream = dict(message.get("headers", [])).get(b"content-type", b"").startswith(
                b"text/event-stream")
            if self._stream:
                self._watch_stream()
            if message["status"] >= 400 and _is_text(message):
                self._held = message
                return
        elif message["type"] == "http.response.body" and self._stream:
            self._last_sent = time.monotonic()
            message = {**message, "body": clean_stream(message.get("body", b""), self.path)}
        elif message["type"] == "http.response.body" and self._held is not None:
            self._chunks.append(message.get("body", b""))
            if message.get("more_body") and sum(map(len, self._chunks)) < ERROR_BODY_CAP:
                return
            await self._send_held(more_body=bool(message.get("more_body")))
            return
        await self._send(message)

    async def _send_held(self, more_body: bool) -> None:
        start, body = self._held, b"".join(self._chunks)
        self._held, self._chunks = None, []
        clean = None if more_body else clean_error(start["status"], body, self.path)
        if clean is not None:
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in (b"content-length",
                                                                                          b"content-type")]
            start = {**start, "headers": [*headers, (b"content-type", b"application/json"),
                                          (b"content-length", str(len(clean)).encode())]}
            body = clean
        await self._send(start)
        await self._send({"type": "http.response.body", "body": body, "more_body": more_body})


def _is_text(start: dict) -> bool:
    content_type = dict(start.get("headers", [])).get(b"content-type", b"")
    return content_type.startswith((b"application/json", b"text/plain")) or not content_type


def declared_length(headers: dict[bytes, bytes]) -> int | None:
    value = headers.get(b"content-length", b"").decode("latin-1").strip()
    return int(value) if value.isdigit() else None


async def respond(send, status: int, body: str, content_type: str = "text/plain; charset=utf-8",
                  headers: list[tuple[bytes, bytes]] = (), close: bool = False) -> None:
    data = body.encode()
    extra = [(b"connection", b"close")] if close else []
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(data)).encode()),
                            *headers, *extra]})
    await send({"type": "http.response.body", "body": data})


# -- connections ---------------------------------------------------------------------------------------------------


def connection_cap(wanted: int) -> int:
    """``wanted`` connections, or fewer where the process may not open that many files (leaving ``FD_RESERVE``)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(16, min(wanted, soft - FD_RESERVE))


def _refusal(sentence: str) -> bytes:
    body = sentence.encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: "
            + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body)


def _peer_host(transport) -> str | None:
    peer = transport.get_extra_info("peername")
    return peer[0] if isinstance(peer, tuple) else None


def _receiving(protocol) -> bool:
    """Whether a connection is between responses: waiting for (or reading) a request, not answering one."""
    cycle = getattr(protocol, "cycle", None)
    return cycle is None or cycle.response_complete or not cycle.response_started


def room_for(connections, host: str | None, exempt: Callable[[str], bool]) -> Any | None:
    """The connection to close so that ``host`` gets a fair share of a full hub: one of the address holding the most
    connections, when that address holds at least two more than ``host`` (a trusted proxy, ``exempt``, is never
    chosen: it carries many visitors). Among that address's connections: one between responses, the oldest first.
    None: the newcomer already holds its share."""
    counts = Counter(c.client[0] for c in connections if c.client and not exempt(c.client[0]))
    if not counts:
        return None
    heaviest, most = counts.most_common(1)[0]
    if most < counts.get(host, 0) + 2:
        return None
    theirs = [c for c in connections if c.client and c.client[0] == heaviest]
    return min(theirs, key=lambda c: (not _receiving(c), getattr(c, "opened_at", 0.0)))


def guarded_protocol(base: type, *, max_connections: int, per_address: int | None, header_timeout: float,
                     exempt: Callable[[str], bool] = lambda host: False) -> type:
    """``base`` (uvicorn's HTTP protocol class) with a fair share of connections and a deadline for each request's
    headers.

    A connection over ``per_address`` from one address (trusted proxies, ``exempt``, excepted) gets a 503 line and is
    closed before uvicorn sees it. A full hub (``max_connections``) makes room for a newcomer by closing a connection
    of the address that holds the most (``room_for``; that client reads ``ROOM_MADE`` when it was between responses),
    else the newcomer gets the 503 line. A connection must deliver a request's headers within ``header_timeout``
    seconds of its first byte (of its opening, for a new connection), else it is closed: uvicorn has no such deadline,
    so unfinished headers would hold the connection for ever."""

    class Guarded(base):
        _deadline: asyncio.TimerHandle | None = None
        _refused = False
        opened_at = 0.0

        def connection_made(self, transport) -> None:
            host = _peer_host(transport)
            sentence = None
            if per_address is not None and host is not None and not exempt(host) and sum(
                    1 for c in self.connections if c.client and c.client[0] == host) >= per_address:
                sentence = ADDRESS_FULL
            elif len(self.connections) >= max_connections:
                victim = room_for(self.connections, host, exempt)
                if victim is None:
                    sentence = CONNECTIONS_FULL
                else:
                    victim.make_room()
            if sentence is not None:
                self._refused = True
                log.warning("refused a connection from %s: %s", host, sentence)
                transport.write(_refusal(sentence))
                transport.close()
                return
            super().connection_made(transport)
            self.opened_at = time.monotonic()
            self._arm()

        def make_room(self) -> None:
            """Close this connection for a newcomer (``room_for`` chose it); gone from the count at once."""
            log.info("closed a connection from %s to make room for another client", (self.client or ("?",))[0])
            self.connections.discard(self)
            if self.transport is not None and not self.transport.is_closing():
                if _receiving(self):
                    self.transport.write(_refusal(ROOM_MADE))
                self.transport.close()

        def connection_lost(self, exc) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            if not self._refused:
                super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            if self._deadline is None and (self.cycle is None or self.cycle.response_complete):
                self._arm()  # the first bytes of the next request on a kept-alive connection
            super().data_received(data)

        def _arm(self) -> None:
            self._deadline = self.loop.call_later(header_timeout, self._expire, self.cycle)

        def _expire(self, cycle_when_armed) -> None:
            self._deadline = None
            if self.cycle is not cycle_when_armed or self.transport is None or self.transport.is_closing():
                return  # the headers arrived (a new request cycle began), or the connection is gone
            if self.transport.get_protocol() is not self:
                return  # upgraded (a websocket): no longer ours to time
            log.info("closed a connection from %s: no complete request headers within %g s",
                     (self.client or ("?",))[0], header_timeout)
            self.transport.close()

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded


def guard_connections(server: Any, *, max_connections: int, per_address: int | None, header_timeout: float,
                      exempt: Callable[[str], bool] = lambda host: False) -> None:
    """Make every later connection of a running uvicorn ``server`` a guarded one (``guarded_protocol``).

    uvicorn builds each connection's protocol from ``server.config.http_protocol_class`` when the connection opens;
    Gradio creates the server without a way to pass ours, so it is set once the server runs (before any visitor can
    reach it: ``launch`` returns only then)."""
    config = server.config
    base = config.http_protocol_class
    if getattr(base, "__name__", "").startswith("Guarded"):
        return
    config.http_protocol_class = guarded_protocol(base, max_connections=connection_cap(max_connections),
                                                  per_address=per_address, header_timeout=header_timeout,
                                                  exempt=exempt)
    # No "server: uvicorn" header: a visitor learns nothing of the server (the headers are rebuilt every second).
    config.encoded_headers = [(k, v) for k, v in config.encoded_headers if k.lower() != b"server"]
    state = getattr(server, "server_state", None)
    if state is not None:
        state.default_headers = [(k, v) for k, v in state.default_headers if k.lower() != b"server"]
