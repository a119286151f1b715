"""A demo's Streamlit page made from its declarations (``shared.api``), for a demo that ships no streamlit_page.py:
one form per API function, a field per declared input, and the answer as JSON; the same checks and function as the
API call (``Endpoint.check_call``, ``Endpoint.runner``). No gradio here."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import streamlit as st

from apps.streamlit_ui import demo_context, paper_card, show_error, weights_select
from shared.api import Endpoint, Input, attribute
from shared.uploads import GRADIO_FILE

UPLOADS = Path(tempfile.gettempdir()) / "demohub-streamlit-uploads"


def render(demo_id: str) -> None:
    ctx = demo_context(demo_id)
    paper_card(demo_id)
    weights = weights_select(ctx)
    notice = ctx.weights_message(weights, ctx.demo.works_without_weights)
    if notice:
        st.warning(notice)
    endpoints = ctx.demo.endpoints()
    tabs = st.tabs([e.name.replace("_", " ").capitalize() for e in endpoints]) if len(endpoints) > 1 \
        else [st.container()]
    for tab, endpoint in zip(tabs, endpoints, strict=True):
        with tab:
            form(ctx, endpoint, weights)


def form(ctx, endpoint: Endpoint, weights: str) -> None:
    st.write(endpoint.summary)
    with st.form(endpoint.name):
        values = {i.name: weights if i.kind == "weights" else field(endpoint, i) for i in endpoint.inputs}
        submitted = st.form_submit_button("Run", type="primary")
    if submitted:
        try:
            arguments = {i.name: value_of(i, values[i.name]) for i in endpoint.inputs}
            with st.spinner("Running"):
                answer = endpoint.call(ctx, arguments)
            if endpoint.view:
                st.html(attribute(endpoint.view)(answer))
            st.json(answer, expanded=not endpoint.view)
        except Exception as error:
            show_error(error)


def field(endpoint: Endpoint, i: Input) -> Any:
    key, value = f"{endpoint.name}-{i.name}", i.example if i.required else i.default
    if i.kind == "text":
        return st.text_input(i.name, value or "", max_chars=i.max_length, help=i.description, key=key)
    if i.kind in ("integer", "number"):
        whole = i.kind == "integer"
        cast = int if whole else float
        return st.number_input(i.name, value=None if value is None else cast(value),
                               min_value=None if i.minimum is None else cast(i.minimum),
                               max_value=None if i.maximum is None else cast(i.maximum), step=1 if whole else None,
                               help=i.description, key=key)
    if i.kind == "boolean":
        return st.checkbox(i.name, bool(value), help=i.description, key=key)
    if i.kind == "choice":
        return st.selectbox(i.name, list(i.choices), index=list(i.choices).index(value), help=i.description, key=key)
    if i.media == "audio":  # upload or record; what is sent plays back below
        upload = st.file_uploader(i.name, help=i.description, key=key) or st.audio_input(f"or record {i.name}",
                                                                                         key=f"{key}-recorded")
        if upload is not None:
            st.audio(upload)
        return upload
    if i.kind in ("file", "files"):
        return st.file_uploader(i.name, accept_multiple_files=i.kind == "files", help=i.description, key=key)
    return st.text_area(i.name, i.as_text(value), help=i.description, key=key)  # records, one a line


def value_of(i: Input, value: Any) -> Any:
    """A field's value as an API call sends it: records parsed from JSON, uploads as file references."""
    if i.kind == "records":
        return i.from_text(value)
    if i.kind == "file":
        return None if value is None else _saved(value)
    if i.kind == "files":
        return [_saved(v) for v in value or ()]
    return value


def _saved(upload) -> dict:
    """A Streamlit upload written to a private folder, as the file reference the endpoint reads."""
    UPLOADS.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=UPLOADS))
    path = folder / Path(upload.name).name
    path.write_bytes(upload.getvalue())
    return {"path": str(path), "meta": {"_type": GRADIO_FILE}}
