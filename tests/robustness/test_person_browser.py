"""Each demo page in Debian Chromium, driven as a person would on a hub with tiny official-layout weights:
fill the inputs, press the button, wait for the output, check it; no console errors; a screenshot per page.

The 1400 px flows (``person``) run twice: on the warm session hub, and as the first visitor of a cold one
(``demohub serve`` started as a command for that test alone, the page opened as soon as the hub answers: torch
still importing, no model loaded)."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from apps import ui
from apps.prax.page import GAME_TITLE
from tests.commands import start_hub
from tests.conftest import free_port
from tests.robustness.cases import make_files
from tests.robustness.conftest import POOL_BUDGET

pytestmark = pytest.mark.browser


def visitor(browser, robust_hub, width: int, height: int):
    """A page of the robust hub in a fresh browser context ``width`` px wide; its console errors are collected."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.base = robust_hub[0]
    return context, page


def enter_examples(box, *strings: str) -> None:
    """Each string typed 200 ms a key and entered with Enter; the page takes it when the box empties."""
    for string in strings:
        box.press_sequentially(string, delay=200)
        box.press("Enter")
        expect(box).to_have_value("", timeout=60_000)


@pytest.fixture(params=["warm", "cold"])
def person(request, browser, robust_hub, tiny_root, tmp_path):
    """A visitor at 1400 px: of the warm session hub, or the first of a hub started for this test alone."""
    if request.param == "warm":
        context, page = visitor(browser, robust_hub, 1400, 1800)
        yield page
        context.close()
        return
    hub = start_hub(tmp_path / "cold-hub", ["--downloads", "off", "--demo-concurrency", "4"],
                    {"HF_HUB_OFFLINE": "1", "DEMOHUB_CHECKPOINTS": str(tiny_root),
                     "DEMOHUB_POOL_BYTES": str(POOL_BUDGET)}, free_port(), poll=0.05)
    context, page = visitor(browser, (hub.url,), 1400, 1800)
    try:
        yield page
    finally:
        context.close()
        hub.process.terminate()
        hub.process.wait(timeout=30)
    assert "Traceback" not in hub.log, hub.log[-3000:]


def test_prax_add_examples_and_read_both_listeners(person, tmp_path):
    """A + and a − by their buttons, then four strings typed and entered 200 ms apart without waiting for the page
    (six strings 0.4 s apart once left one in the list on a cold hub): all six listed in order, and both listeners
    answer for all six. The first example's guesses (the search's) show within seconds, even on a cold hub."""
    person.goto(f"{person.base}/prax")
    box = person.get_by_label("Example string")
    box.fill("ab1")
    expect(box).to_have_value("ab1")
    person.get_by_role("button", name="+ should match").click()
    expect(box).to_have_value("", timeout=60_000)  # the page took the example and cleared the box
    expect(person.get_by_text(re.compile(r"^\+\s+ab1$"))).to_be_visible()  # ...and lists it: the click sent "ab1"
    for title in ("Literal listener", "PraX listener"):  # the search's guesses come at once, before the listeners'
        panel = person.locator("h4", has_text=title).locator("xpath=..")  # (it said "No examples yet" beside the
        expect(panel).not_to_contain_text("No examples yet", timeout=5_000)  # listed example until they came)
    box.fill("x")
    expect(box).to_have_value("x")
    person.get_by_role("button", name="− should not match").click()
    expect(box).to_have_value("", timeout=60_000)
    expect(person.get_by_text(re.compile(r"^−\s+x$"))).to_be_visible()
    typed = ["cd2", "ef3", "gh4", "ij5"]
    for string in typed:
        box.press_sequentially(string, delay=40)
        box.press("Enter")
        person.wait_for_timeout(200)
    expected = [("+", "ab1"), ("−", "x"), *(("+", s) for s in typed)]
    labels = person.locator("label", has=person.locator("input[type=checkbox]"))
    expect(labels).to_have_text([re.compile(rf"^\s*{re.escape(sign)}\s+{s}\s*$") for sign, s in expected],
                                timeout=60_000)
    rows = r"\s*".join(rf"{s}\s*{re.escape(sign)}.*" for sign, s in expected)
    for title in ("Literal listener", "PraX listener"):
        panel = person.locator("h4", has_text=title).locator("xpath=..")
        # a row per example, in order (with a ✓/✗ per candidate), or the honest "none fits" sentence
        expect(panel).to_contain_text(re.compile(rf"{rows}|consistent with all 6 examples", re.S), timeout=120_000)
    person.screenshot(path=tmp_path / "prax.png", full_page=True)
    assert person.console_errors == []


