"""The CPU default path (bf16 LLM, fp32 molecule encoder) through ``shared.context.load_pipeline``, and the model vs
RDKit comparison on real tiny-model answers and on crafted answer texts."""

from __future__ import annotations

import html
import re

import pytest
import torch
from rdkit import Chem

from apps import views
from apps.molm3d import DEMO, actions
from apps.molm3d import api as endpoints
from apps.molm3d.actions import answer_markdown
from apps.molm3d.pipeline import MoLM3DOutput
from apps.molm3d.properties import reference, reference_rows
from apps.molm3d.tasks import TASKS, instruction_for, parse_number
from shared.context import DemoContext, load_pipeline
from shared.device import pick_dtype
from shared.pool import ModelPool

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"


@pytest.fixture
def cpu_default(monkeypatch):
    """CPU, and no DEMOHUB_DTYPE: the dtype is the demo's own choice."""
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)


@pytest.fixture
def bundled_cpu_default(tiny_snapshot, tmp_path, monkeypatch, cpu_default):
    """The tiny snapshot served as the demo's weights (DEMOHUB_CHECKPOINTS/molm3d/generalist), CPU default dtype."""
    bundled = tmp_path / "checkpoints" / "molm3d" / "generalist"
    bundled.parent.mkdir(parents=True)
    bundled.symlink_to(tiny_snapshot, target_is_directory=True)
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return DemoContext(DEMO, ModelPool(budget_bytes=10**9))


def test_cpu_default_loads_the_llm_in_bf16_and_keeps_the_encoder_fp32(tiny_snapshot, cpu_default):
    assert DEMO.cpu_dtype == "bfloat16" and pick_dtype("cpu", DEMO.cpu_dtype, DEMO.gpu_dtype) is torch.bfloat16
    pipe = load_pipeline(DEMO, DEMO.weight_set("generalist"), tiny_snapshot)
    assert (pipe.device, pipe.dtype) == ("cpu", torch.bfloat16)
    llm = dict(pipe.llm.named_parameters())
    assert [n for n, p in llm.items() if p.dtype != torch.bfloat16] == []
    assert pipe.llm.get_input_embeddings().weight.dtype == pipe.llm.get_output_embeddings().weight.dtype == \
        torch.bfloat16
    assert pipe.llm.get_input_embeddings().weight.shape[0] == len(pipe.tokenizer)  # [PAD] and <mol> rows added
    # Uni-Mol, the Q-Former and its projection into the LLM stay fp32 (the checkpoint's bf16 tensors are upcast);
    # only their 8 output rows are cast to the LLM's dtype.
    encoder = dict(pipe.encoder.named_parameters())
    assert [n for n, p in encoder.items() if p.dtype != torch.float32] == []
    assert any(n.startswith("graph_encoder.") for n in encoder) and "llm_proj.weight" in encoder
    from apps.molm3d.conformer import featurize
    from apps.molm3d.tasks import build_prompt

    conf = featurize(ASPIRIN, seed=42)
    embeds, _ = pipe._inputs([conf], [build_prompt("Describe the input molecule.", conf.smiles)])
    assert embeds.dtype == torch.bfloat16

    first = pipe(ASPIRIN, task="molecular_weight", seed=42)  # the official decoding: 5 beams, 16-64 tokens
    second = pipe(ASPIRIN, task="molecular_weight", seed=42)
    assert isinstance(first.text, str) and first.text.strip()
    assert second.text == first.text and second.value == first.value and second.prompt == first.prompt
    question = "What is the solubility of this molecule?"
    assert pipe(ASPIRIN, question, seed=7).text == pipe(ASPIRIN, question, seed=7).text


# task, RDKit column, RDKit value, how RDKit computes it
COMPUTABLE = [
    ("molecular_weight", "Molecular Weight (g/mol)", "180.16 g/mol", 180.159, "RDKit Descriptors.MolWt"),
    ("logp", "LogP", "1.31", 1.3101, "RDKit Crippen.MolLogP (Wildman-Crippen)"),
    ("tpsa", "Topological Polar Surface Area (Å²)", "63.60 Å²", 63.6, "RDKit rdMolDescriptors.CalcTPSA"),
]


@pytest.mark.parametrize("task, row_name, rdkit_text, rdkit_value, method", COMPUTABLE,
                         ids=[c[0] for c in COMPUTABLE])
