"""The Streamlit page through AppTest: the sampler choice, on a tiny nuImages checkpoint (DEMOHUB_CHECKPOINTS), and a
refused layout's sentence right below the layout."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from shared.weights import REPO_ROOT
from tests.fixtures.tiny_geodiffusion import build_tiny_checkpoint

HUB = str(REPO_ROOT / "apps" / "streamlit_hub.py")


def test_fast_sampling_sets_its_steps_and_runs(offline, tmp_path, monkeypatch):
    from shared.pool import default_pool

    build_tiny_checkpoint(tmp_path / "ckpts" / "geodiffusion" / "nuimages-256x256", dataset="nuimages")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "ckpts"))
    default_pool().clear()
    try:
        at = AppTest.from_file(HUB, default_timeout=180).run()
        at.switch_page("geodiffusion/streamlit_page.py").run()
        assert not at.exception
        sampler = at.radio(key="sampler-nuimages-256x256")
        assert sampler.value == "default" and sampler.options == [
            "Official (PNDM, 100 steps)", "Fast sampling (DPM-Solver++, 20 steps)"]
        assert "less time per image than the official 100 PNDM steps" in sampler.help
        steps = at.number_input(key="steps-nuimages-256x256")
        assert steps.value == 100
        sampler.set_value("fast").run()
        assert at.number_input(key="steps-nuimages-256x256").value == 20 and not at.exception
        at.number_input(key="steps-nuimages-256x256").set_value(2).run()
        at.radio(key="sampler-nuimages-256x256").set_value("default").run()
        assert at.number_input(key="steps-nuimages-256x256").value == 2  # a number the person chose stays
        at.radio(key="sampler-nuimages-256x256").set_value("fast").run()
        at.button[0].click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert any(m.value.endswith("2 steps, cfg 5.0, seed 0, fast sampling (DPM-Solver++).") for m in at.markdown)
    finally:
        default_pool().clear()


NUIMAGES_START = {"camera": "front", "bbox": [
    ["car", 0.756875, 0.4622, 0.90375, 0.5844], ["car", 0.47625, 0.4822, 0.691875, 0.8011],
    ["car", 0.0, 0.4933, 0.223125, 0.9267], ["car", 0.273125, 0.4511, 0.47375, 0.6444],
    ["car", 0.7125, 0.6689, 0.999375, 1.0]]}


def test_a_refused_layout_says_why_right_below_the_layout_and_shows_no_prompt(offline):
    """As on the Gradio page: a truncated layout, an unknown label and an inverted box each get their sentence in
    an st.error right below the layout text area, and no prompt preview (it would read a layout the page refuses);
    the fixed layout shows its prompt again."""
    import json

    from apps.views import text

    at = AppTest.from_file(HUB, default_timeout=180).run()
    at.switch_page("geodiffusion/streamlit_page.py").run()
    area = at.text_area[0]
    assert json.loads(area.value) == NUIMAGES_START  # the first nuImages example, for the default checkpoint
    unicorn = json.loads(area.value)
    unicorn["bbox"][1][0] = "unicorn"
    inverted = json.loads(area.value)
    inverted["bbox"][0] = ["car", 0.90375, 0.4622, 0.756875, 0.5844]
    for layout, sentence in [
        (area.value[:-2], "The layout is not valid JSON: it ends before its closing brackets (line 1, character 240)."),
        (json.dumps(unicorn), "Box 2 has label 'unicorn', which the nuimages checkpoint does not know; use one of its "
                              "10 classes (e.g. car, truck, trailer, bus, construction_vehicle, bicycle)."),
        (json.dumps(inverted), "Box 1 (car): the bottom-right corner must lie right of and below the top-left one "
                               "(x2 > x1 and y2 > y1); got x1=0.90375, y1=0.4622, x2=0.756875, y2=0.5844."),
    ]:
        at.text_area[0].set_value(layout).run()
        assert not at.exception
        shown = list(at.main.children.values())
        below = shown[shown.index(next(e for e in shown if e.type == "text_area")) + 1]
        assert (below.type, below.value) == ("error", text(sentence)) and len(at.error) == 1
        assert not [c.value for c in at.caption if c.value.startswith("Prompt:")]
    at.text_area[0].set_value(json.dumps(NUIMAGES_START)).run()
    assert not at.error and not at.exception
    prompt = ("A driving scene image of front camera with car <l30401> <l38374> car <l31609> <l52400> car <l32256> "
              "<l60473> car <l29510> <l42105> car <l43958> <l65535>")  # tests/geodiffusion/test_layout.py's
    assert [c.value for c in at.caption if c.value.startswith("Prompt:")] == [f"Prompt: {text(prompt)}"]


def test_without_weights_the_page_says_only_what_it_has(offline, tmp_path, monkeypatch):
    """No box editor on the Streamlit page (its layout is JSON text): its weights sentence says what is there."""
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "none"))
    at = AppTest.from_file(HUB, default_timeout=120).run()
    at.switch_page("geodiffusion/streamlit_page.py").run()
    warnings = [w.value for w in at.warning]
    assert any("You can still write layouts and see the prompt the model reads." in w for w in warnings), warnings
    assert not any("draw" in w for w in warnings), warnings
