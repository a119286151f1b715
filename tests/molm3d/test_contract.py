"""3D-MoLM keeps the one pipeline contract (shared/pipeline.py): keyword-only device/dtype, ``check_inputs`` without
weights naming the bad argument, ``callback(step, total)``, a frozen JSON-ready output that the ``/ask`` endpoint
returns as is, validation before queueing, and UI-free actions."""

from __future__ import annotations

import dataclasses
import inspect
import json
import subprocess
import sys

import pytest
import torch

from apps.molm3d import DEMO, actions
from apps.molm3d import api as endpoints
from apps.molm3d.checks import MAX_BATCH, MoLM3DInputs
from apps.molm3d.conformer import MAX_HEAVY_ATOMS, MAX_INPUT_CHARS
from apps.molm3d.pipeline import MAX_SEED, MoLM3DOutput, MoLM3DPipeline
from apps.molm3d.properties import PropertyReference
from apps.molm3d.tasks import MAX_QUESTION_CHARS
from shared.context import DemoContext
from shared.errors import UserInputError
from shared.pool import ModelPool, estimate_bytes
from shared.weights import REPO_ROOT
from tests.conftest import page_events, serve_page

ASPIRIN, CAFFEINE = "CC(=O)Oc1ccccc1C(=O)O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C"
FAST = {"num_beams": 1, "max_new_tokens": 6, "min_new_tokens": 0}


@pytest.fixture
def no_weights(no_weights_touched):
    """Any attempt to find or load weights fails the test."""


# -- from_pretrained -----------------------------------------------------------------------------------------------


def test_from_pretrained_has_keyword_only_cpu_float32_defaults():
    params = inspect.signature(MoLM3DPipeline.from_pretrained).parameters
    assert params["device"].kind is inspect.Parameter.KEYWORD_ONLY and params["device"].default == "cpu"
    assert params["dtype"].kind is inspect.Parameter.KEYWORD_ONLY and params["dtype"].default is torch.float32
    assert list(params)[0] == "path"


def test_loaded_pipeline_reports_cpu_float32(tiny_snapshot):
    pipe = MoLM3DPipeline.from_pretrained(tiny_snapshot)
    assert (str(pipe.device), pipe.dtype) == ("cpu", torch.float32)
    assert {p.dtype for p in pipe.llm.parameters()} == {p.dtype for p in pipe.encoder.parameters()} == {torch.float32}
    assert {p.device.type for m in (pipe.llm, pipe.encoder) for p in m.parameters()} == {"cpu"}


def test_estimate_bytes_is_what_memory_bytes_was(tiny_pipe):
    before = sum(t.numel() * t.element_size() for m in (tiny_pipe.encoder, tiny_pipe.llm)
                 for t in [*m.parameters(), *m.buffers()])  # the removed MoLM3DPipeline.memory_bytes()
    assert not hasattr(tiny_pipe, "memory_bytes")
    assert estimate_bytes(tiny_pipe) == before > 0


# -- check_inputs --------------------------------------------------------------------------------------------------

BAD = [
    # molecule (__call__)
    (("",), {}, "molecule", "empty"),
    (("C1CC(",), {}, "molecule", "not a valid SMILES"),
    (("CCO CCN",), {}, "molecule", "spaces"),
    (("[H][H]",), {}, "molecule", "no heavy atoms"),
    (("C" * (MAX_HEAVY_ATOMS + 1),), {}, "molecule", f"at most {MAX_HEAVY_ATOMS}"),
    (("C" * (MAX_INPUT_CHARS + 1),), {}, "molecule", f"at most {MAX_INPUT_CHARS:,} characters"),
    (("not a molecule\n  V2000\nM  END\n",), {}, "molecule", "could not be read"),
    ((42,), {}, "molecule", "must be text"),
    ((["CCO", "CCN"],), {}, "molecule", "answer_batch"),
    (([],), {}, "molecule", "answer_batch"),
    # molecules (answer_batch)
    (([],), {"batch": True}, "molecules", "No molecule"),
    ((["CCO"] * (MAX_BATCH + 1),), {"batch": True}, "molecules", f"at most {MAX_BATCH}"),
    ((["CCO", "C1CC("],), {"batch": True}, "molecules", "not a valid SMILES"),
    ((["CCO", 42],), {"batch": True}, "molecules", "must be text"),
    (("CCO",), {"batch": True}, "molecules", "list of molecules"),
    # task
    (("CCO",), {"task": "melting point"}, "task", "Unknown task"),
    (("CCO",), {"task": 5}, "task", "must be text"),
    # question
    (("CCO",), {"question": "What is <mol>?"}, "question", "may not contain"),
    (("CCO",), {"task": "description", "question": "   "}, "question", "question is empty"),
    (("CCO",), {"question": "why? " * 1000}, "question", f"{MAX_QUESTION_CHARS:,}"),
    (("CCO",), {"question": "what\x00is this"}, "question", "invisible"),
    (("CCO",), {"question": 3}, "question", "must be text"),
    # seed and decoding
    (("CCO",), {"seed": -1}, "seed", "whole number"),
    (("CCO",), {"seed": MAX_SEED + 1}, "seed", "whole number"),
    (("CCO",), {"seed": 1.5}, "seed", "whole number"),
    (("CCO",), {"seed": "abc"}, "seed", "whole number"),
    (("CCO",), {"num_beams": 0}, "num_beams", "whole number"),
    (("CCO",), {"decoding": "quick"}, "decoding", 'decoding must be "official"'),
    (("CCO",), {"max_new_tokens": 0}, "max_new_tokens", "whole number"),
    (("CCO",), {"max_new_tokens": 8, "min_new_tokens": 9}, "min_new_tokens", "between 0 and 8"),
]


