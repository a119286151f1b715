"""The hub as an MCP server, through the official ``mcp`` Python client (streamable HTTP, and one SSE check).

Each tool is a public named endpoint: its answer is the endpoint's ``to_dict()`` as JSON text, a bad input is refused
with the sentence the page shows, and the hub's login, downloads rule and per-session job limit hold for agents.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import functools
import itertools
import json
import re
import threading
import time
from pathlib import Path

import httpx
import pytest

from apps.serving import MCP_LOGIN, URL_REFUSED_MCP, pending_jobs
from tests.endpoints import DECLARED, HUB_ENDPOINTS, honest_call
from tests.mcp.conftest import SESSION_JOBS, answer, basic, error_text, mcp_call, mcp_session, mcp_tools, run_async

TOOLS = {*HUB_ENDPOINTS, *DECLARED}
ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"
SPEC = [{"string": "123", "label": "+"}, {"string": "4567", "label": "+"}, {"string": "ab", "label": "-"}]


def data_uri(path: str | Path) -> str:
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()


# ---------------------------------------------------------------- the tool list


def test_config_says_mcp_and_the_tools_are_exactly_the_named_endpoints(mcp_hub):
    config = httpx.get(f"{mcp_hub.url}/config", headers=basic(), timeout=30)
    assert config.status_code == 401, "the config itself needs the page login (a cookie), not Basic credentials"
    tools = {tool.name: tool for tool in mcp_tools(mcp_hub)}
    assert set(tools) == TOOLS, "internal UI events must stay out of the tool list"
    assert mcp_hub.blocks.config["mcp_server"] is True
    for tool in tools.values():
        assert len(tool.description) > 40 and "Returns:" in tool.description, tool.name
        for name, schema in tool.inputSchema["properties"].items():
            assert len(schema.get("description", "")) > 10, f"{tool.name}.{name} has no Args: entry"
    image = tools["tag_image"].inputSchema["properties"]["image"]
    assert image["type"] == "string" and "required" not in image and "data URI" in image["description"]
    assert tools["synthesize"].inputSchema["required"] == ["examples"]
    assert "default 5" in tools["synthesize"].inputSchema["properties"]["k"]["description"]


# ---------------------------------------------------------------- each demo's tools answer to_dict()


def test_prax_synthesize_answers_ranked_regexes_that_match_the_examples(mcp_hub):
    from apps.prax import actions, dsl

    started = time.perf_counter()
    out = answer(mcp_call(mcp_hub, "synthesize", {"examples": SPEC, "weights": "tiny-literal", "k": 5}))
    print(f"synthesize over MCP: {time.perf_counter() - started:.2f} s")
    assert out == actions.synthesize(mcp_hub.context("prax"), SPEC, "tiny-literal", k=5).to_dict()
    assert out["weights"] == "tiny-literal" and 1 <= len(out["candidates"]) <= 5 and out["n_consistent"] >= 1
    labels = [e["label"] == "+" for e in SPEC]
    for candidate in out["candidates"]:  # "matches" is the regex run on each example, best guess first
        assert candidate["matches"] == [dsl.matches(candidate["program"], e["string"]) for e in SPEC]
    assert any(c["matches"] == labels for c in out["candidates"]), out["candidates"]


def test_prax_suggest(mcp_hub):
    from apps.prax import actions, dsl

    out = answer(mcp_call(mcp_hub, "suggest", {"examples": SPEC}))
    assert out == actions.suggest(mcp_hub.context("prax"), SPEC, "tiny-pragmatic").to_dict()
    assert out["example"]["label"] in ("+", "-") and out["example"]["string"] not in {e["string"] for e in SPEC}
    # Independent of the pool's own answer: the label is what the listener's top guess says about the string.
    assert out["example"]["label"] == ("+" if dsl.matches(out["assumed_program"], out["example"]["string"]) else "-")


def test_tag2text_tag_image_takes_a_data_uri_and_answers_the_pipelines_to_dict(mcp_hub, tmp_path):
    from apps.tag2text import actions

    image = actions.example_images()[1]
    out = answer(mcp_call(mcp_hub, "tag_image", {"image": data_uri(image), "threshold": 0.4,
                                                 "user_tags": "red car"}))
    direct = mcp_hub.context("tag2text").pipeline()(image, 0.4, "red car").to_dict()
    (result,), (expected,) = out.pop("results"), direct.pop("results")
    assert out == direct and set(result) == set(expected)
    assert {k: v for k, v in result.items() if k != "name"} == {k: v for k, v in expected.items() if k != "name"}
    assert "/" not in result["name"], "no server path in an answer"


def test_tag2text_tag_batch_takes_a_list_of_data_uris(mcp_hub):
    """A list-of-files input over MCP: Gradio turned no data URI of a list into a file (the schema's position of a
    list's items is never a value's), so the batch refused every call; each item is one now."""
    from apps.tag2text import actions

    images = actions.example_images()[:2]
    out = answer(mcp_call(mcp_hub, "tag_batch", {"files": [data_uri(i) for i in images], "threshold": 0.4,
                                                 "user_tags": ""}))
    assert len(out["results"]) == 2 and all("/" not in r["name"] for r in out["results"])


def test_tag2text_refuses_a_web_address_and_says_to_send_a_data_uri(mcp_hub):
    url = "https://example.com/cat.png"
    text = error_text(mcp_call(mcp_hub, "tag_image", {"image": url}))
    assert URL_REFUSED_MCP.format(url=url) in text


def test_molecule_properties_for_aspirin_are_rdkits_own(mcp_hub):
    from rdkit import Chem
    from rdkit.Chem import AllChem, Crippen, Descriptors, rdDistGeom, rdMolDescriptors

    out = answer(mcp_call(mcp_hub, "molecule_properties", {"smiles": ASPIRIN}))
    mol = Chem.MolFromSmiles(ASPIRIN)
    values = {p["key"]: p["value"] for p in out["properties"]}
    assert values["molecular_weight"] == round(Descriptors.MolWt(mol), 4) == 180.159
    assert values["logp"] == round(Crippen.MolLogP(mol), 4)
    assert values["tpsa"] == round(rdMolDescriptors.CalcTPSA(mol), 4) == 63.6
    assert values["homo"] is None and values["complexity"] is None, "RDKit cannot compute these faithfully"
    assert (out["formula"], out["num_atoms"], out["num_heavy_atoms"]) == ("C9H8O4", 21, 13)
    assert out["canonical_smiles"] == Chem.MolToSmiles(mol)
    # the conformer: the official ETKDG (seed 42) + MMFF preprocessing, its MMFF94 energy as RDKit computes it
    mol_h = Chem.AddHs(mol)
    params = rdDistGeom.ETKDGv3()
    params.randomSeed = 42
    assert rdDistGeom.EmbedMolecule(mol_h, params) == 0
    AllChem.MMFFOptimizeMolecule(mol_h)
    energy = AllChem.MMFFGetMoleculeForceField(mol_h, AllChem.MMFFGetMoleculeProperties(mol_h)).CalcEnergy()
    conformer = out["conformer"]
    assert conformer["mmff_energy"] == pytest.approx(energy, abs=1e-6)
    assert (conformer["seed"], conformer["used_fallback"]) == (42, False)
    assert conformer["xyz"].splitlines()[0] == "13" and len(conformer["xyz"].splitlines()) == 15


def test_encode_layout_is_the_pipelines_own_prompt_encoding(mcp_hub, tiny_root):
    from apps.geodiffusion.layout import encode_prompt, load_generation_config
    from apps.geodiffusion.tokens import LocationTokenizer

    layout = {"camera": "back", "bbox": [["car", 0.1, 0.4, 0.3, 0.6], ["pedestrian", 0.5, 0.5, 0.55, 0.7]]}
    out = answer(mcp_call(mcp_hub, "encode_layout", {"layout_json": json.dumps(layout),
                                                     "checkpoint": "nuimages-256x256"}))
    folder = tiny_root / "geodiffusion" / "nuimages-256x256"
    config = load_generation_config(folder)
    tokenizer = LocationTokenizer.from_pretrained(folder / "tokenizer", config.num_location_tokens)
    assert out["prompt"] == encode_prompt(layout, config)
    assert out["prompt"].startswith("A driving scene image of back camera with car <l")
    assert out["token_count"] == len(tokenizer.content_ids(out["prompt"])) + 2 and out["max_tokens"] == 77
    pipe = mcp_hub.context("geodiffusion").pipeline()  # the model the hub's /generate would use
    assert out["input_ids"] == pipe.encode_ids([out["prompt"]])[0].tolist()
    assert (out["generation_config"], out["location_grid"], out["dropped_boxes"], out["warnings"]) == (
        "checkpoint", [config.num_bucket_per_side[0], config.num_bucket_per_side[1]], [], [])
    assert out["layout"]["bbox"] == layout["bbox"]


def test_encode_layout_for_a_checkpoint_not_on_the_server_gives_the_prompt_and_says_what_is_unknown(mcp_hub):
    from apps.geodiffusion.layout import KNOWN_CONFIGS, encode_prompt

    layout = json.dumps({"bbox": [["dog", 0.2, 0.2, 0.6, 0.9]]})
    out = answer(mcp_call(mcp_hub, "encode_layout", {"layout_json": layout, "checkpoint": "coco-stuff-256x256"}))
    assert out["prompt"] == encode_prompt(layout, KNOWN_CONFIGS["coco-stuff-256x256"])
    assert (out["generation_config"], out["token_count"], out["input_ids"], out["dropped_boxes"]) == (
        "released", None, None, None)
    assert out["warnings"] == ["The coco-stuff-256x256 tokenizer is not on this server, so the token count and the "
                               "boxes CLIP's 77-token limit would cut are unknown; the prompt itself is exact (it "
                               "needs only the checkpoint's generation config)."]


def test_generate_answers_images_as_data_urls_and_as_mcp_images(mcp_hub):
    layout = json.dumps({"bbox": [["car", 0.1, 0.4, 0.3, 0.6]]})
    result = mcp_call(mcp_hub, "generate", {"layout_json": layout, "checkpoint": "nuimages-256x256", "seed": 3,
                                            "steps": 2})
    out = answer(result)
    assert out["seed"] == 3 and out["num_inference_steps"] == 2 and len(out["images"]) == 1
    png = out["images"][0].removeprefix("data:image/png;base64,")
    assert [(c.type, c.mimeType, c.data) for c in result.content[1:]] == [("image", "image/png", png)]


def test_catalog(mcp_hub):
    from apps import catalog

    out = answer(mcp_call(mcp_hub, "catalog", {"query": "molecule", "only_demos": True}))
    assert out == [e.as_dict() for e in catalog.search("molecule", True)] and out[0]["demo"] == "molm3d"


# ---------------------------------------------------------------- refusals: the page's sentences


@pytest.mark.parametrize(("tool", "arguments", "argument"), [
    ("synthesize", {"examples": []}, "examples"),
    ("synthesize", {"examples": SPEC, "k": 0}, "k"),
    ("molecule_properties", {"smiles": "C1CC("}, "smiles"),
    ("molecule_properties", {"smiles": "CCO", "seed": -1}, "seed"),
    ("encode_layout", {"layout_json": '{"bbox": [["unicorn", 0.1, 0.1, 0.2, 0.2]]}'}, "layout_json"),
], ids=["no-examples", "k", "smiles", "seed", "label"])
def test_bad_input_gets_the_pages_sentence_before_queueing(mcp_hub, monkeypatch, tool, arguments, argument):
    """The endpoint's validator and the MCP tool run the same declared check; the tool's error carries its sentence,
    and the endpoint's function never runs."""
    from shared.errors import UserInputError

    demo, endpoint = DECLARED[tool]
    ctx = mcp_hub.context(demo.id)
    with pytest.raises(UserInputError) as expected:
        endpoint.check_call(ctx, endpoint.defaults(ctx) | arguments)
    block_fn = next(fn for fn in mcp_hub.blocks.fns.values() if fn.api_name == tool)
    ran = []
    handler = block_fn.fn
    monkeypatch.setattr(block_fn, "fn", functools.wraps(handler)(lambda *a, **k: ran.append(a) or handler(*a, **k)))
    text = error_text(mcp_call(mcp_hub, tool, arguments))
    assert f"- {argument}: {expected.value}" in text, text
    assert ran == [], "the refused call reached the endpoint's function"
    honest = mcp_call(mcp_hub, tool, honest_call(endpoint))
    assert not honest.isError and len(ran) == 1, "the probe sees an honest call run"


