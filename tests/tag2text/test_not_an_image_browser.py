"""The Tag2Text page in Debian Chromium at 720 and 1400 px, as a person uses it: a text file named ``something.png``
uploaded by mistake (to the one-image input, and among a batch), then the fix; and a run that fails, at 720 px, where
a toast in the top right corner would cover "Your tags" and the image. Checked by the page's text and by bounding
boxes; a screenshot of each flow is kept in the test's folder."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import expect

from apps.tag2text import actions
from tests.tag2text.test_not_an_image import SENTENCE

pytestmark = pytest.mark.browser

WIDTHS = {720: 900, 1400: 1000}  # width -> height of the window
TOAST = "[data-testid='toast-body']"
DAMAGED = "truncated.jpg is damaged or incomplete and could not be decoded; re-save or re-download it and try again."


def example(name: str) -> str:
    return next(p for p in actions.example_images() if p.endswith(f"/{name}"))


@pytest.fixture(params=sorted(WIDTHS), ids=lambda width: f"{width}px")
def width(request) -> int:
    return request.param


def visit(browser, url: str, width: int):
    """The Tag2Text page of the hub at ``url`` in a fresh window ``width`` px wide; console errors are collected."""
    context = browser.new_context(viewport={"width": width, "height": WIDTHS[width]})
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.goto(f"{url}/tag2text")
    return context, page


def overlaps(a: dict, b: dict) -> bool:
    return (a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"]
            and a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])


def broken_images(block) -> int:
    """Images in ``block`` the browser could not show (what Chromium draws as a broken-image icon)."""
    return block.evaluate("el => [...el.querySelectorAll('img')].filter(i => i.complete && !i.naturalWidth).length")


def assert_beside(note, field, button) -> None:
    """``note`` sits under ``field`` and above ``button``, in the page's flow: it covers neither."""
    n, f, b = note.bounding_box(), field.bounding_box(), button.bounding_box()
    assert f["y"] + f["height"] <= n["y"] + 1 and n["y"] + n["height"] <= b["y"] + 1, (f, n, b)
    assert not overlaps(n, f) and not overlaps(n, b)


def test_a_text_file_named_png_is_refused_beside_the_image_input(browser, t2t_hub, not_images, width, tmp_path):
    context, page = visit(browser, t2t_hub[0], width)
    try:
        field = page.locator(".t2t-image")
        note = page.locator(".t2t-image-note .demohub-notice")
        run = page.get_by_role("button", name="Tag and caption", exact=True)
        field.locator("input[type=file]").set_input_files(str(not_images["something.png"]))
        expect(note).to_have_text(SENTENCE, timeout=30_000)
        expect(field.locator("img")).to_have_count(0)  # the input is empty again: no broken preview under the note
        assert "something.png" not in field.inner_text() and "/" not in note.inner_text()
        assert_beside(note, field, run)
        page.screenshot(path=tmp_path / f"not-an-image-{width}.png", full_page=True)
        assert page.locator(TOAST).count() == 0
        field.locator("input[type=file]").set_input_files(example("beach.png"))  # the fix
        expect(note).to_be_hidden(timeout=30_000)
        expect(field.locator("img")).to_have_count(1)
        assert broken_images(field) == 0
        run.click()
        expect(page.get_by_role("textbox", name="Caption", exact=True)).to_have_value(re.compile(r"\w"),
                                                                                     timeout=120_000)
        assert page.locator(TOAST).count() == 0
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=tmp_path / f"fixed-{width}.png", full_page=True)
        assert page.console_errors == []
    finally:
        context.close()