@pytest.mark.parametrize(("args", "kwargs", "argument", "fragment"), BAD,
                         ids=[f"{b[2]}-{i}" for i, b in enumerate(BAD)])
def test_check_inputs_names_the_bad_argument_without_weights(no_weights, args, kwargs, argument, fragment):
    with pytest.raises(UserInputError, match=fragment.replace("?", r"\?")) as info:
        MoLM3DPipeline.check_inputs(*args, **kwargs)
    assert info.value.argument == argument
    caller = MoLM3DPipeline.answer_batch if kwargs.get("batch") else MoLM3DPipeline.__call__
    assert argument in inspect.signature(caller).parameters  # a parameter name of the method that checks this way


def test_call_takes_one_molecule_and_answer_batch_the_same_arguments_for_many():
    one = inspect.signature(MoLM3DPipeline.__call__).parameters
    many = inspect.signature(MoLM3DPipeline.answer_batch).parameters
    assert list(one)[:2] == ["self", "molecule"] and list(many)[:2] == ["self", "molecules"]
    assert [(p.name, p.kind, p.default) for p in list(one.values())[2:]] == \
        [(p.name, p.kind, p.default) for p in list(many.values())[2:]]
    assert one["callback"].kind is inspect.Parameter.KEYWORD_ONLY and one["callback"].default is None


def test_check_inputs_returns_normalised_inputs(no_weights):
    one = MoLM3DPipeline.check_inputs(f"  {ASPIRIN} \n", "What   is\nthis?", seed=7.0)
    assert isinstance(one, MoLM3DInputs) and one.single and one.seed == 7 and isinstance(one.seed, int)
    assert one.task.key == "description" and one.instruction == "What is this?"
    assert one.molecules[0].smiles == ASPIRIN and one.molecules[0].mol.GetNumAtoms() == 13
    assert (one.num_beams, one.max_new_tokens, one.min_new_tokens) == (5, 64, 16)  # the official decoding
    many = MoLM3DPipeline.check_inputs([ASPIRIN, "CCO"], task="LogP", seed=None, max_new_tokens=8, batch=True)
    assert not many.single and len(many.molecules) == 2 and many.task.key == "logp" and many.seed == 42
    assert (one.argument, many.argument) == ("molecule", "molecules")  # the name errors about them carry
    assert (many.max_new_tokens, many.min_new_tokens) == (8, 8)  # the default minimum never exceeds the maximum
    assert MoLM3DPipeline.check_inputs("CCO").task.key == "caption"
    long = MoLM3DPipeline.check_inputs("CCO", "x" * 100)
    assert len(long.instruction) == 64 and "shortened" in long.notes[0]


# -- __call__ ------------------------------------------------------------------------------------------------------


