"""shared/api.py: a declaration refuses to be ill-formed, an input's declared limits refuse values outside them naming
the input, a check's own argument names are reported under the public ones, and every declared endpoint's example
call passes its checks (so the docs' reference and the generated tests start from honest calls)."""

from __future__ import annotations

import re

import pytest
from PIL import Image

import apps
from shared.api import Endpoint, Input
from shared.context import DemoContext
from shared.errors import UserInputError
from shared.weights import REPO_ROOT
from tests.endpoints import DECLARED
from tests.robustness.cases import outside_limits


def test_an_ill_formed_declaration_is_refused_at_import():
    with pytest.raises(ValueError, match="kind must be one of"):
        Input("x", "float", "a number")
    with pytest.raises(ValueError, match="declares its minimum"):
        Input("x", "integer", "a count")
    with pytest.raises(ValueError, match="required input 'b' after one with a default"):
        Endpoint("e", "s", (Input("a", "text", "a", default=""), Input("b", "text", "b")), "r", run="m:f")
    with pytest.raises(ValueError, match="two inputs named alike"):
        Endpoint("e", "s", (Input("a", "text", "a"), Input("a", "text", "b")), "r", run="m:f")
    with pytest.raises(ValueError, match="work must be one of"):
        Endpoint("e", "s", (), "r", run="m:f", work="gpu")


@pytest.mark.parametrize(("declared", "value", "sentence"), [
    (Input("k", "integer", "guesses", minimum=1, maximum=50), 0, "k must be a whole number between 1 and 50; got 0"),
    (Input("k", "integer", "guesses", minimum=1, maximum=50), 2.5, "k must be a whole number"),
    (Input("k", "integer", "guesses", minimum=1, maximum=50), True, "k must be a whole number"),
    (Input("t", "number", "threshold", minimum=0.0, maximum=1.0), float("nan"), "t must be a number between 0 and 1"),
    (Input("q", "text", "question", max_length=5), "toolong", "q is 7 characters long; the limit is 5"),
    (Input("q", "text", "question"), 7, "q must be text, not a number"),
    (Input("s", "choice", "sampler", choices=("default", "fast")), "turbo", 's must be one of "default", "fast"'),
    (Input("o", "boolean", "only"), "yes", "o must be true or false, not text"),
    (Input("e", "records", "examples"), [1], "e must be a list of objects"),
])
def test_a_value_outside_the_declared_limits_names_the_input(declared, value, sentence):
    with pytest.raises(UserInputError) as info:
        declared.check(value)
    assert sentence in str(info.value) and info.value.argument == declared.name


def test_absent_values_pass_where_absence_has_a_meaning():
    Input("steps", "integer", "steps", default=None, minimum=1).check(None)
    Input("image", "file", "an image").check(None)  # the demo's check says "No image" in its own words
    with pytest.raises(UserInputError, match="must be text"):
        Input("q", "text", "question", default="").check(None)


def check_toy(ctx, smiles, seed):
    raise UserInputError("The molecule is empty.", argument="molecule")


def test_a_checks_own_argument_name_is_reported_under_the_public_one():
    toy = Endpoint("toy", "s", (Input("smiles", "text", "m", argument="molecule"),
                                Input("seed", "integer", "n", default=0, minimum=0)), "r",
                   run=f"{__name__}:check_toy", check=f"{__name__}:check_toy")
    with pytest.raises(UserInputError) as info:
        toy.check_call(None, {"smiles": "", "seed": 0})
    assert info.value.argument == "smiles"
    with pytest.raises(UserInputError) as info:
        toy.check_call(None, {"smiles": "", "seed": -1})  # the declared limit first
    assert info.value.argument == "seed" and "below the minimum" in str(info.value)


def test_the_description_has_one_line_per_input_with_limits_and_default():
    _, synthesize = DECLARED["synthesize"]
    lines = synthesize.docstring({"weights": "tiny-pragmatic", "k": 5}, ["tiny-pragmatic", "tiny-literal"]).splitlines()
    assert lines[0] == synthesize.summary and lines[2] == "Args:"
    k = next(line for line in lines if line.strip().startswith("k:"))
    assert "a whole number from 1 to 50" in k and k.endswith("default 5.")
    weights = next(line for line in lines if line.strip().startswith("weights:"))
    assert "one of tiny-pragmatic, tiny-literal" in weights and 'default "tiny-pragmatic"' in weights
    assert lines[-2] == "Returns:" and lines[-1].strip() == synthesize.returns


@pytest.fixture
def upload(tmp_path):
    """An uploaded image as Gradio hands an endpoint its file: a FileData reference."""
    path = tmp_path / "ok.png"
    Image.radial_gradient("L").convert("RGB").resize((96, 96)).save(path)
    return {"path": str(path), "meta": {"_type": "gradio.FileData"}}


