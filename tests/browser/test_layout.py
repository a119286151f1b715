"""Pages that work where they are embedded: every page at 1400 px and at a paper page's ~720 px iframe, in the light
and the dark theme. No horizontal scrolling, the page's main controls on screen, styled banners, no emoji (Debian
Chromium has no emoji font), and an iframe snippet that takes the embedded view's own height in a 720 px paper page.

Screenshots land in ``$DEMOHUB_SCREENSHOTS`` (default: the test's temp dir) as ``<page>-<width>-<theme>.png``.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

import apps
from apps import ui

pytestmark = pytest.mark.browser

WIDTHS = (1400, 720)
THEMES = ("light", "dark")
# What a visitor must be able to reach on each page without scrolling sideways: (ARIA role, accessible name).
MAIN_CONTROLS = {
    "": [("textbox", "Search titles and abstracts")],
    "prax": [("textbox", "Example string"), ("button", "should match")],
    "tag2text": [("button", "Tag and caption")],
    "geodiffusion": [("button", "Generate")],
    "molm3d": [("textbox", "SMILES"), ("button", "Ask 3D-MoLM")],
}
EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF]")


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("DEMOHUB_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def open_page(browser, url: str, width: int, theme: str):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{url}{'&' if '?' in url else '?'}__theme={theme}")
    page.wait_for_selector(".gradio-container", timeout=30_000)
    page.wait_for_function("document.readyState === 'complete'")
    return context, page


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("route", list(MAIN_CONTROLS), ids=lambda r: r or "landing")
def test_page_fits_width_and_shows_its_main_controls(browser, hub_url, route, width, theme, tmp_path):
    context, page = open_page(browser, f"{hub_url}/{route}", width, theme)
    try:
        for role, name in MAIN_CONTROLS[route]:
            control = page.get_by_role(role, name=re.compile(re.escape(name))).first
            expect(control).to_be_visible(timeout=30_000)
            control.scroll_into_view_if_needed()
            box = control.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, f"{name} is off screen: {box}"
        page.screenshot(path=shots(tmp_path) / f"{route or 'landing'}-{width}-{theme}.png", full_page=True)
        lines = page.evaluate("() => new Set([...document.querySelectorAll('.nav-holder a')]"
                              ".map(a => Math.round(a.getBoundingClientRect().top))).size")
        assert lines == 1, f"the hub's page links wrap onto {lines} lines at {width} px"
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, f"{route or 'landing'} scrolls sideways by {overflow} px at {width} px"
        is_dark = page.evaluate("() => document.body.classList.contains('dark')")
        assert is_dark == (theme == "dark")
        text = page.evaluate("() => document.body.innerText")
        assert not EMOJI.findall(text), f"emoji render as empty boxes here: {EMOJI.findall(text)[:5]}"
        for banner in page.locator(".demohub-notice").all():
            if banner.is_visible():
                colour = banner.evaluate("el => getComputedStyle(el).backgroundColor")
                assert colour not in ("rgba(0, 0, 0, 0)", "transparent"), "banner drawn without the hub's CSS"
    finally:
        context.close()


def settled_height(frame, quiet_s: float = 2.0, limit_s: float = 20.0) -> int:
    """The content's height (what the embedded view reports: its app's bottom) once it has stopped changing for
    ``quiet_s`` (viewers and examples render late); ``frame``: a page or a frame."""
    height, since, waited = -1, 0.0, 0.0
    while waited < limit_s and since < quiet_s:
        now = frame.evaluate("() => Math.ceil(document.querySelector('gradio-app').getBoundingClientRect().bottom "
                             "+ window.scrollY)")
        since = since + 0.25 if now == height else 0.0
        height = now
        frame.wait_for_timeout(250)
        waited += 0.25
    return height


@pytest.mark.parametrize("demo", apps.DEMOS, ids=lambda d: d.id)
def test_the_iframe_snippet_takes_the_embedded_views_own_height_at_720px(browser, hub_url, paper_site, demo):
    """No demo declares a height: the snippet's iframe starts at one height for all (``ui.EMBED_HEIGHT``) and, in a
    paper page 720 px wide, ends at the embedded view's own height (the page measures itself and says so), within the
    snippet's bound, so nothing is cut off and no empty band is left below the demo."""
    snippet = ui.embed_snippets(demo, f"{hub_url}/{demo.id}")["iframe"]
    assert f'height="{ui.EMBED_HEIGHT}"' in snippet
    context = browser.new_context(viewport={"width": 720, "height": 900})
    page = context.new_page()
    try:
        page.goto(paper_site(snippet))
        iframe = page.locator(f"iframe#demohub-{demo.id}")
        frame = page.frame_locator(f"iframe#demohub-{demo.id}")
        expect(frame.get_by_text(demo.title).first).to_be_visible(timeout=30_000)
        expect(frame.locator("nav")).to_be_hidden()
        expect(frame.get_by_text("Embed this demo")).to_be_hidden()
        view = settled_height(iframe.element_handle().content_frame())
        assert 0 < view <= ui.MAX_EMBED_HEIGHT, f"{demo.id}'s embedded view is {view} px tall at 720 px"
        deadline = time.monotonic() + 10
        while abs(int(iframe.get_attribute("height")) - view) > 2 and time.monotonic() < deadline:
            page.wait_for_timeout(200)  # the frame's last message may still be on its way
        height = int(iframe.get_attribute("height"))
        assert abs(height - view) <= 2, f"{demo.id}: the iframe is {height} px tall, its embedded view {view} px"
        assert abs(iframe.bounding_box()["height"] - view) <= 2, "the paper page draws it at that height"
    finally:
        context.close()
