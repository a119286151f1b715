"""PraX against the pipeline contract (shared/pipeline.py): from_pretrained, check_inputs, callback, frozen outputs,
API endpoints that return ``to_dict()``, validation before queueing, and UI-free actions."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys

import pytest
import torch
from gradio_client import Client
from gradio_client.exceptions import ValidationError

from apps.prax import DEMO, actions, page
from apps.prax import pipeline as prax_pipeline
from apps.prax.dsl import Example
from apps.prax.pipeline import PraxOutput, PraxPipeline, PraxSuggestion
from shared import weights
from shared.context import DemoContext, load_pipeline
from shared.errors import UserInputError
from shared.pipeline import Pipeline
from shared.pool import ModelPool, estimate_bytes
from shared.weights import REPO_ROOT

SPEC = [{"string": "12ab", "label": "+"}, {"string": "07xyz", "label": "+"}, {"string": "1ab", "label": "-"}]
ODD_UNICODE = "\u202e\u200b\U0001F600\x00"


def bundled(name: str):
    return weights.resolve("prax", DEMO.weight_set(name), allow_download=False)


# ---------------------------------------------------------------- from_pretrained


def test_from_pretrained_has_keyword_only_cpu_float32_defaults():
    assert issubclass(PraxPipeline, Pipeline) and PraxPipeline.output_class is PraxOutput
    params = inspect.signature(PraxPipeline.from_pretrained).parameters
    for name, default in (("device", "cpu"), ("dtype", torch.float32)):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY and params[name].default == default, name


def test_loaded_pipeline_reports_cpu_float32(official_checkpoint):
    for pipe in (PraxPipeline.from_pretrained(official_checkpoint),
                 load_pipeline(DEMO, DEMO.weight_set("tiny-literal"))):  # the hub's loader, on this CPU machine
        assert str(pipe.device) == "cpu" and pipe.dtype == torch.float32
        assert {(p.device.type, p.dtype) for p in pipe.model.parameters()} == {("cpu", torch.float32)}


def test_estimate_bytes_reads_the_listener_as_memory_bytes_did(bundled_literal):
    params = sum(p.numel() * p.element_size() for p in bundled_literal.model.parameters())  # the old memory_bytes
    assert estimate_bytes(bundled_literal) == params > 1_000_000
    assert not hasattr(bundled_literal, "memory_bytes")


# ---------------------------------------------------------------- check_inputs, without weights


def ex(*pairs) -> list[dict]:
    return [{"string": s, "label": label} for s, label in pairs]


BAD = [
    ("no-examples", dict(examples=[]), "examples", "no examples"),
    ("none", dict(examples=None), "examples", "no examples"),
    ("not-a-list", dict(examples="+abc"), "examples", "must be a list"),
    ("too-many", dict(examples=ex(*[(f"a{i}", "+") for i in range(31)])), "examples", "limit is 30"),
    ("500-examples", dict(examples=ex(*[(f"b{i}", "-") for i in range(500)])), "examples", "limit is 30"),
    ("too-long", dict(examples=ex(("a" * 101, "+"))), "examples", "limit is 100"),
    ("backtracking-bait", dict(examples=ex(("a" * 5000 + "!", "+"))), "examples", "limit is 100"),
    ("empty-string", dict(examples=ex(("", "+"))), "examples", "empty"),
    ("non-printable", dict(examples=ex(("a\x07b", "+"))), "examples", "not printable"),
    ("odd-unicode", dict(examples=ex((ODD_UNICODE, "+"))), "examples", "not printable"),
    ("not-text", dict(examples=ex((42, "+"))), "examples", "not text"),
    ("both-labels", dict(examples=ex(("abc", "+"), ("abc", "-"))), "examples", "both as a match"),
    ("bad-label", dict(examples=ex(("abc", "maybe"))), "examples", "not understood"),
    ("missing-label", dict(examples=[{"string": "abc"}]), "examples", "needs a \"string\" and a \"label\""),
    ("missing-string", dict(examples=[{"label": "+"}]), "examples", "needs a \"string\""),
    ("wrong-item", dict(examples=[42]), "examples", "Each example must be"),
    ("k-zero", dict(examples=SPEC, k=0), "k", "between 1 and 50"),
    ("k-huge", dict(examples=SPEC, k=10_000), "k", "between 1 and 50"),
    ("k-text", dict(examples=SPEC, k="many"), "k", "whole number"),
    ("k-none", dict(examples=SPEC, k=None), "k", "whole number"),
    ("samples-zero", dict(examples=SPEC, num_samples=0), "num_samples", "between 1 and 1,000"),
    ("samples-huge", dict(examples=SPEC, num_samples=5000), "num_samples", "between 1 and 1,000"),
]


@pytest.fixture
def no_weights(monkeypatch, tmp_path):
    """No weights anywhere (bundled root, operator folders, HF cache), and loading any would fail the test."""
    monkeypatch.setattr(weights, "BUNDLED_ROOT", tmp_path / "no-bundles")
    monkeypatch.delenv("DEMOHUB_CHECKPOINTS", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(prax_pipeline, "load_listener", lambda *a, **k: pytest.fail("weights were loaded"))
    assert not any(weights.state("prax", ws).here for ws in DEMO.weight_sets)


@pytest.mark.parametrize(("kwargs", "argument", "fragment"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_check_inputs_names_the_bad_argument_without_weights(no_weights, kwargs, argument, fragment):
    with pytest.raises(UserInputError, match=fragment) as info:
        PraxPipeline.check_inputs(**kwargs)
    assert info.value.argument == argument
    assert argument in inspect.signature(PraxPipeline.__call__).parameters


def test_check_inputs_returns_normalised_inputs(no_weights):
    examples, k, num_samples = PraxPipeline.check_inputs(
        [("(a|a)+b", "pos"), {"string": "x", "label": "−"}, Example("(a|a)+b", "+")], k="3", num_samples=20.0)
    assert examples == (Example("(a|a)+b", "+"), Example("x", "-"))  # regex text is a plain string; repeats dropped
    assert (k, num_samples) == (3, 20) and type(k) is int and type(num_samples) is int


# ---------------------------------------------------------------- callback, outputs


@pytest.mark.parametrize(("max_batch", "expected"), [(1024, [(1, 2), (2, 2)]),
                                                     (8, [(1, 4), (2, 4), (3, 4), (4, 4)])])
def test_callback_reports_int_steps_up_to_total(bundled_literal, max_batch, expected):
    pipe = PraxPipeline(bundled_literal.model, name="tiny-literal", max_batch=max_batch)
    calls = []
    out = pipe(SPEC, k=3, num_samples=20, seed=0, callback=lambda step, total: calls.append((step, total)))
    assert calls == expected and all(type(s) is int and type(t) is int for s, t in calls)
    assert out.n_samples == 20


def test_suggest_example_passes_the_callback_on(bundled_literal):
    calls = []
    bundled_literal.suggest_example(SPEC[:2], num_samples=20, callback=lambda *step: calls.append(step))
    assert calls and calls[-1][0] == calls[-1][1]


def test_outputs_are_frozen_and_json_ready(bundled_literal):
    out = bundled_literal(SPEC, k=3, num_samples=40, seed=0)
    assert out.candidates, "the trained tiny listener finds regexes for this spec"
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.n_samples = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.candidates[0].program = "x"
    assert isinstance(out.examples, tuple) and isinstance(out.candidates, tuple)
    assert isinstance(out.candidates[0].matches, tuple)
    d = out.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["weights"] == "tiny-literal" and d["examples"] == SPEC
    assert set(d["candidates"][0]) == {"program", "logprob", "probability", "matches", "count", "search_score", "score"}

    s = bundled_literal.suggest_example([("123", "+"), ("ab", "-")], num_samples=40)
    assert isinstance(s, PraxSuggestion)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.remaining = 0
    d = s.to_dict()
    assert json.loads(json.dumps(d)) == d and set(d["example"]) == {"string", "label"}


# ---------------------------------------------------------------- the page's API over HTTP


@pytest.fixture(scope="module")
def served():
    """(client, pool) of the PraX page launched in-process, offline, with its own empty pool."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        pool = ModelPool(budget_bytes=10**9)
        blocks = page.build(DemoContext(DEMO, pool=pool))
        blocks.queue().launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
        client = Client(blocks.local_url, verbose=False)
        try:
            yield client, pool
        finally:
            client.close()
            blocks.close()


