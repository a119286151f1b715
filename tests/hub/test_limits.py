"""apps.limits and HubGuard: every request's body budget and deadline, error responses as sentences, and the
connection guard (each through the real ASGI or asyncio protocol interfaces, no server)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from apps.limits import (
    ADDRESS_FULL,
    BODY_TOO_BIG_STREAMED,
    CONNECTIONS_FULL,
    ROOM_MADE,
    TOO_SLOW,
    TOO_SLOW_RATE,
    clean_error,
    clean_stream,
    guarded_protocol,
    looks_internal,
    request_shape_sentence,
    shorten,
)
from apps.serving import HubGuard, body_limit
from apps.settings import ServeSettings
from apps.shares import STREAMS_FULL
from tests.mcp.conftest import run_async


def run(guard: HubGuard, path: str, chunks: list[bytes], headers: dict[bytes, bytes] | None = None,
        app=None, pause: float = 0.0):
    """One POST through the guard with its body in ``chunks`` (``pause`` seconds before each): (status, body, what
    the app read: its body bytes and whether it was told the client left)."""
    sent, seen = [], {"body": b"", "left": False}

    async def read_all_app(scope, receive, send):
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                seen["left"] = True
                return
            seen["body"] += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"read"})

    async def main():
        queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

        async def receive():
            if queue:
                await asyncio.sleep(pause)
                return queue.pop(0)
            await asyncio.sleep(3600)

        async def send(message):
            sent.append(message)

        guard.app = app or read_all_app
        scope = {"type": "http", "path": path, "method": "POST", "headers": list((headers or {}).items()),
                 "client": ("203.0.113.9", 5555)}
        await guard(scope, receive, send)

    run_async(main())
    status = sent[0]["status"] if sent else None
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return status, body, seen


def guard(**settings) -> HubGuard:
    return HubGuard(None, ServeSettings(**settings), token="t", stats=dict, upload_dir="/tmp", loopback_secret="s")


def test_each_route_has_its_body_budget():
    settings = ServeSettings(max_file_size=1_000_000, max_request_size=50_000)
    assert body_limit("/gradio_api/upload", settings) == 8_000_000
    assert body_limit("/gradio_api/mcp/", settings) == 8_000_000 * 4 // 3 + 1_000_000
    assert body_limit("/gradio_api/queue/join", settings) == 50_000
    assert body_limit("/gradio_api/call/synthesize", settings) == 50_000
    assert body_limit("/login", settings) == 50_000


def test_a_declared_body_over_the_budget_is_refused_before_it_is_read():
    status, body, seen = run(guard(max_request_size=1000), "/gradio_api/queue/join", [b"x" * 10],
                             {b"content-length": b"5000"})
    assert status == 413 and body.decode().startswith("This request is 5 KB; this address takes at most 1 KB")
    assert seen["body"] == b"", "the route never read a byte"


def test_an_undeclared_body_is_cut_off_the_moment_it_passes_the_budget():
    chunks = [b"x" * 400] * 10  # 4 KB in 400-byte pieces, no Content-Length (chunked)
    status, body, seen = run(guard(max_request_size=1000), "/gradio_api/queue/join", chunks)
    assert status == 413 and body.decode() == BODY_TOO_BIG_STREAMED.format(limit="1 KB")
    assert seen["left"] and len(seen["body"]) <= 1000, "the route was told the client left, with under 1 KB read"


def test_a_body_within_the_budget_reaches_the_route_whole():
    status, body, seen = run(guard(max_request_size=1000), "/gradio_api/queue/join", [b"a" * 500, b"b" * 500])
    assert (status, body, seen["body"]) == (200, b"read", b"a" * 500 + b"b" * 500)


def test_a_body_that_stops_arriving_is_answered_after_the_read_timeout():
    status, body, seen = run(guard(read_timeout=0.2), "/gradio_api/queue/join", [b"x", b"y"], pause=1.0)
    assert status == 408 and body.decode() == TOO_SLOW.format(seconds=0.2) and seen["left"]


def test_an_exception_inside_a_route_is_a_sentence_with_an_error_id(caplog):
    async def broken(scope, receive, send):
        raise KeyError("secret_internal_name")

    status, body, _ = run(guard(), "/gradio_api/queue/join", [b"{}"], app=broken)
    detail = json.loads(body)["detail"]
    assert status == 500 and detail.startswith("Something went wrong on our side (error id ")
    error_id = detail.split("error id ")[1][:8]
    assert "secret_internal_name" not in detail and error_id in caplog.text and "secret_internal_name" in caplog.text


def error_app(status: int, payload, content_type: bytes = b"application/json"):
    async def app(scope, receive, send):
        await receive()
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    return app


@pytest.mark.parametrize(("status", "payload", "expected"), [
    (422, {"detail": [{"type": "list_type", "loc": ["body", "data"], "msg": "Input should be a valid list",
                       "input": "x", "url": "https://errors.pydantic.dev/2.11/v/list_type"}]},
     "This request does not have the form this address takes: “data” must be a list."),
    (422, {"detail": [{"type": "json_invalid", "loc": ["body", 1], "msg": "JSON decode error"}]},
     "the body is not valid JSON"),
    (500, {"error": None}, "Something went wrong on our side (error id "),
    (400, {"detail": "'int' object has no attribute 'lower'"}, "could not be read (error id "),
    (500, {"error": "Traceback (most recent call last): File \"/usr/lib/x.py\""}, "Something went wrong on our side"),
])
def test_library_text_in_an_error_response_becomes_a_sentence(status, payload, expected):
    got_status, body, _ = run(guard(), "/gradio_api/call/x", [b"{}"], app=error_app(status, payload))
    message = json.loads(body)
    text = message.get("detail", message.get("error"))
    assert got_status == status and expected in text and not looks_internal(text) and "pydantic" not in body.decode()


@pytest.mark.parametrize("payload", [
    {"detail": "Not Found"},
    {"detail": [{"__type__": "validate", "is_valid": False, "message": "k must be between 1 and 50."}]},
    {"error": "The prax weights 'x' (1.20 GB) are not on this server.", "title": "Error"},
])
def test_sentences_pass_unchanged(payload):
    body = json.dumps(payload).encode()
    assert clean_error(400, body, "/gradio_api/call/x") is None


def test_gradio_quoted_error_text_is_unquoted_and_long_echoes_are_cut():
    quoted = json.dumps({"detail": repr("The seed must be a whole number; got " + "9" * 4000 + ".")}).encode()
    detail = json.loads(clean_error(400, quoted, "/x"))["detail"]
    assert detail == "The seed must be a whole number; got 9999999999999999999999999999999999999999… (4,001 characters)"
    validator = [{"is_valid": False, "message": "got " + "x" * 900}]
    cut = json.loads(clean_error(422, json.dumps({"detail": validator}).encode(), "/x"))["detail"][0]["message"]
    assert cut == "got " + "x" * 40 + "… (900 characters)"


def test_toast_text_is_escaped_once_and_messages_under_inputs_stay_text():
    assert shorten("The string '<img src=x onerror=alert(1)>' & more") == (
        "The string '&lt;img src=x onerror=alert(1)&gt;' &amp; more")
    assert shorten(shorten("'<b>'")) == "'&lt;b&gt;'", "a message passing twice (the MCP loopback) is escaped once"
    assert shorten("'<b>'", markup=False) == "'<b>'"
    assert len(shorten("word " * 500)) == 500


def test_failed_events_in_event_streams_read_as_sentences():
    queue_data = b'data: {"msg":"process_completed","event_id":"e","output":{"error":null},"success":false}\n\n'
    message = json.loads(clean_stream(queue_data, "/gradio_api/queue/data").split(b"data: ", 1)[1])
    assert message["output"]["error"].startswith("Something went wrong on our side (error id ")
    call_stream = b'event: error\ndata: {"error": "<b>x</b> is not a SMILES", "title": "Error"}\n\n'
    assert b"&lt;b&gt;x&lt;/b&gt; is not a SMILES" in clean_stream(call_stream, "/gradio_api/call/ask/e")
    fine = b'data: {"msg":"process_completed","output":{"data":[1]},"success":true}\n\n'
    assert clean_stream(fine, "/gradio_api/queue/data") is fine


def test_request_shape_sentence_names_at_most_three_problems():
    errors = [{"type": "missing", "loc": ["body", name]} for name in ("data", "fn_index", "session_hash", "x")]
    sentence = request_shape_sentence(errors)
    assert "“data” is missing; “fn_index” is missing; “session_hash” is missing." in sentence and "“x”" not in sentence


class FakeTransport(asyncio.Transport):
    def __init__(self, peer):
        super().__init__()
        self.peer, self.written, self.closed, self.protocol = peer, b"", False, None

    def get_extra_info(self, name, default=None):
        return {"peername": self.peer, "sockname": ("127.0.0.1", 7860)}.get(name, default)

    def write(self, data):
        self.written += data

    def close(self):
        self.closed = True

    def is_closing(self):
        return self.closed

    def get_protocol(self):
        return self.protocol

    def set_protocol(self, protocol):
        self.protocol = protocol


def make_protocol_class(**limits):
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.server import ServerState

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    config = uvicorn.Config(app=app)
    config.load()
    state = ServerState()
    cls = guarded_protocol(H11Protocol, **limits)
    return lambda loop: cls(config=config, server_state=state, app_state={}, _loop=loop), state


def open_connection(factory, loop, peer):
    protocol = factory(loop)
    transport = FakeTransport(peer)
    transport.protocol = protocol
    protocol.connection_made(transport)
    return protocol, transport


def test_connections_over_the_limits_get_a_503_line_and_are_closed():
    async def main():
        loop = asyncio.get_running_loop()
        factory, state = make_protocol_class(max_connections=4, per_address=2, header_timeout=30)
        kept = [open_connection(factory, loop, ("198.51.100.1", port)) for port in (1, 2)]
        _, third_same = open_connection(factory, loop, ("198.51.100.1", 3))
        assert third_same.closed and ADDRESS_FULL.encode() in third_same.written and b" 503 " in third_same.written
        kept += [open_connection(factory, loop, (f"198.51.100.{i}", 1)) for i in (2, 3)]
        assert len(state.connections) == 4
        # Full: a newcomer takes the room of the address holding the most (two against its none)...
        newcomer, newcomer_transport = open_connection(factory, loop, ("198.51.100.9", 1))
        assert not newcomer_transport.closed
        evicted = [t for _, t in kept if t.closed]
        assert len(evicted) == 1 and evicted[0].peer[0] == "198.51.100.1" and ROOM_MADE.encode() in evicted[0].written
        assert len(state.connections) == 4
        # ... and when every address holds its share (one each), the next newcomer is the one refused.
        _, last = open_connection(factory, loop, ("198.51.100.10", 1))
        assert last.closed and CONNECTIONS_FULL.encode() in last.written
        assert sum(t.closed for _, t in kept) == 1
        for protocol, transport in [*kept, (newcomer, newcomer_transport)]:
            if not transport.closed:
                protocol.connection_lost(None)
        _, again = open_connection(factory, loop, ("198.51.100.1", 4))
        assert not again.closed

    run_async(main())


def test_a_trusted_proxy_is_never_capped_per_address_nor_made_room_from():
    async def main():
        loop = asyncio.get_running_loop()
        factory, state = make_protocol_class(max_connections=4, per_address=2, header_timeout=30,
                                             exempt=lambda host: host == "10.0.0.1")
        proxied = [open_connection(factory, loop, ("10.0.0.1", port)) for port in range(1, 5)]
        assert not any(t.closed for _, t in proxied), "a proxy carries many visitors: no per-address cap"
        _, newcomer = open_connection(factory, loop, ("198.51.100.9", 1))
        assert newcomer.closed and CONNECTIONS_FULL.encode() in newcomer.written
        assert not any(t.closed for _, t in proxied) and len(state.connections) == 4

    run_async(main())


def test_a_connection_without_complete_headers_is_closed_at_the_deadline():
    async def main():
        loop = asyncio.get_running_loop()
        factory, _ = make_protocol_class(max_connections=100, per_address=None, header_timeout=0.2)
        slow, slow_transport = open_connection(factory, loop, ("198.51.100.1", 1))
        slow.data_received(b"GET /config HTTP/1.1\r\nHost: x\r\n")  # never finished
        honest, honest_transport = open_connection(factory, loop, ("198.51.100.2", 1))
        honest.data_received(b"GET /config HTTP/1.1\r\nHost: x\r\n\r\n")  # complete: a request cycle begins
        await asyncio.sleep(0.5)
        assert slow_transport.closed and not honest_transport.closed
        assert b"200 OK" in honest_transport.written
        for protocol in (slow, honest):
            protocol.connection_lost(None)

    run_async(main())


# ---------------------------------------------------------------- total deadlines: bodies at a minimum rate, streams


def test_a_slow_drip_is_refused_once_it_falls_under_the_minimum_rate():
    """Every pause is short (0.05 s, under the 0.2 s read timeout), so a per-pause deadline never fires; the minimum
    rate (1 KB/s after the first 0.2 s) ends the drip within a few tenths of a second."""
    start = time.monotonic()
    status, body, seen = run(guard(read_timeout=0.2, min_body_rate=1000), "/gradio_api/queue/join",
                             [b"x"] * 100, pause=0.05)
    assert status == 408 and body.decode() == TOO_SLOW_RATE.format(rate="1 KB") and seen["left"]
    assert time.monotonic() - start < 1.0 and len(seen["body"]) < 20


def test_a_body_that_keeps_the_minimum_rate_arrives_whole():
    status, body, seen = run(guard(read_timeout=0.2, min_body_rate=1000), "/gradio_api/queue/join",
                             [b"y" * 1000] * 8, pause=0.05)
    assert (status, body, len(seen["body"])) == (200, b"read", 8000)


def run_streams(guard: HubGuard, requests_: list[tuple[str, tuple[str, int], float, float]]):
    """GET streams through the guard at once, each (path, client, interval between its events, how long its route
    would go on): what each client read (status, events, whether the route was told to stop, seconds open)."""
    results = []

    async def one(path, client, interval, length):
        sent, state = [], {"stopped": False}
        started = time.monotonic()

        async def app(scope, receive, send):
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})

            async def listen():  # as Starlette's StreamingResponse does under ASGI 2.3
                while (await receive())["type"] != "http.disconnect":
                    pass
                state["stopped"] = True

            listener = asyncio.ensure_future(listen())
            while time.monotonic() - started < length and not listener.done():
                await send({"type": "http.response.body", "body": b"data: ALIVE\n\n", "more_body": True})
                await asyncio.wait({listener}, timeout=interval)
            listener.cancel()
            if not state["stopped"]:
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        body = [{"type": "http.request", "body": b"", "more_body": False}]  # a GET's empty body, as uvicorn gives it

        async def receive():
            if body:
                return body.pop()
            await asyncio.sleep(3600)

        async def send(message):
            sent.append(message)

        scope = {"type": "http", "path": path, "method": "GET", "headers": [], "client": client}
        await HubGuard(app, guard.settings, token="t", stats=dict, upload_dir="/tmp", shares=guard.shares)(
            scope, receive, send)
        events = sum(m.get("body", b"").count(b"ALIVE") for m in sent if m["type"] == "http.response.body")
        headers = dict(sent[0].get("headers", [])) if sent else {}
        results.append((path, client, sent[0]["status"], events, state["stopped"], time.monotonic() - started,
                        headers, b"".join(m.get("body", b"") for m in sent[1:])))

    async def main():
        await asyncio.gather(*(one(*r) for r in requests_))

    run_async(main())
    return results


def test_a_result_stream_ends_at_its_total_limit_and_a_silent_one_at_its_idle_limit():
    hub = guard(stream_idle=0.3, stream_timeout=0.6)
    talkative, silent, heartbeat = sorted(run_streams(hub, [
        ("/gradio_api/queue/data", ("198.51.100.1", 1), 0.1, 5.0),
        ("/gradio_api/call/synthesize/abc123", ("198.51.100.2", 1), 5.0, 5.0),
        ("/gradio_api/heartbeat/sess1", ("198.51.100.3", 1), 0.1, 1.2),
    ]), key=lambda r: r[1])
    assert talkative[2] == 200 and talkative[4] and 0.55 < talkative[5] < 1.0, "ended at the 0.6 s total"
    assert silent[2] == 200 and silent[4] and silent[3] == 1 and 0.25 < silent[5] < 0.6, "ended 0.3 s after its event"
    assert heartbeat[2] == 200 and not heartbeat[4] and heartbeat[5] >= 1.2, "a heartbeat has no total limit"


def test_a_client_may_hold_its_share_of_streams_and_no_more():
    hub = guard(client_streams=2)
    results = run_streams(hub, [("/gradio_api/heartbeat/s1", ("198.51.100.1", 1), 0.05, 0.4),
                                ("/gradio_api/heartbeat/s2", ("198.51.100.1", 2), 0.05, 0.4),
                                ("/gradio_api/queue/data", ("198.51.100.1", 3), 0.05, 0.4),
                                ("/gradio_api/heartbeat/s4", ("198.51.100.2", 1), 0.05, 0.4)])
    by_port = {(r[1][0], r[1][1]): r for r in results}
    refused = by_port[("198.51.100.1", 3)]
    assert refused[2] == 429 and refused[6][b"retry-after"] == b"10"
    assert json.loads(refused[7])["detail"] == STREAMS_FULL.format(open=2, limit=2)
    assert [by_port[k][2] for k in (("198.51.100.1", 1), ("198.51.100.1", 2), ("198.51.100.2", 1))] == [200] * 3
    assert hub.shares.streams == {}, "every closed stream was given back"
