"""A demo's page made from its declarations (``shared.api``): the page of a demo that declares its API functions and
ships no page.py of its own (``Demo.page_module``). One form per API function (a tab each when there are several):
an input per declared input, a Run button, and the answer. The form's event runs the endpoint's own checks (its
validator marks the input at fault before anything is queued) and function, so the page does exactly what an API
call does. The named endpoints, the weights banner and the embed section are those of every page.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from apps import ui
from shared.api import Endpoint, Input, attribute
from shared.context import DemoContext
from shared.weights import REPO_ROOT  # declared example files are named from here


def build(ctx: DemoContext) -> gr.Blocks:
    endpoints = ctx.demo.endpoints()
    with gr.Blocks(title=ctx.demo.title) as page:
        ui.paper_card(ctx.demo)
        phrase = ctx.demo.works_without_weights
        view = ui.weights_section(ctx, f"Without them this page still gives {phrase}." if phrase else "")
        if len(endpoints) == 1:
            form(ctx, endpoints[0], view)
        else:
            for endpoint in endpoints:
                with gr.Tab(title(endpoint)):
                    form(ctx, endpoint, view)
        ui.serve_endpoints(ctx)
        ui.embed_section(ctx, page)
    return page


def title(endpoint: Endpoint) -> str:
    """A tab's title: the endpoint's name in words ("molecule properties")."""
    return endpoint.name.replace("_", " ").capitalize()


def form(ctx: DemoContext, endpoint: Endpoint, view: ui.WeightsView) -> None:
    """The endpoint's inputs, its Run button and its answer; a weights input is the page's weights selector."""
    gr.Markdown(endpoint.summary)
    with gr.Row():
        with gr.Column():
            components = [view.selectors[0] if i.kind == "weights" else component(i) for i in endpoint.inputs]
            run = gr.Button("Run", variant="primary")
            examples(endpoint, components)
        with gr.Column():
            shown = gr.HTML(elem_classes="form-answer") if endpoint.view else None
            with gr.Accordion("Answer as JSON", open=False) if endpoint.view else gr.Group():
                answer = gr.JSON(label="Answer")
    defaults = endpoint.defaults(ctx)

    def arguments(values: tuple) -> dict[str, Any]:
        return {i.name: page_value(i, v, defaults) for i, v in zip(endpoint.inputs, values, strict=True)}

    def check(*values):
        endpoint.check_call(ctx, arguments(values))

    def call(*values):
        result = endpoint.call(ctx, arguments(values))
        return (attribute(endpoint.view)(result), result) if endpoint.view else result

    check.__signature__ = call.__signature__ = ui.endpoint_signature(endpoint, defaults)
    call.__name__ = f"{endpoint.name}_on_page"
    handler = ui.model_call(call) if endpoint.work == "model" else ui.user_errors(call)
    events = {"model": ui.model_events, "bounded": ui.work_events}.get(endpoint.work)
    outputs = [shown, answer] if shown is not None else answer
    view.follow(run.click(handler, components, outputs, validator=ui.validator(check), api_visibility="private",
                          preprocess=False, **(events(ctx) if events else {})))


def examples(endpoint: Endpoint, components: list) -> None:
    """The endpoint's examples (``Endpoint.example_calls``) as a list of labels; a click fills the whole form (the
    weights selector stays as the visitor set it). Example files are served as they are (``ui.serve_static``)."""
    calls = endpoint.example_calls()
    fields = [(i, c) for i, c in zip(endpoint.inputs, components, strict=True) if i.kind != "weights"]
    if not calls or not fields:
        return
    rows = [[field_value(i, call.arguments[i.name]) for i, _ in fields] for call in calls]
    ui.serve_static([REPO_ROOT / call.arguments[i.name] for call in calls for i, _ in fields
                     if i.kind == "file" and call.arguments[i.name]])
    dataset = gr.Dataset(components=[gr.Textbox(visible=False)], samples=[[call.label] for call in calls],
                         label="Examples", type="index", samples_per_page=len(calls))
    dataset.click(lambda index: rows[index], dataset, [c for _, c in fields], api_visibility="private", queue=False)


def field_value(i: Input, value: Any) -> Any:
    """A call's value as the form's field shows it: a file as its path, records as the JSON box's text, an optional
    number with no value as an empty box."""
    if i.kind == "file" and value:
        return str(REPO_ROOT / value)
    if i.kind == "records":
        return i.as_text(value)
    if i.kind in ("integer", "number") and i.default is None and not i.required:
        return "" if value is None else str(value)
    return value


def component(i: Input) -> gr.components.Component:
    """The input's form field, labelled with its public name and described by its declaration."""
    value = i.example if i.required else i.default
    common = {"label": i.name, "info": i.description[:1].upper() + i.description[1:]}
    if i.kind == "text":
        return gr.Textbox(value=value, max_length=i.max_length, lines=1 if (i.max_length or 0) <= 200 else 3, **common)
    if i.kind in ("integer", "number") and i.default is None and not i.required:
        # A number box cannot be empty (it sends 0); where "no value" means something, a text box that may be
        return gr.Textbox(value="", placeholder="empty: none", **common)
    if i.kind in ("integer", "number"):
        whole = 0 if i.kind == "integer" else None
        return gr.Number(value=value, minimum=i.minimum, maximum=i.maximum, precision=whole, **common)
    if i.kind == "boolean":
        return gr.Checkbox(value=bool(value), **common)
    if i.kind == "choice":
        return gr.Dropdown(list(i.choices), value=value, **common)
    gr.Markdown(common["info"])  # gr.File, gr.Audio and gr.Code take no info line
    if i.media == "audio":  # a waveform, a player, and the microphone
        return gr.Audio(sources=["upload", "microphone"], type="filepath", label=i.name)
    if i.kind in ("file", "files"):
        return gr.File(file_count="single" if i.kind == "file" else "multiple", label=i.name)
    return gr.Code(i.as_text(value), language="json", label=i.name)  # records: one a line


def page_value(i: Input, value: Any, defaults: dict[str, Any]) -> Any:
    """A form field's value as the API call would send it: records parsed from the JSON box, a number box left empty
    as the input's default, an uploaded file as the file reference Gradio checked it to be (the form's events skip
    Gradio's preprocessing, which opens files with libraries that fail in unreadable ways)."""
    if i.kind in ("records", "integer", "number") and isinstance(value, str):  # a JSON box, an optional number
        return i.from_text(value)
    if i.kind in ("integer", "number") and value is None and not i.required:
        return defaults.get(i.name)
    return value