def test_tag2text_upload_and_caption(person, tmp_path):
    image = make_files(tmp_path)["ok.png"]
    person.goto(f"{person.base}/tag2text")
    person.locator("input[type=file]").first.set_input_files(str(image))
    person.get_by_label("Your tags (optional)").fill("sky, sunset")
    person.get_by_role("button", name="Tag and caption", exact=True).click()
    expect(person.get_by_role("textbox", name="Caption", exact=True)).to_have_value(re.compile(r"\w"),
                                                                                   timeout=120_000)
    expect(person.get_by_role("textbox", name="Your tags used for the caption")).to_have_value("sky, sunset")
    person.screenshot(path=tmp_path / "tag2text.png", full_page=True)
    assert person.console_errors == []


def test_molm3d_ask_about_the_default_molecule(person, robust_hub, tmp_path):
    from apps import get_demo
    from apps.molm3d.actions import EXAMPLES
    from apps.molm3d.conformer import featurize
    from shared.context import DemoContext

    person.goto(f"{person.base}/molm3d")
    expect(person.locator(".molm3d-viewer svg circle").first).to_be_visible(timeout=60_000)
    person.get_by_role("button", name="Ask 3D-MoLM").click()
    # the answer area (empty until the model answers), not the paper card's "3D-MoLM: ..." heading
    answer = person.locator("[data-testid='markdown']", has_text="Instruction:")
    expect(answer).to_contain_text("Instruction: Describe the input molecule.", timeout=180_000)
    # what the hub's own tiny model says about the default molecule (a pool hit: the page has just loaded it); its
    # bytes are random, so compare the runs of letters and digits the page renders, in order
    expected = DemoContext(get_demo("molm3d"), robust_hub[1]).pipeline()(featurize(EXAMPLES[0][0]), None,
                                                                         "caption")
    words = re.findall(r"[A-Za-z0-9]{4,}", expected.text)
    assert len(words) >= 3, expected.text
    expect(answer).to_contain_text(re.compile("3D-MoLM: .*" + ".*".join(map(re.escape, words)), re.S))
    person.screenshot(path=tmp_path / "molm3d.png", full_page=True)
    assert person.console_errors == []


def test_geodiffusion_generate_from_the_default_layout(person, tmp_path):
    person.goto(f"{person.base}/geodiffusion")
    steps = person.get_by_label("Steps", exact=True)
    steps.fill("2")
    steps.press("Tab")
    person.get_by_role("button", name="Generate", exact=True).click()
    expect(person.locator(".gallery-item img, [data-testid='gallery'] img, button.thumbnail-item img").first
           ).to_be_visible(timeout=180_000)
    person.screenshot(path=tmp_path / "geodiffusion.png", full_page=True)
    assert person.console_errors == []


@pytest.fixture
def narrow(browser, robust_hub):
    """A visitor reading a paper page: 720 px wide."""
    context, page = visitor(browser, robust_hub, 720, 1400)
    yield page
    context.close()


def test_tag2text_example_thumbnails_come_by_name_and_a_click_runs_at_720px(narrow, tmp_path):
    narrow.goto(f"{narrow.base}/tag2text")
    thumbnail = narrow.locator("img[alt='beach']")
    expect(thumbnail).to_be_visible(timeout=60_000)
    assert "/demohub/examples/tag2text/beach.png" in thumbnail.get_attribute("src")
    assert thumbnail.evaluate("img => img.complete && img.naturalWidth > 0"), "the thumbnail loaded"
    tags = narrow.get_by_label("Your tags (optional)")
    tags.press_sequentially("sky,, snu", delay=20)  # typed fast, with a slip...
    tags.fill("sky, sun")  # ...and fixed
    thumbnail.click()
    expect(narrow.locator("[data-testid='image'] img, .image-container img").first).to_be_visible(timeout=60_000)
    narrow.get_by_role("button", name="Tag and caption", exact=True).click()
    expect(narrow.get_by_role("textbox", name="Caption", exact=True)).to_have_value(re.compile(r"\w"),
                                                                                   timeout=120_000)
    expect(narrow.get_by_role("textbox", name="Your tags used for the caption")).to_have_value("sky, sun")
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 720, "nothing runs off the side at 720 px"
    narrow.screenshot(path=tmp_path / "tag2text-720.png", full_page=True)
    assert narrow.console_errors == []