def test_the_answer_so_far_is_given_every_few_tokens(tiny_pipe):
    """on_text: every STREAM_EVERY new tokens the best text so far; with one beam each is the start of the answer
    (tokens are only appended), with five beams the best running beam's text (it may change its mind)."""
    from apps.molm3d.pipeline import STREAM_EVERY

    texts = []
    out = tiny_pipe(ASPIRIN, task="logp", decoding="fast", max_new_tokens=12, min_new_tokens=12, on_text=texts.append)
    # the processor runs before each new token: at steps 4, 8 and 12 the answer holds 3, 7 and 11 tokens
    assert len(texts) == 12 // STREAM_EVERY and out.text not in texts
    assert all(out.text.startswith(t) for t in texts) and len(set(texts)) == len(texts), (texts, out.text)
    beams = []
    official = tiny_pipe(ASPIRIN, task="logp", max_new_tokens=12, min_new_tokens=12, on_text=beams.append)
    assert len(beams) == len(texts) and official.text and all(isinstance(t, str) and t for t in beams)
    both = []
    answers = tiny_pipe.answer_batch([ASPIRIN, "CCO"], task="logp", decoding="fast", max_new_tokens=12,
                                     min_new_tokens=12, on_text=both.append)
    assert len(both) == 3 and all(len(pair) == 2 for pair in both)
    assert [p[0] for p in both] == texts and all(answers[1].text.startswith(p[1]) for p in both)


def test_fast_decoding_is_one_beam_with_the_official_penalties_and_says_so(tiny_pipe):
    """decoding="fast": greedy, the rest of the official settings unchanged (the same answer as num_beams=1), and the
    answer's notes say the answer may differ; the official decoding stays the default and adds no note."""
    fast = tiny_pipe(ASPIRIN, task="logp", decoding="fast", max_new_tokens=6, min_new_tokens=0)
    greedy = tiny_pipe(ASPIRIN, task="logp", num_beams=1, max_new_tokens=6, min_new_tokens=0)
    official = tiny_pipe(ASPIRIN, task="logp", max_new_tokens=6, min_new_tokens=0)
    assert fast.text == greedy.text and "Fast decoding" in " ".join(fast.notes)
    assert not any("Fast decoding" in n for n in official.notes + greedy.notes)
    checked = MoLM3DPipeline.check_inputs("CCO", decoding="fast")
    assert checked.num_beams == 1 and MoLM3DPipeline.check_inputs("CCO").num_beams == 5


def test_callback_reports_int_steps_up_to_total(tiny_pipe):
    calls = []
    tiny_pipe.answer_batch([ASPIRIN, "CCO"], task="logp", num_beams=2, max_new_tokens=5, min_new_tokens=5,
              callback=lambda step, total: calls.append((step, total)))
    assert all(type(s) is int and type(t) is int for s, t in calls)
    assert calls == [(step, 2 + 5) for step in range(1, 2 + 5 + 1)]  # 2 conformers, then 5 tokens


def test_callback_ends_at_total_when_the_answer_ends_early(tiny_pipe):
    calls = []
    generate = tiny_pipe.llm.generate
    tiny_pipe.llm.generate = lambda **kw: generate(**{**kw, "max_new_tokens": 2, "min_new_tokens": 0})
    try:
        tiny_pipe("CCO", task="tpsa", num_beams=1, callback=lambda step, total: calls.append((step, total)))
    finally:
        del tiny_pipe.llm.generate
    steps = [s for s, _ in calls]
    assert steps == sorted(set(steps)) and {t for _, t in calls} == {1 + 64}
    assert steps[:3] == [1, 2, 3] and calls[-1] == (65, 65)


def test_output_is_frozen_and_json_ready(tiny_pipe):
    out = tiny_pipe(CAFFEINE, "What is the solubility of this molecule in water at room temperature? " * 2, **FAST)
    assert isinstance(out, MoLM3DOutput) and isinstance(out.notes, tuple) and out.notes
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.text = "changed"
    prop = tiny_pipe(CAFFEINE, task="tpsa", **FAST)
    assert isinstance(prop.reference, PropertyReference)
    with pytest.raises(dataclasses.FrozenInstanceError):
        prop.reference.value = 0.0
    for o in (out, prop):
        data = o.to_dict()
        assert json.loads(json.dumps(data)) == data
        assert "seconds" not in data and data["difference"] == o.difference
    assert prop.to_dict()["reference"] == {"key": "tpsa", "name": "Topological Polar Surface Area", "unit": "Å²",
                                           "value": pytest.approx(61.82, abs=0.01),
                                           "method": "RDKit rdMolDescriptors.CalcTPSA"}
    batch = tiny_pipe.answer_batch([CAFFEINE, "CCO"], task="tpsa", **FAST)
    assert isinstance(batch, tuple) and len(batch) == 2 and all(isinstance(b, MoLM3DOutput) for b in batch)
    assert batch[0] == prop  # the first molecule answers as it does alone (``seconds`` is not compared)


# -- the page and its API ------------------------------------------------------------------------------------------