def test_missing_weights_answer_with_the_pages_sentence(mcp_hub):
    """Downloads are off on this hub, which only this machine reaches: an agent asking for the official PraX
    listener reads the sentence the page's banner shows (for the operator: why, and the command)."""
    from apps.prax import DEMO

    expected = mcp_hub.settings.context(DEMO).weights_message("pragmatic-ft-listener")
    text = error_text(mcp_call(mcp_hub, "synthesize", {"examples": SPEC, "weights": "pragmatic-ft-listener"}))
    assert re.fullmatch(re.escape(expected) + r" \(error id [0-9a-f]{8}\)", text), text  # as the page
    assert "are not on this server" in text and "demohub download prax --weights pragmatic-ft-listener" in text
    assert "HF_HUB_OFFLINE=1 is set" in text, "the operator reads why"


# ---------------------------------------------------------------- the login, SSE, the per-caller job limit


STRANGERS = itertools.count(10)


@pytest.mark.parametrize("path", ["/gradio_api/mcp/", "/gradio_api/mcp", "/gradio_api/mcp/sse",
                                  "/gradio_api/mcp/messages/", "/gradio_api/mcp/schema"])
@pytest.mark.parametrize("headers", [{}, basic("ada", "wrong"), basic("nobody", "x"), {"Authorization": "Bearer x"}],
                         ids=["none", "wrong-password", "unknown-user", "bearer"])
