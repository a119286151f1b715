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
    k = page.get_by_label("k", exact=True)
    k.fill("0")
    page.get_by_role("button", name="Run").first.click()
    expect(page.get_by_text("k must be a whole number between 1 and 50; got 0, below the minimum.")).to_be_visible()
    assert ctx.pool.stats().misses == 0, "the refused run loaded a model"
    k.fill("3")
    page.get_by_role("button", name="Run").first.click()
    expect(page.get_by_text('"candidates"')).to_be_visible(timeout=90_000)
    expect(page.get_by_text("k must be")).to_have_count(0)
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
    smiles = page.get_by_label("smiles").last
    smiles.fill("C1CC(")
    page.get_by_role("button", name="Run").last.click()
    expect(page.get_by_text("is not a valid SMILES string")).to_be_visible()
    smiles.fill("CCO")
    page.get_by_role("button", name="Run").last.click()
    expect(page.get_by_text('"C2H6O"')).to_be_visible(timeout=90_000)
    page.close()
