"""SMILES or MOL/SDF -> one RDKit 3D conformer -> Uni-Mol inputs, as 3D-MoLM's ``inference.ipynb`` builds them.

Steps (fact sheet): add hydrogens, ETKDG embedding (RDKit's default parameters, plus a seed), MMFF optimisation
with errors ignored; if embedding fails, embed the heavy-atom molecule with ``maxAttempts=5000`` and add
hydrogens with coordinates. Then drop hydrogens, map elements through the Uni-Mol dictionary, centre the
coordinates, wrap in [CLS] ... [SEP] (zero coordinates), and build all-pairs distances and edge types.
A MOL block that already carries 3D coordinates is used as given (the notebook's SDF path).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from shared.bounded import run_bounded
from shared.errors import UserInputError
from shared.validation import check_number, kind_of

DICT_PATH = Path(__file__).with_name("unimol_dict.txt")
MAX_HEAVY_ATOMS = 256
EMBED_TIMEOUT_S = 20  # per ETKDG attempt (at most three attempts); RDKit is asked to stop there
EMBED_DEADLINE_S = 30  # the whole conformer, all attempts: the worker is killed there (RDKit may not stop)
EMBED_TOO_LONG = ("Building this molecule's 3D conformer took over {seconds} s, so it was stopped. Give a smaller "
                  "molecule or fewer fragments, or upload an SDF/MOL file with 3D coordinates.")
MAX_INPUT_CHARS = 100_000  # an SDF/MOL block (one record of MAX_ATOMS atoms with bonds fits)
MAX_SMILES_CHARS = 5_000  # a SMILES of 256 heavy atoms, with brackets, charges and stereo marks, is well under it
MAX_FRAGMENTS = 32  # disconnected parts ('.'): salts and small mixtures; thousands make RDKit's embedding unbounded
MAX_ATOMS = 1_024  # atoms as written, explicit hydrogens included (256 heavy atoms and their hydrogens fit)
_SMILES_ATOM = re.compile(r"\[[^\]]*\]|Br|Cl|[BCNOPSFIbcnops*]")  # one atom of a SMILES, as written
_V3000_COUNTS = re.compile(r"^M  V30 COUNTS (\d+)", re.MULTILINE)
DEFAULT_SEED = 42  # ETKDG randomSeed when none is given
MAX_SEED = 2**31 - 1  # RDKit's randomSeed is a C int (-1 would mean "random": not reproducible)


@lru_cache(maxsize=1)
def atom_dictionary() -> tuple[str, ...]:
    """Uni-Core dictionary semantics: file order gives the indices, then ``[MASK]`` is appended (31 symbols)."""
    symbols = [line.split()[0] for line in DICT_PATH.read_text().splitlines() if line.strip()]
    return (*symbols, "[MASK]")


def token_id(symbol: str) -> int:
    table = atom_dictionary()
    return table.index(symbol) if symbol in table else table.index("[UNK]")


@dataclass
class Conformer:
    """Uni-Mol inputs for one molecule (index 0 is [CLS], the last index is [SEP])."""

    smiles: str  # as given (or canonical, for MOL/SDF input): this is what the prompt shows
    symbols: list[str]  # heavy-atom element symbols, in atom order
    atoms: np.ndarray  # int64 [n+2] dictionary ids
    coordinates: np.ndarray  # float32 [n+2, 3], centred; zeros for [CLS]/[SEP]
    distances: np.ndarray  # float32 [n+2, n+2]
    edge_types: np.ndarray  # int64 [n+2, n+2] = a_i * len(dictionary) + a_j
    mol: object = field(repr=False, default=None)  # RDKit Mol without hydrogens, with the conformer
    used_fallback: bool = False  # the official fallback embedding path was taken
    from_file_coordinates: bool = False
    warnings: list[str] = field(default_factory=list)
    mmff_energy: float | None = None  # kcal/mol, MMFF94 energy of the optimised conformer (None: not optimised here)

    @property
    def num_heavy_atoms(self) -> int:
        return len(self.symbols)

    def to_xyz(self) -> str:
        """Heavy atoms as an XYZ block (centred coordinates)."""
        lines = [str(self.num_heavy_atoms), self.smiles]
        for sym, (x, y, z) in zip(self.symbols, self.coordinates[1:-1], strict=True):
            lines.append(f"{sym} {x:.4f} {y:.4f} {z:.4f}")
        return "\n".join(lines) + "\n"


def method(conf: Conformer, seed: int) -> str:
    """How the conformer's coordinates were made, in words."""
    if conf.from_file_coordinates:
        return "coordinates from the uploaded file"
    return f"RDKit ETKDG (seed {seed}) + MMFF" + (", via the official fallback embedding" if conf.used_fallback else "")