def test_mcp_needs_the_hub_login(mcp_hub, path, headers):
    # Each case from an address of its own, as strangers arrive: wrong passwords slow down their own client only
    # (two tries here, under its free ones), never the members' calls from 127.0.0.1 in the tests below.
    stranger = httpx.Client(transport=httpx.HTTPTransport(local_address=f"127.0.0.{next(STRANGERS)}"))
    for method in ("GET", "POST"):
        r = stranger.request(method, mcp_hub.url + path, headers=headers, json={}, timeout=30)
        assert r.status_code == 401 and r.text == MCP_LOGIN and r.headers["www-authenticate"].startswith("Basic")


def test_mcp_with_the_login_works_for_each_user(mcp_hub):
    for user in ("ada", "alan"):
        assert {t.name for t in mcp_tools(mcp_hub, user)} == TOOLS
    r = httpx.get(f"{mcp_hub.url}/gradio_api/mcp/schema", headers=basic("alan"), timeout=30)
    assert r.status_code == 200 and {t["name"] for t in r.json()} == TOOLS


def test_sse_transport(mcp_hub):
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    async def work():
        async with sse_client(mcp_hub.sse_url, headers=basic()) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = {t.name for t in (await s.list_tools()).tools}
            return tools, await s.call_tool("molecule_properties", {"smiles": "CCO"})

    tools, result = run_async(work())
    assert tools == TOOLS and answer(result)["formula"] == "C2H6O"


