"""RDKit reference values and the comparison rows the page shows."""

from __future__ import annotations

import pytest
from rdkit import Chem

from apps.molm3d.properties import NOT_COMPUTABLE, reference, reference_rows, references
from apps.molm3d.tasks import TASKS

ASPIRIN = Chem.MolFromSmiles("CC(=O)Oc1ccccc1C(=O)O")


def test_aspirin_reference_values():
    assert reference("molecular_weight", ASPIRIN).value == pytest.approx(180.159, abs=1e-3)
    assert reference("logp", ASPIRIN).value == pytest.approx(1.3101, abs=1e-3)
    assert reference("tpsa", ASPIRIN).value == pytest.approx(63.6, abs=1e-2)


def test_quantum_and_complexity_properties_are_not_invented():
    refs = {r.key: r for r in references(ASPIRIN)}
    assert set(refs) == {t.key for t in TASKS.values() if t.numeric}
    for key in NOT_COMPUTABLE:
        assert refs[key].value is None and refs[key].difference(1.0) is None
    assert "DFT" in refs["homo"].method and "Cactvs" in refs["complexity"].method


def test_rows_show_model_value_and_signed_difference():
    rows = {r[0]: r for r in reference_rows(ASPIRIN, {"molecular_weight": 190.0})}
    mw = rows["Molecular Weight (g/mol)"]
    assert mw[1] == "180.16 g/mol" and mw[2] == "190.00" and mw[3] == "+9.84"
    assert rows["LogP"][2] == "" and rows["HOMO (eV)"][1] == "—"