def test_real_tiny_answer_without_a_number_still_reports_rdkit(bundled_cpu_default, task, row_name, rdkit_text,
                                                               rdkit_value, method):
    ctx = bundled_cpu_default
    answer = ctx.pipeline()(ASPIRIN, task=task, seed=42)
    # The tiny random model writes byte soup: no decimal number in it, so nothing to compare.
    assert parse_number(answer.text) is None, answer.text
    assert answer.value is None and answer.difference is None
    assert answer.reference.value == pytest.approx(rdkit_value, abs=1e-3) and answer.reference.method == method
    markdown = answer_markdown(answer)
    assert f"**3D-MoLM:** {views.text(answer.text)}" in markdown
    assert "**Parsed value:**" not in markdown and "difference" not in markdown
    # no number from the model: RDKit's value is still shown, with how it was computed
    assert f"**RDKit reference:** {html.escape(rdkit_text)} · {method}" in markdown

    view, page_answer = actions.ask(ctx, ASPIRIN, None, task, "", None, 42)
    assert answer_markdown(page_answer) == markdown  # the same conformer seed, the same answer
    rows = actions.table_rows(view, page_answer)
    by_name = {row[0]: row for row in rows}
    assert by_name[row_name] == [row_name, rdkit_text, "", "", method]
    assert all(row[2] == row[3] == "" for row in rows)  # no model value anywhere
    headers, shown = actions.comparison_table(rows)  # so the page shows no empty model columns
    assert headers == ("Property", "RDKit", "Reference method") and (row_name, rdkit_text, method) in shown
    api = endpoints.ask(ctx, ASPIRIN, task)
    assert (api["task"], api["text"], api["value"], api["difference"]) == (task, answer.text, None, None)
    assert api["reference"]["value"] == pytest.approx(rdkit_value, abs=1e-3)
    assert api == answer.to_dict()


@pytest.mark.parametrize("task, text, value, model_text, difference, diff_text", [
    ("molecular_weight", "The Molecular Weight for the input molecule is 190.00 g/mol. 12.5", 190.0, "190.00",
     9.841, "+9.84"),
    ("logp", "The LogP for the input molecule is -1.24.", -1.24, "-1.24", -2.5501, "-2.55"),
    ("tpsa", "63.6", 63.6, "63.60", 0.0, "+0.00"),
    ("molecular_weight", "about 190 g/mol", None, "", None, ""),  # only decimals count, as the official scorer
    ("homo", "The HOMO is -5.76 eV.", -5.76, "-5.76", None, ""),  # RDKit has no HOMO: nothing to subtract
    ("logp", "The LogP is about one.", None, "", None, ""),  # unitless, and no number from the model
], ids=["weight", "negative-logp", "tpsa-equal", "integer-only", "homo-no-rdkit", "logp-no-number"])
def test_difference_on_a_crafted_answer(task, text, value, model_text, difference, diff_text):
    mol = Chem.MolFromSmiles(ASPIRIN)
    spec = TASKS[task]
    # What MoLM3DPipeline.__call__ builds from a decoded answer: parse_number(text) and reference(task, mol).
    answer = MoLM3DOutput(ASPIRIN, task, instruction_for(spec)[0], "", text, parse_number(text), spec.unit,
                        reference(task, mol))
    assert answer.value == value
    if difference is None:
        assert answer.difference is None
    else:
        assert answer.difference == pytest.approx(difference, abs=1e-4)
        assert answer.difference == pytest.approx(answer.value - answer.reference.value)
    row = next(r for r in reference_rows(mol, {task: answer.value}) if r[0].startswith(spec.property_name))
    assert row[2:4] == [model_text, diff_text]
    markdown = answer_markdown(answer)
    if value is None:
        assert "**Parsed value:**" not in markdown
    else:
        assert f"**Parsed value:** {value:g} {spec.unit}".rstrip() in markdown
    if difference is not None:  # the markdown's RDKit value and difference agree with the table row
        assert re.search(rf"\*\*RDKit reference:\*\* {re.escape(row[1].split()[0])}\s.*\(difference "
                         rf"{re.escape(diff_text)}\)", markdown), markdown
    else:
        assert "difference" not in markdown
    if answer.reference.value is not None:  # RDKit's value is shown whether or not the model gave a number
        assert f"**RDKit reference:** {html.escape(row[1])} " in markdown, markdown
    else:
        assert f"**RDKit reference:** {html.escape(answer.reference.method)}" in markdown
    assert "  " not in markdown, markdown  # no double space where a property has no unit
