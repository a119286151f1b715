"""The page made from a demo's declarations (apps/forms.py), for a demo that ships no page of its own, used as a
person uses it in Debian Chromium at 720 px: the prefilled example runs, a mistake is marked on the input at fault
with the declared limit's sentence before anything is queued, the fixed input runs, and the answer is the API's.
Built here for PraX (bundled listeners) and 3D-MoLM's weight-free tab, whose own pages do more."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

import apps
from apps import forms
from shared.context import DemoContext
from shared.pool import ModelPool
from tests.conftest import serve_page

pytestmark = pytest.mark.browser


@pytest.fixture
def form_of(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    pages = []

    def served(demo_id: str) -> tuple[str, DemoContext]:
        ctx = DemoContext(apps.get_demo(demo_id), ModelPool(budget_bytes=2_000_000_000))
        page = serve_page(forms.build(ctx))
        pages.append(page)
        return page.__enter__(), ctx

    yield served
    for page in pages:
        page.__exit__(None, None, None)


def test_a_declared_form_marks_a_mistake_and_runs_the_fix(browser, form_of):
    url, ctx = form_of("prax")
    page = browser.new_page(viewport={"width": 720, "height": 1000})
    page.goto(url)
    expect(page.get_by_role("tab", name="Synthesize")).to_be_visible(timeout=30_000)
    k = page.get_by_label("Guesses", exact=True)
    k.fill("0")
    page.get_by_role("button", name="Run").first.click()
    # the sentence names the field as the page does (the API's sentence says "k must be ...")
    expect(page.get_by_text("Guesses must be a whole number between 1 and 50; got 0, below the minimum.")) \
        .to_be_visible()
    assert ctx.pool.stats().misses == 0, "the refused run loaded a model"
    k.fill("3")
    page.get_by_role("button", name="Run").first.click()
    expect(page.get_by_text('"candidates"')).to_be_visible(timeout=90_000)
    expect(page.get_by_text("Guesses must be")).to_have_count(0)
    expect(page.get_by_label("Weights")).to_have_value("tiny-pragmatic (loaded)")  # the view followed the run
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 720, f"the form scrolls sideways at 720 px ({width} px)"
    page.close()


def test_a_weight_free_form_answers_without_weights(browser, form_of):
    url, ctx = form_of("molm3d")
    page = browser.new_page(viewport={"width": 720, "height": 1000})
    page.goto(url)
    expect(page.get_by_text("Without them this page still gives the conformer")).to_be_visible(timeout=30_000)
    page.get_by_role("tab", name="Molecule properties").click()
    smiles = page.get_by_label("SMILES").last
    smiles.fill("C1CC(")
    page.get_by_role("button", name="Run").last.click()
    expect(page.get_by_text("is not a valid SMILES string")).to_be_visible()
    smiles.fill("CCO")
    page.get_by_role("button", name="Run").last.click()
    expect(page.get_by_text('"C2H6O"')).to_be_visible(timeout=90_000)
    page.close()


@pytest.mark.parametrize("width", [720, 1400])
def test_mert_page_reads_like_a_hand_made_one_and_its_examples_fill_every_field(browser, form_of, width, tmp_path):
    """MERT's page as a person meets it: labels and help in words (no null, "", data URI), the ten tasks as
    checkboxes named by what they describe, the timeline as a switch with its seconds; each example click sets every
    field (the sine chord ticks all ten tasks and turns the timeline off); a mistake is named by its label."""
    url, ctx = form_of("mert")
    page = browser.new_page(viewport={"width": width, "height": 1100})
    page.goto(url)
    expect(page.get_by_text("What to describe")).to_be_visible(timeout=30_000)
    text = page.locator("body").inner_text()
    for word in ("null", '""', "data URI", "MCP", "comma-separated"):
        assert word not in text, f"the page shows the API's {word!r}"
    tasks = page.get_by_role("checkbox")
    for title in ("Key", "Genre", "Mood", "Emotion (arousal, valence)"):
        expect(page.get_by_label(title, exact=True)).to_be_checked()  # all ten by default
    switch = page.get_by_label("Show a timeline")
    expect(switch).not_to_be_checked()
    page.get_by_text("Piano-like scale, key and pitch over time").click()
    expect(page.get_by_label("Key", exact=True)).to_be_checked()
    expect(page.get_by_label("Genre", exact=True)).not_to_be_checked()
    expect(switch).to_be_checked()
    expect(page.get_by_label("Seconds per window")).to_have_value("2")
    page.get_by_text("Sine chord, all ten tasks").click()
    expect(page.get_by_label("Genre", exact=True)).to_be_checked()
    expect(switch).not_to_be_checked()
    assert sum(tasks.nth(n).is_checked() for n in range(tasks.count())) == 10 + 0  # the switch is off
    switch.check()
    page.get_by_label("Seconds per window").fill("1")
    page.get_by_role("button", name="Run").click()
    expect(page.get_by_text("Seconds per window must be")).to_be_visible(timeout=30_000)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=tmp_path / f"mert-form-{width}.png", full_page=True)
    page.close()