BAD_API = [
    ("/synthesize", ([], "tiny-literal", 3), "examples", "no examples"),
    ("/synthesize", (ex(("abc", "+"), ("abc", "-")), "tiny-literal", 3), "examples", "both as a match"),
    ("/synthesize", (ex(*[(f"b{i}", "-") for i in range(500)]), "tiny-literal", 3), "examples", "limit is 30"),
    ("/synthesize", (SPEC, "tiny-literal", 0), "k", "between 1 and 50"),
    ("/synthesize", (SPEC, "gpt-17", 3), "weights", "Unknown weight set"),
    ("/suggest", ([],), "examples", "no examples"),
    ("/suggest", (ex(("x", "+"), ("x", "-")),), "examples", "both as a match"),
]


@pytest.mark.parametrize(("api_name", "args", "argument", "fragment"), BAD_API,
                         ids=[f"{a[0][1:]}-{a[3].split()[0]}" for a in BAD_API])
def test_bad_api_input_is_refused_before_queueing(served, api_name, args, argument, fragment):
    client, pool = served
    before = pool.stats()
    with pytest.raises(ValidationError) as info:
        client.predict(*args, api_name=api_name)
    assert f"- {argument}: " in str(info.value) and fragment in str(info.value)
    after = pool.stats()
    assert (after.misses, after.hits, after.loads) == (before.misses, before.hits, before.loads), \
        "the handler ran: it asked the pool for a listener"


