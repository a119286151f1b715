"""The two endpoints that need no model weights, ``/molecule_properties`` (3D-MoLM) and ``/encode_layout``
(GeoDiffusion), through ``gradio_client`` against the running hub: honest requests answer the pipeline-side
``to_dict()``, hostile ones are refused with a sentence on the right input before they are queued (their handler
never runs), and the next honest request works."""

from __future__ import annotations

import json

import pytest
from gradio_client import Client
from gradio_client.exceptions import ValidationError

from tests.mcp.conftest import LOGINS

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"
LAYOUT = json.dumps({"camera": "front", "bbox": [["car", 0.1, 0.4, 0.3, 0.6]]})


@pytest.fixture(scope="module")
def client(mcp_hub):
    client = Client(mcp_hub.url, auth=LOGINS[0], verbose=False)
    yield client
    client.close()


def test_molecule_properties_answers_the_pipeline_side_to_dict(client):
    from apps.molm3d.properties import molecule_properties

    answer = client.predict(ASPIRIN, 7, api_name="/molecule_properties")
    assert answer == molecule_properties(ASPIRIN, 7).to_dict()
    assert answer["conformer"]["seed"] == 7 and answer["formula"] == "C9H8O4"
    assert client.predict(ASPIRIN, api_name="/molecule_properties")["conformer"]["seed"] == 42, "the default seed"


def test_molecule_properties_reads_a_mol_block_and_notes_fragments(client):
    from rdkit import Chem
    from rdkit.Chem import AllChem

    mol = Chem.AddHs(Chem.MolFromSmiles("CCO"))
    AllChem.EmbedMolecule(mol, randomSeed=1)
    answer = client.predict(Chem.MolToMolBlock(mol), api_name="/molecule_properties")
    assert answer["formula"] == "C2H6O" and answer["conformer"]["method"] == "coordinates from the uploaded file"
    assert answer["conformer"]["mmff_energy"] is None, "file coordinates are used as given, not optimised"
    salt = client.predict("CC(=O)[O-].[Na+]", api_name="/molecule_properties")
    assert salt["formula"] == "C2H3NaO2" and "2 disconnected fragments" in salt["notes"][0]


def test_encode_layout_answers_the_pages_encoding(client, mcp_hub):
    from apps.geodiffusion.actions import GeoDiffusionPage

    answer = client.predict(LAYOUT, api_name="/encode_layout")  # the default checkpoint: the one on this server
    page = GeoDiffusionPage(mcp_hub.context("geodiffusion"))
    assert answer == page.encode_layout(LAYOUT, "nuimages-256x256").to_dict()
    assert answer["prompt"] == page.preview_prompt(LAYOUT, "nuimages-256x256"), "the prompt the page shows"
    assert f"uses {answer['token_count']} of CLIP's 77 tokens" in page.budget_note(LAYOUT, "nuimages-256x256")


def test_encode_layout_names_the_boxes_the_token_limit_cuts(tiny_root):
    """On nuImages even 22 one-word boxes fit CLIP's 75 content tokens; a shorter limit shows the cut the same way
    (18 content tokens: the prompt's 8, then 3 per box; the fourth box's location tokens fall off)."""
    from apps.geodiffusion.layout import load_generation_config, parse_layout
    from apps.geodiffusion.tokens import LocationTokenizer, encode_layout

    folder = tiny_root / "geodiffusion" / "nuimages-256x256"
    config = load_generation_config(folder)
    full = LocationTokenizer.from_pretrained(folder / "tokenizer", config.num_location_tokens)
    short = LocationTokenizer(full.bpe, config.num_location_tokens, max_length=20)
    layout = parse_layout(json.dumps({"bbox": [["car", 0.1, 0.1, 0.5, 0.5], ["bus", 0.2, 0.2, 0.6, 0.6],
                                               ["truck", 0.3, 0.3, 0.7, 0.7], ["cone", 0.4, 0.4, 0.8, 0.8]]}), config)
    out = encode_layout(layout, config, "nuimages-256x256", short, from_checkpoint=True)
    assert out.token_count == 2 + 8 + 4 * 3 == len(full.encode(out.prompt, padding=False))
    assert out.dropped_boxes == (3,) and len(out.input_ids) == 20 and out.max_tokens == 20
    assert out.warnings == ("The prompt is longer than CLIP's 77 tokens, so box(es) #4 (traffic_cone) were cut and "
                            "ignored by the model; use fewer boxes or shorter labels.",)
    fits = encode_layout(layout, config, "nuimages-256x256", full, from_checkpoint=True)
    assert (fits.dropped_boxes, fits.warnings, len(fits.input_ids)) == ((), (), 77)


