"""Hostile inputs for every event a hub serves, generated from what the hub itself publishes (``/config``, the MCP
tool list), and the raw requests that deliver them.

For each event (page events by ``fn_index``, named endpoints, ``queue=False`` events through ``/run/*``) and each of
its inputs, one request per hostile value of that input's kind, the other inputs at their honest defaults. Values
travel as raw JSON text, so numbers with thousands of digits and deeply nested lists arrive as a stranger writes
them. Nothing here names an event: a new page or endpoint is fuzzed the day it exists.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import requests

from tests.security import raw

TIMEOUT = 120
HUGE_TEXT = "x" * 300_000  # a third of the default request budget: reaches the checks, not the body limit
DEEP = "[" * 20_000 + "]" * 20_000
XSS = "<img src=x onerror=alert(1)>"
FILE_META = {"_type": "gradio.FileData"}

# Hostile values by input kind, as (name, raw JSON text).
_ANY = [
    ("huge-text", json.dumps(HUGE_TEXT)),
    ("odd-unicode", '"\\u202e\\u200b\\ud800\\u0000\\uffff"'),
    ("markup", json.dumps(XSS)),
    ("4000-digits", "9" * 4000),
    ("minus-1e308", "-1e308"),
    ("deep-list", DEEP),
    ("object", '{"a": {"b": [1, 2, {"c": null}]}}'),
    ("empty-list", "[]"),
    ("null", "null"),
    ("true", "true"),
]
HOSTILE: dict[str, list[tuple[str, str]]] = {
    "textbox": [v for v in _ANY if v[0] in ("huge-text", "odd-unicode", "markup", "4000-digits", "deep-list",
                                            "object", "null", "true")] + [("empty", '""')],
    "number": [("4000-digits", "9" * 4000), ("minus-4000-digits", "-" + "9" * 4000), ("1e308", "1e308"),
               ("fraction", "0.5"), ("negative", "-1"), ("text", '"abc"'), ("true", "true"), ("list", "[1]")],
    "checkbox": [("text", '"yes"'), ("number", "2"), ("null", "null")],
    "dropdown": [("unknown-choice", '"no-such-choice"'), ("4000-digits", "9" * 4000), ("list", '["a"]'),
                 ("object", '{"x": 1}'), ("empty", '""'), ("markup", json.dumps(XSS))],
    "checkboxgroup": [("text", '"a"'), ("nested", '[["a"]]'), ("4000-digits", "[" + "9" * 4000 + "]"),
                      ("many", json.dumps([str(i) for i in range(20_000)]))],
    "dataset": [("far-index", "1000000000"), ("negative", "-1"), ("text", '"0"'), ("fraction", "1.5"),
                ("4000-digits", "9" * 4000)],
    "file": [("server-path", json.dumps({"path": "/etc/passwd", "meta": FILE_META})),
             ("traversal", json.dumps({"path": "../../../../etc/passwd", "meta": FILE_META})),
             ("web-address", json.dumps({"path": "http://127.0.0.1:1/x.png", "url": "http://127.0.0.1:1/x.png",
                                         "meta": FILE_META})),
             ("path-number", json.dumps({"path": 7, "meta": FILE_META})), ("text", '"not a file"'),
             ("number", "42"), ("list-of-junk", "[1, null, {}]")],
    "dataframe": [("text", '"table"'), ("wide", json.dumps({"headers": ["a"] * 300, "data": [[1] * 300] * 300})),
                  ("number", "42"), ("rows-of-junk", json.dumps({"headers": ["label"], "data": [[None], [XSS]]}))],
    "api": _ANY,
}
HOSTILE["code"] = HOSTILE["html"] = HOSTILE["markdown"] = HOSTILE["textbox"]
HOSTILE["slider"] = HOSTILE["number"]
HOSTILE["radio"] = HOSTILE["dropdown"]
HOSTILE["image"] = HOSTILE["gallery"] = HOSTILE["model3d"] = HOSTILE["audio"] = HOSTILE["file"]
UNSENT = {"state"}  # kinds whose value the session holds, not the request (Gradio reads it from the session's state)


def hostile_values(kind: str) -> list[tuple[str, str]]:
    """The hostile values for an input of ``kind``; a kind the harness has none for is an error, so a new input kind
    cannot be left out of the harness unnoticed."""
    if kind in UNSENT:
        return []
    if kind not in HOSTILE:
        raise KeyError(f"the fuzz harness has no hostile values for input kind {kind!r}: add them to HOSTILE")
    return HOSTILE[kind]

# Whole-request shapes that no input list has.
SHAPES = [("no-values", '[]'), ("not-a-list", '"x"')]


@dataclass(frozen=True)
class Case:
    id: str
    fn_index: int
    api_name: str | None
    queued: bool
    data: str  # the raw JSON list of values


def honest_value(component: dict) -> str:
    """The component's own default, as JSON (an example list: its first example)."""
    kind, props = component["type"], component.get("props", {})
    if kind == "dataset":
        return "0"
    if kind == "state":
        return "null"
    return json.dumps(props.get("value"))


