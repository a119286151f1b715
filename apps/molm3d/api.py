"""3D-MoLM's API functions, declared once (``shared.api``): ``/ask`` (the model) and ``/molecule_properties`` (RDKit
only), each also an MCP tool."""

from __future__ import annotations

from typing import Any

from apps.molm3d import checks
from apps.molm3d.conformer import DEFAULT_SEED, MAX_SEED
from apps.molm3d.tasks import MAX_QUESTION_CHARS, get_task
from shared.api import Endpoint, Input
from shared.context import DemoContext
from shared.errors import UserInputError

SMILES = "the molecule as a SMILES string (or an SDF/MOL block as text), 1 to 256 heavy atoms"
PAGE_SMILES = "The molecule as a SMILES string, or paste an SDF/MOL block (1 to 256 heavy atoms)."

ENDPOINTS = (
    Endpoint(
        name="ask",
        summary="Ask 3D-MoLM (Llama-2-7B reading a 3D molecule encoder) about a molecule; needs its ~14 GB of "
                "weights.",
        inputs=(
            Input("smiles", "text", SMILES, argument="molecule", example="CCO", label="SMILES", multiline=True,
                  help=PAGE_SMILES),
            Input("question", "text", "a free question (the model reads the first 64 characters), or a task name: "
                  "'caption', 'molecular_weight', 'logp', 'tpsa', 'complexity', 'homo', 'lumo', 'homo_lumo_gap', "
                  "'scf_energy'; \"\" asks for a description", default="", max_length=MAX_QUESTION_CHARS,
                  example="molecular weight",
                  help="Your question (3D-MoLM reads its first 64 characters), or a property to ask for: molecular "
                       "weight, LogP, TPSA, complexity, HOMO, LUMO, HOMO-LUMO gap, SCF energy. Leave it empty for a "
                       "description of the molecule."),
            Input("decoding", "choice", '"official": five beams, as the paper\'s evaluation; "fast": greedy (one '
                  'beam), about a fifth of the work per new word on a CPU, and the answer may differ',
                  default="official", choices=("official", "fast"), example="fast",
                  choice_labels=("Official: five beams, as in the paper", "Fast: one beam, about 5x less work"),
                  help="Fast decoding may give a different answer."),
        ),
        returns='{"smiles", "task", "instruction", "prompt", "text" (the answer), "value" and "unit" (the number read '
                'from it, property tasks), "reference" (RDKit\'s value where it computes one), "notes", "difference"}',
        run="apps.molm3d.api:ask",
        check="apps.molm3d.api:check_ask",
    ),
    Endpoint(
        name="molecule_properties",
        summary="RDKit reference values and the 3D conformer 3D-MoLM would read, for one molecule; needs no model "
                "weights.",
        inputs=(
            Input("smiles", "text", SMILES + ', e.g. "CC(=O)Oc1ccccc1C(=O)O"', argument="molecule",
                  example="CC(=O)Oc1ccccc1C(=O)O", label="SMILES", multiline=True, help=PAGE_SMILES),
            Input("seed", "integer", "the ETKDG embedding seed (same seed, same conformer)", default=DEFAULT_SEED,
                  minimum=0, maximum=MAX_SEED, example=7, label="Conformer seed",
                  help="The same seed gives the same 3D conformer."),
        ),
        returns='{"smiles", "canonical_smiles", "formula", "num_atoms" (with hydrogens), "num_heavy_atoms", '
                '"properties": [{"key", "name", "unit", "value", "method"}] (molecular weight g/mol, LogP, TPSA Å² '
                'from RDKit; value null where RDKit cannot compute one), "conformer": {"method", "seed", '
                '"mmff_energy" (kcal/mol), "used_fallback", "xyz" (heavy atoms, Å, centred)}, "notes"}',
        run="apps.molm3d.api:molecule_properties",
        check="apps.molm3d.api:check_properties",
        work="bounded",  # no model and no GPU: the conformer runs in the bounded workers, like "Show conformer"
    ),
)


def api_request(smiles: str, question: str = "", decoding: str = "official") -> dict[str, Any]:
    """The ``/ask`` endpoint's arguments as ``MoLM3DPipeline`` arguments: a ``question`` that names a task (e.g.
    'logp', 'Molecular Weight', 'caption') asks that task; any other is a free question; none asks for a caption."""
    task = None
    if isinstance(question, str) and question.strip():
        try:
            task = get_task(question, None).key
        except UserInputError:
            task = "description"
    elif question is not None and not isinstance(question, str):
        task = "description"  # check_inputs refuses a question that is not text
    return {"molecule": smiles, "question": question, "task": task, "decoding": decoding}


def check_ask(ctx: DemoContext, smiles, question, decoding="official") -> checks.MoLM3DInputs:
    return checks.check_inputs(**api_request(smiles, question, decoding))


def ask(ctx: DemoContext, smiles, question, decoding="official") -> dict[str, Any]:
    """Exactly ``MoLM3DOutput.to_dict()``."""
    with ctx.compute() as pipe:
        return pipe(**api_request(smiles, question, decoding)).to_dict()


def check_properties(ctx: DemoContext, smiles, seed):
    from apps.molm3d.properties import check_inputs

    return check_inputs(smiles, seed)


def molecule_properties(ctx: DemoContext, smiles, seed) -> dict[str, Any]:
    """Exactly ``MoleculeProperties.to_dict()``; no weights."""
    from apps.molm3d.properties import molecule_properties

    return molecule_properties(smiles, seed).to_dict()