def check_seed(seed) -> int:
    """The ETKDG seed: ``DEFAULT_SEED`` when none is given, else a whole number RDKit takes."""
    return check_number(DEFAULT_SEED if seed in (None, "") else seed, "The conformer seed", 0, MAX_SEED, whole=True)


def is_molblock(text: str) -> bool:
    return "M  END" in text or "V2000" in text or "V3000" in text


class Molecule(NamedTuple):
    """A molecule that passed every input check: the RDKit Mol (hydrogens as written) and its prompt SMILES."""

    mol: Any
    smiles: str  # as given (or canonical, for MOL/SDF input)


def parse(smiles_or_molblock: str) -> Molecule:
    """The one check of a molecule given as text (``MoLM3DPipeline.check_inputs`` calls it; no embedding yet):
    readable SMILES or MOL/SDF, one molecule's worth of text, 1 to ``MAX_HEAVY_ATOMS`` heavy atoms."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    if smiles_or_molblock is not None and not isinstance(smiles_or_molblock, str):
        raise UserInputError(f"The molecule must be text (a SMILES string or an SDF/MOL block), "
                             f"not {kind_of(smiles_or_molblock)}.")
    text = smiles_or_molblock or ""
    text = text if is_molblock(text) else text.strip()  # a MOL block's first (title) line may be blank
    if not text.strip():
        raise UserInputError("The molecule is empty: type a SMILES string (e.g. CC(=O)Oc1ccccc1C(=O)O) "
                             "or upload a .sdf/.mol file.")
    if len(text) > MAX_INPUT_CHARS:
        raise UserInputError(f"The input is {len(text):,} characters long; give one molecule "
                             f"(at most {MAX_INPUT_CHARS:,} characters).")
    if is_molblock(text):
        block = text.split("$$$$")[0]
        _check_size(_molblock_atoms(block), 1)
        mol = Chem.MolFromMolBlock(block, removeHs=False)
        if mol is None:
            raise UserInputError("The SDF/MOL file could not be read (RDKit rejected its atom or bond block). "
                                 "Export it again as a V2000/V3000 MOL or SDF, or paste the SMILES instead.")
        _check_size(mol.GetNumAtoms(), len(Chem.GetMolFrags(mol)))
        smiles = Chem.MolToSmiles(_without_hs(mol))
    else:
        if any(c.isspace() for c in text):
            raise UserInputError(f"{text[:60]!r} contains spaces; give one SMILES string without spaces "
                                 "(use '.' to join fragments).")
        if len(text) > MAX_SMILES_CHARS:
            raise UserInputError(f"The SMILES is {len(text):,} characters long; one molecule of up to "
                                 f"{MAX_HEAVY_ATOMS} heavy atoms needs far fewer (the limit is {MAX_SMILES_CHARS:,}).")
        _check_size(len(_SMILES_ATOM.findall(text)), text.count(".") + 1)
        mol = Chem.MolFromSmiles(text)
        if mol is None:
            raise UserInputError(f"{text[:60]!r} is not a valid SMILES string (RDKit could not parse it). "
                                 "Check brackets, ring-closure digits and valences, e.g. CC(=O)Oc1ccccc1C(=O)O.")
        smiles = text
    heavy = sum(a.GetAtomicNum() > 1 for a in mol.GetAtoms())
    if heavy == 0:
        raise UserInputError("The molecule has no heavy atoms; 3D-MoLM reads heavy atoms only. Give a molecule "
                             "with at least one non-hydrogen atom.")
    if heavy > MAX_HEAVY_ATOMS:
        raise UserInputError(f"The molecule has {heavy} heavy atoms; 3D-MoLM reads at most {MAX_HEAVY_ATOMS}. "
                             "Give a smaller molecule (or one fragment of it).")
    return Molecule(mol, smiles)


def _molblock_atoms(block: str) -> int:
    """The atom count a MOL block declares (V2000 counts line, or V3000 ``COUNTS``), read before RDKit parses it;
    0 where it declares none (RDKit then refuses the block)."""
    found = _V3000_COUNTS.search(block)
    if found:
        return int(found[1])
    lines = block.splitlines()
    counts = lines[3][:3].strip() if len(lines) > 3 else ""
    return int(counts) if counts.isdigit() else 0


def _check_size(atoms: int, fragments: int) -> None:
    """Refuse, before RDKit spends time on it, a molecule with more atoms (as written) or fragments than one
    3D-MoLM molecule has."""
    if fragments > MAX_FRAGMENTS:
        raise UserInputError(f"The input has {fragments:,} disconnected fragments ('.'-separated); give one molecule "
                             f"(with at most {MAX_FRAGMENTS} fragments, e.g. a salt and its counter-ions).")
    if atoms > MAX_ATOMS:
        raise UserInputError(f"The input has {atoms:,} atoms as written (explicit hydrogens included); one molecule "
                             f"here has at most {MAX_ATOMS:,} ({MAX_HEAVY_ATOMS} heavy atoms).")


def _without_hs(mol):
    """Hydrogens removed, implicit counts kept (so RDKit descriptors see them); unsanitised if RDKit objects."""
    from rdkit import Chem

    try:
        return Chem.RemoveHs(mol)
    except Exception:  # e.g. an SDF with unusual valences: keep what the file says
        return Chem.RemoveHs(mol, sanitize=False)


def _has_3d(mol) -> bool:
    if mol.GetNumConformers() == 0:
        return False
    pos = mol.GetConformer().GetPositions()
    return bool(mol.GetConformer().Is3D() and np.abs(pos[:, 2]).max() > 1e-4)


def _embed(mol, seed: int, timeout_s: int, notes: list[str]):
    """The official embedding with hydrogens; returns (Mol with Hs and one conformer, used_fallback, MMFF energy)."""
    from rdkit import Chem
    from rdkit.Chem import AllChem, rdDistGeom

    def params(max_attempts: int = 0, random_coords: bool = False):
        p = rdDistGeom.ETKDGv3()  # identical to EmbedMolecule's keyword defaults (ETKDG v2 + macrocycle terms)
        p.randomSeed = seed
        p.timeout = timeout_s
        p.useRandomCoords = random_coords
        if max_attempts:
            p.maxIterations = max_attempts
        return p

    mol_h = Chem.AddHs(mol)
    if rdDistGeom.EmbedMolecule(mol_h, params()) == 0:
        return mol_h, False, _mmff(mol_h)
    heavy = Chem.RemoveHs(mol)
    if rdDistGeom.EmbedMolecule(heavy, params(max_attempts=5000)) != 0:
        # Beyond the official code (which crashes here): RDKit's advice for large molecules, random start coords.
        if rdDistGeom.EmbedMolecule(heavy, params(max_attempts=5000, random_coords=True)) != 0:
            raise UserInputError(
                f"RDKit could not build a 3D conformer for {Chem.MolToSmiles(heavy)[:60]!r} (embedding failed or "
                f"took over {timeout_s} s). Check stereochemistry and ring sizes, or upload an SDF with 3D coordinates."
            )
        notes.append("The official embedding failed for this molecule, so its conformer was embedded from random "
                     "starting coordinates (RDKit's advice for large molecules); 3D-MoLM never saw such conformers.")
    mol_h = AllChem.AddHs(heavy, addCoords=True)
    return mol_h, True, _mmff(mol_h)


def _mmff(mol_h) -> float | None:
    """The official MMFF optimisation; returns the MMFF94 energy (kcal/mol) it reached, None without parameters."""
    from rdkit.Chem import AllChem

    try:
        AllChem.MMFFOptimizeMolecule(mol_h)
    except Exception:  # the official code ignores MMFF errors (missing parameters, e.g. rare elements)
        pass
    try:
        props = AllChem.MMFFGetMoleculeProperties(mol_h)
        force_field = AllChem.MMFFGetMoleculeForceField(mol_h, props) if props is not None else None
        return None if force_field is None else float(force_field.CalcEnergy())
    except Exception:  # e.g. an element MMFF has no parameters for
        return None


def featurize(molecule: str | Molecule, seed: int = DEFAULT_SEED, timeout_s: int = EMBED_TIMEOUT_S) -> Conformer:
    """Uni-Mol inputs for one molecule: SMILES or a MOL/SDF text block (first record), checked by ``parse``, or a
    ``Molecule`` that ``parse`` already checked. The work runs in a bounded worker process (``shared.bounded``),
    killed after ``EMBED_DEADLINE_S`` with a sentence: RDKit's per-attempt ``timeout`` does not bound it."""
    conformer = run_bounded(build_conformer, molecule, seed, timeout_s, seconds=EMBED_DEADLINE_S,
                            too_long=EMBED_TOO_LONG.format(seconds=EMBED_DEADLINE_S))
    for note in conformer.warnings:
        warnings.warn(note, UserWarning, stacklevel=2)
    return conformer


