"""apps.serving: which queue events a public hub turns away (``admit``), with which sentence, and HubGuard on the MCP
routes (the login, bounded bodies, who called a tool)."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest

from apps.serving import (
    BUSY,
    CALLER_HEADER,
    LOOPBACK_HEADER,
    MCP_LOGIN,
    TOO_MANY,
    URL_REFUSED,
    URL_REFUSED_MCP,
    HubGuard,
    admit,
    job_owner,
    mcp_body_limit,
    pending_jobs,
)
from apps.settings import ServeSettings
from apps.shares import LOGIN_NEEDED
from tests.mcp.conftest import run_async


class FakeQueue:
    """Only the shape of gradio's Queue that ``admit`` reads: waiting events per group and running jobs."""

    def __init__(self, waiting: list[str], running: list[str]):
        self.event_queue_per_concurrency_id = {"prax": SimpleNamespace(
            queue=[SimpleNamespace(session_hash=s) for s in waiting])}
        self.active_jobs = [[SimpleNamespace(session_hash=s)] for s in running] + [None]

    def __len__(self):
        return len(self.event_queue_per_concurrency_id["prax"].queue)


def body(data, session="me"):
    return SimpleNamespace(data=data, session_hash=session)


def test_url_inputs_are_refused_anywhere_in_the_data_unless_allowed():
    image = {"path": "https://example.com/cat.png", "meta": {"_type": "gradio.FileData"}}
    nested = [[{"path": "/tmp/gradio/ok.png"}, {"url": "http://10.0.0.1/x.png", "path": None}], 0.5]
    for data in ([image, 0.68, ""], nested):
        state, detail = admit(FakeQueue([], []), body(data), ServeSettings())
        assert state == "validator_error" and detail[0]["is_valid"] is False
        assert detail[0]["message"].startswith(URL_REFUSED.split("(")[0])
    assert admit(FakeQueue([], []), body([image]), ServeSettings(allow_url_inputs=True)) is None
    uploaded = {"path": "/tmp/gradio/abc/ok.png", "url": "http://127.0.0.1:7860/gradio_api/file=/tmp/x"}
    assert admit(FakeQueue([], []), body([uploaded]), ServeSettings()) is None, "an upload's own URL is fine"


def test_queue_size_then_session_limit():
    settings = ServeSettings(queue_size=3, session_jobs=2)
    assert admit(FakeQueue(["a", "b", "c"], []), body([]), settings) == ("queue_full", BUSY.format(waiting=3))
    assert admit(FakeQueue(["me"], ["me"]), body([]), settings) == (
        "queue_full", TOO_MANY.format(pending=2, limit=2))
    assert admit(FakeQueue(["me", "other"], ["other"]), body([]), settings) is None


def test_a_client_past_its_share_of_jobs_gets_a_429_across_all_its_sessions():
    from fastapi import HTTPException

    from apps.shares import JOBS_FULL

    def visitor(host):
        return SimpleNamespace(client=SimpleNamespace(host=host), headers={})

    queue = FakeQueue(["tab-1", "tab-2"], ["tab-3"])
    for group in (queue.event_queue_per_concurrency_id["prax"].queue, [job[0] for job in queue.active_jobs[:-1]]):
        for event in group:
            event.request, event.username = visitor("198.51.100.1"), None
    settings = ServeSettings(client_jobs=3, session_jobs=4)
    with pytest.raises(HTTPException) as refused:
        admit(queue, body([], "tab-4"), settings, visitor("198.51.100.1"))
    assert refused.value.status_code == 429 and refused.value.headers == {"Retry-After": "10"}
    assert refused.value.detail == JOBS_FULL.format(pending=3, limit=3)
    assert admit(queue, body([], "tab-9"), settings, visitor("198.51.100.2")) is None, "another client is served"
    assert admit(queue, body([], "tab-4"), settings, visitor("198.51.100.1"), username="ada") is None, "a login"


# ---------------------------------------------------------------- MCP: the caller of a tool call owns its jobs


def mcp_request(caller: str | None):
    headers = {CALLER_HEADER.decode(): caller} if caller else {}
    return SimpleNamespace(headers=headers)


class McpQueue(FakeQueue):
    """Events that came through the one MCP loopback session, each with its caller's request."""

    def __init__(self, waiting: list[str], running: list[str]):
        super().__init__([], [])
        self.event_queue_per_concurrency_id["prax"].queue = [
            SimpleNamespace(session_hash="loopback", request=mcp_request(c)) for c in waiting]
        self.active_jobs = [[SimpleNamespace(session_hash="loopback", request=mcp_request(c))] for c in running]


