"""The Streamlit hub through AppTest: landing cards, catalog search, demo pages."""

import pytest
from streamlit.testing.v1 import AppTest

import apps
from apps import catalog, views
from shared.weights import REPO_ROOT

HUB = str(REPO_ROOT / "apps" / "streamlit_hub.py")


@pytest.fixture
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))


def test_landing_lists_demos_and_catalog(offline):
    at = AppTest.from_file(HUB, default_timeout=60).run()
    assert not at.exception
    cards = at.get("html")[0].proto.body  # the cards, as the Gradio hub's (apps/views.py)
    for demo in apps.DEMOS:
        assert f'data-demo="{demo.id}"' in cards and f'href="./{demo.id}"' in cards, demo.id
    assert len(at.expander) == len(catalog.load_catalog())  # the papers; pool internals are for `demohub stats`
    at.text_input[0].input("Tag2Text").run()
    assert [e.label for e in at.expander] == ["Tag2Text: Guiding Vision-Language Model via Image Tagging · ▶ live demo"]
    at.checkbox[0].check().run()
    at.text_input[0].input("").run()
    assert len(at.expander) == len(apps.DEMOS)


def test_a_card_without_a_declared_picture_shows_its_title_drawn_as_an_image(offline, monkeypatch):
    """Streamlit's st.html drops inline SVG: the title picture of a demo that declares none (``views.title_picture``)
    comes as an image of itself, the same drawing as on the Gradio hub."""
    import base64
    import dataclasses
    import re

    plain = dataclasses.replace(apps.get_demo("prax"), preview="")
    monkeypatch.setattr(apps, "DEMOS", tuple(plain if d.id == "prax" else d for d in apps.DEMOS))
    at = AppTest.from_file(HUB, default_timeout=60).run()
    assert not at.exception
    cards = at.get("html")[0].proto.body
    card = cards[cards.index('data-demo="prax"'):].split('class="demo-card"')[0]
    data = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', card).group(1)
    assert base64.b64decode(data).decode() == views.title_picture(plain)


def build_tiny_checkpoints(root):
    """Tiny Tag2Text and 3D-MoLM checkpoints in the official layouts, as a DEMOHUB_CHECKPOINTS root."""
    from tests.fixtures.tiny_molm3d import build_tiny_snapshot
    from tests.fixtures.tiny_tag2text import write_tiny_checkpoint

    write_tiny_checkpoint(root / "tag2text" / "tag2text-swin-14m")
    build_tiny_snapshot(root / "molm3d" / "generalist")
    return root


@pytest.fixture
def pool():
    """The process-wide pool the Streamlit pages use, empty before and after the test."""
    from shared.pool import default_pool

    default_pool().clear()
    yield default_pool()
    default_pool().clear()


@pytest.fixture
def tiny_checkpoints(offline, tmp_path, monkeypatch, pool):
    """Tiny checkpoints in the official layouts, found through DEMOHUB_CHECKPOINTS/<demo>/<set>."""
    root = build_tiny_checkpoints(tmp_path / "ckpts")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(root))
    return root


def direct(demo_id: str, pool):
    """The demo's default pipeline straight from the pool the page used (a pool hit once the page has run it)."""
    from shared.context import DemoContext

    return DemoContext(apps.get_demo(demo_id), pool).pipeline()


def test_tag2text_page_tags_an_example(tiny_checkpoints, pool):
    from apps.tag2text.actions import example_images

    at = AppTest.from_file(HUB, default_timeout=120).run()
    at.switch_page("tag2text/streamlit_page.py").run()
    assert not at.exception
    assert at.selectbox[0].options == ["tag2text-swin-14m (on disk)"]
    assert at.selectbox[1].options == ["beach.png", "car.png", "fruit.png", "house.png"]
    at.slider[0].set_value(0.0).run()
    at.text_input[0].input("dog, beach").run()
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # the same image, threshold and tags through the pipeline the page used: the page shows exactly its answer
    beach = next(p for p in example_images() if p.endswith("/beach.png"))
    expected = direct("tag2text", pool)(beach, threshold=0.0, user_tags="dog, beach").results[0]
    assert expected.caption.strip() and expected.tags
    assert [s.value for s in at.subheader] == ["Caption", "Tags"]
    assert expected.caption in [m.value for m in at.markdown], "the tiny model's caption is shown"
    tags = at.dataframe[0].value
    assert list(tags["tag"]) == [t.name for t in expected.tags]
    assert list(tags["score"]) == pytest.approx([round(t.score, 3) for t in expected.tags], abs=1e-3)
    assert [c.value for c in at.caption if "guided by your tags" in c.value] == [
        "Caption guided by your tags: dog, beach"]


