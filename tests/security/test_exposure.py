"""What a stranger can read: no monitoring, no pool internals, no server files, no operator route without its token;
with --auth, nothing without a login. The operator reads the pool with `demohub stats`."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from gradio_client import Client
from PIL import Image

from apps.event_inputs import NOT_UPLOADED
from apps.limits import FILE_NOT_SERVED
from apps.serving import NO_ENDPOINT
from shared.weights import REPO_ROOT
from tests.commands import checkout_env, start_hub
from tests.conftest import free_port
from tests.endpoints import DECLARED
from tests.security import raw
from tests.security.conftest import HONEST_PRAX, honest_request_works, mcp_call


@pytest.mark.parametrize("path", ["/monitoring", "/monitoring/summary", "/gradio_api/monitoring/summary"])
def test_monitoring_is_off(public_hub, path):
    r = requests.get(public_hub.url + path, timeout=30)
    assert r.status_code in (403, 404) and "functions" not in r.text


def test_pool_internals_are_not_an_endpoint(public_hub, public_config):
    assert not any("pool" in (d.get("api_name") or "") for d in public_config["dependencies"])
    answer = raw.call(public_hub.url, "pool_stats", [])
    assert (answer.ok, answer.status, answer.message) == (False, 404, NO_ENDPOINT.format(name="pool_stats"))


@pytest.mark.parametrize("token", [None, "Bearer guess", "Bearer "])
def test_operator_route_needs_the_operator_token(public_hub, token):
    headers = {"Authorization": token} if token else {}
    r = requests.get(f"{public_hub.url}/demohub/operator/stats", headers=headers, timeout=30)
    assert r.status_code == 404 and "loaded" not in r.text


def operator_stats(hub) -> dict:
    port = hub.url.rsplit(":", 1)[1]
    done = subprocess.run([sys.executable, "-m", "apps.cli", "stats", "--port", port], capture_output=True, text=True,
                          env=checkout_env({**os.environ, "DEMOHUB_STATE_DIR": str(hub.root / "state")}), timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_demohub_stats_reads_the_pool_for_the_operator(public_hub):
    honest_request_works(public_hub.url)  # loads prax/tiny-literal
    port = public_hub.url.rsplit(":", 1)[1]
    assert oct((public_hub.root / "state" / f"hub-{port}.json").stat().st_mode & 0o777) == "0o600"
    stats = operator_stats(public_hub)
    assert "prax/tiny-literal" in stats["loaded"] and stats["loaded"]["prax/tiny-literal"] > 1_000_000
    assert stats["loads"] >= 1 and stats["queue_size"] == 4


def test_a_failing_request_unloads_no_other_model(public_hub):
    """3D-MoLM's 14 GB weights are missing here: asking for them fails before the pool makes room."""
    honest_request_works(public_hub.url)
    before = operator_stats(public_hub)
    answer = raw.call(public_hub.url, "ask", ["CCO", "logp"])
    assert not answer.ok and "not on this server" in answer.message
    after = operator_stats(public_hub)
    assert after["loaded"] == before["loaded"] and after["evictions"] == before["evictions"]


@pytest.mark.parametrize("target", ["/etc/passwd", str(REPO_ROOT / "README.md"), "../../../../etc/passwd",
                                    str(REPO_ROOT / "checkpoints" / "prax" / "tiny-literal" / "config.json")])
def test_server_files_are_not_served(public_hub, target):
    """Sent as written: the ``../`` reach the hub's file route (``requests`` would resolve them to ``/etc/passwd``
    first, a path the route never sees)."""
    status, body = raw.get_exactly(public_hub.url, f"/gradio_api/file={target}")
    assert (status, json.loads(body)) == (403, {"detail": FILE_NOT_SERVED}), (status, body[:300])
    honest_request_works(public_hub.url)


def test_a_file_input_naming_a_server_path_is_refused(public_hub, public_config):
    """A queue event whose file input points at a server file (not an upload) does not read it: Gradio refuses the
    path while handing the inputs to the event's validator, before the event is queued, and the visitor reads a
    sentence that neither repeats the path nor names Gradio's cache."""
    for api_name, data in (("tag_image", [raw.file_data("/etc/passwd"), 0.68, ""]),
                           ("tag_image_for_page", [raw.file_data("/etc/passwd"), 0.68, "", None])):
        status, detail = raw.join(public_hub.url, raw.fn_index(public_config, api_name), data, raw.session())
        assert status == 400, api_name
        assert detail == NOT_UPLOADED
    honest_request_works(public_hub.url)


