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
    page.get_by_text("1 image(s), 64x64").wait_for(timeout=60_000)  # the status may follow the image late on a busy CPU
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
            page.get_by_label("Checkpoint", exact=True).click()  # not the layout box, whose sentence names it
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
        # The COCO-Stuff layout stays; nuImages knows none of its labels but "truck": the layout box says so first.
        page.width = 1400
        expect_sentence_at_the_layout_box(page, "Box 2 has label 'house', which the nuimages checkpoint does not "
                                                "know; use one of its 10 classes (e.g. car, truck, trailer, bus, "
                                                "construction_vehicle, bicycle).")
        expect(page.locator(CANVAS)).to_have_attribute("aria-label", "Layout canvas: 5 boxes; marked in dashed red: "
                                                       "box 2 (unknown label), box 3 (unknown label), box 4 (unknown "
                                                       "label), box 5 (unknown label)")
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


# -- a refused or unreadable layout: its sentence at the layout box, and a canvas that agrees with it ---------------

START = {"bbox": [["truck", 0.1321, 0.3914, 0.7247, 0.7849], ["house", 0.0, 0.06875, 0.9046875, 0.5458],
                  ["road", 0.0, 0.6, 1.0, 1.0], ["snow", 0.0, 0.4792, 1.0, 0.89375], ["tree", 0.0, 0.0, 1.0, 0.56875]]}
MARKED = [220, 38, 38]  # the dashed red of a box the checkpoint cannot take
HOUSE = [255, 126, 13]  # box 2's own colour
CANVAS = "#geo-layout-editor canvas.geo-canvas"
LIBRARY_WORDS = ("Expecting", "delimiter", "JSONDecodeError", "Traceback", "UserInputError", "BoxProblem")


@pytest.fixture(params=[720, 1400], ids=lambda width: f"{width}px")
def visitor(request, browser, page_url):
    """A fresh visitor of the page (its own session) whose window is 720 or 1400 px wide."""
    context = browser.new_context(viewport={"width": request.param, "height": 1600})
    page = context.new_page()
    page.width = request.param
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and page.errors.append(m.text))
    page.goto(page_url)
    page.locator(CANVAS).wait_for(timeout=60_000)
    assert layout(page) == START  # the first COCO-Stuff example
    yield page
    context.close()


def expect_sentence_at_the_layout_box(page, sentence: str) -> None:
    """``sentence``, whole, is the layout box's message: right above its text and as wide as it at most, inside the
    window; and nowhere does the page show the JSON reader's or Python's own words."""
    page.wait_for_function(
        """([sentence, width]) => {
          const said = document.querySelector('#geo-layout-json div.validation-error');
          const text = document.querySelector('#geo-layout-json textarea');
          if (!said || said.textContent.trim() !== sentence) return false;
          if (!text.classList.contains('validation-error')) return false;
          const s = said.getBoundingClientRect(), t = text.getBoundingClientRect();
          return t.top - s.bottom >= 0 && t.top - s.bottom < 24 && s.left >= t.left - 8
            && s.right <= Math.min(t.right + 8, width);
        }""", arg=[sentence, page.width], timeout=15_000)
    shown = page.locator("body").inner_text()
    assert not [words for words in LIBRARY_WORDS if words in shown]


def expect_no_sentence(page) -> None:
    from playwright.sync_api import expect

    expect(page.locator("#geo-layout-json div.validation-error")).to_have_count(0, timeout=15_000)
    expect(page.locator("#geo-layout-json textarea")).not_to_have_class("validation-error")


def column(page, x: int, y0: int, y1: int) -> list[list[int]]:
    """The RGB of the canvas's own pixels (its 512x512 drawing, whatever its size on screen) at x, from y0 to y1."""
    return page.evaluate(
        "([x, y0, y1]) => { const d = document.querySelector('#geo-layout-editor canvas.geo-canvas')"
        ".getContext('2d').getImageData(x, y0, 1, y1 - y0).data; const rgb = [];"
        " for (let i = 0; i < d.length; i += 4) rgb.push([d[i], d[i + 1], d[i + 2]]); return rgb; }", [x, y0, y1])


def refusals(page) -> list[str]:
    """Console errors other than the browser's line for each refused check (HTTP 422: the sentence came back)."""
    return [e for e in page.errors if "status of 422 (Unprocessable Entity)" not in e]


