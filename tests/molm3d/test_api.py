"""The named HTTP API ``ask(smiles, question)`` through gradio_client, on the tiny weights."""

from __future__ import annotations

import pytest

from apps.molm3d import DEMO
from shared.context import DemoContext
from shared.pool import ModelPool
from tests.conftest import free_port


@pytest.fixture
def served_url(tiny_as_bundled, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    from apps.molm3d.page import build

    demo = build(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    demo.queue()
    _, url, _ = demo.launch(server_port=free_port(), prevent_thread_lock=True, quiet=True)
    yield url
    demo.close()


def test_ask_endpoint(served_url):
    from gradio_client import Client

    client = Client(served_url, verbose=False)
    api = client.view_api(return_format="dict", print_info=False)
    params = [p["parameter_name"] for p in api["named_endpoints"]["/ask"]["parameters"]]
    assert params == ["smiles", "question", "decoding"]
    result = client.predict("CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "tpsa", api_name="/ask")
    assert result["task"] == "tpsa" and result["reference"]["value"] == pytest.approx(61.82, abs=0.01)
    assert result["instruction"].startswith("What is the Topological Polar Surface Area of this molecule?")
    assert not any("Fast decoding" in note for note in result["notes"])  # the official decoding by default
    fast = client.predict("CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "tpsa", "fast", api_name="/ask")
    assert fast["task"] == "tpsa" and any("Fast decoding" in note for note in fast["notes"])
    with pytest.raises(Exception, match="decoding"):
        client.predict("CCO", "tpsa", "quick", api_name="/ask")
    with pytest.raises(Exception, match="not a valid SMILES"):
        client.predict("C1CC(", "", api_name="/ask")
