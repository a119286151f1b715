"""The Streamlit hub: landing page with demo cards and the paper catalog, one page per demo.

Run with ``demohub serve --streamlit`` (or ``streamlit run apps/streamlit_hub.py``). Demo pages are the files
``apps/<demo>/streamlit_page.py``; a demo without one that declares its API functions gets the form made from them
(``apps/streamlit_forms.py``), any other "coming soon".
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `streamlit run` puts only apps/ on the path

from apps import DEMOS, catalog, views  # noqa: E402
from apps.settings import from_env  # noqa: E402
from shared import weights  # noqa: E402

HERE = Path(__file__).parent

# Material icons ship with Streamlit: they render without an emoji font (Debian Chromium has none).
ICON = ":material/science:"


def landing() -> None:
    st.title("Paper Demo Hub")
    st.write("Try ICLR 2024 papers hands-on, on their official weights. Pick a demo, or browse the catalog below.")
    # The cards as a grid that puts as many in a row as fit (two at 720 px), each linking to its demo's page; the
    # same cards as the Gradio hub's (apps/views.py).
    downloads = from_env().downloads_allowed
    st.html(f"<style>{views.CARDS_CSS}</style><div class='demo-cards'>" + "".join(
        views.demo_card(demo.id, demo.title, demo.tagline, demo.paper.url, demo.paper.code_url,
                        weights.summary(demo, downloads), _as_image(views.preview_of(demo)), f"./{demo.id}")
        for demo in DEMOS)
        + "</div>")
    st.header("ICLR 2024 catalog")
    query = st.text_input("Search titles and abstracts")
    only_demos = st.checkbox("Only papers with a demo")
    entries = catalog.search(query, only_demos)
    st.caption(f"{len(entries)} papers")
    for entry in entries:
        badge = " · ▶ live demo" if entry.demo else ""
        link = f" · [arXiv]({entry.url})" if entry.url else ""
        with st.expander(f"{entry.title}{badge}"):
            st.write(entry.abstract)
            if link:
                st.markdown(link.removeprefix(" · "))


def _as_image(preview: str) -> str:
    """A card's picture for ``st.html``, which drops inline SVG: an SVG as an image of itself (a data URL)."""
    if not preview.lstrip().startswith("<svg"):
        return preview
    if "xmlns=" not in preview.split(">", 1)[0]:  # inline SVG may leave it out; an SVG image must name it
        preview = preview.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
    return f'<img alt="" style="max-width:100%;height:100%" src="data:image/svg+xml;base64,' \
           f'{base64.b64encode(preview.encode()).decode()}">'


def coming_soon(demo):
    def page() -> None:
        st.title(demo.title)
        st.info("This demo is coming soon to the Streamlit hub; the Gradio hub (`demohub serve`) may have it already.")

    page.__name__ = f"coming_soon_{demo.id}"
    return page


def demo_page(demo) -> st.Page:
    page_file = HERE / demo.id / "streamlit_page.py"
    if page_file.exists():
        return st.Page(str(page_file.relative_to(HERE)), title=demo.title, icon=ICON, url_path=demo.id)
    return st.Page(declared_form(demo) if demo.api else coming_soon(demo), title=demo.title, icon=ICON,
                   url_path=demo.id)


def declared_form(demo):
    def page() -> None:
        from apps import streamlit_forms

        streamlit_forms.render(demo.id)

    page.__name__ = f"form_{demo.id}"
    return page


st.set_page_config(page_title="Paper Demo Hub", page_icon=":material/description:", layout="wide")
st.navigation([st.Page(landing, title="Home", icon=":material/home:", default=True), *map(demo_page, DEMOS)]).run()