def test_truncated_json_keeps_the_last_readable_layout_and_says_where_the_text_ends(visitor, tmp_path):
    """The person deletes the layout's last "]}": the sentence at the layout box says the text ends early and where;
    the canvas keeps the last readable layout's five boxes, faded, says so, and takes no edits (they would overwrite
    the text); typing the brackets back makes everything as it was."""
    from playwright.sync_api import expect

    page = visitor
    text = page.locator("#geo-layout-json textarea")
    text.click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Backspace", delay=150)
    page.keyboard.press("Backspace")
    expect(text).to_have_value(json.dumps(START)[:-2])
    expect_sentence_at_the_layout_box(page, "The layout is not valid JSON: it ends before its closing brackets "
                                            "(line 1, character 197).")
    canvas = page.locator(CANVAS)
    expect(canvas).to_have_attribute("aria-label", "Layout canvas: the last readable layout, 5 boxes")
    expect(page.locator("#geo-layout-editor .geo-note")).to_have_text(
        "Showing the last readable layout: the layout text below cannot be read (its message says why). Boxes can "
        "be drawn here again once it can.")
    expect(page.locator("#geo-layout-editor button.geo-clear")).to_be_disabled()
    assert any(rgb != [255, 255, 255] and rgb != HOUSE for rgb in column(page, 463, 60, 230)), "drawn, faded"
    page.screenshot(path=tmp_path / f"geodiffusion-truncated-{page.width}.png", full_page=True)
    box = canvas.bounding_box()  # a drag on the canvas now changes nothing
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.05)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.2, steps=4)
    page.mouse.up()
    expect(canvas).to_have_attribute("aria-label", "Layout canvas: the last readable layout, 5 boxes")
    expect(text).to_have_value(json.dumps(START)[:-2])

    text.click()  # back to the text, to its end, and the person's fix
    page.keyboard.press("Control+End")
    page.keyboard.type("]}", delay=150)
    expect_no_sentence(page)
    expect(canvas).to_have_attribute("aria-label", "Layout canvas: 5 boxes")
    expect(page.locator("#geo-layout-editor .geo-note")).to_be_hidden()
    expect(page.locator("#geo-layout-editor button.geo-clear")).to_be_enabled()
    assert layout(page) == START and refusals(page) == []


def test_an_unknown_label_is_drawn_dashed_red_and_named_at_the_layout_box(visitor, tmp_path):
    """The person changes box 2's label to "unicorn": the sentence names the label and says the checkpoint does not
    know it; box 2 is still drawn, in dashed red with "(unknown label)", the other four as before."""
    from playwright.sync_api import expect

    page = visitor
    unicorn = json.dumps(START).replace('"house"', '"unicorn"')
    page.locator("#geo-layout-json textarea").fill(unicorn)
    expect_sentence_at_the_layout_box(page, "Box 2 has label 'unicorn', which the coco_stuff checkpoint does not "
                                            "know; use one of its 172 classes (e.g. person, bicycle, car, motorcycle, "
                                            "airplane, bus).")
    canvas = page.locator(CANVAS)
    expect(canvas).to_have_attribute("aria-label", "Layout canvas: 5 boxes; marked in dashed red: box 2 (unknown "
                                                   "label)")
    expect(page.locator("#geo-layout-editor .geo-note")).to_have_text(
        'Dashed red: box 2 "unicorn" (unknown label). The checkpoint cannot take it; the message at the layout text '
        "below says what to change.")
    edge = column(page, 463, 60, 230)  # box 2's right side (x2 = 0.905 of 512 px), clear of the other boxes
    red = sum(rgb == MARKED for rgb in edge)
    assert 0.4 * len(edge) < red < 0.9 * len(edge), "dashed: red with gaps"
    assert HOUSE not in edge
    page.screenshot(path=tmp_path / f"geodiffusion-unknown-label-{page.width}.png", full_page=True)

    page.locator("#geo-layout-json textarea").fill(json.dumps(START))  # back to "house"
    expect_no_sentence(page)
    expect(canvas).to_have_attribute("aria-label", "Layout canvas: 5 boxes")
    assert column(page, 463, 60, 230) == [HOUSE] * 170, "solid, in its own colour again"
    assert refusals(page) == []


def test_an_inverted_box_is_drawn_as_written_and_marked_invalid(visitor, tmp_path):
    """The person swaps box 1's x1 and x2: the sentence says which corner goes where and quotes the numbers; the
    canvas draws the box where the numbers put it, marked "(inverted)" in dashed red, never as a normal box."""
    from playwright.sync_api import expect

    page = visitor
    inverted = json.loads(json.dumps(START))
    inverted["bbox"][0] = ["truck", 0.7247, 0.3914, 0.1321, 0.7849]
    page.locator("#geo-layout-json textarea").fill(json.dumps(inverted))
    expect_sentence_at_the_layout_box(page, "Box 1 (truck): the bottom-right corner must lie right of and below the "
                                            "top-left one (x2 > x1 and y2 > y1); got x1=0.7247, y1=0.3914, "
                                            "x2=0.1321, y2=0.7849.")
    canvas = page.locator(CANVAS)
    expect(canvas).to_have_attribute("aria-label", "Layout canvas: 5 boxes; marked in dashed red: box 1 (inverted)")
    expect(page.locator("#geo-layout-editor .geo-note")).to_have_text(
        'Dashed red: box 1 "truck" (inverted). The checkpoint cannot take it; the message at the layout text below '
        "says what to change.")
    edge = column(page, 67, 205, 240)  # x = 0.1321 of 512 px (67.6): the side the numbers put at x2
    red = sum(rgb == MARKED for rgb in edge)
    assert 0.3 * len(edge) < red < len(edge), "dashed red"
    page.screenshot(path=tmp_path / f"geodiffusion-inverted-{page.width}.png", full_page=True)
    expect(page.get_by_role("button", name="Generate", exact=True)).to_be_enabled()
    page.get_by_role("button", name="Generate", exact=True).click()  # refused before the queue, the same sentence
    expect_sentence_at_the_layout_box(page, "Box 1 (truck): the bottom-right corner must lie right of and below the "
                                            "top-left one (x2 > x1 and y2 > y1); got x1=0.7247, y1=0.3914, "
                                            "x2=0.1321, y2=0.7849.")
    expect(page.locator("#geo-gallery")).to_be_hidden()
    assert refusals(page) == []
