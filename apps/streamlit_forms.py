"""A demo's Streamlit page made from its declarations (``shared.api``), for a demo that ships no streamlit_page.py:
one form per API function, a field per declared input, and the answer as JSON; the same checks and function as the
API call (``Endpoint.check_call``, ``Endpoint.runner``). No gradio here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from apps.streamlit_ui import demo_context, embed_section, paper_card, saved_upload, show_error, weights_select
from shared.api import Endpoint, Input, attribute
from shared.errors import UserInputError
from shared.uploads import GRADIO_FILE
from shared.weights import REPO_ROOT


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
    embed_section(demo_id)


def form(ctx, endpoint: Endpoint, weights: str) -> None:
    st.write(endpoint.summary)
    examples(endpoint)
    with st.form(endpoint.name):
        values = {i.name: weights if i.kind == "weights" else field(endpoint, i) for i in endpoint.inputs}
        submitted = st.form_submit_button("Run", type="primary")
    if submitted:
        try:
            arguments = {i.name: value_of(endpoint, i, values[i.name]) for i in endpoint.inputs}
            with st.spinner("Running"):
                answer = endpoint.call(ctx, arguments)
            if endpoint.view:
                st.html(attribute(endpoint.view)(answer))
            st.json(answer, expanded=not endpoint.view)
        except UserInputError as error:
            show_error(endpoint.in_page_words(error))  # the field as the form names it
        except Exception as error:
            show_error(error)


def key_of(endpoint: Endpoint, i: Input, part: str = "") -> str:
    """A field's widget key in the session state (an optional number's switch: part "on"; an example's file:
    part "example")."""
    return f"{endpoint.name}-{i.name}" + (f"-{part}" if part else "")


def examples(endpoint: Endpoint) -> None:
    """The endpoint's examples (``Endpoint.example_calls``), one button each: a click fills every field of the form
    (a file input: the example's file, shown, until the visitor uploads one)."""
    calls = endpoint.example_calls()
    if not calls:
        return
    st.caption("Examples: a click fills the form")
    for number, call in enumerate(calls):
        st.button(call.label, key=f"{endpoint.name}-example-{number}", on_click=fill, args=(endpoint, call.arguments))


def fill(endpoint: Endpoint, arguments: dict[str, Any]) -> None:
    for i in endpoint.inputs:
        if i.kind == "weights":
            continue
        value = arguments[i.name]
        if i.kind in ("file", "files"):
            st.session_state[key_of(endpoint, i, "example")] = value
        elif i.switch:
            st.session_state[key_of(endpoint, i, "on")] = value is not None
            if value is not None:
                st.session_state[key_of(endpoint, i)] = float(value)
        elif i.kind == "records":
            st.session_state[key_of(endpoint, i)] = i.as_text(value)
        elif i.kind == "choices":
            st.session_state[key_of(endpoint, i)] = list(value or ())
        else:
            st.session_state[key_of(endpoint, i)] = value


def field(endpoint: Endpoint, i: Input) -> Any:
    """The input's widget with the page's label and help line; its first value from the declaration, later ones
    from the session state (an example's click)."""
    key, value = key_of(endpoint, i), i.example if i.required else i.default
    label, help_line = i.page_label, i.page_help
    if i.kind == "text":
        st.session_state.setdefault(key, value or "")
        if i.multiline:  # code, a molecule file: its lines kept
            return st.text_area(label, max_chars=i.max_length, help=help_line, key=key, height=160)
        return st.text_input(label, max_chars=i.max_length, help=help_line, key=key)
    if i.kind in ("integer", "number"):
        whole = i.kind == "integer"
        cast = int if whole else float
        bounds = {"min_value": None if i.minimum is None else cast(i.minimum),
                  "max_value": None if i.maximum is None else cast(i.maximum), "step": 1 if whole else None}
        if i.switch:  # "Show a timeline", then its number
            st.session_state.setdefault(key_of(endpoint, i, "on"), False)
            st.session_state.setdefault(key, cast(i.example if i.example is not None else i.minimum))
            on = st.toggle(i.switch, key=key_of(endpoint, i, "on"))
            number = st.number_input(label, help=help_line, key=key, **bounds)
            return number if on else None
        st.session_state.setdefault(key, None if value is None else cast(value))
        return st.number_input(label, help=help_line, key=key, **bounds)
    if i.kind == "boolean":
        st.session_state.setdefault(key, bool(value))
        return st.checkbox(label, help=help_line, key=key)
    if i.kind in ("choice", "choices"):
        names = dict(zip(i.choices, (label for label, _ in i.page_choices), strict=True))
        if i.kind == "choice":
            st.session_state.setdefault(key, value)
            return st.selectbox(label, list(i.choices), format_func=names.get, help=help_line, key=key)
        st.session_state.setdefault(key, list(value or ()))
        return st.multiselect(label, list(i.choices), format_func=names.get, help=help_line, key=key)
    if i.kind in ("file", "files"):
        example = st.session_state.get(key_of(endpoint, i, "example"))
        if i.media == "audio":  # upload or record; what is sent plays back below
            upload = st.file_uploader(label, help=help_line, key=key) or st.audio_input("or record it",
                                                                                        key=f"{key}-recorded")
            if upload is None and example:
                st.caption(f"The example's {Path(example).name}, until you upload or record one:")
                st.audio(str(REPO_ROOT / example))
            elif upload is not None:
                st.audio(upload)
        else:
            upload = st.file_uploader(label, accept_multiple_files=i.kind == "files", help=help_line, key=key)
            if not upload and example:
                names = [example] if i.kind == "file" else example
                st.caption("The example's " + ", ".join(Path(name).name for name in names) + ", until you upload")
        return upload
    st.session_state.setdefault(key, i.as_text(value))
    return st.text_area(label, help=help_line, key=key)  # records, one a line


def value_of(endpoint: Endpoint, i: Input, value: Any) -> Any:
    """A field's value as an API call sends it: records parsed from JSON, uploads as file references (none: the
    example's file, where a click chose one)."""
    example = st.session_state.get(key_of(endpoint, i, "example"))
    if i.kind == "records":
        return i.from_text(value)
    if i.kind == "file":
        if value is None:
            return _example_file(example) if example else None
        return _saved(value)
    if i.kind == "files":
        if not value and example:
            return [_example_file(name) for name in example]
        return [_saved(v) for v in value or ()]
    return value


def _example_file(name: str) -> dict:
    """A declared example's file (a path in the repository) as the file reference the endpoint reads."""
    return {"path": str(REPO_ROOT / name), "meta": {"_type": GRADIO_FILE}}


def _saved(upload) -> dict:
    """A Streamlit upload as the file reference the endpoint reads."""
    return {"path": str(saved_upload(upload)), "meta": {"_type": GRADIO_FILE}}
