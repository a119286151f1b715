"""A hostile fuzz harness against `demohub serve --host 0.0.0.0` started as a command (``public_hub``).

Every event the hub publishes (page events by ``fn_index``, named endpoints, ``queue=False`` events through
``/run/*``) and every MCP tool gets generated hostile inputs (``fuzz.py``: huge, deeply nested, wrong kinds, numbers
with thousands of digits, odd Unicode, markup, empty). For each the harness asserts: answered within its time budget,
the hub's peak memory within the request budget (``/proc/<pid>/status``), a sentence a visitor can act on (no library
text, no server path, no "something went wrong on our side" for the visitor's own mistake), and an honest request from
another session answered meanwhile within 2 s. Then the eleven cases of issue #23, each on its own.
"""

from __future__ import annotations

import concurrent.futures
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

import apps
from apps.event_inputs import UNREADABLE
from apps.limits import INTERNAL, looks_internal
from shared.bounded import REQUEST_MEMORY
from tests.commands import checkout_env
from tests.conftest import free_port
from tests.security import fuzz, raw
from tests.security.conftest import SERVER_PATH_MARKERS, assert_clean, honest_request_works, start_hub

TIME_BUDGET = 40.0  # s per hostile request: the longest bounded work (a conformer) stops at 30 s
# s for another visitor's request while the hostile ones run. Measured (2026-12-05, 2 cores, the hostile requests
# keeping both busy): worst 0.32 s, median 0.01-0.02 s over 178 searches in 5 tests: a 6x margin. The figures are
# printed in every run (pytest -s) so a drift shows before it fails.
HONEST_BUDGET = 2.0
MEMORY_BUDGET = REQUEST_MEMORY  # bytes the hub's peak may grow by for one request (DEMOHUB_REQUEST_MEMORY)
LAYOUT = '{"camera": "front", "bbox": [["car", 0.1, 0.4, 0.3, 0.6]]}'
INTERNAL_START = INTERNAL.split("(")[0]
UNREADABLE_TAIL = UNREADABLE.split("(error id")[0].split("}")[-1]


class HonestVisitor:
    """Another visitor searching the catalog through the queue every 0.25 s; records how long each answer took."""

    def __init__(self, url: str):
        self.url, self.times, self.failures = url, [], []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                answer = raw.call(self.url, "catalog", ["diffusion", False], timeout=60)
                if not answer.ok or not answer.data[0]:
                    self.failures.append(answer.message)
            except requests.RequestException as error:
                self.failures.append(repr(error))
            self.times.append(time.monotonic() - started)
            self._stop.wait(0.25)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(90)

    def check(self):
        assert not self.failures, f"the honest visitor was refused: {self.failures[:3]}"
        assert self.times, "the honest visitor never got an answer"
        worst = max(self.times)
        print(f"honest searches beside the hostile ones: worst {worst:.2f} s, median "
              f"{statistics.median(self.times):.2f} s over {len(self.times)}")
        assert worst <= HONEST_BUDGET, (f"an honest search took {worst:.1f} s (median "
                                        f"{statistics.median(self.times):.2f} s over {len(self.times)})")


def visitor_problem(message: str | None, shown_as_html: bool = True) -> str | None:
    """What is wrong with an error a hostile input got, or None for a sentence the visitor can act on. A page shows
    a validator's message under its input as text, an error toast as HTML (``shown_as_html``)."""
    if not message:
        return "no sentence"
    if looks_internal(message) or any(marker in message for marker in SERVER_PATH_MARKERS):
        return "library text or a server path"
    if message.startswith(INTERNAL_START) or UNREADABLE_TAIL in message:
        return "a server-side sentence for the visitor's own input"
    if shown_as_html and "<" in message:
        return "markup that a toast would render"
    if len(message) > 600:
        return f"{len(message)} characters"
    return None


