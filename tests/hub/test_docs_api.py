"""docs/api.md ("Use from code"): every Python (``gradio_client``) and JavaScript (``@gradio/client``) snippet
shown there is run, as written, against a running hub (PraX on its bundled weights, the other demos on tiny
checkpoints in the official layouts), and the values it got are checked.

Only the base URL is replaced. Each snippet runs in a fresh interpreter (``python`` / ``node``) in a folder holding
the ``photo.jpg`` and ``street.png`` it names; a line the test adds at the end (before a Node snippet's closing
``process.exit()``) prints the snippet's variables (``result``, ``hint``, ``batch``, ``papers``) as JSON."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from base64 import b64decode
from pathlib import Path

import pytest
from PIL import Image

from apps.prax import dsl
from shared.weights import REPO_ROOT
from tests.conftest import tiny_hub_running
from tests.endpoints import DECLARED, HUB_ENDPOINTS
from tests.endpoints import demo_of as demo_of_endpoint
from tests.js.node import NODE_MODULES, RESULT, node, result_of, run_node

API_DOC = REPO_ROOT / "docs" / "api.md"
BASE_URL = "http://127.0.0.1:7860"
ENDPOINTS = {f"/{name}": demo_of_endpoint(name) for name in (*HUB_ENDPOINTS, *DECLARED)}
VARIABLES = ("result", "hint", "batch", "papers")
PY_DUMP = (f"\nimport json as _json\nprint({RESULT!r} + _json.dumps({{_k: _v for _k, _v in globals().items() "
           f"if _k in {VARIABLES!r}}}))\n")
JS_DUMP = ("\nconsole.log(" + repr(RESULT).replace("'", '"') + " + JSON.stringify({"
           + ", ".join(f'{v}: typeof {v} === "undefined" ? undefined : {v}' for v in VARIABLES) + "}));\n")


def section_text() -> str:
    return API_DOC.read_text(encoding="utf-8")


def snippets(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", section_text(), flags=re.M | re.S)


def demo_of(code: str) -> str:
    """The demo whose endpoints a snippet calls; "unknown" for a snippet that calls none or several (its test fails:
    every snippet shown has its values checked here)."""
    demos = {ENDPOINTS[name] for name in re.findall(r'"(/\w+)"', code) if name in ENDPOINTS}
    return demos.pop() if len(demos) == 1 else "unknown"


CASES = [pytest.param(lang, code, id=f"{lang}-{demo_of(code)}-{i}") for lang in ("python", "js")
         for i, code in enumerate(snippets(lang))]


def test_docs_snippets_call_declared_endpoints_in_python_and_javascript(hub_url):
    from gradio_client import Client

    client = Client(hub_url, verbose=False)
    named = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    client.close()
    assert set(ENDPOINTS) <= set(named), f"declared but not served: {set(ENDPOINTS) - set(named)}"
    for lang, call in (("python", r'api_name="(/\w+)"'), ("js", r'predict\("(/\w+)"')):
        shown = [name for code in snippets(lang) for name in re.findall(call, code)]
        assert set(shown) <= set(ENDPOINTS), f"{lang}: not endpoints of the hub: {set(shown) - set(ENDPOINTS)}"
        assert {ENDPOINTS[name] for name in shown} == set(CHECKS), f"{lang}: {sorted(shown)}"
    for code in snippets("python") + snippets("js"):
        assert code.count(BASE_URL) == 1, "each snippet names the hub once, as http://127.0.0.1:7860"


def test_the_reference_is_generated_from_the_declarations():
    """docs/api.md's reference lists every declared endpoint with its inputs and limits, as the declarations say
    (``python -m apps.api_docs`` rewrites it after a declaration changes)."""
    from apps import api_docs

    page = section_text()
    assert page == api_docs.page_with_reference(page), "docs/api.md's reference is stale: run python -m apps.api_docs"
    for name, (_, endpoint) in DECLARED.items():
        entry = page.split(f"#### `/{name}`")[1].split("####")[0]
        assert all(f"| `{i.name}` |" in entry for i in endpoint.inputs), name


@pytest.fixture(scope="module")
def tiny_hub(tiny_root, tmp_path_factory):
    """A real hub (apps.hub.launch), offline, whose demos find tiny checkpoints through DEMOHUB_CHECKPOINTS."""
    with tiny_hub_running(tiny_root, tmp_path_factory, 2_000_000_000) as (url, _):
        yield url


@pytest.fixture
def workdir(tmp_path):
    """The folder a snippet runs in: the two images it names, and (for Node) the pinned @gradio/client."""
    Image.radial_gradient("L").convert("RGB").resize((96, 96)).save(tmp_path / "photo.jpg")
    Image.linear_gradient("L").convert("RGB").resize((120, 80)).save(tmp_path / "street.png")
    return tmp_path


def run_snippet(lang: str, code: str, url: str, folder: Path) -> tuple[str, dict]:
    code = code.replace(BASE_URL, url)
    if lang == "python":
        script = folder / "snippet.py"
        script.write_text(code + PY_DUMP)
        proc = subprocess.run([sys.executable, str(script)], cwd=folder, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"the snippet failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    else:
        node()  # fails with how to install Node.js / the pinned client when they are missing
        (folder / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
        script = folder / "snippet.mjs"
        body, exit_line = code.rstrip("\n").rsplit("\n", 1)
        assert exit_line.startswith("process.exit("), "a Node snippet ends with process.exit() (see its comment)"
        script.write_text(body + JS_DUMP + exit_line + "\n")
        proc = run_node(script, cwd=folder, timeout=120)
    printed = proc.stdout.split(RESULT, 1)[0]
    assert printed.strip(), "the snippet prints the answer's fields"
    return printed, result_of(proc)


def check_prax(printed: str, v: dict, folder: Path) -> None:
    examples = [("ab1", True), ("xy7", True), ("ab", False)]
    result = v["result"]
    assert [(e["string"], e["label"] == "+") for e in result["examples"]] == examples
    assert result["weights"] == "tiny-pragmatic", "the server's default: the bundled pragmatic listener"
    assert len(result["candidates"]) == 5
    for guess in result["candidates"]:
        fits = [dsl.matches(guess["program"], s) for s, _ in examples]
        assert guess["matches"] == fits == [label for _, label in examples], guess["program"]
    probabilities = [c["probability"] for c in result["candidates"]]
    assert probabilities == sorted(probabilities, reverse=True) and all(0 < p <= 1 for p in probabilities)
    assert result["candidates"][0]["program"] in printed
    hint = v["hint"]
    assert hint["example"]["label"] in "+-" and hint["example"]["string"] not in {s for s, _ in examples}
    assert dsl.matches(hint["assumed_program"], "ab1") and dsl.matches(hint["assumed_program"], "xy7")
    assert 0 < hint["speaker_probability"] <= 1 and hint["n_programs"] >= 1
    assert dsl.matches(hint["assumed_program"], hint["example"]["string"]) == (hint["example"]["label"] == "+")
    assert "would single out" in printed


def check_tag2text(printed: str, v: dict, folder: Path) -> None:
    result, batch = v["result"], v["batch"]
    assert result["threshold"] == 0.68 and result["skipped"] == [] and len(result["results"]) == 1
    first = result["results"][0]
    assert first["name"] == "photo.jpg" and first["user_tags"] == []
    assert first["tags"] and all(t["score"] >= 0.68 and t["name"] for t in first["tags"])
    assert isinstance(first["caption"], str) and first["caption"].strip()
    assert first["caption_tags"] == [t["name"] for t in first["tags"]], "the recognised tags guide the caption"
    assert [r["name"] for r in batch["results"]] == ["photo.jpg", "street.png"]
    for r in batch["results"]:
        assert r["user_tags"] == r["caption_tags"] == ["dog", "grass"], "your tags replace the recognised ones"
        assert all(t["score"] >= 0.68 for t in r["tags"]) and r["caption"].strip()
    assert [t["name"] for t in batch["results"][0]["tags"]] == [t["name"] for t in first["tags"]], "same image"
    assert first["tags"][0]["name"] in printed and "street.png" in printed


def check_geodiffusion(printed: str, v: dict, folder: Path) -> None:
    result = v["result"]
    boxes = [["car", 0.1, 0.4, 0.5, 0.9], ["pedestrian", 0.6, 0.3, 0.7, 0.8]]
    assert result["layout"]["bbox"] == boxes and result["layout"]["camera"] == "front"
    assert re.fullmatch(r"A driving scene image of front camera with car <l\d+> <l\d+> pedestrian <l\d+> <l\d+>",
                        result["prompt"]), result["prompt"]
    assert (result["seed"], result["num_inference_steps"], result["guidance_scale"]) == (7, 25, 5.0)
    assert result["dropped_boxes"] == [] and len(result["images"]) == 1
    assert result["images"][0].startswith("data:image/png;base64,")
    shown = Image.open(io.BytesIO(b64decode(result["images"][0].split(",", 1)[1])))
    saved = Image.open(folder / "scene.png")
    assert saved.format == "PNG" and saved.size == shown.size == (result["width"], result["height"])
    assert result["prompt"] in printed


def check_molm3d(printed: str, v: dict, folder: Path) -> None:
    result = v["result"]
    assert result["smiles"] == "CN1C=NC2=C1C(=O)N(C(=O)N2C)C" and result["task"] == "tpsa"
    assert result["instruction"].startswith("What is the Topological Polar Surface Area of this molecule?")
    assert result["unit"] == "Å²" and isinstance(result["text"], str)
    assert result["reference"]["value"] == pytest.approx(61.82, abs=0.01), "RDKit's TPSA of caffeine"
    assert result["reference"]["unit"] == "Å²"
    if result["value"] is None:  # the tiny model's text holds no number
        assert result["difference"] is None
    else:
        assert result["difference"] == pytest.approx(result["value"] - result["reference"]["value"], abs=0.01)
    assert "61.82" in printed


def check_hub(printed: str, v: dict, folder: Path) -> None:
    papers = v["papers"]
    assert [(p["demo"], p["arxiv_id"]) for p in papers] == [("geodiffusion", "2306.04607")]
    assert papers[0]["title"].startswith("GeoDiffusion") and "diffusion" in papers[0]["abstract"].lower()
    assert "2306.04607" in printed


CHECKS = {"prax": check_prax, "tag2text": check_tag2text, "geodiffusion": check_geodiffusion, "molm3d": check_molm3d,
          "hub": check_hub}


@pytest.mark.parametrize(("lang", "code"), CASES)
def test_readme_snippet_runs_against_a_hub(tiny_hub, workdir, lang, code):
    assert demo_of(code) in CHECKS, f"a {lang} snippet this test has no check for (one demo's endpoints each):\n{code}"
    printed, variables = run_snippet(lang, code, tiny_hub, workdir)
    CHECKS[demo_of(code)](printed, variables, workdir)


def test_readme_snippets_are_found():
    """Each snippet this test knows how to check is on the page in Python and in JavaScript (a demo added later is in
    the generated reference at once, and in a snippet once someone writes one and its check)."""
    found = sorted(c.id.rsplit("-", 1)[0] for c in CASES)
    assert found == sorted(f"{lang}-{demo}" for lang in ("python", "js") for demo in CHECKS)
