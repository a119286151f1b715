"""Pages written for people: no page shows the API's words (null, "", data URI, MCP), which belong to the API
reference and the MCP tools' descriptions. Checked on every page the hub serves and on the form generated for every
demo (its labels, help lines, choices and text), Gradio's from its built config, Streamlit's from the same
declarations (``Input.page_label``, ``page_help``, ``page_choices``)."""

from __future__ import annotations

import importlib
import json
import re

import pytest

import apps
from apps import forms
from shared.context import DemoContext
from shared.pool import ModelPool

API_WORDS = re.compile(r'\bnull\b|""|data URI|\bMCP\b|\bJSON schema\b', re.I)
SHOWN_PROPS = ("label", "info", "placeholder", "value", "choices")


def page_texts(blocks) -> list[str]:
    """What a visitor can read on a built Gradio page: every component's label, help line, placeholder, text value
    (Markdown, HTML, a text box's start) and the names of its choices."""
    texts = []
    for component in blocks.get_config_file()["components"]:
        props = component.get("props", {})
        if component.get("type") in ("json", "code", "state", "dataset") or is_data(props.get("value")):
            props = {k: v for k, v in props.items() if k != "value"}  # an answer's, a JSON box's, a script's data
        for key in SHOWN_PROPS:
            value = props.get(key)
            if key == "choices" and isinstance(value, list):
                texts += [str(choice[0] if isinstance(choice, list | tuple) else choice) for choice in value]
            elif isinstance(value, str):
                texts.append(value)
    return texts


def is_data(value) -> bool:
    """A value that is JSON for a page's own script (the layout editor's state), not text anyone reads."""
    if not isinstance(value, str) or not value.startswith("{"):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def built(demo, generated: bool):
    ctx = DemoContext(demo, ModelPool(budget_bytes=0))
    if generated:
        return forms.build(ctx)
    return importlib.import_module(demo.page_module).build(ctx)


PAGES = [(demo, False) for demo in apps.DEMOS] + [(demo, True) for demo in apps.DEMOS if demo.api]


@pytest.mark.parametrize("demo, generated", PAGES,
                         ids=lambda v: v.id if hasattr(v, "id") else "generated-form" if v else "served-page")
def test_no_page_shows_an_api_word(demo, generated, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    found = [(text[:80], match.group(0)) for text in page_texts(built(demo, generated))
             for match in [API_WORDS.search(text)] if match]
    assert not found, found


@pytest.mark.parametrize("demo", apps.DEMOS, ids=lambda d: d.id)
def test_every_declared_input_speaks_to_people_on_either_front_end(demo):
    for endpoint in demo.endpoints():
        for i in endpoint.inputs:
            words = [i.page_label, i.page_help, *(label for label, _ in i.page_choices)]
            assert not [w for w in words if API_WORDS.search(w)], (endpoint.name, i.name, words)
            assert i.page_label[:1].isupper(), (endpoint.name, i.name, i.page_label)


def test_the_api_keeps_its_words():
    """The page words are the page's: the API reference and MCP still read the declaration's own description."""
    from apps.mert.api import ENDPOINTS

    audio, tasks, window = ENDPOINTS[0].inputs
    assert "data URI" in audio.description and "null" in window.description
    assert (audio.page_label, tasks.page_label, window.page_label) == \
        ("Music", "What to describe", "Seconds per window")
    assert window.switch == "Show a timeline" and ("Key", "GS") in tasks.page_choices
