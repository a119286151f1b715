"""apps.event_inputs: the form of an event's inputs, checked against Gradio's own components before Gradio reads
them (the fuzz harness in tests/security runs the same checks against a live hub)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import gradio as gr
import pytest

from apps.event_inputs import MAX_DEPTH, NOT_UNICODE, TOO_FEW, inputs_problem, value_problem, with_defaults


@pytest.mark.parametrize(("component", "value", "expected"), [
    (gr.Number(label="Seed"), 10**4000, "“Seed” must be a number between -1,000,000,000,000,000 and"),
    (gr.Number(label="Seed"), "12", "“Seed” must be a number."),
    (gr.Number(label="Seed"), True, "“Seed” must be a number."),
    (gr.Slider(0, 1, label="Threshold"), None, "“Threshold” must be a number."),
    (gr.Checkbox(label="Only demos"), "yes", "“Only demos” must be true or false."),
    (gr.Textbox(label="SMILES"), ["CCO"], "“SMILES” must be text."),
    (gr.Dropdown(["a", "b"], label="Task"), "c", "“Task” must be one of its choices (a, b)."),
    (gr.Dropdown(["a", "b"], label="Task"), 10**4000, "“Task” must be one of its choices (a, b)."),
    (gr.Dropdown(["a", "b"], label="Tags", multiselect=True), "a", "“Tags” must be a list of its choices."),
    (gr.Radio([("Fast", "fast"), ("Default", "default")], label="Sampler"), "Fast",
     "“Sampler” must be one of its choices (fast, default)."),
    (gr.CheckboxGroup([("ab +", 0), ("cd -", 1)], label="Examples"), [2], "“Examples” must be one of its choices"),
    (gr.Dataset(components=[gr.Textbox()], samples=[["x"], ["y"]], label="Scenes"), 10**9,
     "“Scenes” has 2 examples; pick one by its number, 0 to 1."),
    (gr.Dataset(components=[gr.Textbox()], samples=[["x"]], label="Scenes"), "0", "“Scenes” has 1 examples"),
    (gr.File(label="SDF"), 42, "“SDF” must be an uploaded file"),
    (gr.File(label="SDF"), "/etc/passwd", "“SDF” must be an uploaded file"),
    (gr.File(label="SDF"), {"path": 7}, "“SDF” must be an uploaded file"),
    (gr.File(label="SDF"), [{"path": "x"}], "“SDF” must be an uploaded file"),
    (gr.File(label="Images", file_count="multiple"), {"path": "x"}, "“Images” must be a list of uploaded files"),
    (gr.File(label="Images", file_count="multiple"), [{"path": "x"}, None], "“Images” must be a list of uploaded"),
    (gr.Dataframe(label="Boxes"), "table", "“Boxes” must be a table."),
])
def test_a_value_of_the_wrong_form_is_named_with_the_input_label(component, value, expected):
    assert value_problem(component, value, component.label).startswith(expected)


@pytest.mark.parametrize(("component", "value"), [
    (gr.Number(label="Seed"), None), (gr.Number(label="Seed"), -3.5), (gr.Slider(0, 1), 0.5),
    (gr.Checkbox(), False), (gr.Textbox(), None), (gr.Textbox(), "CCO"), (gr.Dropdown(["a", "b"]), "b"),
    (gr.Dropdown(["a"], allow_custom_value=True), "anything"), (gr.Radio([("Fast", "fast")]), "fast"),
    (gr.CheckboxGroup([("ab +", 0), ("cd -", 1)]), [1, 0]), (gr.File(), {"path": "x", "meta": {}}),
    (gr.File(file_count="multiple"), [{"path": "a"}, {"url": "/gradio_api/file=b"}]),
    (gr.Gallery(), [{"image": {"path": "a"}, "caption": None}, [{"path": "b"}, "cap"]]),
    (gr.Dataset(components=[gr.Textbox()], samples=[["x"], ["y"]]), 1), (gr.JSON(), {"any": [1, {"thing": 2}]}),
    (gr.State(), object()),
])
def test_honest_values_pass(component, value):
    assert value_problem(component, value, "x") is None


def event(*components) -> SimpleNamespace:
    return SimpleNamespace(inputs=list(components), component_prop_inputs=[])


def test_whole_events_too_few_values_too_deep_and_not_unicode():
    fn = event(gr.Textbox(label="A"), gr.Number(label="B"))
    assert inputs_problem(fn, ["x"]) == TOO_FEW.format(wanted=2, got=1)
    assert inputs_problem(fn, ["x", 3, "an extra value Gradio ignores"]) is None
    deep = json.loads("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5))
    assert "nest lists or objects more than 32 levels" in inputs_problem(event(gr.JSON()), [deep])
    assert inputs_problem(event(gr.JSON()), [json.loads('{"a": ["\\ud800"]}')]) == NOT_UNICODE
    assert inputs_problem(fn, ["x", "9"]) == "“B” must be a number."


def test_a_component_this_session_changed_is_read_from_the_session():
    """The PraX page fills its examples list per visitor (gr.update(choices=...)); Gradio keeps that copy in the
    session state, and so does the check."""
    listed = gr.CheckboxGroup(choices=[], label="Examples")
    fn = event(listed)
    assert inputs_problem(fn, [[0]]).startswith("“Examples” has no choices")
    session_copy = gr.CheckboxGroup(choices=[("ab +", 0)], label="Examples")
    assert inputs_problem(fn, [[0]], state={listed._id: session_copy}) is None


def test_left_out_trailing_inputs_take_the_functions_defaults_where_it_declares_them():
    """An endpoint that gains an optional input (3D-MoLM's ``decoding``) keeps answering raw callers that send the
    old number of values; a function without a default for a value left out, or a page event's (whose parameters
    are not one per input), keeps the sentence."""
    def ask(smiles, question="", decoding="official"):
        return smiles

    def strict(smiles, question):
        return smiles

    def page_event(smiles, question="", progress=None, extra=None):
        return smiles

    inputs = [gr.Textbox(label="smiles"), gr.Textbox(label="question"), gr.Radio(["official", "fast"])]
    fn = SimpleNamespace(inputs=inputs, component_prop_inputs=[], fn=ask)
    assert with_defaults(fn, ["CCO"]) == ["CCO", "", "official"]
    assert with_defaults(fn, ["CCO", "logp", "fast"]) == ["CCO", "logp", "fast"]
    assert inputs_problem(fn, with_defaults(fn, ["CCO", "logp"])) is None
    two = SimpleNamespace(inputs=inputs[:2], component_prop_inputs=[], fn=strict)
    assert inputs_problem(two, with_defaults(two, ["CCO"])) == TOO_FEW.format(wanted=2, got=1)
    page = SimpleNamespace(inputs=inputs[:2], component_prop_inputs=[], fn=page_event)
    assert with_defaults(page, ["CCO"]) == ["CCO"]
    assert with_defaults(SimpleNamespace(inputs=inputs, fn=ask), "not a list") == "not a list"