def test_prax_error_toast_shows_a_visitors_markup_as_text_and_the_box_stays_usable(narrow, tmp_path):
    narrow.goto(f"{narrow.base}/prax")
    box = narrow.get_by_label("Example string")
    box.press_sequentially("<b>bold</b>é", delay=20)  # é: not printable ASCII, refused with the string quoted back
    narrow.get_by_role("button", name="+ should match").click()
    toast = narrow.locator("[data-testid='toast-body']")
    expect(toast).to_contain_text("The example '<b>bold</b>é' contains the character 'é'", timeout=60_000)
    assert toast.locator("b").count() == 0, "the visitor's <b> stayed text"
    box.fill("<b>bold</b>")  # the fix: printable ASCII, markup and all
    narrow.get_by_role("button", name="+ should match").click()
    expect(box).to_have_value("", timeout=60_000)
    expect(narrow.get_by_text("<b>bold</b>", exact=False).first).to_be_visible()
    narrow.screenshot(path=tmp_path / "prax-toast-720.png", full_page=True)


def test_prax_a_mistake_locks_nothing_and_every_example_stays_in_order(narrow, tmp_path):
    """Typed 200 ms apart, a contradiction, then the fix: the refusal is a toast, the box keeps the string and stays
    editable, no component is left in an error state, the examples are listed in the order they were added, and
    the guesses read at 720 px."""
    narrow.goto(f"{narrow.base}/prax")
    box = narrow.get_by_label("Example string")
    enter_examples(box, "ab1", "cd2")
    box.press_sequentially("ab1", delay=200)
    narrow.get_by_role("button", name="− should not match").click()  # the mistake: ab1 is already a match
    expect(narrow.locator("[data-testid='toast-body']")).to_contain_text("given both as a match", timeout=60_000)
    expect(box).to_have_value("ab1")
    assert box.is_editable()
    assert narrow.locator(".error:visible").count() == 0, "a component shows an error badge"
    narrow.wait_for_function("() => { const e = document.activeElement; return e && e.tagName === 'TEXTAREA' && "
                             "e.value === 'ab1' && e.selectionStart === 0 && e.selectionEnd === 3; }", timeout=10_000)
    narrow.keyboard.type("x", delay=200)  # the fix, typed at once: the given-back string is selected, so it goes
    expect(box).to_have_value("x")  # (it was appended to: "ab1x")
    narrow.get_by_role("button", name="− should not match").click()
    expect(box).to_have_value("", timeout=60_000)
    labels = narrow.locator("label", has=narrow.locator("input[type=checkbox]"))
    expect(labels).to_have_text([re.compile(r"\+\s+ab1"), re.compile(r"\+\s+cd2"), re.compile(r"−\s+x")])
    assert narrow.locator(".error:visible").count() == 0
    # The results read at 720 px: each regex on one line (never broken inside a token), one row per example,
    # anything too wide scrolling inside its own box, never the page.
    panel = narrow.locator("h4", has_text="PraX listener").locator("xpath=..")
    rows = panel.locator("tbody").nth(1).locator("tr")
    expect(rows).to_have_count(3, timeout=120_000)  # the guesses for the latest list
    regexes = panel.locator("code")
    assert regexes.count() > 0
    for height, line in regexes.evaluate_all(
            "codes => codes.map(c => [c.getBoundingClientRect().height, parseFloat(getComputedStyle(c).lineHeight)])"):
        assert height < 1.5 * line, "a regex wrapped onto a second line"
    assert [row.inner_text().split()[0] for row in rows.all()] == ["ab1", "cd2", "x"]
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 720
    narrow.screenshot(path=tmp_path / "prax-mistake-720.png", full_page=True)
    assert narrow.console_errors == []


