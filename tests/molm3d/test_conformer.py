"""featurize(): the official preprocessing, its limits and its errors, on real RDKit conformers."""

from __future__ import annotations

import numpy as np
import pytest
from rdkit import Chem
from rdkit.Chem import AllChem, rdDistGeom

from apps.molm3d import conformer
from apps.molm3d.conformer import MAX_HEAVY_ATOMS, atom_dictionary, featurize
from shared.errors import UserInputError

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"
OFFICIAL_ORDER = ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "C", "N", "O", "S", "H", "Cl", "F", "Br", "I", "Si", "P", "B",
                  "Na", "K", "Al", "Ca", "Sn", "As", "Hg", "Fe", "Zn", "Cr", "Se", "Gd", "Au", "Li", "[MASK]"]


def test_dictionary_indices_match_the_fact_sheet():
    assert list(atom_dictionary()) == OFFICIAL_ORDER
    assert atom_dictionary().index("Li") == 29 and len(atom_dictionary()) == 31


def test_aspirin_features():
    c = featurize(ASPIRIN)
    n = 13  # heavy atoms of aspirin
    assert c.atoms.shape == (n + 2,) and c.atoms[0] == 1 and c.atoms[-1] == 2
    assert c.symbols.count("C") == 9 and c.symbols.count("O") == 4 and "H" not in c.symbols
    assert list(c.atoms[1:-1]) == [OFFICIAL_ORDER.index(s) for s in c.symbols]
    assert np.all(c.coordinates[0] == 0) and np.all(c.coordinates[-1] == 0)
    assert np.allclose(c.coordinates[1:-1].mean(axis=0), 0, atol=1e-5)
    expected = np.linalg.norm(c.coordinates[:, None] - c.coordinates[None], axis=-1)
    assert c.distances.dtype == np.float32 and np.allclose(c.distances, expected, atol=1e-4)
    assert np.allclose(c.distances, c.distances.T) and np.all(np.diag(c.distances) == 0)
    assert np.array_equal(c.edge_types, c.atoms[:, None] * 31 + c.atoms[None, :])
    assert c.edge_types.min() >= 0 and c.edge_types.max() < 961
    bonded = c.distances[1, 2]  # methyl C - carbonyl C
    assert 1.4 < bonded < 1.6
    assert not c.used_fallback


def test_seed_makes_conformers_reproducible():
    a, b, other = featurize(ASPIRIN, seed=7), featurize(ASPIRIN, seed=7), featurize(ASPIRIN, seed=8)
    assert np.array_equal(a.coordinates, b.coordinates)
    assert not np.allclose(a.coordinates, other.coordinates, atol=1e-3)


def test_explicit_hydrogens_are_dropped_and_zwitterion_kept():
    c = featurize("[H]OC([H])([H])C")
    assert c.symbols == ["O", "C", "C"]
    z = featurize("CC(=O)OC(CC(=O)[O-])C[N+](C)(C)C")
    assert z.num_heavy_atoms == 14 and z.symbols.count("N") == 1 and not z.warnings


def test_molblock_with_3d_coordinates_is_used_as_given():
    mol = Chem.AddHs(Chem.MolFromSmiles("CN1C=NC2=C1C(=O)N(C(=O)N2C)C"))
    AllChem.EmbedMolecule(mol, randomSeed=3)
    heavy = Chem.RemoveHs(mol).GetConformer().GetPositions()
    c = featurize(Chem.MolToMolBlock(mol) + "$$$$\n")
    assert c.from_file_coordinates and c.num_heavy_atoms == 14
    assert np.allclose(c.coordinates[1:-1], heavy - heavy.mean(axis=0), atol=1e-3)


def test_molblock_without_3d_is_embedded():
    c = featurize(Chem.MolToMolBlock(Chem.MolFromSmiles("CCO")))
    assert not c.from_file_coordinates and c.smiles == "CCO"
    assert np.abs(c.coordinates[1:-1, 2]).max() > 0 or np.abs(c.coordinates[1:-1]).max() > 0.5


def test_official_fallback_when_embedding_with_hydrogens_fails(monkeypatch):
    real = rdDistGeom.EmbedMolecule
    calls = []

    def fail_with_hydrogens(mol, params):
        calls.append((mol.GetNumAtoms(), params.maxIterations))
        if any(a.GetAtomicNum() == 1 for a in mol.GetAtoms()):
            return -1
        return real(mol, params)

    monkeypatch.setattr(rdDistGeom, "EmbedMolecule", fail_with_hydrogens)
    c = conformer.build_conformer(ASPIRIN)  # in this process (featurize runs it in a worker): the patch applies
    assert c.used_fallback and c.num_heavy_atoms == 13
    assert calls == [(21, 0), (13, 5000)]  # with Hs first, then the heavy-atom mol with maxAttempts=5000
    assert 1.15 < c.distances[2, 3] < 1.6  # a real bond length after AddHs(addCoords) + MMFF


