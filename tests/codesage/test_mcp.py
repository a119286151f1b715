"""CodeSage's MCP tools on a hub of this module's own (tiny checkpoints; the environment it sets is undone when the
module ends): ``search_code`` with files sent as data URIs and ``embed_code`` answer as the pipeline; a count out of
its limits is the page's sentence."""

from __future__ import annotations

import base64

import pytest

from apps.codesage.api import EXAMPLES
from shared.weights import REPO_ROOT
from tests.conftest import tiny_hub_running
from tests.mcp.conftest import McpHub, answer, error_text, mcp_call

QUESTION = "find an item in a sorted list"


@pytest.fixture(scope="module")
def mcp_hub(tiny_root, tmp_path_factory):
    from apps.settings import ServeSettings

    with tiny_hub_running(tiny_root, tmp_path_factory, 2_000_000_000) as (url, pool):
        yield McpHub(url, None, pool, ServeSettings())


def data_uri(path) -> str:
    return "data:text/plain;base64," + base64.b64encode(path.read_bytes()).decode()


def test_mcp_tools_search_and_embed_as_the_pipeline(mcp_hub):
    out = answer(mcp_call(mcp_hub, "search_code", {"query": QUESTION, "files": [data_uri(REPO_ROOT / p)
                                                                                for p in EXAMPLES], "top_k": 2}))
    direct = mcp_hub.context("codesage").pipeline()(QUESTION, "", [REPO_ROOT / p for p in EXAMPLES], 2).to_dict()
    assert [m["code"] for m in out["matches"]] == [m["code"] for m in direct["matches"]]
    embedded = answer(mcp_call(mcp_hub, "embed_code", {"code": "x = 1"}))
    assert embedded["embedding"] == pytest.approx(list(mcp_hub.context("codesage").pipeline().embed("x = 1")
                                                       .embedding), abs=1e-6)
    text = error_text(mcp_call(mcp_hub, "search_code", {"query": QUESTION, "code": "", "top_k": 99}))
    assert "top_k must be a whole number between 1 and 50" in text
