"""The Streamlit hub through AppTest: landing cards, catalog search, demo pages."""

import pytest
from streamlit.testing.v1 import AppTest

import apps
from apps import catalog
from shared.weights import REPO_ROOT

HUB = str(REPO_ROOT / "apps" / "streamlit_hub.py")


@pytest.fixture
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))


def test_landing_lists_demos_and_catalog(offline):
    at = AppTest.from_file(HUB, default_timeout=60).run()
    assert not at.exception
    subheaders = [s.value for s in at.subheader]
    for demo in apps.DEMOS:
        assert any(demo.title in s for s in subheaders), demo.id
    assert len(at.expander) == len(catalog.load_catalog())  # the papers; pool internals are for `demohub stats`
    at.text_input[0].input("Tag2Text").run()
    assert [e.label for e in at.expander] == ["Tag2Text: Guiding Vision-Language Model via Image Tagging · ▶ live demo"]
    at.checkbox[0].check().run()
    at.text_input[0].input("").run()
    assert len(at.expander) == len(apps.DEMOS)


@pytest.fixture
def tiny_checkpoints(offline, tmp_path, monkeypatch):
    """Tiny checkpoints in the official layouts, found through DEMOHUB_CHECKPOINTS/<demo>/<set>."""
    from apps.molm3d.tiny import build_tiny_snapshot
    from apps.tag2text.checkpoint import write_tiny_checkpoint
    from shared.pool import default_pool

    root = tmp_path / "ckpts"
    write_tiny_checkpoint(root / "tag2text" / "tag2text-swin-14m")
    build_tiny_snapshot(root / "molm3d" / "generalist")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(root))
    default_pool().clear()
    yield root
    default_pool().clear()


def test_tag2text_page_tags_an_example(tiny_checkpoints):
    at = AppTest.from_file(HUB, default_timeout=120).run()
    at.switch_page("tag2text/streamlit_page.py").run()
    assert not at.exception
    assert at.selectbox[0].options == ["tag2text-swin-14m (bundled)"]
    assert at.selectbox[1].options == ["beach.png", "car.png", "fruit.png", "house.png"]
    at.slider[0].set_value(0.0).run()
    at.text_input[0].input("dog, beach").run()
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    captions = [m.value for m in at.markdown]
    assert any(c.strip() for c in captions), "a caption is shown"
    tags = at.dataframe[0].value
    assert len(tags) > 0 and (tags["score"] >= 0.0).all()
    assert any("dog, beach" in c.value for c in at.caption)


def test_molm3d_page_conformer_without_weights_and_answer_with_tiny_weights(offline, tmp_path, monkeypatch):
    at = AppTest.from_file(HUB, default_timeout=120).run()
    at.switch_page("molm3d/streamlit_page.py").run()
    assert not at.exception and not at.error
    assert any("heavy atoms" in m.value for m in at.markdown)
    assert len(at.dataframe[0].value) >= 3  # RDKit reference table without any weights
    at.text_input[0].input("C1CC").run()  # unclosed ring: invalid SMILES
    assert at.error and "SMILES" in at.error[0].value and not at.exception


def test_molm3d_page_asks_the_tiny_model(tiny_checkpoints):
    at = AppTest.from_file(HUB, default_timeout=240).run()
    at.switch_page("molm3d/streamlit_page.py").run()
    at.selectbox[1].set_value("molecular_weight").run()
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [s.value for s in at.subheader] == ["3D-MoLM"]
    table = at.dataframe[0].value
    assert table.iloc[0].notna().sum() >= 2


def test_prax_page_guesses_with_bundled_listeners(offline):
    at = AppTest.from_file(HUB, default_timeout=180).run()
    at.switch_page("prax/streamlit_page.py").run()
    assert not at.exception
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = " ".join(str(getattr(h, "body", getattr(h, "value", ""))) for h in at.get("html"))
    assert "Literal listener (tiny-literal)" in shown and "PraX listener (tiny-pragmatic)" in shown
    at.text_area[0].input("+abc\n-abc").run()
    at.button[0].click().run()
    assert at.error and "abc" in at.error[0].value


def test_geodiffusion_page_generates_with_the_tiny_checkpoint(offline, tmp_path, monkeypatch):
    from shared.pool import default_pool
    from tests.geodiffusion.tiny_checkpoint import build_tiny_checkpoint

    build_tiny_checkpoint(tmp_path / "ckpts" / "geodiffusion" / "nuimages-256x256", dataset="nuimages")
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "ckpts"))
    default_pool().clear()
    at = AppTest.from_file(HUB, default_timeout=180).run()
    at.switch_page("geodiffusion/streamlit_page.py").run()
    assert not at.exception
    at.number_input[1].set_value(2).run()
    at.button[0].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.code[0].value.startswith("A driving scene image of front camera with car <l")
    at.text_area[0].input('{"camera": "front", "bbox": [["car", 0.5, 0.5, 0.2, 0.8]]}').run()
    at.button[0].click().run()
    assert at.error and "x2" in at.error[0].value
    default_pool().clear()