def test_synthesize_endpoint_returns_the_pipeline_output_to_dict(served):
    client, _ = served
    answer = client.predict(SPEC, "tiny-literal", 3, api_name="/synthesize")
    direct = PraxPipeline.from_pretrained(bundled("tiny-literal"))(SPEC, k=3, num_samples=actions.PAGE_SAMPLES,
                                                                   seed=actions.SEED)
    assert answer == direct.to_dict()
    assert answer["weights"] == "tiny-literal" and answer["candidates"]


def test_suggest_endpoint_returns_the_suggestion_to_dict(served):
    client, _ = served
    spec = ex(("123", "+"), ("ab", "-"))
    answer = client.predict(spec, api_name="/suggest")
    direct = PraxPipeline.from_pretrained(bundled("tiny-pragmatic")).suggest_example(spec)
    assert answer == direct.to_dict()


def test_every_model_event_is_validated_before_queueing():
    blocks = page.build(DemoContext(DEMO, pool=ModelPool(budget_bytes=10**9)))
    model_events = [f for f in blocks.fns.values() if f.concurrency_id == "prax"]
    assert {f.name for f in model_events} == {"update", "suggest_example", "synthesize", "suggest"}
    assert all(f.validator is not None for f in model_events), [f.name for f in model_events if not f.validator]
    assert sorted(f.api_name for f in model_events if f.api_visibility == "public") == ["suggest", "synthesize"]
    for fn in model_events:  # the check's parameters are the event's inputs, so an error marks the right one
        check = inspect.unwrap(fn.validator)
        assert len(inspect.signature(check).parameters) == len(fn.inputs), fn.name  # Gradio pads any extra one


# ---------------------------------------------------------------- what each page imports


def imported_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(','.join(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT,
                            timeout=300, check=True)
    return set(result.stdout.strip().splitlines()[-1].split(","))


def test_actions_import_neither_ui_toolkit_nor_torch():
    modules = imported_after("import apps.prax.actions")
    assert not {"gradio", "streamlit", "torch"} & modules


def test_page_builds_without_torch():
    """The hub builds every page at start; PraX's checks import the pipeline (and torch) on first use only."""
    modules = imported_after("import os; os.environ['HF_HUB_OFFLINE'] = '1'; from apps.prax import DEMO, page; "
                             "from shared.context import DemoContext; page.build(DemoContext(DEMO))")
    assert "gradio" in modules and "torch" not in modules


def test_streamlit_page_does_not_import_gradio():
    # Importing the page runs it in Streamlit's bare mode (warnings on stderr, no server): that is fine here.
    modules = imported_after("import apps.prax.streamlit_page")
    assert "streamlit" in modules and "apps.prax.actions" in modules
    assert "gradio" not in modules


def test_page_validators_mark_the_input_at_fault():
    blocks = page.build(DemoContext(DEMO, pool=ModelPool(budget_bytes=10**9)))
    validators = {f.name: f.validator for f in blocks.fns.values() if f.validator is not None}
    marks = validators["update"](SPEC, "tiny-literal", "tiny-pragmatic", 0, None)
    assert [m["is_valid"] for m in marks] == [True, True, True, False, True] and "samples" in marks[3]["message"]
    marks = validators["update"]([], "tiny-literal", "tiny-pragmatic", 100, None)  # no examples yet: a hint
    assert all(m["is_valid"] for m in marks)
    marks = validators["suggest_example"](SPEC, "nope")
    assert [m["is_valid"] for m in marks] == [True, False] and "Unknown weight set" in marks[1]["message"]
    mark = validators["suggest"](ex(("x", "+"), ("x", "-")))
    assert mark["is_valid"] is False and "both as a match" in mark["message"]