def build_conformer(molecule: str | Molecule, seed: int = DEFAULT_SEED,
                    timeout_s: int = EMBED_TIMEOUT_S) -> Conformer:
    """``featurize``'s work, in the calling process (a bounded worker runs it)."""
    from rdkit import Chem

    mol, smiles = molecule if isinstance(molecule, Molecule) else parse(molecule)
    notes: list[str] = []
    fragments = len(Chem.GetMolFrags(mol))
    if fragments > 1:
        notes.append(f"The input has {fragments} disconnected fragments (e.g. a salt); they are embedded and read "
                     "together. 3D-MoLM was trained on single molecules: remove counter-ions for a cleaner answer.")

    from_file = _has_3d(mol)
    if from_file:
        mol_h, fallback, energy = Chem.Mol(mol), False, None
    else:
        mol_h, fallback, energy = _embed(mol, seed, timeout_s, notes)
    positions = mol_h.GetConformer().GetPositions()
    keep = [a.GetIdx() for a in mol_h.GetAtoms() if a.GetAtomicNum() > 1]
    symbols = [mol_h.GetAtomWithIdx(i).GetSymbol() for i in keep]
    unknown = sorted({s for s in symbols if s not in atom_dictionary()})
    if unknown:
        notes.append(f"Element(s) {', '.join(unknown)} are not in the Uni-Mol dictionary and are read as [UNK]; "
                     "answers about this molecule are less reliable.")
    coords = positions[keep]
    coords = coords - coords.mean(axis=0)
    coords = np.concatenate([np.zeros((1, 3)), coords, np.zeros((1, 3))])
    atoms = np.array([token_id("[CLS]"), *(token_id(s) for s in symbols), token_id("[SEP]")], dtype=np.int64)
    diff = np.abs(coords[:, None, :] - coords[None, :, :])
    distances = np.sum(diff**2, axis=-1) ** 0.5  # as scipy.spatial.distance_matrix, in float64
    edge_types = atoms[:, None] * len(atom_dictionary()) + atoms[None, :]
    return Conformer(
        smiles=smiles, symbols=symbols, atoms=atoms, coordinates=coords.astype(np.float32),
        distances=distances.astype(np.float32), edge_types=edge_types, mol=_without_hs(mol_h),
        used_fallback=fallback, from_file_coordinates=from_file, warnings=notes, mmff_energy=energy,
    )