def test_prax_fast_typing_on_a_slow_hub_loses_no_example(narrow, tmp_path):
    """Six strings, each typed and entered 200 ms after the last, while every request takes a second to arrive (a
    cold or busy hub): every Enter counts, in order, and no character typed is lost."""
    def slow(route):
        time.sleep(1.0)
        route.continue_()

    narrow.goto(f"{narrow.base}/prax")
    box = narrow.get_by_label("Example string")
    expect(box).to_be_editable(timeout=60_000)
    narrow.route("**/queue/join*", slow)
    typed = ["aa1", "bb2", "cc3", "dd4", "ee5", "ff6"]
    for string in typed:
        box.press_sequentially(string, delay=40)
        box.press("Enter")
        narrow.wait_for_timeout(200)
    labels = narrow.locator("label", has=narrow.locator("input[type=checkbox]"))
    expect(labels).to_have_count(len(typed), timeout=60_000)
    listed = [re.sub(r"^\+\s+", "", text) for text in labels.all_inner_texts()]
    assert listed == typed  # each string alone (the box empties as it is sent), in order, none dropped
    expect(box).to_have_value("")
    narrow.unroute("**/queue/join*")
    narrow.screenshot(path=tmp_path / "prax-fast-720.png", full_page=True)


def test_prax_embed_copied_from_the_page_shows_the_results_in_full_at_720px(browser, robust_hub, paper_site,
                                                                           tmp_path):
    """A lab reaches the hub at an address of its own (here localhost), copies the iframe snippet from the page and
    pastes it into its paper page; a reader at 720 px adds examples inside the iframe: the embedded view has no hub
    navigation and no embed section, and the iframe grows with the results, so the guesses are inside its box."""
    reached = robust_hub[0].replace("127.0.0.1", "localhost")
    context, lab = visitor(browser, robust_hub, 1400, 1000)
    try:
        lab.goto(f"{reached}/prax")
        lab.get_by_text("Embed this demo").click()
        code = lab.locator(".demohub-embed-section .cm-content").first
        expect(code).to_contain_text(f'src="{reached}/prax?embed=1"', timeout=30_000)
        snippet = code.inner_text()
    finally:
        context.close()
    assert snippet.startswith("<iframe") and snippet.rstrip().endswith("</script>")

    context, reader = visitor(browser, robust_hub, 720, 900)
    try:
        reader.goto(paper_site(snippet))
        iframe = reader.locator("iframe#demohub-prax")
        frame = reader.frame_locator("iframe#demohub-prax")
        box = frame.get_by_label("Example string")
        expect(box).to_be_editable(timeout=60_000)
        expect(frame.locator("nav")).to_be_hidden()
        expect(frame.get_by_text("Embed this demo")).to_be_hidden()
        expect(iframe).not_to_have_attribute("height", str(ui.EMBED_HEIGHT), timeout=30_000)  # the page's own
        before = int(iframe.get_attribute("height"))
        enter_examples(box, "ab1", "cd2")
        panel = frame.locator("h4", has_text="PraX listener").locator("xpath=..")
        expect(panel.locator("tbody").nth(1).locator("tr")).to_have_count(2, timeout=120_000)
        expect(panel).to_contain_text("samples fit every example", timeout=120_000)  # the listeners' (the last) answer
        last = frame.get_by_text(GAME_TITLE)  # the page's last part, below every result
        expect(last).to_be_visible()

        def inside() -> bool:
            outer, bottom = iframe.bounding_box(), last.bounding_box()
            return bottom["y"] + bottom["height"] <= outer["y"] + outer["height"]

        deadline = time.monotonic() + 10
        while not inside() and time.monotonic() < deadline:  # the frame reports a new height as it grows
            reader.wait_for_timeout(200)
        assert inside(), f"the page's end is cut off: iframe {iframe.bounding_box()}, end {last.bounding_box()}"
        assert int(iframe.get_attribute("height")) > before, "it grew with the results"
        assert reader.evaluate("document.documentElement.scrollWidth") <= 720
        last.scroll_into_view_if_needed()  # what the reader sees at the end of the results
        reader.screenshot(path=tmp_path / "prax-embed-720.png")

        # Hostile messages: the paper page itself, or another window, cannot resize the frame; the frame's own
        # message is bounded.
        height = iframe.get_attribute("height")
        reader.evaluate("window.postMessage({type: 'demohub:height', height: 50}, '*')")
        reader.wait_for_timeout(300)
        assert iframe.get_attribute("height") == height
        reader.frames[1].evaluate("parent.postMessage({type: 'demohub:height', height: 1e9}, '*')")
        expect(iframe).to_have_attribute("height", str(ui.MAX_EMBED_HEIGHT))
        # ...and the frame's next real height replaces it: it follows the page down as well as up.
        frame.get_by_role("button", name="Clear all").click()
        expect(frame.locator("label", has=frame.locator("input[type=checkbox]"))).to_have_count(0, timeout=60_000)
        content = "app => Math.ceil(app.getBoundingClientRect().bottom)"
        expect(iframe).not_to_have_attribute("height", str(ui.MAX_EMBED_HEIGHT), timeout=30_000)
        reader.wait_for_timeout(1000)
        assert abs(int(iframe.get_attribute("height")) - frame.locator("gradio-app").evaluate(content)) <= 2
        assert reader.console_errors == []
    finally:
        context.close()


