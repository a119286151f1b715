"""The page builds without weights and without torch, its helpers, COCO export, and the named API end to end."""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
import zipfile

import gradio as gr
import numpy as np
import pytest
from PIL import Image

from apps.geodiffusion import DEMO
from apps.geodiffusion.actions import (
    COCO_EXAMPLES,
    NUIMAGES_EXAMPLES,
    GeoDiffusionPage,
    editor_value,
    layout_from_editor,
    layout_from_table,
    set_layout_field,
    table_from_layout,
)
from apps.geodiffusion.export import coco_dataset, draw_layout, export_coco_zip
from apps.geodiffusion.layout import KNOWN_CONFIGS, parse_layout
from apps.geodiffusion.page import build
from shared.context import DemoContext
from shared.errors import UserInputError
from shared.pool import ModelPool
from shared.weights import REPO_ROOT
from tests.conftest import free_port
from tests.fixtures.tiny_geodiffusion import install_in_hf_cache


@pytest.fixture
def offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.delenv("DEMOHUB_CHECKPOINTS", raising=False)
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    return tmp_path / "hub"


def test_page_module_imports_no_torch():
    code = "import sys, apps.geodiffusion.page; assert 'torch' not in sys.modules, 'torch imported'; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr[-2000:]


def test_page_builds_and_renders_without_weights(offline):
    blocks = build(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    assert isinstance(blocks, gr.Blocks)
    with gr.Blocks() as hub:  # what the hub does inside a route
        blocks.render()
    api = hub.get_api_info()["named_endpoints"]["/generate"]
    assert [p["parameter_name"] for p in api["parameters"]] == ["layout_json", "checkpoint", "seed", "steps", "cfg",
                                                                 "sampler"]
    assert [p["parameter_has_default"] for p in api["parameters"]] == [False, False, True, True, True, True]
    assert api["parameters"][5]["parameter_default"] == "default"
    assert api["parameters"][5]["type"] == {"enum": ["default", "fast"]}  # what an MCP client is offered
    config = blocks.get_config_file()
    texts = json.dumps(config, default=str)
    assert "are not on this server. You can still draw layouts" in texts  # the notice for the missing weights
    assert "Export as COCO dataset" in texts and "Edit boxes as a table" in texts


def test_examples_are_valid_for_their_checkpoints():
    assert len(NUIMAGES_EXAMPLES) >= 3 and len(COCO_EXAMPLES) >= 3
    for layout, checkpoint in NUIMAGES_EXAMPLES + COCO_EXAMPLES:
        assert parse_layout(layout, KNOWN_CONFIGS[checkpoint]).boxes


def test_table_and_editor_helpers_round_trip():
    text = json.dumps({"camera": "back", "bbox": [["car", 0.1, 0.2, 0.3, 0.4]]})
    rows = table_from_layout(text)
    assert rows == [["car", 0.1, 0.2, 0.3, 0.4]]
    rows.append(["bus", "0.5", 0.5, 0.9, 0.9])
    rows.append([None, None, None, None, None])  # an empty row the table adds is skipped
    new = json.loads(layout_from_table(rows, text))
    assert new == {"camera": "back", "bbox": [["car", 0.1, 0.2, 0.3, 0.4], ["bus", 0.5, 0.5, 0.9, 0.9]]}
    with pytest.raises(UserInputError, match="Table row 2"):
        layout_from_table([["car", 0.1, 0.2, 0.3, 0.4], ["bus", "wide", 0, 1, 1]], text)
    value = json.loads(editor_value(text, KNOWN_CONFIGS["nuimages-256x256"]))
    assert value["classes"][:4] == ["car", "truck", "trailer", "bus"] and value["layout"]["camera"] == "back"
    assert layout_from_editor(json.dumps(value), text) is text  # unchanged layout: same text, no event loop
    value["layout"]["bbox"].append(["bus", 0, 0, 1, 1])
    assert json.loads(layout_from_editor(json.dumps(value), text))["bbox"][-1] == ["bus", 0, 0, 1, 1]
    assert json.loads(set_layout_field(text, "camera", "front left"))["camera"] == "front left"


def test_draw_layout_outlines_the_boxes():
    image = Image.new("RGB", (64, 64), "black")
    layout = parse_layout({"bbox": [["car", 0.25, 0.5, 0.75, 1.0]]}, KNOWN_CONFIGS["nuimages-256x256"])
    drawn = np.asarray(draw_layout(image, layout))
    assert drawn[63, 32].any()  # bottom edge of the box is coloured
    assert not drawn[5, 5].any()  # far from the box stays black
    assert np.asarray(image).max() == 0  # the original is not modified


def test_coco_export_has_pixel_boxes(tmp_path):
    layout = parse_layout({"bbox": [["sky-other", 0.25, 0.5, 0.75, 1.0], ["person", 0, 0, 0.5, 0.5]]},
                          KNOWN_CONFIGS["coco-stuff-256x256"])
    images = [Image.new("RGB", (64, 32), "gray"), Image.new("RGB", (64, 32), "white")]
    coco = coco_dataset(images, layout, "coco_stuff")
    assert [a["bbox"] for a in coco["annotations"][:2]] == [[16.0, 16.0, 32.0, 16.0], [0.0, 0.0, 32.0, 16.0]]
    assert coco["annotations"][0]["area"] == 512.0 and len(coco["annotations"]) == 4
    names = {c["id"]: c["name"] for c in coco["categories"]}
    assert names[coco["annotations"][0]["category_id"]] == "sky-other" and names[1] == "person"
    path = export_coco_zip(images, layout, "coco_stuff", tmp_path / "set.zip", prompt="p")
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["annotations/instances.json", "images/000001.png", "images/000002.png"]
        assert json.loads(zf.read("annotations/instances.json"))["images"][1] == {
            "id": 2, "file_name": "000002.png", "width": 64, "height": 32}


def test_named_api_generates_from_the_cached_checkpoint(offline, coco_checkpoint):
    from gradio_client import Client

    install_in_hf_cache(coco_checkpoint, offline, "KaiChen1998/geodiffusion-coco-stuff-256x256")
    blocks = build(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    blocks.queue()
    _, url, _ = blocks.launch(server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        client = Client(url, verbose=False)
        layout = json.dumps({"bbox": [["car", 0.1, 0.2, 0.5, 0.6]]})
        out = client.predict(layout, "coco-stuff-256x256", 3, 2, 4.0, api_name="/generate")
        assert out["prompt"] == "An image with car <l4> <l10>"
        assert len(out["images"]) == 1 and out["images"][0].startswith("data:image/png;base64,")
        png = Image.open(io.BytesIO(base64.b64decode(out["images"][0].split(",", 1)[1])))
        assert png.size == (64, 64) and (out["width"], out["height"]) == (64, 64)
        assert out["num_inference_steps"] == 2 and out["seed"] == 3 and out["guidance_scale"] == 4.0
        assert out["layout"]["bbox"] == [["car", 0.1, 0.2, 0.5, 0.6]] and out["warnings"] == []
        with pytest.raises(Exception, match="steps must be a whole number between 1 and 200"):
            client.predict(layout, "coco-stuff-256x256", 3, 500, 4.0, api_name="/generate")
        with pytest.raises(Exception, match="not valid JSON"):
            client.predict("{", "coco-stuff-256x256", 3, 2, 4.0, api_name="/generate")
        # The optional sixth parameter: fast sampling, by position or by name; steps null is its 20 steps.
        fast = client.predict(layout, "coco-stuff-256x256", 3, 2, 4.0, "fast", api_name="/generate")
        assert (fast["sampler"], fast["scheduler"], fast["num_inference_steps"]) == (
            "fast", "DPMSolverMultistepScheduler", 2)
        assert (out["sampler"], out["scheduler"]) == ("default", "DPMSolverMultistepScheduler")  # COCO-Stuff's own
        assert fast["images"] == out["images"]  # COCO-Stuff's official sampler is DPM-Solver++ too: same pixels
        named = client.predict(layout_json=layout, checkpoint="coco-stuff-256x256", seed=3, sampler="fast",
                               api_name="/generate")
        assert named["num_inference_steps"] == 20 and named["sampler"] == "fast"
        with pytest.raises(Exception, match=r'- sampler: sampler must be one of "default", "fast"; got .turbo.'):
            client.predict(layout, "coco-stuff-256x256", 3, 2, 4.0, "turbo", api_name="/generate")
    finally:
        blocks.close()


def test_budget_note_counts_tokens_and_names_cut_boxes(offline, coco_checkpoint):
    page = GeoDiffusionPage(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    assert page.budget_note('{"bbox": []}', "coco-stuff-256x256") == ""  # not on disk yet: no note, no download
    install_in_hf_cache(coco_checkpoint, offline, "KaiChen1998/geodiffusion-coco-stuff-256x256")
    page = GeoDiffusionPage(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    # "an image with" (3) + "car <l..> <l..>" (3): 6 content tokens + BOS/EOS.
    assert page.budget_note('{"bbox": [["car", 0, 0, 1, 1]]}', "coco-stuff-256x256") == \
        "The prompt uses 8 of CLIP's 77 tokens."
    long = json.dumps({"bbox": [["fire hydrant", 0, 0, 1, 1]] * 18})  # 3 + 18 * 5 = 93 content tokens
    note = page.budget_note(long, "coco-stuff-256x256")
    assert note.startswith("⚠️ The prompt needs 95 tokens") and "#15 (fire hydrant)" in note and "#14 " not in note
    assert page.budget_note("{", "coco-stuff-256x256") == ""  # invalid layouts are reported elsewhere
