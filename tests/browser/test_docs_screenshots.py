"""The README's screenshots, taken of what a newcomer sees: the hub of a fresh clone with no Hugging Face Hub access
(``hub_url``: offline, an empty cache, only PraX's bundled listeners), each page used as a reader would, and what
the README says runs there checked before the picture is taken. ``scripts/screenshots`` runs this file with
``DEMOHUB_DOCS_SCREENSHOTS=1`` and rewrites ``docs/screenshots/<demo>.png``; otherwise the pictures go to a temp
folder, so CI checks the flows and the claims without touching the repository."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import expect

import apps
from shared.weights import REPO_ROOT

pytestmark = pytest.mark.browser

DOCS_SHOTS = REPO_ROOT / "docs" / "screenshots"
VIEWPORT = {"width": 1200, "height": 900}
WIDTH = 800  # px of the committed picture (the README shows it at that width)
MAX_HEIGHT = 1500  # px of the page kept (the top: the paper card, the inputs and the first results)
PENDING = ".wrap.translucent, .wrap.generating"  # Gradio's veil over outputs an event is about to update


def save(page, demo_id: str, tmp_path: Path) -> Path:
    """The page's top ``MAX_HEIGHT`` px, scaled to ``WIDTH`` px, as a small palette PNG."""
    expect(page.locator(PENDING)).to_have_count(0, timeout=30_000)  # no half-updated output in the picture
    raw = tmp_path / f"{demo_id}-raw.png"
    page.screenshot(path=raw, full_page=True)
    with Image.open(raw) as shot:
        shot = shot.convert("RGB").crop((0, 0, shot.width, min(shot.height, MAX_HEIGHT)))
        small = shot.resize((WIDTH, round(shot.height * WIDTH / shot.width)), Image.LANCZOS)
    folder = DOCS_SHOTS if os.environ.get("DEMOHUB_DOCS_SCREENSHOTS") == "1" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{demo_id}.png"
    small.quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)
    return target


@pytest.fixture
def reader(browser, hub_url):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.base = hub_url
    yield page
    context.close()


def weights_missing(page, demo_id: str, chosen: str) -> None:
    """The page says that the chosen weights are not on this server (the README's "needs" column), in the banner
    and the selector alike."""
    expect(page.get_by_text(re.compile(rf"The {demo_id} weights '{chosen}' .* not on this server"))).to_have_count(
        1, timeout=30_000)
    expect(page.get_by_label(re.compile("^(Weights|Checkpoint)$"))).to_have_value(f"{chosen} (not on this server)")


def test_prax_runs_fully_on_its_bundled_listeners(reader, tmp_path):
    reader.goto(f"{reader.base}/prax")
    box = reader.get_by_label("Example string")
    for string, button in (("ab1", "+ should match"), ("xy7", "+ should match"), ("ab", "− should not match")):
        box.fill(string)
        reader.get_by_role("button", name=button).click()
        expect(box).to_have_value("", timeout=60_000)
    for title in ("Literal listener", "PraX listener"):
        panel = reader.locator("h4", has_text=title).locator("xpath=..")
        expect(panel).to_contain_text(re.compile(r"ab1\s*\+.*xy7\s*\+.*ab\s*−", re.S), timeout=120_000)
    save(reader, "prax", tmp_path)
    assert reader.console_errors == []


def test_molm3d_draws_the_molecule_and_its_rdkit_table_without_weights(reader, tmp_path):
    reader.goto(f"{reader.base}/molm3d")
    reader.get_by_text("CN1C=NC2=C1C(=O)N(C(=O)N2C)C").first.click()  # caffeine
    expect(reader.locator(".molm3d-viewer svg circle")).to_have_count(14, timeout=60_000)
    expect(reader.locator(".molm3d-table tbody tr").first).to_be_visible()
    weights_missing(reader, "molm3d", "generalist")
    save(reader, "molm3d", tmp_path)
    assert reader.console_errors == []


def test_geodiffusion_edits_a_layout_and_shows_the_prompt_without_weights(reader, tmp_path):
    reader.goto(f"{reader.base}/geodiffusion")
    example = reader.locator(".geo-example").nth(1)
    chosen = re.search(r"(nuimages|coco-stuff)\S*", example.inner_text()).group(0)  # its checkpoint
    example.click()
    prompt = reader.get_by_label("Prompt the model reads")
    expect(prompt).to_have_value(re.compile(r"<l\d+>"), timeout=30_000)  # location tokens of the example's boxes
    weights_missing(reader, "geodiffusion", chosen)
    save(reader, "geodiffusion", tmp_path)
    assert reader.console_errors == []


def test_tag2text_says_it_needs_its_weights(reader, tmp_path):
    reader.goto(f"{reader.base}/tag2text")
    weights_missing(reader, "tag2text", "tag2text-swin-14m")
    save(reader, "tag2text", tmp_path)
    assert reader.console_errors == []


CUSTOM = {"prax", "molm3d", "geodiffusion", "tag2text"}  # the demos with pages of their own: a flow each, above


@pytest.mark.parametrize("demo", [d for d in apps.DEMOS if d.id not in CUSTOM], ids=lambda d: d.id)
def test_a_generated_page_says_what_it_needs_and_fills_in_its_first_example(reader, tmp_path, demo):
    """A demo whose page is the form made from its declaration (apps/forms.py): the banner names its default
    weights as missing, and a click on its first example fills the form (each text field with the example's value)."""
    reader.goto(f"{reader.base}/{demo.id}")
    weights_missing(reader, demo.id, demo.weight_sets[0].name)
    endpoint = demo.endpoints()[0]
    example = next(iter(endpoint.example_calls()), None)
    if example is not None:
        reader.get_by_text(example.label, exact=True).click()
        for i in endpoint.inputs:
            if i.kind == "text" and example.arguments.get(i.name):
                expect(reader.get_by_label(i.page_label)).to_have_value(example.arguments[i.name])
    expect(reader.get_by_role("button", name="Run")).to_be_visible()
    save(reader, demo.id, tmp_path)
    assert reader.console_errors == []


def test_every_page_of_its_own_has_a_flow_here():
    """A demo with a page of its own gets its README screenshot (and the check of what runs without weights) from a
    flow written for that page; every other demo's comes from the generated page's flow above."""
    assert {demo.id for demo in apps.DEMOS if demo.page} == CUSTOM
    flows = {name.split("_")[1] for name in globals() if name.startswith("test_") and name.split("_")[1] in CUSTOM}
    assert flows == CUSTOM
