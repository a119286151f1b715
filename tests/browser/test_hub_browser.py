"""The hub in Debian Chromium: cards, catalog, and every demo route without console errors."""

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


@pytest.mark.parametrize("demo_id", [d.id for d in apps.DEMOS])
def test_demo_route_renders(page, hub_url, demo_id, tmp_path):
    demo = apps.get_demo(demo_id)
    page.goto(f"{hub_url}/{demo_id}")
    expect(page.get_by_text(demo.title).first).to_be_visible(timeout=30_000)
    page.screenshot(path=tmp_path / f"{demo_id}.png", full_page=True)
    assert page.console_errors == []
