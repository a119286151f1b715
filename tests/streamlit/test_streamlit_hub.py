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
    assert len(at.expander) == len(catalog.load_catalog()) + 1  # papers + "Loaded models"
    at.text_input[0].input("Tag2Text").run()
    assert [e.label for e in at.expander if "Tag2Text" in e.label] and len(at.expander) == 2
    at.checkbox[0].check().run()
    at.text_input[0].input("").run()
    assert len(at.expander) == len(apps.DEMOS) + 1