def uploaded(kind: str, example):
    """A declared file example (a path in the repository; a files input's, a list of them, as the forms read it) as
    Gradio hands the endpoint its uploads: FileData references to files that exist; None stays None."""
    if example is None:
        return None
    paths = example if kind == "files" else [example]
    assert all((REPO_ROOT / path).is_file() for path in paths), paths
    references = [{"path": str(REPO_ROOT / path), "meta": {"_type": "gradio.FileData"}} for path in paths]
    return references if kind == "files" else references[0]


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_every_declared_example_passes_its_checks_and_every_limit_is_enforced(name, upload, offline_checkpoints):
    demo, endpoint = DECLARED[name]
    ctx = DemoContext(demo)
    honest = {i.name: uploaded(i.kind, i.example) or (upload if i.kind == "file" else [upload])
              if i.kind in ("file", "files") else i.example for i in endpoint.inputs}
    assert all(i.example is not None or i.kind in ("file", "files") for i in endpoint.inputs), "declare an example"
    endpoint.check_call(ctx, honest)
    for i in endpoint.inputs:
        for case, value in outside_limits(i):
            with pytest.raises(UserInputError) as info:
                endpoint.check_call(ctx, honest | {i.name: value})
            assert info.value.argument == i.name, (i.name, case)


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_every_example_a_page_offers_is_a_call_that_passes_its_checks(name, offline_checkpoints):
    """What a generated page fills in on a click (``Endpoint.example_calls``) is a whole call the endpoint accepts;
    a file named there is in the repository."""
    demo, endpoint = DECLARED[name]
    ctx = DemoContext(demo)
    defaults = endpoint.defaults(ctx)
    for example in endpoint.example_calls():
        arguments = {}
        for i in endpoint.inputs:  # a weights input is the page's selector: its default, or its example if required
            value = example.arguments.get(i.name, defaults.get(i.name, i.example))
            arguments[i.name] = uploaded(i.kind, value) if i.kind in ("file", "files") else value
        endpoint.check_call(ctx, arguments)


def test_an_example_that_sets_an_unknown_input_is_refused_at_declaration():
    from shared.api import Endpoint, Example, Input

    with pytest.raises(ValueError, match="sets no input named"):
        Endpoint("f", "s", (Input("text", "text", "t"),), "r", "m:f", examples=(Example("x", {"txt": "a"}),))
    with pytest.raises(ValueError, match="media"):
        Input("text", "text", "t", media="audio")


@pytest.fixture
def offline_checkpoints(tmp_path, monkeypatch):
    """No weights anywhere: the checks need none."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "no-checkpoints"))


def test_every_demo_declares_its_endpoints():
    assert all(demo.endpoints() for demo in apps.DEMOS), "a demo with no API function"


def test_a_demo_without_a_page_of_its_own_gets_the_form_made_from_its_declarations():
    import dataclasses

    from apps.hub import import_page

    declared_only = dataclasses.replace(apps.get_demo("molm3d"), page="")
    assert declared_only.page_module == "apps.forms"
    page = import_page(declared_only)
    assert page.status == "ready" and page.module.__name__ == "apps.forms"
    assert import_page(dataclasses.replace(declared_only, api="")).status == "coming-soon"


@pytest.mark.parametrize(("declared", "text", "value"), [
    (Input("e", "records", "examples"), '[{"string": "a"}]', [{"string": "a"}]),
    (Input("w", "number", "window", default=None, minimum=2), " ", None),
    (Input("w", "number", "window", default=None, minimum=2), "2.5", 2.5),
    (Input("n", "integer", "count", default=None, minimum=0), "1,000", 1000),
    (Input("n", "integer", "count", default=None, minimum=0), "many", "many"),  # the check says what it must be
])
def test_a_forms_text_field_becomes_what_an_api_call_sends(declared, text, value):
    assert declared.from_text(text) == value


def test_broken_json_in_a_form_is_a_sentence_naming_the_input():
    with pytest.raises(UserInputError, match=r"^e is not valid JSON: a comma is missing between two items \(line 1, "
                                             r"character 5\)\.$"):
        Input("e", "records", "examples").from_text('[{} {}]')


TASKS = Input("tasks", "choices", "task names", default=("GS", "EMO"), choices=("GS", "EMO"), max_length=20,
              choice_labels=("Key", "Emotion"), label="What to describe")


@pytest.mark.parametrize("value", [["GS"], ("GS", "EMO"), "GS, EMO", ["gs", " emo"], ""])
def test_a_choices_input_takes_a_list_of_its_choices_or_their_text_in_any_case(value):
    TASKS.check(value)  # blank text: the demo's own check gives its default


@pytest.mark.parametrize("value, message", [
    ([], "Choose at least one of tasks."), (["GS", "Tempo"], "'Tempo' is not one of the tasks: choose from GS, EMO."),
    ("GS, Tempo", "'Tempo' is not one of the tasks"),
    ([3], "tasks must be a list of names"), (7, "tasks must be a list of names"),
    ("GS, " * 10, "tasks is 40 characters long; the limit is 20 characters."),
])
def test_a_choices_input_refuses_what_is_not_some_of_its_choices(value, message):
    with pytest.raises(UserInputError, match=re.escape(message)) as refused:
        TASKS.check(value)
    assert refused.value.argument == "tasks"


def test_page_words_default_to_the_api_words_in_sentence_form():
    plain = Input("num_samples", "integer", "samples per listener", default=10, minimum=1)
    assert (plain.page_label, plain.page_help) == ("Num samples", "Samples per listener")
    assert (TASKS.page_label, TASKS.page_choices) == ("What to describe", [("Key", "GS"), ("Emotion", "EMO")])


@pytest.mark.parametrize("declaration, message", [
    (dict(kind="choices", choices=("a", "b"), choice_labels=("A",)), "one choice label per choice"),
    (dict(kind="integer", minimum=1, default=3, switch="Use it"), "a switch is for an optional number"),
    (dict(kind="integer", minimum=1, switch="Use it"), "a switch is for an optional number"),
    (dict(kind="number", minimum=1, multiline=True), "multiline is for a text input"),
])
def test_page_words_that_cannot_apply_are_refused_when_declared(declaration, message):
    with pytest.raises(ValueError, match=message):
        Input("x", description="x", **declaration)
