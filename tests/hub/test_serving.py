"""apps.serving.admit: which queue events a public hub turns away, and with which sentence."""

from __future__ import annotations

from types import SimpleNamespace

from apps.serving import BUSY, TOO_MANY, URL_REFUSED, admit
from apps.settings import ServeSettings


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