def test_random_coordinates_when_the_official_path_fails(monkeypatch):
    real = rdDistGeom.EmbedMolecule
    monkeypatch.setattr(rdDistGeom, "EmbedMolecule",
                        lambda mol, params: real(mol, params) if params.useRandomCoords else -1)
    c = conformer.build_conformer(ASPIRIN)
    assert any("random" in note for note in c.warnings)
    assert c.used_fallback and c.num_heavy_atoms == 13 and 1.15 < c.distances[2, 3] < 1.6


def test_embedding_failure_is_a_user_error(monkeypatch):
    monkeypatch.setattr(rdDistGeom, "EmbedMolecule", lambda mol, params: -1)
    with pytest.raises(UserInputError, match="could not build a 3D conformer"):
        conformer.build_conformer(ASPIRIN)


def test_an_embedding_past_its_deadline_is_stopped_with_a_sentence(monkeypatch):
    """32 octanes take RDKit ~9 s here; with a 1 s deadline the worker is killed (not left to finish), and the next
    molecule is embedded by a fresh worker, whose start-up is not charged to its deadline."""
    from shared import bounded

    monkeypatch.setattr(conformer, "EMBED_DEADLINE_S", 1)
    kills = bounded.pool().kills
    with pytest.raises(UserInputError, match="took over 1 s, so it was stopped"):
        featurize(".".join(["CCCCCCCC"] * 32))
    assert bounded.pool().kills == kills + 1
    assert featurize("CCO").num_heavy_atoms == 3  # a fresh worker, still under the 1 s deadline


@pytest.mark.parametrize("text, message", [
    (".".join(["c1ccccc1"] * 11111), "99,998 characters long"),  # the 100 KB SMILES: refused before RDKit
    ("C" + ".[H][H]" * 14000, "98,001 characters long"),  # one heavy atom, 28,000 explicit hydrogens
    (".".join(["C"] * 33), "33 disconnected fragments"),
    ("[H]" * 1100 + "C", "1,101 atoms as written"),
])
def test_molecules_past_the_budgets_are_refused_before_rdkit_reads_them(monkeypatch, text, message):
    from rdkit import Chem

    monkeypatch.setattr(Chem, "MolFromSmiles", lambda *a: pytest.fail("RDKit was asked to parse it"))
    with pytest.raises(UserInputError, match=message):
        conformer.parse(text)


def test_a_molblock_declaring_too_many_atoms_is_refused_before_rdkit_reads_it(monkeypatch):
    v2000 = Chem.MolToMolBlock(Chem.MolFromSmiles("CCO")).splitlines()
    assert conformer._molblock_atoms("\n".join(v2000)) == 3  # the counts line (line 4), read as RDKit would
    v3000 = ("title\n\n\n  0  0  0     0  0            999 V3000\nM  V30 BEGIN CTAB\n"
             "M  V30 COUNTS 2000 0 0 0 0\nM  END\n")
    monkeypatch.setattr(Chem, "MolFromMolBlock", lambda *a, **k: pytest.fail("RDKit was asked to parse it"))
    with pytest.raises(UserInputError, match="2,000 atoms as written"):
        conformer.parse(v3000)


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("   ", "empty"),
    ("C1CC(", "not a valid SMILES"),
    ("CCO CCN", "spaces"),
    ("[H][H]", "no heavy atoms"),
    ("C" * (MAX_HEAVY_ATOMS + 1), f"at most {MAX_HEAVY_ATOMS}"),
    ("not a molecule\n  V2000\nM  END\n", "could not be read"),
])
def test_bad_input_raises_user_input_error(text, message):
    with pytest.raises(UserInputError, match=message):
        featurize(text)


def test_256_heavy_atoms_is_allowed_by_the_limit_check():
    mol, _ = conformer.parse("C" * MAX_HEAVY_ATOMS)
    assert mol.GetNumHeavyAtoms() == MAX_HEAVY_ATOMS  # the limit counts heavy atoms, not hydrogens


def test_unknown_element_becomes_unk_with_a_warning():
    with pytest.warns(UserWarning, match="Ge"):
        c = featurize("C[Ge](C)(C)C")
    assert c.symbols[1] == "Ge" and c.atoms[2] == atom_dictionary().index("[UNK]") == 3
    assert any("[UNK]" in w for w in c.warnings)


def test_disconnected_fragments_are_kept_with_a_warning():
    with pytest.warns(UserWarning, match="2 disconnected fragments"):
        c = featurize("CC(=O)[O-].[Na+]")
    assert "Na" in c.symbols and c.num_heavy_atoms == 5
