"""The Streamlit hub as a visitor meets it, in Debian Chromium at 720 and 1400 px, on `demohub serve --streamlit`
started as a command: the landing page's demo cards fit the width (no title broken inside a word), show their
pictures and each links to its demo's page; Tag2Text's batch tab names a file that is not an image and tags the
others."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
import requests
from playwright.sync_api import expect

import apps
from tests.commands import checkout_env
from tests.conftest import free_port

pytestmark = pytest.mark.browser

WHOLE_WORD_LINES = """(element) => {
  const lines = {};
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  let node;
  while ((node = walker.nextNode())) {
    for (const match of node.data.matchAll(/\\S+/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      lines[match[0]] = new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
    }
  }
  return lines;
}"""


@contextmanager
def visitor(browser, width: int):
    """A page in a fresh browser context ``width`` px wide."""
    context = browser.new_context(viewport={"width": width, "height": 1000})
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture(scope="module")
def streamlit_hub(tmp_path_factory, tiny_root):
    """`demohub serve --streamlit` on the tiny checkpoints (official layouts), offline."""
    root = tmp_path_factory.mktemp("streamlit-hub")
    port = free_port()
    env = checkout_env({**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(root / "cache"),
                        "DEMOHUB_CHECKPOINTS": str(tiny_root)})
    process = subprocess.Popen([sys.executable, "-m", "apps.cli", "serve", "--streamlit", "--port", str(port)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        assert process.poll() is None, "demohub serve --streamlit exited"
        try:
            if requests.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                break
        except requests.ConnectionError:
            pass
        assert time.monotonic() < deadline, "no answer within 120 s"
        time.sleep(0.5)
    yield url
    process.terminate()
    process.wait(timeout=30)


@pytest.mark.parametrize("width", [720, 1400])
def test_the_landing_cards_fit_and_link_to_their_demos(browser, streamlit_hub, width, tmp_path):
    with visitor(browser, width) as page:
        page.goto(streamlit_hub)
        cards = page.locator(".demo-card")
        expect(cards).to_have_count(len(apps.DEMOS), timeout=60_000)
        for n in range(cards.count()):
            card = cards.nth(n)
            assert card.bounding_box()["width"] >= 240, card.inner_text()[:40]
            broken = {word: lines for word, lines in card.locator("h3").evaluate(WHOLE_WORD_LINES).items()
                      if lines != 1}
            assert not broken, f"broken inside a word at {width} px: {broken}"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        broken = page.locator(".demo-preview img").evaluate_all(
            "images => images.filter((i) => !i.complete || i.naturalWidth === 0).length")
        assert broken == 0, "a card's picture does not load"
        page.screenshot(path=tmp_path / f"streamlit-landing-{width}.png", full_page=True)
        prax = apps.get_demo("prax")
        page.locator('.demo-card[data-demo="prax"] h3 a').click()
        expect(page).to_have_url(f"{streamlit_hub}/prax", timeout=30_000)
        expect(page.get_by_role("heading", name=prax.title).first).to_be_visible(timeout=60_000)


@pytest.mark.parametrize("width", [720, 1400])
def test_tag2text_batch_names_a_file_that_is_not_an_image_and_tags_the_others(browser, streamlit_hub, width,
                                                                                tmp_path):
    from apps.tag2text.actions import example_images

    fake = tmp_path / "notes.png"
    fake.write_text("hello")
    with visitor(browser, width) as page:
        page.goto(f"{streamlit_hub}/tag2text")
        page.get_by_role("tab", name="Batch").click(timeout=60_000)
        images = [p for p in example_images() if p.endswith(("beach.png", "car.png"))]
        page.locator("[data-testid='stFileUploaderDropzoneInput']").last.set_input_files([*images, str(fake)])
        expect(page.get_by_text("Left out of this batch (the other 2 files will be tagged): notes.png is not an "
                                "image Tag2Text can read")).to_be_visible(timeout=60_000)
        page.get_by_role("button", name="Tag and caption all").click()
        expect(page.get_by_text("2 image(s) processed.")).to_be_visible(timeout=120_000)
        expect(page.get_by_role("button", name="Download tag2text.csv")).to_be_visible()
        expect(page.get_by_role("button", name="Download tag2text.json")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=tmp_path / f"streamlit-tag2text-batch-{width}.png", full_page=True)


@pytest.mark.parametrize("width", [720, 1400])
def test_a_typed_smiles_is_shown_as_written(browser, streamlit_hub, width, tmp_path):
    """3D-MoLM's LogP example typed into the Streamlit page: its caption shows the SMILES exactly (Markdown once made
    a link of [N+](C)), with no link inside it."""
    smiles = "CC(=O)OC(CC(=O)[O-])C[N+](C)(C)C"
    with visitor(browser, width) as page:
        page.goto(f"{streamlit_hub}/molm3d")
        box = page.get_by_label("SMILES", exact=True)
        box.fill(smiles, timeout=60_000)
        box.press("Enter")
        caption = page.locator("strong", has_text=re.compile(re.escape(smiles)))
        expect(caption).to_have_text(smiles, timeout=60_000)
        assert caption.locator("xpath=..").locator("a").count() == 0, "part of the SMILES became a link"
        page.screenshot(path=tmp_path / f"streamlit-molm3d-{width}.png")


@pytest.mark.parametrize("width", [720, 1400])
def test_the_generated_mert_form_speaks_to_people_and_an_example_fills_it(browser, streamlit_hub, width, tmp_path):
    with visitor(browser, width) as page:
        page.goto(f"{streamlit_hub}/mert")
        expect(page.get_by_text("What to describe")).to_be_visible(timeout=60_000)
        page.get_by_role("button", name="Piano-like scale, key and pitch over time").click()
        expect(page.get_by_text("The example's piano-scale.flac")).to_be_visible(timeout=30_000)
        expect(page.get_by_label("Seconds per window", exact=True).and_(page.locator("input"))).to_have_value("2.00")
        body = page.locator("body").inner_text()
        for word in ("null", '""', "data URI", "MCP"):
            assert word not in body, f"the page shows the API's {word!r}"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=tmp_path / f"streamlit-mert-{width}.png", full_page=True)


@pytest.mark.parametrize("width", [720, 1400])
def test_the_embed_section_warns_on_a_loopback_hub_and_its_snippet_embeds(browser, streamlit_hub, width, tmp_path):
    """As on the Gradio pages: reached at 127.0.0.1, the section says first that the address works only here, with
    the ways to a public one; its iframe snippet (Streamlit's embedded view) shows the demo inside a paper page."""
    with visitor(browser, width) as page:
        page.goto(f"{streamlit_hub}/prax")
        page.get_by_text("Embed this demo").click(timeout=60_000)
        warning = page.get_by_text(f"This page's address, {streamlit_hub}/prax, works only on this machine")
        expect(warning).to_be_visible(timeout=30_000)
        expect(page.get_by_text("demohub deploy prax --space-id OWNER/NAME")).to_be_visible()
        snippet = page.locator("code", has_text="<iframe").first.inner_text()
        assert f'src="{streamlit_hub}/prax?embed=true"' in snippet, snippet
        page.screenshot(path=tmp_path / f"streamlit-embed-{width}.png")
        page.set_content(f"<h1>Our paper</h1>{snippet}")  # a paper page that pastes it
        frame = page.frame_locator("iframe")
        expect(frame.get_by_text("PraX: regexes from examples").first).to_be_visible(timeout=60_000)
        expect(frame.get_by_text("Embed this demo")).to_have_count(0)  # the embedded view has no embed section