@pytest.fixture
def served(tiny_as_bundled, tmp_path, monkeypatch):
    """(url, ctx) of the page launched in-process on the tiny weights."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    from apps.molm3d.page import build

    ctx = DemoContext(DEMO, ModelPool(budget_bytes=10**9))
    with serve_page(build(ctx)) as url:
        yield url, ctx


@pytest.mark.parametrize("question", ["tpsa", "What is the solubility of this molecule?"], ids=["task", "free"])
def test_ask_endpoint_returns_the_pipeline_output_to_dict(served, question):
    from gradio_client import Client

    url, ctx = served
    result = Client(url, verbose=False).predict(CAFFEINE, question, api_name="/ask")
    request = endpoints.api_request(CAFFEINE, question)
    direct = ctx.pipeline()(**request)  # the pipeline the endpoint used (a pool hit)
    assert result == direct.to_dict()
    assert result["task"] == ("tpsa" if question == "tpsa" else "description")


@pytest.mark.parametrize(("smiles", "question", "name", "fragment"), [
    ("C1CC(", "", "smiles", "not a valid SMILES"),
    ("", "logp", "smiles", "molecule is empty"),
    ("CCO", "What is <mol>?", "question", "may not contain"),
    ("CCO", "why? " * 1000, "question", "2,000"),
], ids=["invalid-smiles", "empty", "mol-token", "huge-question"])
def test_bad_api_input_is_refused_before_queueing(served, monkeypatch, smiles, question, name, fragment):
    from gradio_client import Client
    from gradio_client.exceptions import ValidationError

    url, ctx = served
    ran = []
    monkeypatch.setattr(endpoints, "ask", lambda *args: ran.append(args))  # what /ask runs (molm3d/api.py)
    with pytest.raises(ValidationError) as info:
        Client(url, verbose=False).predict(smiles, question, api_name="/ask")
    message = str(info.value)
    assert message.startswith("1 parameter(s) failed validation") and f"- {name}: " in message
    assert fragment in message
    assert ran == [] and (DEMO.id, "generalist") not in ctx.pool and ctx.pool.stats().misses == 0


def test_model_events_use_their_checks(tmp_path, monkeypatch):
    """Which check guards which event (that every model event has one is tests/shared/test_contract_all.py)."""
    fns = page_events(DEMO, tmp_path, monkeypatch)
    checks = {f.name: inspect.unwrap(f.validator) for f in fns if f.validator is not None}
    assert checks["ask_with_views"] is actions.check_ask and checks["ask"].__name__ == "ask"  # the declaration's


@pytest.mark.parametrize(("inputs", "marked", "fragment"), [
    (("C1CC(", None, "caption", "", None, 42), "smiles", "not a valid SMILES"),
    (("CCO", None, "description", "", None, 42), "question", "question is empty"),
    (("CCO", None, "melting point", "", None, 42), "task", "Unknown task"),
    (("CCO", None, "caption", "", None, -5), "seed", "whole number"),
], ids=["smiles", "question", "task", "seed"])
def test_page_validator_marks_the_input_at_fault(no_weights, inputs, marked, fragment):
    from apps.ui import validator

    results = validator(actions.check_ask)(*inputs)
    names = list(inspect.signature(actions.check_ask).parameters)
    bad = [(names[i], r["message"]) for i, r in enumerate(results) if not r["is_valid"]]
    assert len(bad) == 1 and bad[0][0] == marked and fragment in bad[0][1]
    assert all(r["is_valid"] for r in validator(actions.check_ask)("CCO", None, "logp", "", None, 42))


def test_page_validator_marks_the_file_when_one_is_given(no_weights, tmp_path):
    from apps.ui import validator

    broken = tmp_path / "broken.sdf"
    broken.write_text("not a molecule\n  V2000\nM  END\n")
    results = validator(actions.check_ask)(ASPIRIN, str(broken), "caption", "", None, 42)
    assert [r["is_valid"] for r in results] == [True, False, True, True, True, True]
    huge = tmp_path / "huge.sdf"
    huge.write_bytes(b"C" * (MAX_INPUT_CHARS * actions.UTF8_MAX_BYTES + 1))
    with pytest.raises(UserInputError, match="bytes") as info:
        actions.check_show(ASPIRIN, str(huge))
    assert info.value.argument == "sdf"


# -- display -------------------------------------------------------------------------------------------------------


def _answer(task: str, text: str, value: float | None) -> MoLM3DOutput:
    from rdkit import Chem

    from apps.molm3d.properties import reference
    from apps.molm3d.tasks import TASKS

    return MoLM3DOutput(ASPIRIN, task, "q", "", text, value, TASKS[task].unit,
                        reference(task, Chem.MolFromSmiles(ASPIRIN)))


def test_answer_markdown_shows_rdkit_without_a_model_number_and_no_double_space():
    no_number = actions.answer_markdown(_answer("molecular_weight", "about 190 g/mol", None))
    assert "**RDKit reference:** 180.16 g/mol · RDKit Descriptors.MolWt" in no_number
    unitless = actions.answer_markdown(_answer("logp", "1.00", 1.0))
    assert "**Parsed value:** 1\n" in unitless + "\n"
    assert "**RDKit reference:** 1.31 (difference -0.31) · RDKit Crippen.MolLogP" in unitless
    unitless_no_number = actions.answer_markdown(_answer("logp", "no idea", None))
    assert "**RDKit reference:** 1.31 · RDKit Crippen.MolLogP" in unitless_no_number
    assert all("  " not in m for m in (no_number, unitless, unitless_no_number))


def test_comparison_table_has_no_empty_columns_and_does_not_squeeze():
    view = actions.show(ASPIRIN)
    before = actions.table_html(actions.table_rows(view))
    assert "3D-MoLM" not in before and "Reference method" in before  # nothing to compare yet: no empty columns
    after = actions.table_html(actions.table_rows(view, _answer("logp", "1.00", 1.0)))
    headers, rows = actions.comparison_table(actions.table_rows(view, _answer("logp", "1.00", 1.0)))
    assert headers == actions.TABLE_HEADERS
    assert all(cell for row in rows for cell in row)  # no empty cell: "—" where there is nothing
    assert dict((r[0], r[2:4]) for r in rows)["LogP"] == ("1.00", "-0.31") and ("HOMO (eV)", "—", "—", "—") == \
        next(r for r in rows if r[0] == "HOMO (eV)")[:4]
    assert "overflow-x:auto" in after
    for header in headers[:-1]:  # every column but the method keeps one line (the table scrolls instead)
        assert f'<th style="white-space:nowrap;text-align:left;padding:4px 8px">{header}</th>' in after
    method = '<th style="min-width:10em;overflow-wrap:break-word;text-align:left;padding:4px 8px">Reference method</th>'
    assert method in after
    assert "RDKit rdMolDescriptors.<wbr>CalcTPSA" in after  # a dotted name breaks after its dot, never inside a word
    shown = [row for row in rows if row[1] != "—" or row[2] != "—"]  # rows with a value come first, in the table
    assert [row[0] for row in shown] == ["Molecular Weight (g/mol)", "LogP", "Topological Polar Surface Area (Å²)"]
    assert after.count("white-space:nowrap") == len(headers[:-1]) * (1 + len(shown))
    # the five RDKit cannot compute are folded under one line, each with why
    folded = after.split('<details class="molm3d-missing">')[1]
    assert folded.startswith("<summary>5 more with no RDKit value (Complexity, HOMO, LUMO, HOMO-LUMO Gap, SCF "
                             "Energy)</summary>") and folded.count("<li>") == 5 and "DFT calculation" in folded
    asked = actions.table_html(actions.table_rows(view, _answer("homo", "-5.20", -5.2)))
    assert "<td style=\"white-space:nowrap;text-align:left;padding:4px 8px\">HOMO (eV)</td>" in asked.split(
        "<details")[0], "a property the model answered stays in the table"


# -- imports -------------------------------------------------------------------------------------------------------


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, timeout=180)


def test_actions_import_neither_ui_toolkit():
    result = _python("import sys, apps.molm3d.actions; "
                     "bad = [m for m in ('gradio', 'streamlit', 'torch', 'rdkit') if m in sys.modules]; "
                     "assert not bad, bad")
    assert result.returncode == 0, result.stderr[-2000:]


def test_streamlit_page_does_not_import_gradio(tmp_path):
    # Importing the page runs it in Streamlit's bare mode (warnings only); weights are absent, so it only draws.
    code = ("import os, sys, warnings; warnings.simplefilter('ignore'); "
            f"os.environ['DEMOHUB_CHECKPOINTS'] = {str(tmp_path)!r}; os.environ['HF_HUB_OFFLINE'] = '1'; "
            "import apps.molm3d.streamlit_page; assert 'gradio' not in sys.modules, 'gradio imported'")
    result = _python(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "gradio imported" not in result.stderr
