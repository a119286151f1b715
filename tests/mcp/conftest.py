"""One hub for tests/mcp: the real ``apps.hub.launch`` in this process, MCP on (the default), behind a login.

Public-deployment settings where they matter: downloads off (a missing weight set answers with the operator
sentence), two logins (ada, alan) and two pending jobs per session, so the MCP login and the per-caller job limit
are exercised by every call. Tiny Tag2Text, GeoDiffusion (nuImages 256) and 3D-MoLM checkpoints come from
``tiny_root``; PraX uses its bundled listeners. Nothing reaches the network (``HF_HUB_OFFLINE=1``).

``mcp_call`` / ``mcp_tools`` talk to it with the official ``mcp`` client over streamable HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import json
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import free_port

LOGINS = (("ada", "lovelace-2024"), ("alan", "turing-1936"))


def run_async(coroutine):
    """``asyncio.run`` on a thread of its own: the browser tests' Playwright (sync API) keeps an event loop running
    in the main thread for the whole session, where ``asyncio.run`` refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as worker:
        return worker.submit(asyncio.run, coroutine).result()
SESSION_JOBS = 2


@dataclass
class McpHub:
    url: str  # the hub's root, no trailing slash
    blocks: Any
    pool: Any
    settings: Any

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/gradio_api/mcp/"

    @property
    def sse_url(self) -> str:
        return f"{self.url}/gradio_api/mcp/sse"

    def context(self, demo_id: str):
        """The demo's context as the hub's page has it (same pool: a pipeline the hub loaded is a pool hit)."""
        from apps import get_demo

        return self.settings.context(get_demo(demo_id), self.pool)


def basic(user: str = "ada", password: str | None = None) -> dict[str, str]:
    password = dict(LOGINS)[user] if password is None else password
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture(scope="session")
def mcp_hub(tiny_root, tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("mcp-hf-cache")))
    mp.setenv("GRADIO_TEMP_DIR", str(tmp_path_factory.mktemp("mcp-gradio-tmp")))
    mp.setenv("DEMOHUB_CHECKPOINTS", str(tiny_root))
    mp.setenv("DEMOHUB_DEVICE", "cpu")
    from apps import hub
    from apps.settings import ServeSettings
    from shared.pool import ModelPool

    settings = ServeSettings(port=free_port(), downloads="off", auth=LOGINS, session_jobs=SESSION_JOBS)
    pool = ModelPool(budget_bytes=4 * 10**9)
    blocks, (_, url, _) = hub.launch(settings, prevent_thread_lock=True, pool=pool)
    yield McpHub(url.rstrip("/"), blocks, pool, settings)
    blocks.close()
    mp.undo()


@contextlib.asynccontextmanager
async def mcp_session(hub: McpHub, user: str = "ada"):
    """An initialised ``mcp.ClientSession`` over streamable HTTP, logged in as ``user``."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(hub.mcp_url, headers=basic(user)) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


def mcp_tools(hub: McpHub, user: str = "ada") -> list:
    """The hub's MCP tools (``mcp.types.Tool``) as listed to a logged-in client."""
    async def work():
        async with mcp_session(hub, user) as session:
            return (await session.list_tools()).tools

    return run_async(work())


def mcp_call(hub: McpHub, tool: str, arguments: dict, user: str = "ada"):
    """One tool call through the official client: the ``CallToolResult``."""
    async def work():
        async with mcp_session(hub, user) as session:
            return await session.call_tool(tool, arguments)

    return run_async(work())


def answer(result) -> dict:
    """A successful tool result's JSON answer (its first content item)."""
    assert not result.isError, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.isError, result.content[0].text[:300]
    return result.content[0].text