def test_prax_an_official_listener_missing_here_says_so_once_on_its_own_panel(narrow, tmp_path):
    """At 720 px a reader picks the official PraX listener, which this server does not have: the list labels it
    "not on this server", its panel says so in place of the tiny listener's older guesses, the banner says it once,
    nothing shows an error badge, and the literal listener keeps guessing."""
    narrow.goto(f"{narrow.base}/prax")
    box = narrow.get_by_label("Example string")
    enter_examples(box, "ab1", "cd2")
    pragmatic = narrow.locator("h4", has_text="PraX listener").locator("xpath=..")
    expect(pragmatic.locator("table")).to_have_count(2, timeout=120_000)  # the tiny listener's guesses
    chooser = narrow.get_by_label("Pragmatic listener (PraX)")
    chooser.click()
    option = narrow.get_by_role("option", name="pragmatic-ft-listener (not on this server)")
    expect(option).to_be_visible()
    option.click()
    panel = narrow.locator("h4", has_text="PraX listener (pragmatic-ft-listener)").locator("xpath=..")
    expect(panel).to_contain_text("are not on this server", timeout=60_000)
    expect(panel.locator("table")).to_have_count(0)  # no stale guesses under the new title
    banner = narrow.locator(".demohub-notice", has_text="pragmatic-ft-listener")
    expect(banner).to_have_count(1)
    expect(banner).to_be_visible()  # the quiet banner block shows once it has something to say
    literal = narrow.locator("h4", has_text="Literal listener").locator("xpath=..")
    expect(literal.locator("tbody").nth(1).locator("tr")).to_have_count(2)
    assert narrow.locator(".error:visible").count() == 0
    sentence = "The prax weights 'pragmatic-ft-listener' (1.20 GB) are not on this server."
    assert sentence in banner.inner_text() and sentence in panel.inner_text(), "one state, one sentence"
    narrow.screenshot(path=tmp_path / "prax-missing-720.png", full_page=True)
    assert narrow.console_errors == []


