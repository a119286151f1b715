"""The page in Debian Chromium: the self-written 3D viewer spins, stops on drag, follows a new molecule; no
console errors; a model question without weights shows the download hint as a toast."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from apps.molm3d import DEMO
from shared.context import DemoContext
from shared.pool import ModelPool
from tests.conftest import free_port

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def page_url(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "no-bundled"))
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    from apps.molm3d.page import build
    from apps.ui import theme

    demo = build(DemoContext(DEMO, ModelPool(budget_bytes=0)))
    _, url, _ = demo.launch(server_port=free_port(), prevent_thread_lock=True, theme=theme(), quiet=True)
    yield url
    demo.close()


def test_viewer_in_chromium(browser, page_url):
    pg = browser.new_page()
    errors = []
    pg.on("console", lambda m: m.type == "error" and errors.append(m.text))
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(page_url)
    svg = pg.locator(".molm3d-viewer svg")
    pg.wait_for_selector(".molm3d-viewer svg circle", timeout=30_000)
    assert svg.locator("circle").count() == 13  # aspirin, the default molecule
    before = svg.inner_html()
    pg.wait_for_function("(before) => document.querySelector('.molm3d-viewer svg').innerHTML !== before", arg=before,
                         timeout=10_000)  # spinning
    box = svg.bounding_box()
    pg.mouse.move(box["x"] + 100, box["y"] + 100)
    pg.mouse.down()
    pg.mouse.move(box["x"] + 200, box["y"] + 150, steps=5)
    pg.mouse.up()
    dragged = svg.inner_html()
    assert dragged != before  # rotated by the drag
    # Then still: proving that nothing happens needs a window. The spin redraws every 50 ms, so watch the svg
    # with a MutationObserver for 10 spin periods (500 ms of page time, counted frame by frame): any redraw counts.
    still = pg.evaluate("""async () => {
        const svg = document.querySelector('.molm3d-viewer svg');
        let redraws = 0;
        const observer = new MutationObserver(() => { redraws += 1; });
        observer.observe(svg, {childList: true, subtree: true, attributes: true, characterData: true});
        const start = performance.now();
        let frames = 0;
        while (performance.now() - start < 10 * 50) {
            await new Promise(requestAnimationFrame);
            frames += 1;
        }
        observer.disconnect();
        return {redraws, frames};
    }""")
    assert still["frames"] >= 3 and still["redraws"] == 0, still
    assert svg.inner_html() == dragged
    pg.fill("textarea >> nth=0", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C")
    pg.keyboard.press("Enter")
    pg.wait_for_function("document.querySelectorAll('.molm3d-viewer svg circle').length == 14", timeout=20_000)
    pg.get_by_role("button", name="Ask 3D-MoLM").click()
    toast = pg.locator("[data-testid='toast-body']", has_text="are not on this server").first  # not the banner
    toast.wait_for(timeout=20_000)
    pg.close()
    assert errors == []


def test_the_answer_is_shown_as_it_is_written_then_whole(browser, tiny_as_bundled, tmp_path, monkeypatch):
    """With (tiny) weights the answer appears while it is written ("3D-MoLM, writing: ..." every few words, read by
    a MutationObserver), then the whole answer replaces it."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    from apps.molm3d.page import build
    from apps.ui import theme

    demo = build(DemoContext(DEMO, ModelPool(budget_bytes=10**9)))
    _, url, _ = demo.launch(server_port=free_port(), prevent_thread_lock=True, theme=theme(), quiet=True)
    try:
        pg = browser.new_page(viewport={"width": 720, "height": 1000})
        pg.goto(url)
        pg.wait_for_selector(".molm3d-viewer svg circle", timeout=30_000)
        pg.evaluate("""() => { window.writing = new Set(); new MutationObserver(() => {
            const found = document.body.innerText.match(/3D-MoLM, writing:[^\\n]*/);
            if (found) window.writing.add(found[0]); }).observe(document.body,
            {subtree: true, childList: true, characterData: true}); }""")
        pg.get_by_role("button", name="Ask 3D-MoLM").click()
        pg.wait_for_function("document.body.innerText.includes('Instruction:')", timeout=60_000)
        assert pg.evaluate("() => window.writing.size") >= 2  # the text grew in more than one step
        assert "writing:" not in pg.locator("body").inner_text()  # the whole answer replaced it
        pg.close()
    finally:
        demo.close()


LOGP_EXAMPLE = "CC(=O)OC(CC(=O)[O-])C[N+](C)(C)C"


@pytest.mark.parametrize("width", [720, 1400])
def test_an_example_smiles_is_shown_exactly_and_names_never_break_inside(browser, page_url, width, tmp_path):
    """A visitor clicks the LogP example: the caption shows its SMILES as written (Markdown once made a link of
    [N+](C)), and the table's dotted method names break only after their dots."""
    context = browser.new_context(viewport={"width": width, "height": 1000})
    pg = context.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        pg.goto(page_url)
        pg.wait_for_selector(".molm3d-viewer svg circle", timeout=30_000)  # the page is live
        pg.get_by_text(LOGP_EXAMPLE, exact=True).first.click()
        pg.wait_for_function("(smiles) => [...document.querySelectorAll('strong')].some((s) => "
                             "s.textContent === smiles)", arg=LOGP_EXAMPLE, timeout=30_000)
        caption = pg.locator("strong").filter(has_text=re.compile(re.escape(LOGP_EXAMPLE))).first
        assert caption.inner_text() == LOGP_EXAMPLE
        assert caption.locator("xpath=..").locator("a").count() == 0, "part of the SMILES became a link"
        cell = pg.locator(".molm3d-table td", has_text="CalcTPSA").first
        lines = cell.evaluate("""(td) => {
            const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
            let node;
            while ((node = walker.nextNode())) {
                const at = node.data.indexOf("CalcTPSA");
                if (at < 0) continue;
                const range = document.createRange();
                range.setStart(node, at);
                range.setEnd(node, at + "CalcTPSA".length);
                return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
            }
            return -1;
        }""")
        assert lines == 1, f"CalcTPSA is split over {lines} lines"
        cell.scroll_into_view_if_needed()
        pg.screenshot(path=tmp_path / f"molm3d-logp-{width}.png")
    finally:
        context.close()
    assert errors == []


@pytest.mark.parametrize("width", [720, 1400])
def test_a_refused_smiles_clears_the_views_of_the_molecule_before(browser, page_url, width, tmp_path):
    """A visitor types a SMILES with a mistake and presses Enter: the sentence is beside the box and no drawing,
    table or caption of the previous molecule is left; the fixed SMILES draws again."""
    context = browser.new_context(viewport={"width": width, "height": 1000})
    pg = context.new_page()
    try:
        pg.goto(page_url)
        pg.wait_for_selector(".molm3d-viewer svg circle", timeout=30_000)
        box = pg.locator("textarea").first  # the SMILES box
        box.fill("CC(=O")
        box.press("Enter")
        expect(pg.get_by_text("is not a valid SMILES")).to_be_visible(timeout=30_000)
        expect(pg.locator(".molm3d-viewer svg")).to_have_count(0, timeout=10_000)
        expect(pg.locator(".molm3d-table")).to_have_count(0)
        expect(pg.get_by_text("heavy atoms, RDKit")).to_have_count(0)
        pg.screenshot(path=tmp_path / f"molm3d-refused-{width}.png")
        box.fill("CCO")
        box.press("Enter")
        pg.wait_for_function("document.querySelectorAll('.molm3d-viewer svg circle').length == 3", timeout=30_000)
        expect(pg.get_by_text("is not a valid SMILES")).to_have_count(0)
    finally:
        context.close()
