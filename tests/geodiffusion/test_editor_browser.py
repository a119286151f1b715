"""The canvas layout editor in Debian Chromium: draw, move and delete boxes; the JSON box and editor stay in sync."""

from __future__ import annotations

import json

import pytest

from apps.geodiffusion import DEMO
from apps.geodiffusion.page import build
from shared.context import DemoContext
from shared.pool import ModelPool
from tests.conftest import free_port
from tests.fixtures.tiny_geodiffusion import install_in_hf_cache

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def page_url(tmp_path_factory, coco_checkpoint):
    """The page alone, offline, with only the tiny COCO-Stuff checkpoint in the HF cache (so it is the default)."""
    mp = pytest.MonkeyPatch()
    cache = tmp_path_factory.mktemp("hub")
    install_in_hf_cache(coco_checkpoint, cache, "KaiChen1998/geodiffusion-coco-stuff-256x256")
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(cache))
    mp.setenv("DEMOHUB_DEVICE", "cpu")
    mp.delenv("DEMOHUB_CHECKPOINTS", raising=False)
    mp.delenv("DEMOHUB_DTYPE", raising=False)
    blocks = build(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    _, url, _ = blocks.launch(server_port=free_port(), prevent_thread_lock=True, quiet=True)
    yield url
    blocks.close()
    mp.undo()


@pytest.fixture(scope="module")
def browser_page(browser, page_url):
    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    page = context.new_page()
    page.errors = []  # uncaught exceptions and console errors (offline: no CDN, no fonts to fetch)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    page.goto(page_url)
    page.locator("#geo-layout-editor canvas.geo-canvas").wait_for(timeout=60_000)
    yield page
    context.close()


def layout(page) -> dict:
    return json.loads(page.locator("#geo-layout-json textarea").input_value())


def wait_for_layout(page, predicate, timeout=15_000):
    page.wait_for_function(
        "([pred]) => { try { return eval(pred)(JSON.parse(document.querySelector('#geo-layout-json textarea')"
        ".value)); } catch (e) { return false; } }", arg=[predicate], timeout=timeout)


def test_draw_move_and_delete_a_box(browser_page):
    page = browser_page
    assert len(layout(page)["bbox"]) == 5  # the first COCO-Stuff example
    page.locator("#geo-layout-editor button.geo-clear").click()
    wait_for_layout(page, "(l) => l.bbox.length === 0")
    start = 0
    canvas = page.locator("#geo-layout-editor canvas.geo-canvas")
    box = canvas.bounding_box()
    page.select_option("#geo-layout-editor select.geo-label", "bus")  # a COCO-Stuff class

    def at(fx, fy):
        return box["x"] + box["width"] * fx, box["y"] + box["height"] * fy

    page.mouse.move(*at(0.1, 0.1))
    page.mouse.down()
    page.mouse.move(*at(0.2, 0.15), steps=4)
    page.mouse.move(*at(0.3, 0.25), steps=4)
    page.mouse.up()
    wait_for_layout(page, f"(l) => l.bbox.length === {start + 1}")
    assert layout(page)["bbox"][-1] == ["bus", 0.1, 0.1, 0.3, 0.25]

    page.mouse.move(*at(0.2, 0.17))  # drag the new box 0.1 to the right
    page.mouse.down()
    page.mouse.move(*at(0.3, 0.17), steps=5)
    page.mouse.up()
    wait_for_layout(page, "(l) => l.bbox[l.bbox.length - 1][1] === 0.2")
    assert layout(page)["bbox"][-1] == ["bus", 0.2, 0.1, 0.4, 0.25]

    page.mouse.move(*at(0.4, 0.25))  # drag its bottom-right corner
    page.mouse.down()
    page.mouse.move(*at(0.5, 0.4), steps=5)
    page.mouse.up()
    wait_for_layout(page, "(l) => l.bbox[l.bbox.length - 1][3] === 0.5")
    assert layout(page)["bbox"][-1] == ["bus", 0.2, 0.1, 0.5, 0.4]

    page.locator("#geo-layout-editor button.geo-delete").click()
    wait_for_layout(page, f"(l) => l.bbox.length === {start}")
    assert page.errors == []


def test_json_edits_redraw_the_editor_and_camera(browser_page):
    page = browser_page
    textbox = page.locator("#geo-layout-json textarea")
    textbox.fill(json.dumps({"bbox": [["truck", 0.5, 0.5, 0.9, 0.9], ["sky-other", 0, 0, 1, 0.2]]}))
    textbox.blur()
    status = page.locator("#geo-layout-editor .geo-status")
    page.wait_for_function("() => document.querySelector('#geo-layout-editor .geo-status').textContent"
                           ".startsWith('2 box')", timeout=15_000)
    assert status.inner_text().startswith("2 box")
    # The preview follows the cached checkpoint's own generation_config.json (the tiny one's 4x4 grid):
    # 0.5*3 = 1.5 -> 2 and 0.9*3 = 2.7 -> 3, so truck <l10> <l15>; sky-other (1, 0.2) -> y 0.6 -> 1: <l7>.
    page.wait_for_function("() => document.querySelector('#geo-prompt textarea, #geo-prompt input').value"
                           " === 'An image with truck <l10> <l15> sky other <l0> <l7>'", timeout=15_000)
    # "an image with" 3 + "truck <l10> <l15>" 3 + "sky other <l0> <l7>" 4, plus BOS and EOS.
    page.get_by_text("The prompt uses 12 of CLIP's 77 tokens.").wait_for(timeout=15_000)
    assert page.errors == []


def test_generate_toggle_boxes_and_export(browser_page):
    page = browser_page
    page.get_by_role("button", name="Generate", exact=True).click()
    gallery_image = page.locator("#geo-gallery img").first
    gallery_image.wait_for(timeout=60_000)
    page.get_by_text("1 image(s), 64x64").wait_for(timeout=15_000)
    with_boxes = gallery_image.get_attribute("src")
    page.get_by_label("Draw layout boxes over the images").uncheck()
    page.wait_for_function("(src) => { const img = document.querySelector('#geo-gallery img');"
                           " return img && img.getAttribute('src') !== src; }", arg=with_boxes, timeout=15_000)
    page.get_by_role("button", name="Export as COCO dataset").click()
    page.locator("#geo-export a[href*='geodiffusion_coco.zip']").first.wait_for(timeout=30_000)
    assert page.errors == []


NUIMAGES_CLASSES = ["car", "truck", "trailer", "bus", "construction_vehicle", "bicycle", "motorcycle", "pedestrian",
                    "traffic_cone", "barrier"]
EDITOR_LABELS = ("() => Array.from(document.querySelectorAll('#geo-layout-editor select.geo-label option'), "
                 "o => o.value)")


def test_checkpoint_switch_updates_editor_controls_steps_and_cfg(browser, page_url):
    """Its own visitor (a fresh page and session), so the other tests' page keeps the COCO-Stuff checkpoint."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 1600})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(page_url)
        page.locator("#geo-layout-editor canvas.geo-canvas").wait_for(timeout=60_000)
        steps = page.get_by_label("Steps", exact=True)  # not the sampler choices' "... 20 steps)"
        fast = page.get_by_role("radio", name="Fast sampling (DPM-Solver++, 20 steps)")
        official = page.get_by_role("radio", name="Official (DPM-Solver++, 50 steps)")
        cfg = page.locator("input[type=number][aria-label*='Guidance scale (cfg)']")
        camera, night, rain = (page.get_by_label("Camera view"), page.get_by_role("radio", name="night"),
                               page.get_by_role("radio", name="rain"))

        def choose(name):
            page.get_by_label("Checkpoint").click()
            page.get_by_role("option", name=name).click()

        # The cached tiny COCO-Stuff checkpoint is the default: 172 classes, no camera/time/weather, 50 steps, cfg 4.
        expect(steps).to_have_value("50")
        expect(cfg).to_have_value("4")
        expect(camera).to_be_hidden()
        expect(night).to_be_hidden()
        assert len(page.evaluate(EDITOR_LABELS)) == 172
        fast.check()  # fast sampling: Steps move from the checkpoint's 50 to 20, and back
        expect(steps).to_have_value("20")
        official.check()
        expect(steps).to_have_value("50")

        choose("nuimages-time-weather-512x512")
        page.wait_for_function(f"() => ({EDITOR_LABELS})().length === 10", timeout=15_000)
        assert page.evaluate(EDITOR_LABELS) == NUIMAGES_CLASSES
        expect(camera).to_be_visible()
        expect(night).to_be_visible()
        expect(rain).to_be_visible()
        expect(steps).to_have_value("100")
        expect(cfg).to_have_value("5")
        expect(page.get_by_role("radio", name="Official (PNDM, 100 steps)")).to_be_checked()  # choices follow

        choose("nuimages-256x256")  # camera, but no time of day or weather
        expect(night).to_be_hidden()
        expect(rain).to_be_hidden()
        expect(camera).to_be_visible()
        assert page.evaluate(EDITOR_LABELS) == NUIMAGES_CLASSES

        choose("coco-stuff-512x512")
        page.wait_for_function(f"() => ({EDITOR_LABELS})().length === 172", timeout=15_000)
        labels = page.evaluate(EDITOR_LABELS)
        assert labels[0] == "person" and "sky-other" in labels and "dining table" in labels
        expect(camera).to_be_hidden()
        expect(steps).to_have_value("50")
        expect(cfg).to_have_value("4.5")
        assert errors == []
    finally:
        context.close()
