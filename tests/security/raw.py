"""Raw HTTP, the way a hostile visitor talks to a hub: /gradio_api/call/*, /gradio_api/queue/join with any fn_index,
/gradio_api/upload, and reading the results from the server-sent event streams. No gradio_client here."""

from __future__ import annotations

import json
import select
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path

import requests

TIMEOUT = 120


@dataclass
class Answer:
    ok: bool  # the event completed
    status: int  # HTTP status of the request that started it (200 when the queue took it)
    message: str  # the error sentence (or the refusal detail); "" on success
    data: object = None  # the outputs on success


def session() -> str:
    return uuid.uuid4().hex[:11]


class _FromAddress(requests.adapters.HTTPAdapter):
    def __init__(self, address: str):
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, source_address=(self.address, 0), **kwargs)


def from_address(address: str) -> requests.Session:
    """HTTP from another client address of this machine (127.0.0.2, 127.0.0.3, ...: every 127.x address is this
    machine's loopback), as a visitor elsewhere would arrive."""
    http = requests.Session()
    http.mount("http://", _FromAddress(address))
    return http


def call(url: str, api_name: str, data: list, timeout: float = TIMEOUT, http=requests) -> Answer:
    """POST /gradio_api/call/<api_name>, then read its event stream to the end (``http``: a session such as
    ``from_address``'s)."""
    r = http.post(f"{url}/gradio_api/call/{api_name.lstrip('/')}", json={"data": data}, timeout=timeout)
    if r.status_code != 200:
        return Answer(False, r.status_code, detail(r))
    event_id = r.json()["event_id"]
    with http.get(f"{url}/gradio_api/call/{api_name.lstrip('/')}/{event_id}", stream=True,
                  timeout=timeout) as stream:
        event = None
        for line in stream.iter_lines(decode_unicode=True):
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                payload = json.loads(line.split(":", 1)[1]) if line[5:].strip() not in ("", "null") else None
                if event == "complete":
                    return Answer(True, 200, "", payload)
                message = payload.get("error") if isinstance(payload, dict) else str(payload)
                return Answer(False, 200, message or "")
    raise AssertionError(f"the stream of {api_name} ended without a result")


def join(url: str, fn_index: int, data: list, session_hash: str, timeout: float = TIMEOUT) -> tuple[int, object]:
    """POST /gradio_api/queue/join; returns (status, event_id or the refusal detail)."""
    body = {"data": data, "fn_index": fn_index, "session_hash": session_hash, "event_data": None,
            "trigger_id": None}
    r = requests.post(f"{url}/gradio_api/queue/join", json=body, timeout=timeout)
    return r.status_code, (r.json()["event_id"] if r.status_code == 200 else detail(r))


def messages(url: str, session_hash: str, timeout: float = TIMEOUT):
    """The messages of /gradio_api/queue/data for one session, as dicts, until the stream closes."""
    with requests.get(f"{url}/gradio_api/queue/data", params={"session_hash": session_hash}, stream=True,
                      timeout=timeout) as stream:
        for line in stream.iter_lines(decode_unicode=True):
            if line.startswith("data:"):
                yield json.loads(line[5:])


def results(url: str, session_hash: str, expected: int, timeout: float = TIMEOUT,
            seen: list | None = None) -> dict[str, Answer]:
    """Read /gradio_api/queue/data for one session until ``expected`` events completed: event_id -> Answer (every
    message read is appended to ``seen``, e.g. to look at progress updates)."""
    done: dict[str, Answer] = {}
    for msg in messages(url, session_hash, timeout):
        if seen is not None:
            seen.append(msg)
        if msg.get("msg") == "process_completed":
            output = msg.get("output") or {}
            ok = bool(msg.get("success"))
            done[msg["event_id"]] = Answer(ok, 200, "" if ok else str(output.get("error") or ""), output.get("data"))
            if len(done) >= expected:
                return done
        elif msg.get("msg") == "close_stream":
            break
    return done


def upload(url: str, *paths: Path, timeout: float = TIMEOUT) -> list[dict]:
    """Upload files as the page does; returns FileData dicts to put in ``data``."""
    files = [("files", (Path(p).name, Path(p).read_bytes())) for p in paths]
    r = requests.post(f"{url}/gradio_api/upload", files=files, timeout=timeout)
    r.raise_for_status()
    return [file_data(path) for path in r.json()]


def file_data(path: str, **extra) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}, **extra}


def fn_index(config: dict, api_name: str) -> int:
    return next(d["id"] for d in config["dependencies"] if d.get("api_name") == api_name)


def detail(response: requests.Response) -> str:
    """The sentence of a refused request: its JSON ``detail`` (or ``/run``'s ``error``), else its text."""
    try:
        payload = response.json()
    except ValueError:
        return response.text
    detail = payload.get("detail", payload.get("error", response.text)) if isinstance(payload, dict) else payload
    if isinstance(detail, list):  # a validator-style refusal: one message per parameter ("" for the valid ones)
        return " ".join(m for m in (str(d.get("message", d)) if isinstance(d, dict) else str(d) for d in detail) if m)
    return str(detail)


def get_exactly(url: str, target: str, timeout: float = TIMEOUT) -> tuple[int, str]:
    """GET ``target`` sent byte for byte (``requests`` would resolve ``../`` before sending): (status, body)."""
    host, port = url.split("//")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode(errors="replace")


def declared_body(url: str, path: str, length: int, sent: int | None = None, timeout: float = TIMEOUT) -> Answer:
    """POST ``path`` declaring ``length`` bytes of JSON, send ``sent`` of them (all by default, a megabyte at a time,
    until the hub stops reading), then read the answer."""
    host, port = url.split("//")[1].split(":")
    sent = length if sent is None else sent
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {length}\r\n\r\n".encode())
        try:
            for start in range(0, sent, 1_000_000):
                if select.select([s], [], [], 0)[0]:
                    break  # the hub answered already: stop sending, or its close would reset the answer away
                s.sendall(b"x" * min(1_000_000, sent - start))
        except OSError:
            pass  # the hub answered and closed while the body was still coming
        reply = b""
        try:
            while chunk := s.recv(65536):
                reply += chunk
        except ConnectionResetError:
            pass  # closed with our unread bytes in its buffer: what arrived before the reset is the answer
    head, _, body = reply.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head else 0
    return Answer(status == 200, status, body.decode(errors="replace"))


def in_one_session(url: str, events: list[tuple[int, list]], timeout: float = TIMEOUT) -> list[Answer]:
    """Page events one after another in one session, as a page sends them (the session keeps the state)."""
    session_hash, answers = session(), []
    for index, data in events:
        status, event_id = join(url, index, data, session_hash, timeout)
        if status != 200:
            answers.append(Answer(False, status, str(event_id)))
            continue
        answers.append(next(iter(results(url, session_hash, 1, timeout).values())))
    return answers
