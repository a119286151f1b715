"""RDKit reference values for the computed-property questions 3D-MoLM was trained on.

RDKit reproduces three of them: molecular weight (``Descriptors.MolWt``), LogP (``Crippen.MolLogP``) and TPSA
(``rdMolDescriptors.CalcTPSA``), as the fact sheet's ground truth. It cannot give the others faithfully:
PubChem's Complexity is the Cactvs Bertz/Hendrickson score (RDKit's ``BertzCT`` is a different scale), and
HOMO, LUMO, the HOMO-LUMO gap and the SCF energy are B3LYP/6-31G(d) DFT results that need a quantum-chemistry run.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.molm3d.tasks import TASKS

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
