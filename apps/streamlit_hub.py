"""The Streamlit hub: landing page with demo cards and the paper catalog, one page per demo.

Run with ``demohub serve --streamlit`` (or ``streamlit run apps/streamlit_hub.py``). Demo pages are the files
``apps/<demo>/streamlit_page.py``; a demo without one that declares its API functions gets the form made from them
(``apps/streamlit_forms.py``), any other "coming soon".
"""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `streamlit run` puts only apps/ on the path

from apps import DEMOS, catalog  # noqa: E402
from apps.settings import from_env  # noqa: E402
from shared import weights  # noqa: E402

HERE = Path(__file__).parent

# Material icons ship with Streamlit: they render without an emoji font (Debian Chromium has none).
ICON = ":material/science:"


def landing() -> None:
    st.title("Paper Demo Hub")
    st.write("Try ICLR 2024 papers hands-on, on their official weights. Pick a demo, or browse the catalog below.")
    columns = st.columns(len(DEMOS))
    for column, demo in zip(columns, DEMOS, strict=True):
        with column, st.container(border=True):
            st.subheader(demo.title)
            st.write(demo.tagline)
            st.markdown(f"[Paper]({demo.paper.url}) · [Official code]({demo.paper.code_url})")
            st.caption(weights.summary(demo, from_env().downloads_allowed))
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
