"""CodeSage's pages as a person meets them, in Debian Chromium at 720 and 1400 px, on the tiny checkpoint: typed
fast, a mistake named by its label before anything is queued, the fix runs, an example click fills the form and runs,
and the answer reads as scores, files, lines and code (no sideways scroll); Gradio's page and Streamlit's."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.conftest import tiny_hub_running
from tests.streamlit.test_streamlit_browser import streamlit_hub, visitor  # noqa: F401 - a fixture

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def gradio_hub(tiny_root, tmp_path_factory):
    with tiny_hub_running(tiny_root, tmp_path_factory, 2_000_000_000) as (url, pool):
        yield url, pool


@pytest.mark.parametrize("width", [720, 1400])
def test_a_visitor_searches_code_makes_a_mistake_and_reads_the_matches(browser, gradio_hub, width, tmp_path):
    url, pool = gradio_hub
    with visitor(browser, width) as page:
        page.goto(f"{url}/codesage")
        query = page.get_by_label("What the code should do, or a piece of code")
        expect(query).to_be_visible(timeout=60_000)
        query.press_sequentially("read a jsno file", delay=10)  # a typo, typed fast
        page.get_by_label("Code to search").fill("")
        loads = pool.stats().misses
        page.get_by_role("button", name="Run").first.click()
        expect(page.get_by_text("No code to search: paste some code or upload source files")).to_be_visible(
            timeout=30_000)
        assert pool.stats().misses == loads, "the refused search loaded the model"
        query.fill("read a json file")
        page.get_by_text("Find a search in a sorted list", exact=True).click()  # the example's files
        expect(query).to_have_value("find an item in a sorted list")
        page.get_by_label("Snippets to show").fill("0")
        page.get_by_role("button", name="Run").first.click()
        expect(page.get_by_text("Snippets to show must be a whole number between 1 and 50")).to_be_visible()
        page.get_by_label("Snippets to show").fill("3")
        page.get_by_role("button", name="Run").first.click()
        expect(page.get_by_text("Most similar snippets (cosine similarity)")).to_be_visible(timeout=90_000)
        matches = page.locator("details").filter(has=page.locator("pre"))
        expect(matches).to_have_count(3)
        expect(matches.first.locator("summary")).to_contain_text(".py, lines ")
        expect(page.get_by_text("snippets searched (")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width, "the answer scrolls sideways"
        page.screenshot(path=tmp_path / f"codesage-{width}.png", full_page=True)


@pytest.mark.parametrize("width", [720, 1400])
def test_the_streamlit_page_runs_a_pasted_example(browser, streamlit_hub, width, tmp_path):  # noqa: F811
    with visitor(browser, width) as page:
        page.goto(f"{streamlit_hub}/codesage")
        expect(page.get_by_text("What the code should do, or a piece of code")).to_be_visible(timeout=60_000)
        page.get_by_role("button", name="Pasted code, asked in words").click()
        expect(page.get_by_role("textbox", name="Code to search")).to_have_value(re.compile("def is_palindrome"),
                                                                                 timeout=30_000)
        page.get_by_role("button", name="Run").first.click()
        expect(page.get_by_text("Most similar snippets (cosine similarity)")).to_be_visible(timeout=90_000)
        expect(page.get_by_text("pasted code, lines").first).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=tmp_path / f"streamlit-codesage-{width}.png", full_page=True)
