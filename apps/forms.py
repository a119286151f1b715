"""A demo's page made from its declarations (``shared.api``): the page of a demo that declares its API functions and
ships no page.py of its own (``Demo.page_module``). One form per API function (a tab each when there are several):
an input per declared input, a Run button, and the answer. The form's event runs the endpoint's own checks (its
validator marks the input at fault before anything is queued) and function, so the page does exactly what an API
call does. The named endpoints, the weights banner and the embed section are those of every page.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from apps import ui
from shared.api import Endpoint, Input, attribute
from shared.context import DemoContext
from shared.errors import UserInputError
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


@dataclass(frozen=True)
class Field:
    """A declared input on the form: its components (an optional number's switch and its box are two), the names the
    page's check knows them by (the input's own for the one its errors mark), how their values become the API's
    value, and what an example's value puts in them."""

    input: Input
    components: tuple[gr.components.Component, ...]
    value: Callable[..., Any]  # the components' values -> the value an API call sends
    fill: Callable[[Any], tuple]  # an example's value -> the components' values

    @property
    def names(self) -> list[str]:
        return [f"{self.input.name}_{n}" for n in range(len(self.components) - 1)] + [self.input.name]


def form(ctx: DemoContext, endpoint: Endpoint, view: ui.WeightsView) -> None:
    """The endpoint's inputs, its Run button and its answer; a weights input is the page's weights selector."""
    gr.Markdown(endpoint.summary)
    defaults = endpoint.defaults(ctx)
    with gr.Row():
        with gr.Column():
            fields = [Field(i, (view.selectors[0],), lambda name: name, lambda value: (value,))
                      if i.kind == "weights" else field(i, defaults) for i in endpoint.inputs]
            run = gr.Button("Run", variant="primary")
            examples(endpoint, fields)
        with gr.Column():
            shown = gr.HTML(elem_classes="form-answer") if endpoint.view else None
            with gr.Accordion("Answer as JSON", open=False) if endpoint.view else gr.Group():
                answer = gr.JSON(label="Answer")

    def arguments(values: tuple) -> dict[str, Any]:
        out, at = {}, 0
        for f in fields:
            out[f.input.name] = f.value(*values[at:at + len(f.components)])
            at += len(f.components)
        return out

    def check(*values):
        try:
            endpoint.check_call(ctx, arguments(values))
        except UserInputError as error:
            raise endpoint.in_page_words(error) from None

    def call(*values):
        result = endpoint.call(ctx, arguments(values))
        return (attribute(endpoint.view)(result), result) if endpoint.view else result

    check.__signature__ = call.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for f in fields for name in f.names])
    call.__name__ = f"{endpoint.name}_on_page"
    handler = ui.model_call(call) if endpoint.work == "model" else ui.user_errors(call)
    events = {"model": ui.model_events, "bounded": ui.work_events}.get(endpoint.work)
    outputs = [shown, answer] if shown is not None else answer
    view.follow(run.click(handler, [c for f in fields for c in f.components], outputs, validator=ui.validator(check),
                          api_visibility="private", preprocess=False, **(events(ctx) if events else {})))


def examples(endpoint: Endpoint, fields: list[Field]) -> None:
    """The endpoint's examples (``Endpoint.example_calls``) as a list of labels; a click fills every field of the form
    (an input the example leaves out at its default; the weights selector stays as the visitor set it). Example files
    are served as they are (``ui.serve_static``)."""
    calls = endpoint.example_calls()
    filled = [f for f in fields if f.input.kind != "weights"]
    if not calls or not filled:
        return
    rows = [[value for f in filled for value in f.fill(call.arguments[f.input.name])] for call in calls]
    ui.serve_static([REPO_ROOT / call.arguments[f.input.name] for call in calls for f in filled
                     if f.input.kind == "file" and call.arguments[f.input.name]])
    dataset = gr.Dataset(components=[gr.Textbox(visible=False)], samples=[[call.label] for call in calls],
                         label="Examples", type="index", samples_per_page=len(calls))
    dataset.click(lambda index: rows[index], dataset, [c for f in filled for c in f.components],
                  api_visibility="private", queue=False)


def field(i: Input, defaults: dict[str, Any]) -> Field:
    """The input's form field, with the page's label and help line (``Input.page_label``, ``page_help``), and what
    a click on an example puts in it."""
    value = i.example if i.required else i.default
    common = {"label": i.page_label, "info": i.page_help}
    if i.kind == "text":
        lines = 6 if i.multiline else 1 if (i.max_length or 0) <= 200 else 3
        box = gr.Textbox(value=value, max_length=i.max_length, lines=lines, max_lines=30 if i.multiline else lines,
                         **common)
        return Field(i, (box,), lambda text: text, lambda v: (v,))
    optional = i.kind in ("integer", "number") and i.default is None and not i.required
    if optional and i.switch:  # "Show a timeline" and its number: off sends null
        with gr.Row(equal_height=True):
            on = gr.Checkbox(False, label=i.switch, scale=1, min_width=160)
            number = gr.Number(value=i.example if i.example is not None else i.minimum, minimum=i.minimum,
                               maximum=i.maximum, precision=0 if i.kind == "integer" else None, scale=2, **common)
        return Field(i, (on, number), lambda on, n: page_number(i, n, defaults) if on else None,
                     lambda v: (False, gr.skip()) if v is None else (True, v))
    if optional:  # no switch declared: a box that may stay empty (a number box cannot: it sends 0)
        box = gr.Textbox(value="", placeholder="leave empty to leave it out", **common)
        return Field(i, (box,), lambda text: page_number(i, text, defaults), lambda v: ("" if v is None else str(v),))
    if i.kind in ("integer", "number"):
        number = gr.Number(value=value, minimum=i.minimum, maximum=i.maximum,
                           precision=0 if i.kind == "integer" else None, **common)
        return Field(i, (number,), lambda n: page_number(i, n, defaults), lambda v: (v,))
    if i.kind == "boolean":
        return Field(i, (gr.Checkbox(value=bool(value), **common),), lambda v: v, lambda v: (bool(v),))
    if i.kind == "choice":
        return Field(i, (gr.Dropdown(i.page_choices, value=value, **common),), lambda v: v, lambda v: (v,))
    if i.kind == "choices":
        group = gr.CheckboxGroup(i.page_choices, value=list(value or ()), **common)
        return Field(i, (group,), lambda v: list(v or ()), lambda v: (list(v or ()),))
    gr.Markdown(common["info"])  # gr.File, gr.Audio and gr.Code take no info line
    if i.kind == "file":
        upload = gr.Audio(sources=["upload", "microphone"], type="filepath", label=i.page_label) \
            if i.media == "audio" else gr.File(file_count="single", label=i.page_label)  # audio: a waveform, the mic
        return Field(i, (upload,), lambda v: v, lambda v: (str(REPO_ROOT / v) if v else None,))
    if i.kind == "files":
        return Field(i, (gr.File(file_count="multiple", label=i.page_label),), lambda v: v,
                     lambda v: ([str(REPO_ROOT / p) for p in v or ()],))
    code = gr.Code(i.as_text(value), language="json", label=i.page_label)  # records: one a line
    return Field(i, (code,), lambda text: i.from_text(text) if isinstance(text, str) else text,
                 lambda v: (i.as_text(v),))


def page_number(i: Input, value: Any, defaults: dict[str, Any]) -> Any:
    """A number field's value as the API call would send it: a box's text read as a number (empty: the default)."""
    if isinstance(value, str):
        value = i.from_text(value)
    return defaults.get(i.name) if value is None and not i.required else value