def test_molm3d_page_conformer_without_weights_and_answer_with_tiny_weights(offline, tmp_path, monkeypatch, pool):
    from apps.molm3d.actions import EXAMPLES
    from apps.molm3d.conformer import featurize

    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "no-weights"))
    at = AppTest.from_file(HUB, default_timeout=120).run()
    at.switch_page("molm3d/streamlit_page.py").run()
    assert not at.exception and not at.error
    assert any("heavy atoms" in m.value for m in at.markdown)
    # the 2D drawing is an SVG in a component frame: Streamlit's Markdown strips inline SVG (the drawing was blank)
    assert not any("<svg" in m.value for m in at.markdown)
    assert len(at.dataframe[0].value) >= 3  # RDKit reference table without any weights
    at.button[0].click().run()  # asking without weights: one sentence naming the download, no answer
    assert at.error and "demohub download molm3d" in at.error[0].value and not at.exception
    assert "3D-MoLM" not in [s.value for s in at.subheader]
    at.text_input[0].input("C1CC").run()  # unclosed ring: invalid SMILES
    assert at.error and "SMILES" in at.error[0].value and not at.exception
    at.text_input[0].input(EXAMPLES[2][0]).run()  # [N+](C) once read as a Markdown link
    assert any(m.value.startswith(f"**{views.text(EXAMPLES[2][0])}**") for m in at.markdown)

    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(build_tiny_checkpoints(tmp_path / "ckpts")))
    at = AppTest.from_file(HUB, default_timeout=240).run()
    at.switch_page("molm3d/streamlit_page.py").run()
    assert at.text_input[0].value == EXAMPLES[0][0] and at.selectbox[1].value == "caption"
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [s.value for s in at.subheader] == ["3D-MoLM"]
    expected = direct("molm3d", pool)(featurize(EXAMPLES[0][0]), None, "caption")
    assert expected.text.strip()
    assert views.text(expected.text) in [m.value for m in at.markdown], "the tiny model's answer is shown as written"


def test_molm3d_page_asks_the_tiny_model(tiny_checkpoints, pool):
    from apps.molm3d.actions import EXAMPLES
    from apps.molm3d.conformer import featurize

    at = AppTest.from_file(HUB, default_timeout=240).run()
    at.switch_page("molm3d/streamlit_page.py").run()
    at.selectbox[1].set_value("molecular_weight").run()
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [s.value for s in at.subheader] == ["3D-MoLM"]
    expected = direct("molm3d", pool)(featurize(EXAMPLES[0][0]), None, "molecular_weight")
    assert expected.text.strip()
    assert views.text(expected.text) in [m.value for m in at.markdown], "the tiny model's answer is shown as written"
    first = at.dataframe[0].value.iloc[0]
    assert (first["Property"], first["RDKit"]) == ("Molecular Weight (g/mol)", "180.16 g/mol")  # aspirin
    if expected.value is None:  # no number from the model: no empty model columns
        assert list(at.dataframe[0].value.columns) == ["Property", "RDKit", "Reference method"]
    else:
        assert first["3D-MoLM"] == f"{expected.value:.2f}"


def test_prax_page_guesses_with_bundled_listeners(offline):
    at = AppTest.from_file(HUB, default_timeout=180).run()
    at.switch_page("prax/streamlit_page.py").run()
    assert not at.exception
    button(at, "Guess the regex").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = " ".join(str(getattr(h, "body", getattr(h, "value", ""))) for h in at.get("html"))
    assert "Literal listener (tiny-literal)" in shown and "PraX listener (tiny-pragmatic)" in shown
    at.text_area[0].input("+abc\n-abc").run()
    button(at, "Guess the regex").click().run()
    assert at.error and "abc" in at.error[0].value
    assert not at.warning  # both bundled listeners are here
    from apps.prax.actions import WORKS_WITHOUT
    from apps.settings import from_env

    pragmatic = next(s for s in at.selectbox if s.label == "Pragmatic listener (PraX)")
    pragmatic.set_value("pragmatic-ft-listener").run()  # not on this offline machine: the weights warning
    expected = from_env().context(apps.get_demo("prax")).weights_message("pragmatic-ft-listener", WORKS_WITHOUT)
    assert "pragmatic-ft-listener" in expected and [w.value for w in at.warning] == [expected]
    assert "demohub download prax" in expected, "a local-only hub: its visitor is the operator and reads the command"


