"""A public hub (0.0.0.0, downloads "auto" -> off): no visitor event of any kind reaches a download.

The local Hub server holds real repos for the official PraX listeners, so a download would succeed if one were
attempted; its request log must stay empty, and so must the hub's HF cache."""

from __future__ import annotations

import re

import pytest
import requests

from tests.security import raw
from tests.security.conftest import assert_clean, honest_request_works, mcp_call

EXAMPLES = [{"string": "ab1", "label": "+"}, {"string": "x", "label": "-"}]


def visitor_sentence(demo: str, weights: str, size: str) -> str:
    """What a visitor of a public hub reads: one short sentence, no operator command, no server detail."""
    return f"The {demo} weights '{weights}' ({size}) are not on this server."


def without_id(message: str) -> str:
    return re.sub(r" \(error id [0-9a-f]{8}\)$", "", message)


@pytest.fixture(autouse=True)
def nothing_downloaded(public_hub, hub_server):
    before = len(hub_server.requests)
    yield
    assert hub_server.requests[before:] == [], "the hub contacted the Hugging Face Hub"
    assert public_hub.files_under("hf-cache") == []
    assert public_hub.files_under("cwd") == [], "nothing is written outside the caches"


@pytest.mark.parametrize(("api_name", "data", "demo", "weights", "size"), [
    ("synthesize", [EXAMPLES, "pragmatic-ft-listener", 3], "prax", "pragmatic-ft-listener", "1.20 GB"),
    ("synthesize", [EXAMPLES, "human-data-ft-listener", 3], "prax", "human-data-ft-listener", "1.20 GB"),
    ("generate", ['{"camera": "front", "bbox": [["car", 0.1, 0.4, 0.3, 0.6]]}', "nuimages-512x512", 0, 2, 5.0,
                  "default"], "geodiffusion", "nuimages-512x512", "4.91 GB"),
    ("ask", ["CCO", "molecular weight"], "molm3d", "generalist", "14 GB"),
], ids=["prax-pragmatic", "prax-human", "geodiffusion-512", "molm3d"])
def test_named_endpoint_for_missing_weights_gets_the_visitor_sentence(public_hub, api_name, data, demo, weights,
                                                                       size):
    answer = raw.call(public_hub.url, api_name, data)
    assert not answer.ok
    assert without_id(answer.message) == visitor_sentence(demo, weights, size)
    assert_clean(answer.message, public_hub.root)
    honest_request_works(public_hub.url)


@pytest.mark.parametrize(("tool", "arguments", "demo", "weights", "size"), [
    ("synthesize", {"examples": EXAMPLES, "weights": "pragmatic-ft-listener"}, "prax", "pragmatic-ft-listener",
     "1.20 GB"),
    ("generate", {"layout_json": '{"bbox": [["car", 0.1, 0.4, 0.3, 0.6]]}', "checkpoint": "nuimages-512x512",
                  "steps": 2}, "geodiffusion", "nuimages-512x512", "4.91 GB"),
    ("ask", {"smiles": "CCO", "question": "logp"}, "molm3d", "generalist", "14 GB"),
], ids=["prax", "geodiffusion", "molm3d"])
def test_mcp_tool_for_missing_weights_gets_the_visitor_sentence(public_hub, tool, arguments, demo, weights, size):
    """An agent (MCP is on by default) reaches no download either, and reads the visitor's sentence."""
    result = mcp_call(public_hub.url, tool, arguments)
    assert result.isError and without_id(result.content[0].text) == visitor_sentence(demo, weights, size)
    assert_clean(result.content[0].text, public_hub.root)
    honest_request_works(public_hub.url)


def test_the_message_id_finds_the_log_entry(public_hub):
    answer = raw.call(public_hub.url, "ask", ["CCO", "logp"])
    error_id = re.search(r"error id ([0-9a-f]{8})", answer.message)[1]
    assert f"error {error_id}: WeightsUnavailable" in public_hub.log


def test_no_download_button_is_rendered(public_config):
    labels = [c.get("props", {}).get("value") for c in public_config["components"]]
    assert not any(isinstance(v, str) and v.startswith("Download weights") for v in labels)
    assert not any(d.get("api_name") == "download" for d in public_config["dependencies"])
    texts = " ".join(str(c.get("props", {}).get("value", "")) for c in public_config["components"])
    assert "downloadable" not in texts and "not on this server" in texts


def test_raw_queue_join_of_every_event_reaches_no_download(public_hub, public_config):
    """Every fn_index the page has, joined from a raw session with junk and with missing-weight names. A session per
    join: Gradio frees a job's slot a moment after sending its result, so a script joining as fast as it reads would
    meet the per-session limit (4) on jobs that are already answered; that limit has its own tests."""
    backend = [dep for dep in public_config["dependencies"] if dep.get("backend_fn")]
    answered = refused = 0
    for dep in backend:
        for junk in (None, "pragmatic-ft-listener"):
            session = raw.session()
            status, event_id = raw.join(public_hub.url, dep["id"], [junk] * len(dep["inputs"]), session)
            if status in (400, 422):  # refused before the queue: by a validator (422) or Gradio's own input check
                refused += 1
                continue
            assert status == 200, event_id
            answered += event_id in raw.results(public_hub.url, session, 1, timeout=60)
    assert len(backend) > 30 and answered + refused == 2 * len(backend) and answered > 0 and refused > 0
    honest_request_works(public_hub.url)


def test_run_route_cannot_skip_the_queue(public_hub):
    r = requests.post(f"{public_hub.url}/gradio_api/run/synthesize", json={"data": [EXAMPLES, "tiny-literal", 3]},
                      timeout=30)
    assert r.status_code == 404 and "join the queue" in r.json()["detail"]