def test_mcp_jobs_count_per_caller_not_per_loopback_session():
    settings = ServeSettings(session_jobs=2)
    queue = McpQueue(["user:ada"], ["user:ada", "user:alan"])
    assert job_owner("loopback", mcp_request("user:ada")) == "mcp:user:ada"
    assert job_owner("browser-tab", mcp_request(None)) == "browser-tab"
    assert pending_jobs(queue, "mcp:user:ada") == 2 and pending_jobs(queue, "mcp:user:alan") == 1
    refused = admit(queue, body([], "loopback"), settings, mcp_request("user:ada"))
    assert refused == ("validator_error", [{"__type__": "validate", "is_valid": False, "parameter_name": "queue",
                                            "message": TOO_MANY.format(pending=2, limit=2)}])
    assert admit(queue, body([], "loopback"), settings, mcp_request("user:alan")) is None
    assert admit(queue, body([], "loopback"), settings, mcp_request(None)) is None, "a browser tab is its session"
    state, detail = admit(queue, body([{"path": "https://example.com/a.png"}], "loopback"), settings,
                          mcp_request("addr:10.0.0.7"))
    assert state == "validator_error" and detail[0]["message"] == URL_REFUSED_MCP.format(url="https://example.com/a.png")


def run_guard(guard: HubGuard, path: str, headers: dict[bytes, bytes], method: str = "POST"):
    """One request through the middleware: (status or None if passed on, the scope the app saw)."""
    seen, sent = [], []

    async def app(scope, receive, send):
        seen.append(scope)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "path": path, "method": method, "headers": list(headers.items()),
             "client": ("203.0.113.9", 5555)}
    guard.app = app
    run_async(guard(scope, None, send))
    status = sent[0]["status"] if sent else None
    return status, (dict(seen[0]["headers"]) if seen else None), (sent[1]["body"].decode() if sent else "")


def guard_with(**settings) -> HubGuard:
    return HubGuard(None, ServeSettings(**settings), token="t", stats=dict, upload_dir="/tmp",
                    loopback_secret="s3cret")


def basic_auth(user: str, password: str) -> bytes:
    return b"Basic " + base64.b64encode(f"{user}:{password}".encode())


@pytest.mark.parametrize("path", ["/gradio_api/mcp/", "/gradio_api/mcp", "/gradio_api/mcp/sse",
                                  "/gradio_api/mcp/messages/", "/prefix/gradio_api/mcp/http/"])
def test_mcp_routes_need_the_hub_login(path):
    guard = guard_with(auth=(("ada", "pw:1"), ("alan", "pw2")))
    length = {b"content-length": b"2"}
    for headers in ({}, {b"authorization": basic_auth("ada", "pw2")}, {b"authorization": b"Basic !!"},
                    {b"authorization": basic_auth("eve", "pw:1")}, {b"authorization": b"Bearer pw:1"}):
        status, seen, text = run_guard(guard, path, {**headers, **length})
        assert (status, seen, text) == (401, None, MCP_LOGIN), headers
    status, seen, _ = run_guard(guard, path, {b"authorization": basic_auth("ada", "pw:1"), **length})
    assert status is None and seen[CALLER_HEADER] == b"user:ada"
    assert run_guard(guard_with(), path, length)[1][CALLER_HEADER] == b"addr:203.0.113.9", "no --auth: the address"
    for route in ("/gradio_api/info", "/gradio_api/cancel", "/gradio_api/reset", "/gradio_api/heartbeat/abc"):
        status, seen, text = run_guard(guard, route, {}, method="GET" if "heart" in route or "info" in route
                                       else "POST")
        assert (status, seen) == (401, None) and json.loads(text)["detail"]["error"] == LOGIN_NEEDED, route
    for route in ("/", "/prax", "/logout", "/assets/index.js", "/favicon.ico", "/theme.css"):
        assert run_guard(guard, route, {}, method="GET")[0] is None, route
    assert run_guard(guard_with(mcp=False), path, {})[0] is None, "with --no-mcp Gradio has no such route (404)"


def test_mcp_request_bodies_are_declared_and_bounded():
    guard = guard_with(max_file_size=1_000_000)
    limit = mcp_body_limit(guard.settings)
    assert limit == 8 * 1_000_000 * 4 // 3 + 1_000_000
    assert run_guard(guard, "/gradio_api/mcp/", {})[0] == 411
    status, _, text = run_guard(guard, "/gradio_api/mcp/", {b"content-length": str(limit + 1).encode()})
    assert status == 413 and text.startswith("This MCP request is 11.67 MB; one request may hold at most 11.67 MB")
    assert run_guard(guard, "/gradio_api/mcp/", {b"content-length": str(limit).encode()})[0] is None
    assert run_guard(guard, "/gradio_api/mcp/sse", {}, method="GET")[0] is None


def test_only_the_loopback_may_name_an_mcp_caller():
    guard = guard_with()
    forged = {CALLER_HEADER: b"user:ada", LOOPBACK_HEADER: b"guess"}
    _, seen, _ = run_guard(guard, "/gradio_api/queue/join", forged)
    assert CALLER_HEADER not in seen and LOOPBACK_HEADER not in seen
    _, seen, _ = run_guard(guard, "/gradio_api/queue/join", {**forged, LOOPBACK_HEADER: b"s3cret"})
    assert seen[CALLER_HEADER] == b"user:ada"
    _, seen, _ = run_guard(guard, "/gradio_api/mcp/", {**forged, b"content-length": b"2"})
    assert seen[CALLER_HEADER] == b"addr:203.0.113.9", "an MCP request's caller is set by the guard, never taken"
