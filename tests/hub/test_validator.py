"""ui.validator / ui.api: a UI-free check runs before an event is queued; a bad input never reaches the handler, the
client reads the check's sentence on the input it names, and the next honest call works."""

from __future__ import annotations

import gradio as gr
import pytest
from gradio_client import Client

from apps import ui
from shared.errors import UserInputError
from tests.conftest import free_port


def check(text: str, n: int):
    if not text:
        raise UserInputError("Type some text first.", argument="text")
    if n > 3:
        raise UserInputError(f"n is {n}; the limit is 3.", argument="n")
    if text == "bug":
        raise KeyError("a bug in the check itself")


@pytest.fixture(scope="module")
def served():
    calls: list[str] = []

    def repeat(text: str, n: int) -> str:
        calls.append(text)
        return text * int(n)

    def shout(text: str, n: int) -> str:
        calls.append(text.upper())
        return text.upper() * int(n)

    with gr.Blocks() as blocks:
        box, number, out = gr.Textbox(), gr.Number(), gr.Textbox()
        gr.Button().click(shout, [box, number], out, api_name="shout", validator=ui.validator(check))
        ui.api(repeat, api_name="repeat", check=check)
    _, url, _ = blocks.queue().launch(server_port=free_port(), prevent_thread_lock=True, quiet=True)
    yield Client(url, verbose=False), calls
    blocks.close()


@pytest.mark.parametrize("endpoint", ["/repeat", "/shout"])
def test_bad_input_is_refused_before_the_handler_runs(served, endpoint):
    client, calls = served
    before = len(calls)
    with pytest.raises(Exception, match="- text: Type some text first."):
        client.predict("", 1, api_name=endpoint)
    with pytest.raises(Exception, match="- n: n is 9; the limit is 3."):
        client.predict("ab", 9, api_name=endpoint)
    assert len(calls) == before, "the handler ran for a refused input"
    assert client.predict("ab", 2, api_name=endpoint) in ("abab", "ABAB")
    assert len(calls) == before + 1


def test_an_error_in_the_check_itself_lets_the_handler_decide(served):
    client, calls = served
    assert client.predict("bug", 1, api_name="/repeat") == "bug"
    assert calls[-1] == "bug"


def test_api_refuses_a_check_that_does_not_match_the_endpoint():
    def endpoint(text: str) -> str:
        return text

    with gr.Blocks(), pytest.raises(TypeError, match="exactly the endpoint's parameters"):
        ui.api(endpoint, api_name="endpoint", check=check)


def test_api_refuses_a_name_gradio_would_silently_change():
    def suggest(text: str) -> str:
        return text

    with gr.Blocks(), pytest.raises(ValueError, match="taken"):
        gr.Button().click(suggest, gr.Textbox(), gr.Textbox())  # takes the api_name "suggest"
        ui.api(suggest, api_name="suggest")