PRIVATE_SESSION_JOBS = 2


@pytest.fixture(scope="module")
def private_hub(tmp_path_factory):
    """`demohub serve --auth FILE --delete-cache 2 --session-jobs 2`, started as a command the way an operator does."""
    logins = tmp_path_factory.mktemp("auth") / "logins.txt"
    logins.write_text("# lab members\nada:lovelace-2024\nalan:turing\n")
    hub = start_hub(tmp_path_factory.mktemp("private-hub"),
                    ["--auth", str(logins), "--delete-cache", "2", "--session-jobs", str(PRIVATE_SESSION_JOBS)],
                    {"HF_HUB_OFFLINE": "1"}, free_port())
    yield hub.url
    hub.process.terminate()
    hub.process.wait(timeout=30)


def logged_in(url: str, user: str = "ada", password: str = "lovelace-2024") -> requests.Session:
    browser = requests.Session()
    assert browser.post(f"{url}/login", data={"username": user, "password": password}, timeout=30).status_code == 200
    return browser


def test_private_hub_needs_a_login(private_hub):
    assert requests.get(f"{private_hub}/config", timeout=30).status_code == 401
    answer = raw.call(private_hub, "synthesize", HONEST_PRAX)
    assert not answer.ok and answer.status == 401
    r = requests.post(f"{private_hub}/login", data={"username": "ada", "password": "wrong"}, timeout=30)
    assert r.status_code == 400
    with pytest.raises(ValueError, match="Could not login"):
        Client(private_hub, auth=("ada", "wrong"), verbose=False)


def test_private_hub_mcp_needs_the_same_login(private_hub):
    """Gradio's login does not cover its MCP routes; the hub asks for the same logins as HTTP Basic credentials."""
    stranger = raw.from_address("127.0.0.2")  # wrong passwords slow their own client down, not the member's below
    for path in ("/gradio_api/mcp/", "/gradio_api/mcp/sse", "/gradio_api/mcp/schema"):
        assert stranger.post(private_hub + path, json={}, timeout=30).status_code == 401, path
        assert stranger.get(private_hub + path, auth=("ada", "wrong"), timeout=30).status_code == 401, path
    login = {"Authorization": "Basic " + base64.b64encode(b"alan:turing").decode()}
    result = mcp_call(private_hub, "synthesize", {"examples": HONEST_PRAX[0], "weights": "tiny-literal", "k": 3},
                      headers=login)
    assert not result.isError and json.loads(result.content[0].text)["weights"] == "tiny-literal"


def test_uploads_are_deleted_after_the_cache_age(private_hub, tmp_path):
    """--delete-cache 2: Gradio's sweeper (every second here) removes uploads older than two seconds."""
    browser = logged_in(private_hub)
    r = browser.post(f"{private_hub}/gradio_api/upload", files=[("files", ("note.txt", b"uploaded by a visitor"))],
                     timeout=30)
    stored = Path(r.json()[0])
    assert stored.read_text() == "uploaded by a visitor"
    deadline = time.monotonic() + 20
    while stored.exists():
        assert time.monotonic() < deadline, "the upload was never deleted"
        time.sleep(0.5)


def test_one_session_may_have_session_jobs_events_at_once(private_hub):
    """--session-jobs 2: a session's third event while two are waiting or running is refused with the sentence, before
    it is queued; another session is served meanwhile. (The first event loads the listener, so the two are still
    pending when the third arrives.)"""
    from apps.serving import TOO_MANY

    browser = logged_in(private_hub)
    index = raw.fn_index(browser.get(f"{private_hub}/config", timeout=30).json(), "synthesize")
    body = {"data": HONEST_PRAX, "fn_index": index, "session_hash": raw.session(), "event_data": None,
            "trigger_id": None}
    replies = [browser.post(f"{private_hub}/gradio_api/queue/join", json=body, timeout=60)
               for _ in range(PRIVATE_SESSION_JOBS + 1)]
    assert [r.status_code for r in replies] == [200] * PRIVATE_SESSION_JOBS + [503]
    assert raw.detail(replies[-1]) == TOO_MANY.format(pending=PRIVATE_SESSION_JOBS, limit=PRIVATE_SESSION_JOBS)
    other = logged_in(private_hub, "alan", "turing")
    assert other.post(f"{private_hub}/gradio_api/queue/join", json={**body, "session_hash": raw.session()},
                      timeout=60).status_code == 200


