"""ui.validator / ui.serve_endpoint: a UI-free check runs before an event is queued; a bad input never reaches the
handler, the client reads the check's sentence on the input it names (the declared limits' or the demo's check's),
and the next honest call works."""

from __future__ import annotations

import gradio as gr
import pytest
from gradio_client import Client

import apps
from apps import ui
from shared.api import Endpoint, Input
from shared.context import DemoContext
from shared.errors import UserInputError
from tests.conftest import free_port

CALLS: list[str] = []
REPEAT = Endpoint(
    name="repeat", summary="Repeat a text.", returns="the text, n times",
    inputs=(Input("text", "text", "what to repeat", argument="words"),
            Input("n", "integer", "how often", default=1, minimum=0, maximum=3)),
    run=f"{__name__}:repeat", check=f"{__name__}:check_repeat", work="light")


def check(text: str, n: int):
    if not text:
        raise UserInputError("Type some text first.", argument="text")
    if n > 3:
        raise UserInputError(f"n is {n}; the limit is 3.", argument="n")
    if text == "bug":
        raise KeyError("a bug in the check itself")


def check_repeat(ctx, text, n):
    """The demo's own check names its own argument ("words"); the declaration says it is the input "text"."""
    if not text:
        raise UserInputError("Type some text first.", argument="words")
    if text == "bug":
        raise KeyError("a bug in the check itself")


def repeat(ctx, text, n) -> dict:
    CALLS.append(text)
    return {"text": text * int(n)}


@pytest.fixture(scope="module")
def served():
    def shout(text: str, n: int) -> str:
        CALLS.append(text.upper())
        return text.upper() * int(n)

    with gr.Blocks() as blocks:
        box, number, out = gr.Textbox(), gr.Number(), gr.Textbox()
        gr.Button().click(shout, [box, number], out, api_name="shout", validator=ui.validator(check))
        ui.serve_endpoint(DemoContext(apps.get_demo("prax")), REPEAT)
    _, url, _ = blocks.queue().launch(server_port=free_port(), prevent_thread_lock=True, quiet=True)
    yield Client(url, verbose=False)
    blocks.close()


@pytest.mark.parametrize(("endpoint", "too_many"), [("/repeat", "- n: n must be a whole number between 0 and 3; "
                                                     "got 9, above the maximum."),
                                                    ("/shout", "- n: n is 9; the limit is 3.")])
def test_bad_input_is_refused_before_the_handler_runs(served, endpoint, too_many):
    before = len(CALLS)
    with pytest.raises(Exception, match="- text: Type some text first."):
        served.predict("", 1, api_name=endpoint)
    with pytest.raises(Exception, match=too_many.replace(".", r"\.")):
        served.predict("ab", 9, api_name=endpoint)
    assert len(CALLS) == before, "the handler ran for a refused input"
    answer = served.predict("ab", 2, api_name=endpoint)
    assert answer in ({"text": "abab"}, "ABAB")
    assert len(CALLS) == before + 1


def test_a_declared_endpoint_has_the_declared_signature_and_description(served):
    info = served.view_api(print_info=False, return_format="dict")["named_endpoints"]["/repeat"]
    assert [(p["parameter_name"], p["parameter_has_default"]) for p in info["parameters"]] == [("text", False),
                                                                                               ("n", True)]
    assert info["parameters"][1]["parameter_default"] == 1


def test_an_error_in_the_check_itself_lets_the_handler_decide(served):
    with pytest.raises(Exception, match="error id"):  # the handler runs the check again: a bug, reported by id
        served.predict("bug", 1, api_name="/repeat")
    assert served.predict("bug", 1, api_name="/shout") == "BUG"


def test_a_check_that_does_not_take_the_declared_inputs_is_refused_at_build():
    wrong = Endpoint(name="wrong", summary="s", returns="r", inputs=(Input("text", "text", "t"),),
                     run=f"{__name__}:repeat", work="light")
    with gr.Blocks(), pytest.raises(TypeError, match=r"must take \(ctx, text\)"):
        ui.serve_endpoint(DemoContext(apps.get_demo("prax")), wrong)


def test_serving_refuses_a_name_gradio_would_silently_change():
    def repeat(text: str) -> str:
        return text

    with gr.Blocks(), pytest.raises(ValueError, match="taken"):
        gr.Button().click(repeat, gr.Textbox(), gr.Textbox())  # takes the api_name "repeat"
        ui.serve_endpoint(DemoContext(apps.get_demo("prax")), REPEAT)


def test_streamed_gives_partials_in_order_then_the_result_and_raises_the_workers_error():
    """ui.streamed: what a generator handler shows while a model writes (3D-MoLM's answer as it grows)."""
    import contextvars

    marker = contextvars.ContextVar("marker", default="none")
    marker.set("event")
    seen = []

    def run(on_partial):
        seen.append(marker.get())  # the worker runs in the event's context (gr.Progress reads it)
        for word in ("a", "a b", "a b c"):
            on_partial(word)
        return "done"

    assert list(ui.streamed(run)) == [("a", None), ("a b", None), ("a b c", None), (None, "done")]
    assert seen == ["event"]

    def fails(on_partial):
        on_partial("half")
        raise ValueError("the model failed")

    stream = ui.streamed(fails)
    assert next(stream) == ("half", None)
    with pytest.raises(ValueError, match="the model failed"):
        next(stream)
