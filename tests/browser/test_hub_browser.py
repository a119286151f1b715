"""The hub in Debian Chromium: cards, catalog, and every demo route without console errors."""

import re

import pytest
from playwright.sync_api import expect

import apps
from apps import catalog

pytestmark = pytest.mark.browser


def test_landing_shows_cards_and_catalog(page, hub_url, tmp_path):
    page.goto(hub_url)
    for demo in apps.DEMOS:
        expect(page.locator(f'.demo-card[data-demo="{demo.id}"]')).to_be_visible(timeout=30_000)
    expect(page.locator(".catalog-entry")).to_have_count(len(catalog.load_catalog()))
    search = page.get_by_label("Search titles and abstracts")
    search.press_sequentially("Tag2Txet", delay=15)  # typed fast, with a slip
    search.press("Enter")
    expect(page.get_by_text("No paper matches.")).to_be_visible(timeout=15_000)
    search.fill("Tag2Text")  # fixed
    search.press("Enter")
    expect(page.locator(".catalog-entry")).to_have_count(1, timeout=15_000)
    search.fill("x" * 300)
    assert len(search.input_value()) == catalog.MAX_QUERY_CHARS, "the box stops at the search's limit"
    page.screenshot(path=tmp_path / "landing.png", full_page=True)
    assert page.console_errors == []


def test_landing_at_720px_reads_like_a_menu_of_demos(browser, hub_url, tmp_path):
    """A paper reader at 720 px: the navigation names papers, each card shows a picture of its demo and what runs
    here, the search says what to type, and the filter reads on one line."""
    context = browser.new_context(viewport={"width": 720, "height": 1000})
    page = context.new_page()
    try:
        page.goto(hub_url)
        expect(page.locator("nav")).to_have_text("Home" + "".join(d.name for d in apps.DEMOS), timeout=30_000)
        for demo in apps.DEMOS:
            card = page.locator(f'.demo-card[data-demo="{demo.id}"]')
            picture = card.locator(".demo-preview > *").first
            expect(picture).to_be_visible(timeout=30_000)
            box = picture.bounding_box()
            assert box["width"] > 60 and box["height"] > 20, (demo.id, box)
            expect(card.locator(".state")).to_contain_text(re.compile(r"^(Runs here now|The model needs)"))
        image = page.locator('.demo-card[data-demo="tag2text"] .demo-preview img')
        expect(image).to_have_js_property("complete", True)
        assert image.evaluate("img => img.naturalWidth") > 0, "the example image loads"
        search = page.get_by_label("Search titles and abstracts")
        assert search.get_attribute("placeholder").startswith("e.g. ")
        label = page.get_by_text("Only papers with a demo")
        height, line = label.evaluate("el => [el.getBoundingClientRect().height, "
                                      "parseFloat(getComputedStyle(el).lineHeight)]")
        assert height < 1.5 * line, "the filter's label wraps"
        assert page.evaluate("document.documentElement.scrollWidth") <= 720
        page.screenshot(path=tmp_path / "landing-720.png", full_page=True)
    finally:
        context.close()


@pytest.mark.parametrize("demo_id", [d.id for d in apps.DEMOS])
def test_demo_route_renders(page, hub_url, demo_id, tmp_path):
    demo = apps.get_demo(demo_id)
    page.goto(f"{hub_url}/{demo_id}")
    expect(page.get_by_text(demo.title).first).to_be_visible(timeout=30_000)
    page.screenshot(path=tmp_path / f"{demo_id}.png", full_page=True)
    assert page.console_errors == []