def cases(config: dict) -> Iterator[Case]:
    components = {c["id"]: c for c in config["components"]}
    for dep in config["dependencies"]:
        if not dep.get("backend_fn"):
            continue
        queued = dep.get("queue") is not False
        inputs = [components[i] for i in dep["inputs"]]
        honest = [honest_value(c) for c in inputs]
        name = f"{dep['id']}:{dep.get('api_name')}"
        for shape, text in SHAPES if inputs else ():
            yield Case(f"{name}/{shape}", dep["id"], dep.get("api_name"), queued, text)
        for i, component in enumerate(inputs):
            label = component.get("props", {}).get("label") or component["type"]
            for value_name, text in hostile_values(component["type"]):
                values = [*honest[:i], text, *honest[i + 1:]]
                yield Case(f"{name}/{i}:{label}={value_name}", dep["id"], dep.get("api_name"), queued,
                           "[" + ", ".join(values) + "]")


@dataclass
class Answer:
    ok: bool
    status: int
    message: str | None
    seconds: float
    data: object = None


def send(url: str, case: Case, timeout: float = TIMEOUT) -> Answer:
    """Deliver one case the way the page would (``/queue/join`` + the session's event stream), or through
    ``/run/<api_name>`` for an event that skips the queue."""
    start = time.monotonic()
    if not case.queued:
        body = '{"data": ' + case.data + ', "session_hash": "' + uuid.uuid4().hex[:11] + '"}'
        r = requests.post(f"{url}/gradio_api/run/{case.api_name}", data=body.encode(), timeout=timeout,
                          headers={"content-type": "application/json"})
        if r.status_code == 200:
            return Answer(True, 200, None, time.monotonic() - start, r.json())
        return Answer(False, r.status_code, raw.detail(r) or None, time.monotonic() - start)
    session = uuid.uuid4().hex[:11]
    body = ('{"data": ' + case.data + f', "fn_index": {case.fn_index}, "session_hash": "{session}", '
            '"event_data": null, "trigger_id": null}')
    r = requests.post(f"{url}/gradio_api/queue/join", data=body.encode(), timeout=timeout,
                      headers={"content-type": "application/json"})
    if r.status_code != 200:
        return Answer(False, r.status_code, raw.detail(r) or None, time.monotonic() - start)
    toast = None  # a page event's refusal: its sentence as a warning toast, its outputs left as they were
    with requests.get(f"{url}/gradio_api/queue/data", params={"session_hash": session}, stream=True,
                      timeout=timeout) as stream:
        for line in stream.iter_lines(decode_unicode=True):
            if not line.startswith("data:"):
                continue
            msg = json.loads(line[5:])
            if msg.get("msg") == "log" and msg.get("level") in ("warning", "error"):
                toast = msg.get("log")
            if msg.get("msg") == "process_completed":
                output = msg.get("output") or {}
                ok = bool(msg.get("success")) and toast is None
                return Answer(ok, 200, None if ok else toast or output.get("error"), time.monotonic() - start,
                              output.get("data"))
    return Answer(False, 200, "the event stream ended without a result", time.monotonic() - start)


def strings_in(value) -> Iterator[str]:
    """Every string inside an event's outputs, file references' server paths left out."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in ("path", "url", "orig_name"):
                yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


MCP_HOSTILE = [("huge-text", HUGE_TEXT), ("markup", XSS), ("4000-digits", int("9" * 4000)), ("minus-1e308", -1e308),
               ("deep-list", json.loads("[" * 200 + "]" * 200)),  # deeper than the mcp client itself serialises
               ("object", {"a": [1, {"b": None}]}), ("null", None), ("true", True), ("empty-list", []),
               ("server-path", "/etc/passwd")]


def mcp_cases(tools: list) -> Iterator[tuple[str, str, dict, object]]:
    """(case id, tool, arguments, the hostile value): each argument of each tool hostile in turn, the others at
    their defaults."""
    for tool in tools:
        schema = tool.inputSchema or {}
        properties = schema.get("properties", {})
        honest = {name: prop.get("default") for name, prop in properties.items() if "default" in prop}
        for name in properties:
            for value_name, value in MCP_HOSTILE:
                yield f"{tool.name}/{name}={value_name}", tool.name, {**honest, name: value}, value