def test_a_batch_with_one_text_file_tags_the_others_and_names_it(browser, t2t_hub, not_images, width, tmp_path):
    context, page = visit(browser, t2t_hub[0], width)
    try:
        page.get_by_role("tab", name="Batch").click()
        field = page.locator(".t2t-files")
        note = page.locator(".t2t-files-note .demohub-notice")
        run = page.get_by_role("button", name="Tag and caption all", exact=True)
        field.locator("input[type=file]").set_input_files(
            [example("beach.png"), str(not_images["something.png"]), example("car.png")])
        expect(note).to_have_text(f"Left out of this batch (the other 2 files will be tagged): {SENTENCE}",
                                  timeout=30_000)
        expect(field).to_contain_text(re.compile(r"beach\s*\.png.*car\s*\.png", re.S))  # the list, name by name
        expect(field).not_to_contain_text("something")
        assert_beside(note, field, run)
        page.screenshot(path=tmp_path / f"batch-left-out-{width}.png", full_page=True)
        run.click()
        table = page.get_by_role("grid", name="Results")
        expect(table).to_contain_text(re.compile(r"beach\.png.*car\.png", re.S), timeout=120_000)
        expect(table).not_to_contain_text("something")
        expect(page.get_by_text("2 image(s) processed.")).to_be_visible()
        assert page.locator(TOAST).count() == 0
        page.screenshot(path=tmp_path / f"batch-tagged-{width}.png", full_page=True)
        assert page.console_errors == []
    finally:
        context.close()


@pytest.fixture(params=["no-weights", "damaged-file"])
def failing_run(request, tmp_path):
    """A run that fails after its checks passed: (the hub's URL, the image to upload, the sentence). On a hub with no
    weights (the common case on a fresh clone), or on the tiny weights with a JPEG cut short (its header reads)."""
    if request.param == "no-weights":
        return request.getfixturevalue("weightless_hub"), example("beach.png"), re.compile(
            r"^The tag2text weights 'tag2text-swin-14m' \(4\.48 GB\) are not on this server\.")
    buffer = io.BytesIO()
    noise = np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    Image.fromarray(noise).save(buffer, "JPEG", quality=90)
    cut = tmp_path / "truncated.jpg"
    cut.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])  # its header whole: the upload's check passes
    assert actions.upload_problem(cut) is None
    return request.getfixturevalue("t2t_hub")[0], str(cut), re.compile(f"^{re.escape(DAMAGED)}$")


def test_at_720px_a_failed_run_says_so_beside_the_input_and_no_toast_covers_your_tags(browser, failing_run,
                                                                                      tmp_path):
    """The issue's window: 720 px. The person types their tags, uploads, presses the button; the run fails. Its
    sentence is in the page under the image, above the button, in view; no toast appears (one in the top right
    would cover half of "Your tags" and the image), and no box covers another."""
    url, upload, sentence = failing_run
    context, page = visit(browser, url, 720)
    try:
        tags = page.get_by_label("Your tags (optional)")
        tags.fill("sky, sun")
        field = page.locator(".t2t-image")
        field.locator("input[type=file]").set_input_files(upload)
        expect(field.locator("img")).to_have_count(1, timeout=30_000)
        tags.scroll_into_view_if_needed()  # where the issue saw it: "Your tags" near the top, the image below
        page.evaluate("y => window.scrollBy(0, y)", tags.bounding_box()["y"] - 80)
        run = page.get_by_role("button", name="Tag and caption", exact=True)
        run.click()
        note = page.locator(".t2t-image-note .demohub-notice")
        expect(note).to_have_text(sentence, timeout=120_000)
        page.wait_for_timeout(1500)  # a toast would be up by now
        assert page.locator(TOAST).count() == 0
        expect(field.locator("img")).to_have_count(1)  # the run failed, not the upload: the image is still there
        assert broken_images(field) == 0 and "No images" not in field.inner_text()
        boxes = {"your tags": tags.bounding_box(), "image": field.bounding_box(), "note": note.bounding_box(),
                 "button": run.bounding_box(),
                 "caption": page.get_by_role("textbox", name="Caption", exact=True).bounding_box()}
        for toast in page.locator(TOAST).all():  # none, as asserted; kept so a returning toast names what it covers
            covered = [name for name, box in boxes.items() if overlaps(toast.bounding_box(), box)]
            assert not covered, covered
        names = list(boxes)
        assert not [(a, b) for i, a in enumerate(names) for b in names[i + 1:] if overlaps(boxes[a], boxes[b])]
        assert 0 <= boxes["note"]["y"] and boxes["note"]["y"] + boxes["note"]["height"] <= WIDTHS[720], (
            "the sentence is in view where the person pressed the button")
        assert_beside(note, field, run)
        assert page.evaluate("document.documentElement.scrollWidth") <= 720
        page.screenshot(path=tmp_path / "failed-run-720.png")
        expect(tags).to_have_value("sky, sun")  # nothing the person typed was lost
    finally:
        context.close()