def test_geodiffusion_page_generates_with_the_tiny_checkpoint(offline, tmp_path, monkeypatch):
    from shared.pool import default_pool
    from tests.fixtures.tiny_geodiffusion import build_tiny_checkpoint

    build_tiny_checkpoint(tmp_path / "ckpts" / "geodiffusion" / "nuimages-256x256", dataset="nuimages")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "ckpts"))
    default_pool().clear()
    at = AppTest.from_file(HUB, default_timeout=180).run()
    at.switch_page("geodiffusion/streamlit_page.py").run()
    assert not at.exception
    # Limits and defaults from the checkpoint's generation config: nuImages 100 steps, cfg 5 (on disk, no warning).
    assert (at.number_input[1].value, at.number_input[1].max, at.number_input[2].value) == (100, 200, 5.0)
    assert not at.warning
    at.number_input[1].set_value(2).run()
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.code[0].value.startswith("A driving scene image of front camera with car <l")
    at.text_area[0].input('{"camera": "front", "bbox": [["car", 0.5, 0.5, 0.2, 0.8]]}').run()
    at.button[0].click().run()
    assert at.error and "x2" in at.error[0].value
    at.selectbox(key="checkpoint").set_value("coco-stuff-512x512").run()  # not on disk: its released config
    assert (at.number_input[1].value, at.number_input[2].value) == (50, 4.5)
    assert at.warning and "not on this server" in at.warning[0].value
    assert at.text_area[0].value.startswith('{"bbox": [["truck"')  # a COCO-Stuff example
    default_pool().clear()


def test_progress_moves_with_the_pipelines_callback():
    """The Streamlit pages' progress bar (PraX's two listeners, 3D-MoLM's beam search, Tag2Text) follows
    ``callback(step, total)``: the bar's value is the fraction done and its text says step/total."""
    def script():
        from apps.streamlit_ui import progress

        _, step = progress("Sampling regexes")
        step(3, 4)

    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception
    bar = at.get("progress")[0]
    assert bar.value == 75 and "3/4" in bar.proto.text


def button(at, label: str):
    return next(b for b in at.button if b.label == label)


def run_button(at):
    """A generated form's Run button (its example buttons come first)."""
    return next(b for b in at.button if b.label == "Run")


def declared_form_app():
    """A demo's Streamlit page made from its declarations (apps/streamlit_forms.py), here PraX's."""
    from apps import streamlit_forms

    streamlit_forms.render("prax")


def test_the_form_made_from_the_declarations_refuses_a_mistake_and_runs_the_fix(offline, pool):
    """A demo without a streamlit_page.py gets this page (the hub routes to it); the same checks and function as
    the API call: broken JSON is a sentence naming the input, the fixed examples answer the listener's guesses."""
    at = AppTest.from_function(declared_form_app, default_timeout=120).run()
    assert not at.exception
    examples = next(t for t in at.text_area if t.label == "Examples")
    examples.set_value('[{"string": "ab1", "label": "+"}')  # a form's fields count when it is submitted
    run_button(at).click().run()
    assert [e.value for e in at.error] == [
        "Examples is not valid JSON: it ends before its closing brackets (line 1, character 33)."]
    next(t for t in at.text_area if t.label == "Examples").set_value(
        '[{"string": "ab1", "label": "+"}, {"string": "ab", "label": "-"}]')
    run_button(at).click().run()
    assert not at.exception and [e.value for e in at.error] == []
    answer = at.json[0].value
    assert '"candidates"' in answer and '"ab1"' in answer


def declared_mert_form_app():
    """A one-function demo's generated Streamlit page (MERT's): no tabs."""
    from apps import streamlit_forms

    streamlit_forms.render("mert")


def test_a_one_function_form_renders_its_fields_and_says_what_is_missing(offline, pool, tmp_path, monkeypatch):
    """MERT's page (one API function, an audio input): the fields of its declaration, the weights' sentence, and a
    run without audio answered with the check's sentence, not an exception."""
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "none"))  # whatever an earlier test put there
    at = AppTest.from_function(declared_mert_form_app, default_timeout=120).run()
    assert not at.exception, at.exception
    assert [m.label for m in at.multiselect] == ["What to describe"] and len(at.multiselect[0].value) == 10
    assert [n.label for n in at.number_input] == ["Seconds per window"] and at.toggle[0].label == "Show a timeline"
    assert any("'music-descriptor'" in w.value and "not on this server" in w.value for w in at.warning), \
        [w.value for w in at.warning]
    run_button(at).click().run()
    assert not at.exception and any("No audio" in e.value for e in at.error), [e.value for e in at.error]


