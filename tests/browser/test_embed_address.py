"""An embed a paper author can paste: on a hub reached at a loopback address the embed section says first that the
address works only here, and how to get a public one; a hub given its public address (--public-url) shows snippets
with it and no warning. Both at 720 and 1400 px, on the real hub in Debian Chromium."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import free_port

pytestmark = pytest.mark.browser

PUBLIC = "https://demos.example.org/lab"


@pytest.fixture(scope="module")
def public_hub(tmp_path_factory):
    """A second hub that knows the address the world reaches it at."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("hf-cache")))
    from apps import hub
    from apps.settings import ServeSettings

    blocks, (_, url, _) = hub.launch(ServeSettings(port=free_port(), public_url=PUBLIC + "/"),
                                     prevent_thread_lock=True)
    yield url.rstrip("/")
    blocks.close()
    mp.undo()


def open_embed_section(browser, url: str, width: int):
    context = browser.new_context(viewport={"width": width, "height": 1000})
    page = context.new_page()
    page.console_errors = []
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.goto(url)
    page.get_by_text("Embed this demo").click()
    return context, page


@pytest.mark.parametrize("width", [720, 1400])
def test_a_loopback_hub_says_its_snippet_works_only_here_before_the_snippet(browser, hub_url, width, tmp_path):
    context, page = open_embed_section(browser, f"{hub_url}/prax", width)
    try:
        section = page.locator(".demohub-embed-section")
        warning = section.locator(".demohub-warning")
        expect(warning).to_contain_text(f"This page's address, {hub_url}/prax, works only on this machine",
                                        timeout=30_000)
        expect(warning.locator("code").first).to_have_text("demohub deploy prax --space-id OWNER/NAME")
        expect(warning).to_contain_text("demohub serve --share")
        expect(warning).to_contain_text("--public-url https://your.domain")
        snippet = section.locator(".cm-content").first
        expect(snippet).to_contain_text(f'src="{hub_url}/prax?embed=1"')
        # read first: the warning is above the snippets, and fits the width
        assert warning.bounding_box()["y"] < snippet.bounding_box()["y"]
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        warning.scroll_into_view_if_needed()
        page.screenshot(path=tmp_path / f"embed-warning-{width}.png")
        assert page.console_errors == []
    finally:
        context.close()


@pytest.mark.parametrize("width", [720, 1400])
def test_a_hub_given_its_public_address_shows_snippets_with_it(browser, public_hub, width, tmp_path):
    context, page = open_embed_section(browser, f"{public_hub}/tag2text", width)
    try:
        section = page.locator(".demohub-embed-section")
        snippets = section.locator(".cm-content")
        expect(snippets.first).to_contain_text(f'src="{PUBLIC}/tag2text?embed=1"', timeout=30_000)
        expect(snippets.nth(1)).to_contain_text(f'<gradio-app src="{PUBLIC}/tag2text">')
        expect(section.locator(".demohub-warning")).to_have_count(0)
        assert "127.0.0.1" not in section.inner_text()
        page.screenshot(path=tmp_path / f"embed-public-{width}.png")
        assert page.console_errors == []
    finally:
        context.close()
