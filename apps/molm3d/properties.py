"""RDKit reference values for the computed-property questions 3D-MoLM was trained on, and ``molecule_properties``:
those values with a conformer summary for one molecule, with no model weights (the ``/molecule_properties`` endpoint).

RDKit reproduces three of them: molecular weight (``Descriptors.MolWt``), LogP (``Crippen.MolLogP``) and TPSA
(``rdMolDescriptors.CalcTPSA``), as the fact sheet's ground truth. It cannot give the others faithfully:
PubChem's Complexity is the Cactvs Bertz/Hendrickson score (RDKit's ``BertzCT`` is a different scale), and
HOMO, LUMO, the HOMO-LUMO gap and the SCF energy are B3LYP/6-31G(d) DFT results that need a quantum-chemistry run.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.molm3d import conformer as conf
from apps.molm3d.tasks import TASKS
from shared.errors import UserInputError
from shared.pipeline import PipelineOutput

NOT_COMPUTABLE = {
    "complexity": "PubChem's Complexity is the Cactvs Bertz/Hendrickson score; RDKit has no faithful equivalent.",
    "homo": "needs a DFT calculation (B3LYP/6-31G(d) in PubChemQC); RDKit cannot compute it.",
    "lumo": "needs a DFT calculation (B3LYP/6-31G(d) in PubChemQC); RDKit cannot compute it.",
    "homo_lumo_gap": "needs a DFT calculation (B3LYP/6-31G(d) in PubChemQC); RDKit cannot compute it.",
    "scf_energy": "needs a DFT calculation (B3LYP/6-31G(d) in PubChemQC); RDKit cannot compute it.",
}
METHODS = {"molecular_weight": "RDKit Descriptors.MolWt", "logp": "RDKit Crippen.MolLogP (Wildman-Crippen)",
           "tpsa": "RDKit rdMolDescriptors.CalcTPSA"}


@dataclass(frozen=True)
class PropertyReference:
    key: str
    name: str
    unit: str
    value: float | None  # None where RDKit cannot compute it
    method: str

    def difference(self, model_value: float | None) -> float | None:
        """model - reference, or None when either side is missing."""
        if model_value is None or self.value is None:
            return None
        return model_value - self.value


def _compute(key: str, mol) -> float:
    from rdkit.Chem import Crippen, Descriptors, rdMolDescriptors

    return {"molecular_weight": Descriptors.MolWt, "logp": Crippen.MolLogP,
            "tpsa": rdMolDescriptors.CalcTPSA}[key](mol)


def reference(key: str, mol) -> PropertyReference:
    task = TASKS[key]
    if key in METHODS:
        return PropertyReference(key, task.property_name, task.unit, round(_compute(key, mol), 4), METHODS[key])
    return PropertyReference(key, task.property_name, task.unit, None, NOT_COMPUTABLE[key])


def references(mol) -> list[PropertyReference]:
    """Every property task, computable or not, in the task order."""
    return [reference(t.key, mol) for t in TASKS.values() if t.numeric]


def reference_rows(mol, answers: dict[str, float | None] | None = None) -> list[list]:
    """Table rows: property, RDKit value, model value, model - RDKit, how the reference was computed."""
    answers = answers or {}
    rows = []
    for ref in references(mol):
        model_value = answers.get(ref.key)
        diff = ref.difference(model_value)
        unit = f" {ref.unit}" if ref.unit else ""
        rows.append([ref.name + (f" ({ref.unit})" if ref.unit else ""),
                     "—" if ref.value is None else f"{ref.value:.2f}{unit}",
                     "" if model_value is None else f"{model_value:.2f}",
                     "" if diff is None else f"{diff:+.2f}", ref.method])
    return rows


# -- one molecule's reference values and conformer, without weights ------------------------------------------------


@dataclass(frozen=True)
class ConformerSummary:
    """The RDKit conformer 3D-MoLM would read (heavy atoms, centred coordinates in Å)."""

    method: str  # how the coordinates were made
    seed: int  # the ETKDG seed
    mmff_energy: float | None  # kcal/mol, MMFF94 energy of the optimised conformer; None where MMFF has no parameters
    used_fallback: bool  # the official fallback embedding (heavy atoms first) was needed
    xyz: str  # XYZ block of the heavy atoms, Å, centred on their mean


@dataclass(frozen=True)
class MoleculeProperties(PipelineOutput):
    """RDKit's reference values and conformer for one molecule (``to_dict()``: the ``/molecule_properties`` answer)."""

    smiles: str  # as given (canonical for MOL/SDF input)
    canonical_smiles: str  # RDKit's canonical SMILES
    formula: str  # Hill formula, e.g. C9H8O4
    num_atoms: int  # with hydrogens
    num_heavy_atoms: int
    properties: tuple[PropertyReference, ...]  # every property task, value None where RDKit cannot compute it
    conformer: ConformerSummary
    notes: tuple[str, ...] = ()  # conformer warnings (fragments, fallback embedding, unknown elements)


def check_inputs(molecule, seed=conf.DEFAULT_SEED) -> tuple[conf.Molecule, int]:
    """The molecule (SMILES or MOL/SDF text, 1 to 256 heavy atoms) and the seed, checked without embedding;
    ``UserInputError`` names ``molecule`` or ``seed``."""
    try:
        parsed = conf.parse(molecule)
    except UserInputError as error:
        raise UserInputError(str(error), argument="molecule") from None
    try:
        return parsed, conf.check_seed(seed)
    except UserInputError as error:
        raise UserInputError(str(error), argument="seed") from None


def molecule_properties(molecule, seed=conf.DEFAULT_SEED) -> MoleculeProperties:
    """Check, embed (the official ETKDG + MMFF preprocessing) and describe one molecule."""
    from rdkit import Chem
    from rdkit.Chem import rdMolDescriptors

    parsed, seed = check_inputs(molecule, seed)
    conformer = conf.featurize(parsed, seed=seed)
    mol = conformer.mol
    hydrogens = sum(atom.GetTotalNumHs() for atom in mol.GetAtoms())
    return MoleculeProperties(
        smiles=parsed.smiles, canonical_smiles=Chem.MolToSmiles(parsed.mol),
        formula=rdMolDescriptors.CalcMolFormula(mol), num_atoms=mol.GetNumAtoms() + hydrogens,
        num_heavy_atoms=conformer.num_heavy_atoms,
        properties=tuple(references(mol)),
        conformer=ConformerSummary(conf.method(conformer, seed), seed, conformer.mmff_energy, conformer.used_fallback,
                                   conformer.to_xyz()),
        notes=tuple(conformer.warnings))