def warm(url: str) -> None:
    """Load every model the public hub has (tiny PraX, Tag2Text, GeoDiffusion) and start the conformer workers, so
    the requests below are measured without first loads."""
    honest_request_works(url)
    assert raw.call(url, "generate", [LAYOUT, "nuimages-256x256", 0, 1, 5.0, "default"]).ok
    assert raw.call(url, "molecule_properties", ["CCO", 42]).ok
    image = Path(__file__).resolve().parents[2] / "apps" / "tag2text" / "examples" / "beach.png"
    assert raw.call(url, "tag_image", [raw.upload(url, image)[0], 0.68, ""]).ok


@pytest.fixture(scope="module")
def warm_hub(public_hub):
    warm(public_hub.url)
    return public_hub


def test_every_input_kind_the_hub_serves_has_hostile_values(public_config):
    """Coverage per input kind, from /config: every kind of input any event takes gets hostile values (a kind without
    them fails here, rather than being passed over), and every input of every event is fuzzed."""
    components = {c["id"]: c for c in public_config["components"]}
    kinds = {components[i]["type"] for d in public_config["dependencies"] if d.get("backend_fn") for i in d["inputs"]}
    assert {"audio", "file", "textbox", "number", "dropdown"} <= kinds
    assert all(fuzz.hostile_values(kind) for kind in kinds - fuzz.UNSENT)
    fuzzed = {(c.fn_index, c.id.split("/", 1)[1].split(":", 1)[0]) for c in fuzz.cases(public_config) if "=" in c.id}
    sent = {(d["id"], str(n)) for d in public_config["dependencies"] if d.get("backend_fn")
            for n, i in enumerate(d["inputs"]) if components[i]["type"] not in fuzz.UNSENT}
    assert sent <= fuzzed, sorted(sent - fuzzed)[:10]


def test_every_event_refuses_every_hostile_input_with_a_sentence_in_budget(warm_hub, public_config):
    cases = list(fuzz.cases(public_config))
    assert len(cases) > 500 and {c.fn_index for c in cases} >= {
        d["id"] for d in public_config["dependencies"] if d.get("backend_fn") and d["inputs"]}
    problems, peaks = [], []
    with HonestVisitor(warm_hub.url) as honest:
        for case in cases:
            warm_hub.reset_peak_memory()
            before = warm_hub.status("VmRSS") * 1024
            answer = fuzz.send(warm_hub.url, case, timeout=TIME_BUDGET + 20)
            peaks.append((warm_hub.status("VmHWM") * 1024 - before, case.id))
            if answer.seconds > TIME_BUDGET:
                problems.append(f"{case.id}: answered after {answer.seconds:.1f} s")
            if not answer.ok and (problem := visitor_problem(answer.message, shown_as_html=answer.status != 422)):
                problems.append(f"{case.id}: {problem}: {str(answer.message)[:200]}")
            leaked = [s for s in fuzz.strings_in(answer.data) if "Traceback" in s or "site-packages" in s]
            if leaked:
                problems.append(f"{case.id}: output carries library text: {leaked[0][:200]}")
    worst = max(peaks)
    assert not problems, f"{len(problems)} of {len(cases)} cases:\n" + "\n".join(problems[:40])
    assert worst[0] <= MEMORY_BUDGET, f"{worst[1]} grew the hub's peak memory by {worst[0] / 1e6:.0f} MB"
    honest.check()
    honest_request_works(warm_hub.url)


