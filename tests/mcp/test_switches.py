"""`demohub serve --no-mcp` as a real command: no MCP server, no MCP routes; the named API still answers.

(MCP on by default is what every other test in tests/mcp and the public hub of tests/security run against.)"""

from __future__ import annotations

import pytest
import requests

from tests.commands import start_hub
from tests.conftest import free_port
from tests.security import raw
from tests.security.conftest import HONEST_PRAX


@pytest.fixture(scope="module")
def hub_without_mcp(tmp_path_factory):
    hub = start_hub(tmp_path_factory.mktemp("no-mcp-hub"), ["--no-mcp"], {"HF_HUB_OFFLINE": "1"}, free_port())
    yield hub
    hub.process.terminate()
    hub.process.wait(timeout=30)


def test_no_mcp_turns_the_mcp_server_off(hub_without_mcp):
    assert requests.get(f"{hub_without_mcp.url}/config", timeout=30).json()["mcp_server"] is False
    for path in ("/gradio_api/mcp/", "/gradio_api/mcp", "/gradio_api/mcp/sse", "/gradio_api/mcp/schema"):
        assert requests.get(hub_without_mcp.url + path, timeout=30).status_code == 404, path
        assert requests.post(hub_without_mcp.url + path, json={}, timeout=30).status_code in (404, 405), path
    assert "Streamable HTTP URL" not in hub_without_mcp.log
    answer = raw.call(hub_without_mcp.url, "synthesize", HONEST_PRAX)
    assert answer.ok and answer.data[0]["weights"] == "tiny-literal"