def test_each_mcp_caller_has_its_own_job_limit(mcp_hub, monkeypatch):
    """All MCP calls reach the queue through Gradio's one loopback client (one session); the hub counts them per
    caller instead: ada's third pending call is refused, alan's first is served meanwhile."""
    from apps.prax import actions

    release = threading.Event()
    synthesize = actions.synthesize

    def held(*args, **kwargs):
        release.wait(60)
        return synthesize(*args, **kwargs)

    monkeypatch.setattr(actions, "synthesize", held)
    queue = mcp_hub.blocks._queue
    request = {"examples": SPEC, "weights": "tiny-literal", "k": 1}

    async def scenario():
        async with mcp_session(mcp_hub, "ada") as ada, mcp_session(mcp_hub, "alan") as alan:
            held_calls = [asyncio.create_task(ada.call_tool("synthesize", request)) for _ in range(SESSION_JOBS)]
            deadline = time.monotonic() + 30
            while pending_jobs(queue, "mcp:user:ada") < SESSION_JOBS and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            try:
                refused = await ada.call_tool("synthesize", request)
                served = await alan.call_tool("molecule_properties", {"smiles": "CCO"})
            finally:
                release.set()
            return refused, served, await asyncio.gather(*held_calls)

    refused, served, held_results = run_async(scenario())
    assert "You already have 2 requests waiting or running (the limit is 2)" in error_text(refused)
    assert answer(served)["formula"] == "C2H6O"
    assert all(answer(r)["weights"] == "tiny-literal" for r in held_results)


def test_readme_mcp_snippet(mcp_hub, capsys):
    """docs/mcp.md's Python example, run as written (the hub's address and a login of this hub swapped in)."""
    from shared.weights import REPO_ROOT

    blocks = re.findall(r"```python\n(.*?)```", (REPO_ROOT / "docs" / "mcp.md").read_text(encoding="utf-8"), re.S)
    [snippet] = [b for b in blocks if "streamablehttp_client" in b]
    for written, here in (('"http://127.0.0.1:7860"', repr(mcp_hub.url)), ('b"ada:secret"', 'b"ada:lovelace-2024"')):
        assert written in snippet
        snippet = snippet.replace(written, here)
    code = compile(snippet, "docs/mcp.md", "exec")
    with concurrent.futures.ThreadPoolExecutor(1) as worker:  # its asyncio.run needs a thread without a running loop
        worker.submit(exec, code, {"__name__": "readme"}).result()
    printed = capsys.readouterr().out.splitlines()
    assert printed == [str(sorted(TOOLS)), "C9H8O4 13"]