def test_every_mcp_tool_refuses_every_hostile_argument_with_a_sentence(warm_hub):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    from tests.mcp.conftest import run_async

    async def work():
        answers = []
        async with streamablehttp_client(f"{warm_hub.url}/gradio_api/mcp/") as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            for case_id, tool, arguments, hostile in fuzz.mcp_cases(tools):
                started = time.monotonic()
                result = await session.call_tool(tool, arguments)
                text = " ".join(getattr(c, "text", "") for c in result.content)
                if isinstance(hostile, str) and len(hostile) < 100:  # the caller's own value, quoted back
                    text = text.replace(hostile, "(the value sent)")
                answers.append((case_id, result.isError, text, time.monotonic() - started))
        return tools, answers

    with HonestVisitor(warm_hub.url) as honest:
        tools, answers = run_async(work())
    assert {t.name for t in tools} >= {"synthesize", "suggest", "tag_image", "tag_batch", "generate", "encode_layout",
                                       "ask", "molecule_properties", "catalog"}
    problems = [f"{case_id}: {problem}: {text[:200]}" for case_id, is_error, text, _ in answers
                if is_error and (problem := visitor_problem(text, shown_as_html=False))]
    problems += [f"{case_id}: {seconds:.1f} s" for case_id, _, _, seconds in answers if seconds > TIME_BUDGET]
    assert not problems, f"{len(problems)} of {len(answers)} tool calls:\n" + "\n".join(problems[:40])
    honest.check()


# -- the eleven cases of issue #23 ----------------------------------------------------------------------------------


def peak_growth(hub, action):
    """(what ``action()`` returned, seconds it took, growth of the hub's peak memory in bytes)."""
    hub.reset_peak_memory()
    before = hub.status("VmRSS") * 1024
    started = time.monotonic()
    result = action()
    return result, time.monotonic() - started, hub.status("VmHWM") * 1024 - before


def test_1_a_100kb_smiles_of_many_fragments_is_refused_at_once_and_freezes_nothing(warm_hub):
    huge = ".".join(["c1ccccc1"] * 11111)
    with HonestVisitor(warm_hub.url) as honest, concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: raw.call(warm_hub.url, "molecule_properties", [huge, 42]), range(4)))
        time.sleep(1)
    for answer in answers:
        assert not answer.ok and answer.status == 422 and "99,998 characters long" in answer.message
        assert_clean(answer.message)
    honest.check()
    (answer, seconds, grew) = peak_growth(warm_hub, lambda: raw.call(warm_hub.url, "molecule_properties",
                                                                         [huge, 42]))
    assert seconds < HONEST_BUDGET and grew < 50_000_000