HUGE = "x" * 100_001


def assert_refused_before_queue(client, api_name: str, args: tuple, name: str, fragment: str) -> None:
    """The call is refused by its validator with one short sentence about the input ``name``."""
    with pytest.raises(ValidationError) as info:
        client.predict(*args, api_name=api_name)
    message = str(info.value)
    assert message.startswith("1 parameter(s) failed validation") and f"- {name}: " in message
    assert fragment in message and len(message) < 600 and "Traceback" not in message


@pytest.mark.parametrize(("args", "name", "fragment"), [
    (("",), "smiles", "The molecule is empty"),
    (("C1CC(",), "smiles", "not a valid SMILES"),
    (("CC O",), "smiles", "contains spaces"),
    ((HUGE,), "smiles", "100,000 characters"),
    (("C" * 300,), "smiles", "300 heavy atoms; 3D-MoLM reads at most 256"),
    (("[H][H]",), "smiles", "no heavy atoms"),
    (("M  END\nnot a molecule",), "smiles", "could not be read"),
    ((ASPIRIN, -1), "seed", "whole number between 0 and 2,147,483,647"),
    ((ASPIRIN, 2**31), "seed", "whole number between 0 and 2,147,483,647"),
    ((ASPIRIN, 1.5), "seed", "whole number"),
], ids=["empty", "unparsable", "spaces", "huge", "too-big", "no-heavy-atoms", "bad-molblock", "seed-negative",
        "seed-too-big", "seed-fraction"])
def test_hostile_molecule_properties_requests_are_refused_before_queueing(client, mcp_hub, monkeypatch, args, name,
                                                                         fragment):
    from apps.molm3d import api

    ran = []
    monkeypatch.setattr(api, "molecule_properties", lambda *a: ran.append(a))  # what the endpoint runs
    assert_refused_before_queue(client, "/molecule_properties", args, name, fragment)
    assert ran == []
    monkeypatch.undo()
    assert client.predict("CCO", api_name="/molecule_properties")["num_heavy_atoms"] == 3


def _boxes(n: int, label: str = "car") -> str:
    return json.dumps({"bbox": [[label, 0.1, 0.1, 0.2, 0.2]] * n})


@pytest.mark.parametrize(("args", "name", "fragment"), [
    (("x" * 20_001,), "layout_json", "20,001 characters long; the limit is 20,000"),
    (("[" * 5000 + "]" * 5000,), "layout_json", "nested far too deeply"),
    (("{",), "layout_json", "not valid JSON"),
    (('"a string"',), "layout_json", "must be a JSON object"),
    ((_boxes(23),), "layout_json", "at most 22 boxes, but the layout has 23"),
    ((_boxes(1, "unicorn"),), "layout_json", "label 'unicorn'"),
    (('{"bbox": [["car", 0.5, 0.5, 0.2, 0.9]]}',), "layout_json", "x2 > x1"),
    (('{"bbox": [["car", -1, 0, 1e309, 1]]}',), "layout_json", "between 0 and 1"),
    (('{"bbox": [], "camera": "drone"}',), "layout_json", "camera must be one of"),
    (('{"bbox": [], "__proto__": 1}',), "layout_json", "Unknown layout field"),
    ((LAYOUT, "nope"), "checkpoint", "nope"),
], ids=["too-long", "deep", "not-json", "not-object", "too-many-boxes", "label", "corners", "infinite", "camera",
        "unknown-key", "checkpoint"])
def test_hostile_encode_layout_requests_are_refused_before_queueing(client, monkeypatch, args, name, fragment):
    from apps.geodiffusion.actions import GeoDiffusionPage

    ran = []
    monkeypatch.setattr(GeoDiffusionPage, "encode_layout", lambda self, *a: ran.append(a))
    assert_refused_before_queue(client, "/encode_layout", args, name, fragment)
    assert ran == []
    monkeypatch.undo()
    assert client.predict(LAYOUT, api_name="/encode_layout")["prompt"].startswith("A driving scene image")
