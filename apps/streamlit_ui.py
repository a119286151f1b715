"""Pieces every Streamlit demo page uses: the shared pool (one per process), paper card, errors."""

from __future__ import annotations

import html
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import streamlit as st

from apps import get_demo, views
from apps.settings import from_env
from shared.context import DemoContext
from shared.errors import user_message
from shared.pool import ModelPool, default_pool


@st.cache_resource(show_spinner=False)
def shared_pool() -> ModelPool:
    """The process-wide pool, held by Streamlit across reruns and sessions (thread-safe by design)."""
    return default_pool()


def demo_context(demo_id: str) -> DemoContext:
    return from_env().context(get_demo(demo_id), shared_pool())  # `serve --streamlit` passes DEMOHUB_DOWNLOADS


def paper_card(demo_id: str) -> None:
    demo = get_demo(demo_id)
    p = demo.paper
    st.title(demo.title)
    st.write(demo.tagline)
    st.caption(f"**{p.title}**: {p.authors} ({p.venue}). [Paper]({p.url}) · [Official code]({p.code_url})")


def weights_select(ctx: DemoContext, key: str = "weights") -> str:
    choices = ctx.weight_choices()
    names = [value for _, value in choices]
    labels = dict((value, label) for label, value in choices)
    return st.selectbox("Weights", names, index=names.index(ctx.default_weights()),
                        format_func=labels.__getitem__, key=key)


def show_error(error: BaseException) -> None:
    """One readable sentence; the app keeps running."""
    st.error(user_message(error))


def progress(text: str):
    """A progress bar and the ``callback(step, total)`` that moves it (the pipelines' progress contract)."""
    bar = st.progress(0.0, text=text)
    return bar, lambda step, total: bar.progress(min(1.0, step / max(1, total)), text=f"{text}: {step}/{total}")


UPLOADS = Path(tempfile.gettempdir()) / "demohub-streamlit-uploads"


def saved_upload(upload) -> Path:
    """A Streamlit upload written under its own name to a private folder of its own (what a pipeline reads as a
    file; the name is only the visitor's, never a path: ``Path(name).name``). Once per upload and session: a page's
    reruns find it saved."""
    saved = st.session_state.setdefault("demohub-saved-uploads", {})
    path = saved.get(upload.file_id)
    if path is None or not path.exists():
        UPLOADS.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(dir=UPLOADS)) / (Path(upload.name).name or "upload")
        path.write_bytes(upload.getvalue())
        saved[upload.file_id] = path
    return path


def embed_section(demo_id: str) -> None:
    """The "Embed this demo" section, as on the Gradio pages: an iframe of this page's embedded view (Streamlit's
    ``?embed=true``) at the hub's public address (``--public-url``, a Space's host), else at the address this visitor
    reached (``st.context.url``: behind a proxy too), with the warning first where only this machine or its local
    network reaches it. None in the embedded view itself."""
    if st.context.is_embedded:
        return
    demo, public = get_demo(demo_id), from_env().public_address
    reached = urlsplit(st.context.url or "")
    page = f"{public}/{demo_id}" if public else f"{reached.scheme}://{reached.netloc}{reached.path}".rstrip("/")
    snippet = (f'<iframe src="{html.escape(page)}?embed=true" title="{html.escape(demo.title)}" '
               f'style="border:0;width:100%" height="{views.EMBED_HEIGHT}" loading="lazy"></iframe>')
    with st.expander("Embed this demo"):
        reach = "" if public else views.local_reach(reached.hostname or "")
        if reach:
            st.warning(views.LOCAL_ADDRESS_WARNING.replace("DEMO", demo_id).replace("ADDRESS", page)
                       .replace("REACH", reach))
        st.write("Paste this into your paper's project page:")
        st.code(snippet, language="html")
