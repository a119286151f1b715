"""Hubs as strangers meet them.

``public_hub``: `demohub serve --host 0.0.0.0` as a real command in its own process (so its peak memory can be read
from /proc), with the defaults a public deployment gets (downloads "auto" resolve to off on a non-loopback bind), a
small queue so a flood is cheap to provoke, tiny Tag2Text and GeoDiffusion checkpoints, no 3D-MoLM weights, and
``HF_ENDPOINT`` pointing at a local Hub-compatible server that holds real (tiny) repos: any download attempt would
show up in its request log. It runs in an empty working directory, so anything written outside the caches shows.

``local_hub``: the hub in this process on 127.0.0.1 (downloads "auto" resolve to on), against the same local Hub.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import requests

from tests.commands import start_hub
from tests.conftest import free_port
from tests.fixtures import tiny_geodiffusion, tiny_repos
from tests.fixtures.hub_server import HubServer
from tests.security import raw

PUBLIC_QUEUE_SIZE = 4
PRAX_OFFICIAL = "pragmatic-programs/pragmatic-ft-listener"
GEODIFFUSION_COCO = "KaiChen1998/geodiffusion-coco-stuff-256x256"


@pytest.fixture(scope="session")
def hub_server(tmp_path_factory):
    server = HubServer()
    server.start()
    server.add_repo(PRAX_OFFICIAL, tiny_repos.prax_listener())
    server.add_repo("pragmatic-programs/listener-suffix-idx-300k", tiny_repos.prax_listener())
    server.add_repo(GEODIFFUSION_COCO, tiny_geodiffusion.official_repo(tmp_path_factory.mktemp("repos"), "coco_stuff"))
    yield server
    assert server.errors == [], "the Hub test server failed (a 500 of its own, not an injected fault)"
    server.stop()


@pytest.fixture(scope="session")
def public_root(tiny_root, tmp_path_factory) -> Path:
    """Checkpoints of a public hub: Tag2Text and GeoDiffusion (tiny); 3D-MoLM deliberately missing."""
    root = tmp_path_factory.mktemp("public-checkpoints")
    for demo in ("tag2text", "geodiffusion"):
        shutil.copytree(tiny_root / demo, root / demo)
    return root


@pytest.fixture(scope="session")
def public_hub(public_root, hub_server, tmp_path_factory):
    hub = start_hub(tmp_path_factory.mktemp("public-hub"),
                    ["--host", "0.0.0.0", "--queue-size", str(PUBLIC_QUEUE_SIZE)],
                    {"DEMOHUB_CHECKPOINTS": str(public_root), "HF_ENDPOINT": hub_server.url}, free_port())
    yield hub
    hub.process.terminate()
    hub.process.wait(timeout=30)


@pytest.fixture(scope="session")
def public_config(public_hub) -> dict:
    return requests.get(f"{public_hub.url}/config", timeout=30).json()


HONEST_PRAX = [[{"string": "ab1", "label": "+"}, {"string": "cd2", "label": "+"}, {"string": "x", "label": "-"}],
               "tiny-literal", 3]


def honest_request_works(url: str) -> None:
    """The next honest visitor is served: PraX on the bundled tiny listener answers with ranked regexes."""
    answer = raw.call(url, "synthesize", HONEST_PRAX)
    assert answer.ok, answer.message
    assert answer.data[0]["weights"] == "tiny-literal" and answer.data[0]["n_samples"] > 0


SERVER_PATH_MARKERS = ("/tmp/", "/root/", "/home/", "/work/", "site-packages", "Traceback", "File \"")


def assert_clean(message: str, *paths: Path) -> None:
    """A visitor-facing sentence: no server path, no traceback, no library exception dump."""
    assert message, "expected a message"
    for marker in (*SERVER_PATH_MARKERS, *(str(p) for p in paths)):
        assert marker not in message, f"{marker!r} leaked into: {message}"
    assert len(message) < 600, message


def mcp_call(url: str, tool: str, arguments: dict, headers: dict[str, str] | None = None):
    """One MCP tool call the way an agent makes it (the official ``mcp`` client, streamable HTTP): the result."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def work():
        async with streamablehttp_client(f"{url}/gradio_api/mcp/", headers=headers) as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool(tool, arguments)

    from tests.mcp.conftest import run_async

    return run_async(work())