def test_a_generated_forms_example_click_fills_every_field(offline, pool, tmp_path, monkeypatch):
    """MERT's examples as buttons: each click sets every field it names and puts the others back to their defaults
    (the sine chord's "all ten tasks" ticks all ten, its timeline off); the example's file is sent when none is
    uploaded (without weights the answer is the weights' sentence, not "no audio")."""
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "none"))
    at = AppTest.from_function(declared_mert_form_app, default_timeout=120).run()
    next(b for b in at.button if b.label.startswith("Piano-like scale")).click().run()
    assert at.multiselect[0].value == ["GS", "NSynthP", "NSynthI"]
    assert at.toggle[0].value is True and at.number_input[0].value == 2.0
    assert any("piano-scale.flac" in c.value for c in at.caption), [c.value for c in at.caption]
    next(b for b in at.button if b.label == "Sine chord, all ten tasks").click().run()
    assert len(at.multiselect[0].value) == 10 and at.toggle[0].value is False
    assert any("sine-chord.flac" in c.value for c in at.caption)
    run_button(at).click().run()
    assert not at.exception
    assert [e.value for e in at.error] and not any("No audio" in e.value for e in at.error), \
        [e.value for e in at.error]


def declared_molm3d_form_app():
    from apps import streamlit_forms

    streamlit_forms.render("molm3d")


def test_a_multiline_input_keeps_its_lines(offline, pool):
    """3D-MoLM's SMILES input is declared multiline: its form field is a text area, and a MOL block pasted there
    arrives with its lines (a one-line box joined them, which no molecule parser reads)."""
    from rdkit import Chem

    block = Chem.MolToMolBlock(Chem.MolFromSmiles("CCO"))
    at = AppTest.from_function(declared_molm3d_form_app, default_timeout=120).run()
    smiles = [t for t in at.text_area if t.label == "SMILES"]
    assert len(smiles) == 2, [t.label for t in at.text_area]  # ask and molecule properties
    smiles[1].set_value(block)
    [b for b in at.button if b.label == "Run"][1].click().run()
    assert not at.exception and [e.value for e in at.error] == []
    assert '"C2H6O"' in at.json[-1].value


def test_prax_page_suggests_an_example_and_plays_the_game(offline):
    """On a par with the Gradio page: the suggestion (added to the examples with one click) and the game (a new
    regex to teach empties the examples; a false label is refused with the game's sentence; each guess records how
    the listeners are doing)."""
    from apps.prax.actions import parse_lines

    at = AppTest.from_file(HUB, default_timeout=180).run()
    at.switch_page("prax/streamlit_page.py").run()
    before = parse_lines(at.text_area[0].value)
    button(at, "Suggest an informative example").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.value.startswith("Try <code>") for m in at.markdown), [m.value for m in at.markdown]
    button(at, "Add the suggestion").click().run()
    after = parse_lines(at.text_area[0].value)
    assert after[:-1] == before and len(after) == len(before) + 1

    button(at, "New regex to teach").click().run()
    assert at.text_area[0].value == "" and any(m.value.startswith("Teach the listeners `") for m in at.markdown)
    target = next(m.value for m in at.markdown if m.value.startswith("Teach the listeners `")).split("`")[1]
    from apps.prax import dsl

    string = next(s for s in ("a", "1", "ab", "A1", "-", "x9", "") if s and not dsl.matches(target, s))
    at.text_area[0].input(f"+{string}").run()  # a false label
    button(at, "Guess the regex").click().run()
    assert at.error and "the game only accepts true labels" in at.error[0].value
    at.text_area[0].input(f"-{string}").run()
    button(at, "Guess the regex").click().run()
    assert not at.error, [e.value for e in at.error]
    assert any("literal: " in i.value and "PraX: " in i.value for i in at.info), [i.value for i in at.info]


def test_a_hub_given_its_public_address_embeds_with_it(offline, monkeypatch):
    """--public-url (DEMOHUB_PUBLIC_URL): the Streamlit pages' embed snippet uses it, with no warning."""
    monkeypatch.setenv("DEMOHUB_PUBLIC_URL", "https://demos.example.org/lab")
    at = AppTest.from_file(HUB, default_timeout=120).run()
    at.switch_page("prax/streamlit_page.py").run()
    assert not at.exception
    snippets = [c.value for c in at.code if "<iframe" in c.value]
    assert snippets and 'src="https://demos.example.org/lab/prax?embed=true"' in snippets[0], snippets
    assert not any("works only" in w.value for w in at.warning)