def test_geodiffusion_examples_checkpoint_switch_and_export_at_720px(narrow, tmp_path):
    """A reader at 720 px: examples are small pictures of their layouts with their checkpoints; a COCO-Stuff example
    loads a layout without the driving-scene fields; λ shows only with Epsilon Scaling; before any image there is no
    empty gallery and nothing to export; after one, the images and the export are there."""
    narrow.goto(f"{narrow.base}/geodiffusion")
    examples = narrow.locator(".geo-example")
    expect(examples.first.locator("svg rect").nth(1)).to_be_visible(timeout=60_000)  # a box of the first layout
    layout = narrow.locator("#geo-layout-json textarea")
    examples.filter(has_text="coco-stuff-256x256").first.click()
    expect(narrow.get_by_label("Checkpoint")).to_have_value(re.compile(r"^coco-stuff-256x256"), timeout=30_000)
    assert "camera" not in layout.input_value() and '"bbox"' in layout.input_value()
    export = narrow.get_by_role("button", name="Export as COCO dataset")
    expect(export).to_be_disabled()
    expect(narrow.locator("#geo-gallery")).to_be_hidden()
    expect(narrow.get_by_text("λ (divides the predicted noise)")).to_be_hidden()
    narrow.get_by_label("Epsilon Scaling (ICLR 2024)").check()
    expect(narrow.get_by_text("λ (divides the predicted noise)")).to_be_visible()
    narrow.get_by_label("Epsilon Scaling (ICLR 2024)").uncheck()
    examples.filter(has_text="nuimages-256x256").first.click()  # the tiny checkpoint this hub has
    expect(narrow.get_by_label("Checkpoint")).to_have_value(re.compile(r"^nuimages-256x256"), timeout=30_000)
    assert '"camera"' in layout.input_value()
    steps = narrow.get_by_label("Steps", exact=True)
    expect(steps).to_have_value("100")  # the checkpoint's default has arrived: a number typed now stays
    steps.fill("2")
    steps.press("Tab")
    narrow.get_by_role("button", name="Generate", exact=True).click()
    expect(narrow.locator("#geo-gallery img").first).to_be_visible(timeout=180_000)
    expect(export).to_be_enabled()
    export.click()
    expect(narrow.locator("#geo-export a[href*='geodiffusion_coco.zip']").first).to_be_attached(timeout=60_000)
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 720
    narrow.screenshot(path=tmp_path / "geodiffusion-720.png", full_page=True)
    assert narrow.console_errors == []


def test_molm3d_opens_drawn_and_an_example_redraws_everything_at_720px(narrow, tmp_path):
    """The page opens with the first molecule already drawn (no request, no spinner); clicking the caffeine example
    redraws the 2D and 3D views and the table at once, and the 3D view shows caffeine alone, steadily; the table
    lists the values RDKit has and folds the rest under one line; nothing is cut at 720 px."""
    joins = []
    narrow.on("request", lambda r: "/queue/join" in r.url and joins.append(r.url))
    narrow.goto(f"{narrow.base}/molm3d")
    circles = narrow.locator(".molm3d-viewer svg circle")
    expect(circles).to_have_count(13, timeout=60_000)  # aspirin's heavy atoms
    assert joins == [], "the first view came with the page"
    expect(narrow.locator(".molm3d-table tbody tr")).to_have_count(3)
    expect(narrow.locator(".molm3d-missing summary")).to_have_text(re.compile(r"^5 more with no RDKit value"))
    table = narrow.locator(".molm3d-table")
    assert table.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), "the table is cut at 720 px"
    narrow.get_by_text("CN1C=NC2=C1C(=O)N(C(=O)N2C)C").first.click()
    expect(circles).to_have_count(14, timeout=30_000)  # caffeine
    for _ in range(6):  # steadily: the previous molecule's animation does not come back
        narrow.wait_for_timeout(150)
        assert circles.count() == 14
    expect(narrow.get_by_text(re.compile(r"CN1C=NC2=C1C\(=O\)N\(C\(=O\)N2C\)C: 14 heavy atoms"))).to_be_visible()
    chooser = narrow.get_by_label("Weights")
    assert chooser.evaluate("el => el.scrollWidth <= el.clientWidth"), "the weights label runs under the arrow"
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 720
    narrow.screenshot(path=tmp_path / "molm3d-720.png", full_page=True)
    assert narrow.console_errors == []


def test_prax_example_set_menu_dismissed_says_nothing_and_a_chosen_set_reads_with_minus_signs(narrow, tmp_path):
    """A reader opens "Start from an example set", changes their mind (Escape, a click elsewhere): no warning. Then
    picks "semicolon-separated numbers": the list writes − as the button does, and both panels show the regex meant
    first, ranked by the listener with the search's (the set no bundled listener's samples fitted before the
    search)."""
    narrow.goto(f"{narrow.base}/prax")
    menu = narrow.get_by_label("Start from an example set")
    menu.click(timeout=60_000)
    narrow.keyboard.press("Escape")
    narrow.get_by_text("Literal listener").first.click()
    narrow.wait_for_timeout(1500)
    expect(narrow.locator("[data-testid='toast-body']")).to_have_count(0)
    menu.click()
    narrow.get_by_role("option", name="semicolon-separated numbers").click()
    expect(narrow.get_by_text("−  12,7")).to_be_visible(timeout=60_000)
    for title in ("Literal listener", "PraX listener"):
        panel = narrow.locator("h4", has_text=title).locator("xpath=..")
        expect(panel).to_contain_text("samples fit every example", timeout=120_000)
        expect(panel.locator("code").first).to_have_text("[0-9]{1,3}(;[0-9]{1,3})*")
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 720
    narrow.screenshot(path=tmp_path / "prax-search-720.png", full_page=True)