def stream_body(url: str, path: str, total: int, headers: dict | None = None) -> int:
    """Send a chunked body of ``total`` bytes (no declared length) as fast as the hub reads it: the status."""
    def chunks():
        yield b'{"data": ["'
        for _ in range(total // 1_000_000):
            yield b"x" * 1_000_000
    try:
        return requests.post(url + path, data=chunks(), timeout=60,
                             headers={"content-type": "application/json", **(headers or {})}).status_code
    except requests.ConnectionError:
        return 413  # the hub answered and closed while the client was still sending


def test_2_bodies_are_bounded_before_parsing_and_before_the_login(warm_hub, auth_hub):
    for hub in (warm_hub, auth_hub):
        answer, seconds, grew = peak_growth(
            hub, lambda h=hub: raw.declared_body(h.url, "/gradio_api/queue/join", 200_000_000, sent=65536))
        assert answer.status == 413 and "this address takes at most 1 MB" in answer.message
        assert seconds < HONEST_BUDGET
        assert grew < 20_000_000, f"a refused 200 MB body grew the hub's peak by {grew / 1e6:.0f} MB"
        status, seconds, grew = peak_growth(hub, lambda h=hub: stream_body(h.url, "/gradio_api/queue/join",
                                                                            200_000_000))
        # An undeclared body is refused as it passes the budget, or, behind --auth, before a byte is read.
        assert status == (401 if hub is auth_hub else 413) and grew < 20_000_000
    within = requests.post(f"{auth_hub.url}/gradio_api/queue/join", timeout=30,
                           json={"data": [], "fn_index": 0, "session_hash": "s"})
    assert within.status_code == 401, "within the budget, the login is still asked for"
    honest_request_works(warm_hub.url)


def test_3_streamlit_with_a_login_is_refused_not_served_without_it(tmp_path):
    port = free_port()
    done = subprocess.run([sys.executable, "-m", "apps.cli", "serve", "--streamlit", "--port", str(port), "--auth",
                           "ada:lovelace", "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env=checkout_env())  # as an operator runs it, from this checkout
    assert done.returncode == 2 and "no login of its own" in done.stderr
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/", timeout=5)


def test_4_explicit_hydrogens_and_endless_embeddings_are_bounded(warm_hub):
    answer, seconds, _ = peak_growth(warm_hub, lambda: raw.call(warm_hub.url, "molecule_properties",
                                                                ["C" + ".[H][H]" * 14000, 42]))
    assert not answer.ok and "98,001 characters long" in answer.message and seconds < HONEST_BUDGET
    answer = raw.call(warm_hub.url, "molecule_properties", ["C" + ".[H][H]" * 32, 42])
    assert not answer.ok and "33 disconnected fragments" in answer.message
    slow = "C" * 256  # within every input limit; RDKit's embedding takes 25-40 s on a 2-core machine
    with HonestVisitor(warm_hub.url) as honest:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            started = time.monotonic()
            pending = pool.submit(raw.call, warm_hub.url, "molecule_properties", [slow, 42])
            time.sleep(2)
            honest_molecule, seconds, _ = peak_growth(warm_hub, lambda: raw.call(warm_hub.url, "molecule_properties",
                                                                                 ["CCO", 42]))
            assert honest_molecule.ok and honest_molecule.data[0]["formula"] == "C2H6O" and seconds < 10
            answer = pending.result(timeout=TIME_BUDGET + 20)
            elapsed = time.monotonic() - started
    # Bounded either way: answered within the 30 s budget (a fast machine), or stopped at it with the sentence.
    assert (answer.ok and elapsed < 35) or (
        not answer.ok and "took over 30 s, so it was stopped" in answer.message), (answer, elapsed)
    honest.check()


def test_5_unfinished_headers_are_closed_and_one_address_cannot_take_every_connection(warm_hub):
    port = int(warm_hub.url.rsplit(":", 1)[1])
    slow = []
    for _ in range(400):  # one address (127.0.0.2: the loopback network routes it too), unfinished headers
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /config HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            pass
        slow.append(s)
    started = time.monotonic()
    assert requests.get(f"{warm_hub.url}/config", timeout=HONEST_BUDGET).status_code == 200
    honest_request_works(warm_hub.url)
    closed = 0
    for s in slow:
        s.settimeout(max(0.1, 20 - (time.monotonic() - started)))
        try:
            closed += s.recv(1) in (b"", b"H")  # closed at the deadline, or refused at once with a 503 line
        except OSError:
            closed += 1
        s.close()
    assert closed == len(slow) and time.monotonic() - started < 20


def test_6_praxs_page_update_with_the_longest_examples_and_most_samples_stays_in_budget(warm_hub, public_config):
    examples = [f"{i:02d}" + "ab" * 49 for i in range(30)]  # 30 examples of 100 characters, the page's maximum
    add, update = raw.fn_index(public_config, "add"), raw.fn_index(public_config, "update")
    events = [(add, [None, string, None]) for string in examples]

    def page(samples):
        return raw.in_one_session(warm_hub.url, [*events, (update, [None, "tiny-literal", "tiny-pragmatic", samples,
                                                                None])])[-1]

    answer, seconds, grew = peak_growth(warm_hub, lambda: page(500))  # the slider's maximum
    assert not answer.ok and "use at most 81 samples" in answer.message and grew <= MEMORY_BUDGET
    answer, seconds, grew = peak_growth(warm_hub, lambda: page(40))  # the longest input, two listeners
    assert answer.ok and "PraX listener" in answer.data[1] and grew <= MEMORY_BUDGET, f"{grew / 1e6:.0f} MB"
    api_examples = [{"string": string, "label": "+"} for string in examples]
    answer = raw.call(warm_hub.url, "synthesize", [api_examples, "tiny-literal", 5])  # the API samples 100
    assert not answer.ok and "use at most 81 samples" in answer.message


def test_7_the_catalog_search_is_bounded(warm_hub):
    assert raw.declared_body(warm_hub.url, "/gradio_api/call/catalog", 1_600_000, sent=65536).status == 413
    with HonestVisitor(warm_hub.url) as honest:
        for _ in range(5):
            answer = raw.call(warm_hub.url, "catalog", ["word " * 60_000, False])
            assert not answer.ok and "the limit is 200" in answer.message
        time.sleep(1)
    honest.check()


@pytest.mark.parametrize(("route", "body", "expected"), [
    ("/gradio_api/call/catalog", {"data": [10**30, False]}, "query must be text, not a number."),
    ("/gradio_api/run/load_example", {"data": [10**9]}, "has 4 examples; pick one by its number, 0 to 3"),
    ("/gradio_api/call/synthesize", {"data": "x"}, "“data” must be a list"),
    ("/gradio_api/call/synthesize", {"daat": []}, "“data” is missing"),
])
def test_8_no_library_text_reaches_a_visitor(warm_hub, route, body, expected):
    r = requests.post(warm_hub.url + route, json=body, timeout=60)
    if r.status_code == 200 and route.startswith("/gradio_api/call/"):
        message = raw.call(warm_hub.url, route.rsplit("/", 1)[1], body["data"]).message
    else:
        payload = r.json()
        message = payload.get("detail", payload.get("error"))
        message = " ".join(d["message"] for d in message) if isinstance(message, list) else message
    assert expected in message and visitor_problem(message) is None, message


def test_8_private_page_events_answer_wrong_kinds_with_sentences(warm_hub, public_config):
    editor = raw.fn_index(public_config, "layout_from_editor")
    answer = fuzz.send(warm_hub.url, fuzz.Case("editor", editor, None, True, "[7, 8]"))
    assert not answer.ok and answer.message.endswith("must be text.") and visitor_problem(answer.message) is None


@pytest.mark.parametrize(("data", "expected"), [
    (['{"bbox": [["car", 1' + "0" * 5000 + ', 0.1, 0.2, 0.2]]}', "nuimages-256x256", 0, 2, 5.0, "default"],
     "a number of thousands of digits"),
    ([LAYOUT, "nuimages-256x256", 0, int("9" * 4000), 5.0, "default"],
     "steps must be a whole number between 1 and 200; got 9999"),
    ([LAYOUT, "nuimages-256x256", int("9" * 4000), 2, 5.0, "default"], "seed must be a whole number between 0 and"),
])
def test_9_geodiffusion_checks_refuse_numbers_of_thousands_of_digits(warm_hub, data, expected):
    answer = raw.call(warm_hub.url, "generate", data)
    assert not answer.ok and answer.status == 422 and expected in answer.message
    assert visitor_problem(answer.message) is None, answer.message


def test_10_config_and_pages_name_no_server_path(warm_hub):
    for route in ("/config", "/", *(f"/{demo.id}" for demo in apps.DEMOS)):
        text = requests.get(warm_hub.url + route, timeout=30).text
        for marker in (str(warm_hub.root), "/gradio_api/file=", *SERVER_PATH_MARKERS[:4]):
            assert marker not in text, (route, marker)


def test_11_toast_text_shows_the_visitors_markup_as_text(warm_hub, public_config):
    add = next(d["id"] for d in public_config["dependencies"] if d["api_name"] == "add")
    case = fuzz.Case("add", add, "add", True, json.dumps([None, "<img src=x onerror=alert(1)>é", None]))
    answer = fuzz.send(warm_hub.url, case)
    assert not answer.ok and "&lt;img src=x onerror=alert(1)&gt;é" in answer.message


@pytest.fixture(scope="module")
def auth_hub(tmp_path_factory, public_root, hub_server):
    hub = start_hub(tmp_path_factory.mktemp("auth-hub"), ["--host", "0.0.0.0", "--auth", "ada:lovelace-2024"],
                    {"DEMOHUB_CHECKPOINTS": str(public_root), "HF_ENDPOINT": hub_server.url}, free_port())
    yield hub
    hub.process.terminate()
    hub.process.wait(timeout=30)