def test_private_hub_serves_its_users(private_hub):
    client = Client(private_hub, auth=("alan", "turing"), verbose=False)
    result = client.predict(*HONEST_PRAX, api_name="/synthesize")
    client.close()
    assert result["weights"] == "tiny-literal" and result["candidates"]


FILE_INPUTS = [(name, i.name) for name, (_, endpoint) in DECLARED.items() for i in endpoint.inputs
               if i.kind in ("file", "files")]  # every file input of every declared endpoint


def test_every_declared_file_input_is_covered():
    assert {"image", "files", "audio"} <= {argument for _, argument in FILE_INPUTS}


@pytest.mark.parametrize(("api_name", "argument"), FILE_INPUTS, ids=[f"{a}-{b}" for a, b in FILE_INPUTS])
def test_an_endpoint_never_reads_a_server_file_its_caller_names(public_hub, api_name, argument):
    """A path string, or a file reference without Gradio's mark, would name a file on the server: the endpoint
    refuses both with the same sentence whether the file exists or not (nothing read, no existence oracle). Every
    file input of every declared endpoint, the other inputs at their declared examples."""
    from shared.uploads import NOT_AN_UPLOAD

    secret = public_hub.root / "private" / "private.png"  # outside the hub's cwd, which must stay empty
    secret.parent.mkdir(exist_ok=True)
    Image.new("RGB", (64, 64), (10, 200, 10)).save(secret)
    endpoint = DECLARED[api_name][1]
    kind = next(i.kind for i in endpoint.inputs if i.name == argument)
    sentences = set()
    for target in (str(secret), str(secret) + ".missing", "private.png", "/etc/passwd"):
        for value in (target, {"path": target}, {"path": target, "meta": {"_type": "not-gradio"}}):
            data = [([value] if kind == "files" else value) if i.name == argument
                    else (None if i.kind in ("file", "files") else i.example) for i in endpoint.inputs]
            answer = raw.call(public_hub.url, api_name, data)
            assert not answer.ok and answer.status == 422, (target, value, answer)
            sentences.add(answer.message)
    assert sentences == {NOT_AN_UPLOAD.format(argument=argument)}
    honest_request_works(public_hub.url)


DEFAULTED = [(name, [i.name for i in endpoint.inputs if not i.required])
             for name, (_, endpoint) in DECLARED.items()
             if endpoint.inputs and not endpoint.inputs[-1].required
             and not any(i.kind in ("file", "files") for i in endpoint.inputs)]


@pytest.mark.parametrize(("api_name", "defaulted"), DEFAULTED, ids=[name for name, _ in DEFAULTED])
def test_a_raw_caller_may_leave_out_the_trailing_inputs_that_have_defaults(public_hub, api_name, defaulted):
    """An endpoint that gains an optional input keeps answering raw callers (curl, an old client) that do not send
    it: left-out trailing inputs take their declared defaults at the hub's boundary, and the answer is the one the
    full call with those defaults gets (every declared endpoint with such inputs, from the declarations)."""
    from apps.event_inputs import TOO_FEW

    endpoint = DECLARED[api_name][1]
    trailing = []
    for value in reversed(endpoint.inputs):
        if value.required:
            break
        trailing.insert(0, value)
    given = endpoint.inputs[:len(endpoint.inputs) - len(trailing)]
    short = raw.call(public_hub.url, api_name, [i.example for i in given])
    full = raw.call(public_hub.url, api_name, [i.example for i in given] + [i.default for i in trailing])
    assert not short.message.startswith(TOO_FEW.split("{")[0]), short.message
    def same(message: str) -> str:
        return re.sub(r"\(error id [0-9a-f]{8}\)", "(error id)", message)

    assert (short.ok, same(short.message)) == (full.ok, same(full.message)), (short, full)
    if full.ok and isinstance(full.data, list) and full.data and isinstance(full.data[0], dict):
        assert short.data[0].keys() == full.data[0].keys()


def test_every_event_that_takes_a_file_passes_the_queues_door():
    """A file reference naming a web address is refused where events enter the queue (``apps.serving.admit``); an
    unqueued event with a file input would skip that door, and Gradio would fetch the address from the server (found
    by the fuzz harness when Tag2Text's upload screening ran unqueued). Generated from the hub's own events."""
    from gradio.components.base import Component

    from apps import hub
    from apps.event_inputs import _FILES

    blocks = hub.build_hub()
    unqueued = [(fn.name, [type(c).__name__ for c in fn.inputs]) for fn in blocks.fns.values()
                if not fn.queue and any(isinstance(c, Component) and type(c).__name__ in _FILES for c in fn.inputs)]
    assert unqueued == [], unqueued