def test_prax_refusals_in_a_row_show_one_toast_about_the_latest_string(narrow, tmp_path):
    """Three refused strings in a row (each already given as a match, then sent as −): one toast, about the latest;
    the earlier ones close as the next string is sent (they stacked into one "Warning (3)")."""
    narrow.goto(f"{narrow.base}/prax")
    box = narrow.get_by_label("Example string")
    enter_examples(box, "ab1", "cd2", "ef3")
    minus = narrow.get_by_role("button", name="− should not match")
    toasts = narrow.locator("[data-testid='toast-body']")
    for string in ("ab1", "cd2", "ef3"):
        box.fill(string)
        minus.click()
        expect(toasts.last).to_contain_text(f"'{string}' is given both as a match", timeout=60_000)
    narrow.wait_for_timeout(500)
    expect(toasts).to_have_count(1)
    assert not re.search(r"\(\d+\)", toasts.first.inner_text()), toasts.first.inner_text()
    assert "ab1" not in toasts.first.inner_text()
    narrow.screenshot(path=tmp_path / "prax-one-toast-720.png")


def test_prax_suggest_with_no_examples_says_why_beside_the_example_box(narrow, tmp_path):
    """"Suggest an informative example" before any example: the sentence shows beside the example box (it was a 422
    in the console and nothing on the page); after one example, Suggest answers."""
    narrow.goto(f"{narrow.base}/prax")
    suggest = narrow.get_by_role("button", name="Suggest an informative example")
    suggest.click(timeout=60_000)
    box = narrow.get_by_label("Example string")
    sentence = narrow.get_by_text("There are no examples yet, so there is nothing to guess from")
    expect(sentence).to_be_visible(timeout=30_000)
    gap = sentence.bounding_box()["y"] - box.bounding_box()["y"]
    assert abs(gap) < 120, f"the sentence is {gap:.0f} px from the example box"
    narrow.screenshot(path=tmp_path / "prax-suggest-empty-720.png")
    enter_examples(box, "ab1")
    suggest.click()
    expect(narrow.get_by_text("Try ")).to_be_visible(timeout=120_000)
    expect(narrow.get_by_text("the listener's best guess")).to_be_visible()


def test_prax_a_long_paste_is_refused_with_its_length_and_a_long_example_stays_in_its_card(narrow, tmp_path):
    """A 5,000-character paste is not cut to 100 in silence: the sentence says how long it is and the limit; a
    100-character example is listed within the card at 720 px (its chip overflowed)."""
    narrow.goto(f"{narrow.base}/prax")
    box = narrow.get_by_label("Example string")
    box.fill("ab" * 2500, timeout=60_000)
    narrow.get_by_role("button", name="+ should match").click()
    expect(narrow.locator("[data-testid='toast-body']")).to_contain_text("is 5000 characters long; the limit is 100",
                                                                         timeout=60_000)
    box.fill("x" * 100)
    narrow.get_by_role("button", name="+ should match").click()
    chip = narrow.locator("label", has=narrow.locator("input[type=checkbox]")).first
    expect(chip).to_contain_text("x" * 100, timeout=60_000)
    card = chip.locator("xpath=ancestor::*[contains(concat(' ', @class, ' '), ' block ')][1]")
    right = card.bounding_box()["x"] + card.bounding_box()["width"]
    assert chip.bounding_box()["x"] + chip.bounding_box()["width"] <= right + 1, "the chip runs out of its card"
    assert narrow.evaluate("document.documentElement.scrollWidth") <= 720
    narrow.screenshot(path=tmp_path / "prax-long-720.png", full_page=True)
