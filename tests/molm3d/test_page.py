"""The Gradio page and its actions: builds and renders without weights, no heavy imports at import, views work
offline."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys

import gradio as gr
import pytest

from apps.molm3d import DEMO, actions
from apps.molm3d import api as endpoints
from apps.molm3d import page as molm_page
from shared.context import DemoContext
from shared.errors import UserInputError, WeightsUnavailable
from shared.pool import ModelPool


@pytest.fixture
def offline_ctx(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "no-bundled"))
    return DemoContext(DEMO, ModelPool(budget_bytes=0))


def test_page_module_imports_no_torch_or_rdkit():
    code = ("import sys, apps.molm3d.page, apps.molm3d.actions, apps.molm3d.tasks; "
            "bad = [m for m in ('torch', 'rdkit', 'transformers') if m in sys.modules]; assert not bad, bad")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_builds_and_renders_without_weights(offline_ctx):
    blocks = molm_page.build(offline_ctx)
    with gr.Blocks() as hub:
        gr.Markdown("hub")
    with hub.route("molm3d", "/molm3d"):
        blocks.render()
    config = hub.get_config_file()
    text = str(config)
    assert "are not on this server" in text and "demohub download" not in text, "a visitor reads no command"
    assert "RDKit table work without them" in text
    names = [d.get("api_name") for d in config["dependencies"]]
    assert names.count("ask") == 1 and "ask_1" not in names
    assert "CS(=O)(=O)CCNCc1ccc(o1)" in text  # the 40-heavy-atom example is offered


def test_show_works_without_weights(offline_ctx):
    view = actions.show("CC(=O)OC(CC(=O)[O-])C[N+](C)(C)C")
    depiction, viewer, info, conf = view.depiction, view.viewer, view.info, view.conformer
    assert depiction.startswith("<svg") and "</svg>" in depiction
    assert viewer.count("<circle") == conf.num_heavy_atoms == 14 and viewer.count("<line") == 13
    assert "14 heavy atoms" in info and actions.table_rows(view)[0][1] == "203.24 g/mol"
    shown = actions.page_outputs(view)
    assert shown[:2] == (depiction, viewer) and "203.24 g/mol" in shown[2] and shown[3] == info


def test_viewer_script_is_self_contained():
    from apps.molm3d.views import VIEWER_JS

    assert not re.search(r"https?://|<script|import\(", VIEWER_JS)
    assert "watch('value'" in VIEWER_JS and "pointermove" in VIEWER_JS


def test_asking_without_weights_tells_the_visitor_and_the_operator_how_to_download(offline_ctx):
    from apps.ui import user_errors

    with pytest.raises(WeightsUnavailable) as refused:
        actions.ask(offline_ctx, "CCO", None, "logp")
    assert str(refused.value) == "The molm3d weights 'generalist' (14 GB) are not on this server."
    operator = dataclasses.replace(offline_ctx, operator_here=True)  # a hub only this machine reaches
    with pytest.raises(gr.Error, match="demohub download molm3d"):
        user_errors(endpoints.ask)(operator, "CCO", "logp")


def test_sdf_upload_and_bad_files(offline_ctx, tmp_path):
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.AddHs(Chem.MolFromSmiles("c1ccccc1O"))
    AllChem.EmbedMolecule(mol, randomSeed=1)
    good = tmp_path / "phenol.sdf"
    writer = Chem.SDWriter(str(good))
    writer.write(mol)
    writer.close()
    conf = actions.show("ignored because a file is given", str(good)).conformer
    assert conf.from_file_coordinates and conf.num_heavy_atoms == 7
    broken = tmp_path / "broken.sdf"
    broken.write_text(good.read_text().replace("V2000", "V2000\nnot a bond line at all", 1)[:400] + "\nM  END\n")
    with pytest.raises(UserInputError, match="SDF/MOL file could not be read") as info:
        actions.show("", str(broken))
    assert info.value.argument == "sdf"  # the validator marks the file input, not the SMILES box
    binary = tmp_path / "binary.sdf"
    binary.write_bytes(b"\xff\xfe\x00\x81" * 100)
    with pytest.raises(UserInputError, match="not a text SDF/MOL") as info:
        actions.show("", str(binary))
    assert info.value.argument == "sdf"


def test_page_ask_end_to_end_on_tiny_weights(tiny_as_bundled):
    ctx = DemoContext(DEMO, ModelPool(budget_bytes=10**9))
    result = endpoints.ask(ctx, "CC(=O)Oc1ccccc1C(=O)O", "Molecular Weight")
    assert result["task"] == "molecular_weight" and result["reference"]["value"] == pytest.approx(180.159, abs=1e-3)
    assert isinstance(result["text"], str) and result["instruction"].startswith("What is the Molecular Weight")
    steps = []
    view, answer = actions.ask(ctx, "CCO", None, "caption", "", None, 42,
                               callback=lambda step, total: steps.append((step, total)))
    *_, table, _, answer_md = actions.page_outputs(view, answer)
    assert "Describe the input molecule." in answer_md and "46.07 g/mol" in table
    assert actions.table_rows(view, answer)[0][1] == "46.07 g/mol"
    assert [s for s, _ in steps] == sorted({s for s, _ in steps}) and steps[-1] == (1 + 128, 1 + 128)
