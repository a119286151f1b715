"""A client's share, tried as strangers would: `demohub serve --host 0.0.0.0` started as a command, clients at other
addresses of this machine (127.0.0.2-9), every attack in a loop that stops by itself. One client past its share reads
429 with a sentence and Retry-After (or its connection is closed at its deadline) while an honest visitor from another
address is served in its usual time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from apps.shares import JOBS_FULL, LOGIN_NEEDED, LOGIN_WAIT, STREAMS_FULL, UPLOADS_FULL
from tests.commands import checkout_env, start_hub
from tests.conftest import free_port
from tests.security import raw
from tests.security.attacks import SlowDrips, summary, timed
from tests.security.conftest import HONEST_PRAX
from tests.security.test_queue import LAYOUT, SLOW

READ_TIMEOUT = 2  # seconds: drips are closed within seconds, so the test is short
CLIENT_JOBS = 3
CLIENT_STREAMS = 6
UPLOAD_QUOTA = 3_000_000
RETENTION = 6  # seconds an anonymous client's uploads are kept here
HONEST = "127.0.0.9"


@pytest.fixture(scope="module")
def shared_hub(public_root, hub_server, tmp_path_factory):
    hub = start_hub(tmp_path_factory.mktemp("shared-hub"),
                    ["--host", "0.0.0.0", "--read-timeout", str(READ_TIMEOUT), "--min-body-rate", "1KB",
                     "--max-connections", "100",
                     "--max-connections-per-address", "40", "--client-jobs", str(CLIENT_JOBS), "--client-streams",
                     str(CLIENT_STREAMS), "--max-file-size", "2MB", "--client-upload-quota", str(UPLOAD_QUOTA),
                     "--anonymous-upload-retention", str(RETENTION)],
                    {"DEMOHUB_CHECKPOINTS": str(public_root), "HF_ENDPOINT": hub_server.url}, free_port())
    yield hub
    hub.process.terminate()
    hub.process.wait(timeout=30)


def honest_call(url: str) -> None:
    answer = raw.call(url, "synthesize", HONEST_PRAX, timeout=60, http=raw.from_address(HONEST))
    assert answer.ok, answer.message
    assert answer.data[0]["n_samples"] > 0


def test_slow_drips_are_closed_at_their_total_deadline(shared_hub):
    """60 drips from 2 addresses, each sending a byte a second of a declared 100 KB body, reopened as they close: a
    per-pause deadline never fires on them (each pause is 1 s of 2 s); the minimum body rate closes each within about
    2 s, and the honest visitor is served meanwhile."""
    baseline = timed(3, lambda: honest_call(shared_hub.url))
    with SlowDrips(shared_hub.url, ["127.0.0.2", "127.0.0.3"], per_address=30, interval=1.0, duration=40) as drips:
        drips.wait_until_open(55)
        time.sleep(READ_TIMEOUT + 2)
        under_attack = timed(3, lambda: honest_call(shared_hub.url))
        stats = drips.stats
    print(f"honest visitor: idle {summary(baseline)}; under 60 drips {summary(under_attack)}; drips closed "
          f"{stats.closed_by_hub}, lifetimes up to {max(stats.lifetimes, default=0):.1f} s")
    assert stats.closed_by_hub >= 60 and max(stats.lifetimes) < READ_TIMEOUT + 3, "a drip lives about 2 s, no more"
    assert max(under_attack) < max(baseline) + 5, (baseline, under_attack)


def test_a_full_hub_makes_room_for_an_honest_visitor(shared_hub):
    """160 connections from 4 addresses (40 each, the per-address cap) on a hub of 100 connections, each sending a
    declared 1 MB body at 2 KB/s, above the minimum rate, so no deadline closes them: the hub is full of clients
    within their rights. A newcomer from a fifth address is served in its usual time: the full hub closes a
    connection of the address that holds the most to make room for it."""
    baseline = timed(3, lambda: honest_call(shared_hub.url))
    with SlowDrips(shared_hub.url, [f"127.0.0.{i}" for i in (2, 3, 4, 5)], per_address=40, interval=0.5,
                   duration=40, declared=1_000_000, chunk=1000) as drips:
        drips.wait_until_open(95)
        time.sleep(1)
        under_attack = timed(5, lambda: honest_call(shared_hub.url))
        stats = drips.stats
    print(f"honest visitor: idle {summary(baseline)}; on a full hub {summary(under_attack)}; connections closed "
          f"for room {stats.closed_by_hub}")
    assert max(under_attack) < max(baseline) + 5, (baseline, under_attack)
    assert "Traceback" not in shared_hub.log


def test_one_client_fills_only_its_share_of_the_queue(shared_hub):
    """One address starts 6 slow GeoDiffusion jobs through /call (each a session of its own, so the per-session limit
    never applies): 3 are taken, the rest read 429 with the sentence and Retry-After; another address is served
    meanwhile, and the first is served again once its jobs are done."""
    greedy = raw.from_address("127.0.0.6")
    raw.call(shared_hub.url, "generate", [LAYOUT, "nuimages-256x256", 0, 1, 5.0, "default"], http=greedy)  # loaded
    replies = [greedy.post(f"{shared_hub.url}/gradio_api/call/generate", json={"data": SLOW}, timeout=30)
               for _ in range(6)]
    assert [r.status_code for r in replies] == [200] * CLIENT_JOBS + [429] * 3
    refused = replies[-1]
    assert raw.detail(refused) == JOBS_FULL.format(pending=CLIENT_JOBS, limit=CLIENT_JOBS)
    assert int(refused.headers["retry-after"]) > 0
    start = time.monotonic()
    honest_call(shared_hub.url)
    assert time.monotonic() - start < 10, "another client is served while the greedy one's jobs run"
    for reply in replies[:CLIENT_JOBS]:
        with greedy.get(f"{shared_hub.url}/gradio_api/call/generate/{reply.json()['event_id']}", stream=True,
                        timeout=300) as stream:
            assert any(line.startswith("event: complete") for line in stream.iter_lines(decode_unicode=True))
    assert greedy.post(f"{shared_hub.url}/gradio_api/call/generate", json={"data": SLOW}, timeout=30).ok


def upload(http: requests.Session, url: str, size: int) -> requests.Response:
    return http.post(f"{url}/gradio_api/upload", files=[("files", ("clip.bin", os.urandom(size)))], timeout=60)


def test_an_upload_quota_per_client_while_another_address_uploads(shared_hub):
    hoarder, other = raw.from_address("127.0.0.7"), raw.from_address("127.0.0.8")
    kept = [upload(hoarder, shared_hub.url, 1_400_000) for _ in range(2)]
    assert [r.status_code for r in kept] == [200, 200]
    refused = upload(hoarder, shared_hub.url, 1_400_000)
    assert refused.status_code == 429 and 0 < int(refused.headers["retry-after"]) <= RETENTION
    assert refused.text == UPLOADS_FULL.format(stored="2.80 MB", size="1.40 MB", limit="3 MB",
                                               retention=f"{RETENTION} seconds", login=", or log in")
    assert upload(other, shared_hub.url, 1_400_000).status_code == 200, "another address uploads as usual"
    deadline = time.monotonic() + RETENTION + 15
    while upload(hoarder, shared_hub.url, 1_400_000).status_code != 200:  # its uploads expire, then it may again
        assert time.monotonic() < deadline, "the anonymous client's uploads were never deleted"
        time.sleep(1)
    assert not any(Path(p).exists() for r in kept for p in r.json()), "deleted after the anonymous retention"


def test_a_client_holds_its_share_of_event_streams(shared_hub):
    greedy, other = raw.from_address("127.0.0.6"), raw.from_address("127.0.0.8")
    url = f"{shared_hub.url}/gradio_api/heartbeat"
    opened = [greedy.get(f"{url}/{raw.session()}", stream=True, timeout=30) for _ in range(CLIENT_STREAMS + 1)]
    try:
        assert [r.status_code for r in opened] == [200] * CLIENT_STREAMS + [429]
        assert raw.detail(opened[-1]) == STREAMS_FULL.format(open=CLIENT_STREAMS, limit=CLIENT_STREAMS)
        with other.get(f"{url}/{raw.session()}", stream=True, timeout=30) as theirs:
            assert theirs.status_code == 200 and next(theirs.iter_lines()) == b"data: ALIVE"
    finally:
        for response in opened:
            response.close()
    deadline = time.monotonic() + 10
    while (again := greedy.get(f"{url}/{raw.session()}", stream=True, timeout=30)).status_code != 200:
        again.close()
        assert time.monotonic() < deadline, "closed streams were never given back"
    again.close()


def test_a_client_cannot_pose_as_many_through_forwarding_headers(shared_hub):
    """No proxy is trusted by default: a client that names another address in each request's X-Forwarded-For is
    still one client, with one share."""
    poser = raw.from_address("127.0.0.7")
    url = f"{shared_hub.url}/gradio_api/heartbeat"
    opened = [poser.get(f"{url}/{raw.session()}", stream=True, timeout=30,
                        headers={"X-Forwarded-For": f"198.51.100.{i}"}) for i in range(CLIENT_STREAMS + 1)]
    try:
        assert [r.status_code for r in opened] == [200] * CLIENT_STREAMS + [429]
    finally:
        for response in opened:
            response.close()


# ---------------------------------------------------------------- logins


LOGINS = "# lab members\nada:lovelace-2024\nalan:turing\n"


@pytest.fixture(scope="module")
def login_hub(tmp_path_factory):
    logins = tmp_path_factory.mktemp("auth") / "logins.txt"
    logins.write_text(LOGINS)
    hub = start_hub(tmp_path_factory.mktemp("login-hub"), ["--host", "0.0.0.0", "--auth", str(logins),
                                                           "--login-attempts", "3"],
                    {"HF_HUB_OFFLINE": "1"}, free_port())
    yield hub
    hub.process.terminate()
    hub.process.wait(timeout=30)


def login(http: requests.Session, url: str, user: str, password: str) -> requests.Response:
    return http.post(f"{url}/login", data={"username": user, "password": password}, timeout=30)


def test_guessing_is_slowed_while_the_right_user_logs_in_from_elsewhere(login_hub):
    guesser = raw.from_address("127.0.0.2")
    statuses, retry_after = [], []
    for i in range(12):
        r = login(guesser, login_hub.url, "ada", f"guess-{i}")
        statuses.append(r.status_code)
        if r.status_code == 429:
            retry_after.append(int(r.headers["retry-after"]))
            assert raw.detail(r) == LOGIN_WAIT.format(seconds=retry_after[-1])
    assert statuses[:3] == [400] * 3 and statuses.count(400) <= 5 and statuses.count(429) >= 7, statuses
    start = time.monotonic()
    real = raw.from_address("127.0.0.3")
    assert login(real, login_hub.url, "ada", "lovelace-2024").status_code == 200
    assert time.monotonic() - start < 5 and real.get(f"{login_hub.url}/config", timeout=30).status_code == 200
    assert login(guesser, login_hub.url, "ada", "lovelace-2024").status_code == 429, "the guesser still waits"
    assert "ERROR" not in login_hub.log


def test_every_route_that_takes_or_gives_data_needs_the_login(login_hub):
    stranger = raw.from_address("127.0.0.4")
    session = raw.session()
    routes = [("POST", "/gradio_api/cancel", {"session_hash": session, "fn_index": 0, "event_id": "x"}),
              ("POST", "/gradio_api/reset", {"session_hash": session, "fn_index": 0, "event_id": "x"}),
              ("GET", f"/gradio_api/heartbeat/{session}", None), ("GET", "/config", None),
              ("GET", "/gradio_api/info", None), ("GET", f"/gradio_api/queue/data?session_hash={session}", None),
              ("POST", "/gradio_api/queue/join", {"data": [], "fn_index": 0, "session_hash": session}),
              ("POST", "/gradio_api/call/synthesize", {"data": HONEST_PRAX}), ("GET", "/gradio_api/openapi.json", None),
              ("GET", "/demohub/examples/tag2text/x.png", None)]
    for method, path, body in routes:
        r = stranger.request(method, login_hub.url + path, json=body, timeout=30, stream=True)
        assert r.status_code == 401, (path, r.status_code)
        assert r.json()["detail"]["error"] == LOGIN_NEEDED, path
        r.close()
    page = stranger.get(login_hub.url + "/", timeout=30)
    assert page.status_code == 200 and "auth_required" in page.text, "the login page itself is open"
    assert "ERROR" not in login_hub.log and "error id" not in login_hub.log, "a 401 is no error"
    member = raw.from_address("127.0.0.5")
    assert login(member, login_hub.url, "alan", "turing").status_code == 200
    assert member.post(f"{login_hub.url}/gradio_api/reset", json={"session_hash": session, "fn_index": 0,
                                                                  "event_id": "x"}, timeout=30).status_code == 200


@pytest.mark.parametrize("streamlit", [False, True])
def test_an_auth_file_without_a_login_refuses_to_start(tmp_path, streamlit):
    empty = tmp_path / "logins.txt"
    empty.write_text("# nobody yet\n\n")
    done = subprocess.run([sys.executable, "-m", "apps.cli", "serve", "--auth", str(empty), "--port", str(free_port()),
                           *(["--streamlit"] if streamlit else [])], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env=checkout_env())  # refused within seconds; served, it never ends
    assert done.returncode != 0 and "--auth names no login" in done.stderr, done.stderr[-2000:]


def test_every_queued_event_keeps_one_client_to_its_share(shared_hub):
    """The fuzz harness's category "a client's share", for every queued event the hub publishes (generated from
    /config, so a new endpoint is covered the day it exists): one address sends a burst of joins at once with the
    event's honest values; whatever it is not given reads the 429 share sentence (or the demo's own refusal of the
    values), never "the hub is busy": the shared queue is never filled by one client; another address is served after
    each burst."""
    from concurrent.futures import ThreadPoolExecutor

    from apps.serving import BUSY
    from tests.security import fuzz

    config = requests.get(f"{shared_hub.url}/config", timeout=30).json()
    events = {c.fn_index: c for c in fuzz.cases(config) if c.queued}  # any case of each event: for its index
    components = {c["id"]: c for c in config["components"]}
    greedy = raw.from_address("127.0.0.6")
    busy_prefix = BUSY.split("(")[0]
    problems = []

    def join(index: int, data: str) -> requests.Response:
        body = ('{"data": ' + data + f', "fn_index": {index}, "session_hash": "{raw.session()}", '
                '"event_data": null, "trigger_id": null}')
        return greedy.post(f"{shared_hub.url}/gradio_api/queue/join", data=body.encode(), timeout=60,
                           headers={"content-type": "application/json"})

    assert len(events) >= 20
    for index in events:
        dep = next(d for d in config["dependencies"] if d["id"] == index)
        data = "[" + ", ".join(fuzz.honest_value(components[i]) for i in dep["inputs"]) + "]"
        with ThreadPoolExecutor(CLIENT_JOBS + 3) as pool:
            replies = list(pool.map(join, [index] * (CLIENT_JOBS + 3), [data] * (CLIENT_JOBS + 3)))
        for reply in replies:
            if reply.status_code == 429 and raw.detail(reply) != JOBS_FULL.format(pending=CLIENT_JOBS,
                                                                                  limit=CLIENT_JOBS):
                problems.append(f"{index}:{dep.get('api_name')}: 429 without the share sentence: {raw.detail(reply)}")
            if reply.status_code == 503 or busy_prefix in raw.detail(reply):
                problems.append(f"{index}:{dep.get('api_name')}: one client filled the queue")
    assert not problems, "\n".join(problems)
    honest_call(shared_hub.url)


def test_visitors_learn_no_versions_and_read_the_hubs_own_sentences(shared_hub):
    """No server header, Gradio's major version only where gradio_client reads it (/config; openapi.json the same),
    no MCP package version, and an MCP argument of the wrong kind answered in a sentence naming the argument."""
    import gradio

    from tests.security.conftest import mcp_call

    major = gradio.__version__.split(".")[0]
    visitor = raw.from_address("127.0.0.8")
    config = visitor.get(f"{shared_hub.url}/config", timeout=30)
    assert "server" not in config.headers and config.json()["version"] == major
    page = visitor.get(f"{shared_hub.url}/", timeout=30)
    assert "server" not in page.headers and f'"version":"{gradio.__version__}"' not in page.text
    assert visitor.get(f"{shared_hub.url}/gradio_api/openapi.json", timeout=30).json()["info"]["version"] == major
    initialize = visitor.post(f"{shared_hub.url}/gradio_api/mcp/", timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}},
        headers={"accept": "application/json, text/event-stream"})
    assert '"serverInfo":{"name":"Paper Demo Hub","version":"1"}' in initialize.text
    result = mcp_call(shared_hub.url, "synthesize", {"examples": HONEST_PRAX[0], "weights": "tiny-literal", "k": "x"})
    assert result.isError and result.content[0].text == "The argument “k” must be a whole number."


def test_a_member_logs_in_on_the_page_and_the_page_works_behind_the_login(login_hub, browser):
    """In Chromium at 720 px: the login page is served without a login (its files too), a wrong password reads the
    page's own message, the right one opens the demo, and nothing the page then asks of the hub is refused (its
    heartbeat, config and events carry the login cookie)."""
    context = browser.new_context(viewport={"width": 720, "height": 900})
    page = context.new_page()
    refused = []
    page.on("response", lambda r: r.status in (401, 403, 429) and refused.append((r.status, r.url)))
    page.goto(f"{login_hub.url}/prax")
    fields = page.locator("input")
    fields.nth(0).fill("alan")
    fields.nth(1).fill("wrong")
    page.get_by_role("button", name="Login").click()
    page.get_by_text("Incorrect Credentials").wait_for(timeout=30_000)
    fields.nth(0).fill("alan")  # the page empties both fields after a wrong password
    fields.nth(1).fill("turing")
    page.get_by_role("button", name="Login").click()
    page.get_by_text("PraX: regexes from examples").wait_for(timeout=60_000)
    example = page.get_by_placeholder("type a string, then press + or − (Enter adds it as +)")
    example.fill("ab1")
    example.press("Enter")
    page.get_by_text("ab1").first.wait_for(timeout=30_000)
    page.wait_for_timeout(1000)
    context.close()
    assert refused == [], refused
