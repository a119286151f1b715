"""Results never garbled: every string a person or a model gave is shown as text, in every view of every page,
through one function (``apps.views.text``). Each view is rendered as the front ends render it (Markdown, CommonMark
as in Gradio's and Streamlit's renderers, with inline HTML) and its visible text must hold the string exactly, with
no link, emphasis, code or tag made from it."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from apps import views

# Markdown and HTML structure in one string each: a link, emphasis, code, a tag, strike-through, a heading, a list.
HOSTILE = [
    "CC(=O)OC(CC(=O)[O-])C[N+](C)(C)C",  # the 3D-MoLM LogP example: [N+](C) was a link
    "a*b*c_d_e`f`g",
    "<img src=x onerror=alert(1)>[click](https://evil.example) ~~gone~~",
    "# heading? 1. not a list | pipe | \\ back",
    "- dash &amp; &lt;b&gt;",
]


class Visible(HTMLParser):
    """The text a reader sees, and the tags the markup made."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.parts.append(data)


def seen(markup: str) -> Visible:
    visible = Visible()
    visible.feed(MarkdownIt("commonmark").enable("strikethrough").render(markup))
    visible.text = "".join(visible.parts)
    return visible


@pytest.mark.parametrize("given", HOSTILE)
def test_text_reads_as_written_in_markdown_and_html(given):
    view = seen(f"**{views.text(given)}**: after")
    assert given in view.text and view.tags == ["p", "strong"], (view.text, view.tags)
    raw = Visible()  # as plain HTML (gr.HTML, st.html)
    raw.feed(views.text(given))
    assert "".join(raw.parts) == given and raw.tags == []


def molm3d_views(given: str, monkeypatch) -> list[str]:
    from apps.molm3d import actions
    from apps.molm3d import views as molm3d_views

    conformer = type("Conformer", (), {"smiles": given, "num_heavy_atoms": 3, "warnings": (given,)})()
    monkeypatch.setattr(molm3d_views, "method", lambda conf, seed: "ETKDG")
    return [molm3d_views.info_markdown(conformer, 42), actions.partial_markdown(given)]


def prax_views(given: str, monkeypatch) -> list[str]:
    from apps.prax import actions
    from apps.prax.dsl import Example
    from apps.prax.pipeline import Candidate, PraxOutput, PraxSuggestion

    example = Example(given, "+")
    output = PraxOutput(weights="w", examples=(example,), candidates=(Candidate(given, -1.0, 1.0, (True,)),),
                        n_samples=1, n_consistent=1, n_unique=1)
    suggestion = PraxSuggestion(example=example, speaker_probability=0.5, assumed_program=given, n_programs=2,
                                n_candidates=3, remaining=1)
    return [actions.render_guesses("PraX listener", output), actions.suggestion_markdown(suggestion)]


def tag2text_views(given: str, monkeypatch) -> list[str]:
    from apps.tag2text import actions
    from apps.tag2text.pipeline import Tag

    return [actions.tag_chips([Tag(0, given, 0.9)])]


def geodiffusion_views(given: str, monkeypatch) -> list[str]:
    from apps.geodiffusion import actions

    return [actions.layout_svg({"bbox": [[given, 0.1, 0.1, 0.5, 0.5]]})]


def shared_views(given: str, monkeypatch) -> list[str]:
    return [views.bars(given, [(given, 0.5)]), views.point(given, (given, 0.1), (given, -0.2)),
            views.timeline(given, [("k", given)], [(given, {"k": given})]), views.notes([given])]


@pytest.mark.parametrize("page", [molm3d_views, prax_views, tag2text_views, geodiffusion_views, shared_views],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("given", HOSTILE)
def test_every_view_shows_a_given_string_as_written(page, given, monkeypatch):
    for markup in page(given, monkeypatch):
        view = seen(markup)
        assert given in view.text, (given, view.text)
        assert not {"a", "em", "img", "s", "del", "h1", "ol", "li"} & set(view.tags), view.tags
