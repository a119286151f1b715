"""3D-MoLM's input checks, torch-free (RDKit parses the molecule; no 3D embedding, no weights): a page's validator and
an API call's first check import this module only, so the first call after start does not wait for torch
(``MoLM3DPipeline.check_inputs`` is ``check_inputs``)."""

from __future__ import annotations

from dataclasses import dataclass

from apps.molm3d import conformer as conf
from apps.molm3d.tasks import DECODINGS, FAST_NOTE, MAX_QUESTION_CHARS, MOL_TOKEN, Task, get_task, instruction_for
from shared.errors import UserInputError, named_argument
from shared.validation import check_number, check_text

MAX_BATCH = 16


@dataclass(frozen=True)
class MoLM3DInputs:
    """What ``check_inputs`` returns: the request in normalised form, ready to run."""

    molecules: tuple[conf.Molecule | conf.Conformer, ...]  # parsed and checked; a Conformer is used as given
    single: bool  # True: ``__call__``'s one ``molecule``; False: ``answer_batch``'s list of ``molecules``
    task: Task
    instruction: str  # the instruction the model reads (a long free question is cut to 64 characters)
    notes: tuple[str, ...]  # what was changed in the request, for the answer's notes
    seed: int
    num_beams: int
    max_new_tokens: int
    min_new_tokens: int

    @property
    def argument(self) -> str:
        """The name of the molecule parameter these inputs came through."""
        return "molecule" if self.single else "molecules"


def check_inputs(molecule, question: str | None = None, task: str | None = None, *,
                 seed: int | None = conf.DEFAULT_SEED, num_beams: int | None = None,
                 max_new_tokens: int | None = None, min_new_tokens: int | None = None,
                 decoding: str = "official", batch: bool = False) -> MoLM3DInputs:
    """Every check of a request, without weights: each molecule readable with 1-256 heavy atoms (RDKit parse,
    no 3D embedding yet), at most ``MAX_BATCH`` of them, a known task, a question that is text of at most
    ``MAX_QUESTION_CHARS`` visible characters (and not empty for a free question), a seed RDKit takes, a known
    ``decoding`` ("official": 5 beams; "fast": greedy) and sensible decoding overrides. Raises ``UserInputError``
    naming the argument; returns ``MoLM3DInputs``.

    ``molecule``: SMILES, MOL/SDF text, a ``conformer.Molecule`` or ``conformer.Conformer`` (used as given), as
    ``__call__`` takes it; a list or tuple there is refused, naming ``answer_batch``. With ``batch=True`` it is
    ``answer_batch``'s ``molecules`` instead: a list or tuple of 1 to ``MAX_BATCH`` such molecules, and errors
    about it name ``molecules``.
    With no ``task``, a question is a free question and no question asks for a caption.
    """
    checked_types = (conf.Molecule, conf.Conformer)  # Molecule is a NamedTuple: test it before tuple
    is_list = isinstance(molecule, (list, tuple)) and not isinstance(molecule, checked_types)
    name = "molecules" if batch else "molecule"
    with named_argument(name):
        if batch and not is_list:
            raise UserInputError("answer_batch takes a list of molecules (SMILES strings or SDF/MOL blocks); "
                                 "for one molecule call the pipeline itself: pipe(molecule, ...).")
        if not batch and is_list:
            raise UserInputError("The pipeline answers about one molecule (a SMILES string or an SDF/MOL "
                                 "block); for a list of molecules call pipe.answer_batch(molecules, ...).")
        items = list(molecule) if batch else [molecule]
        if not items:
            raise UserInputError("No molecule given: pass a list of SMILES strings or SDF/MOL blocks.")
        if len(items) > MAX_BATCH:
            raise UserInputError(f"{len(items)} molecules in one call; send at most {MAX_BATCH} at a time.")
        checked = tuple(m if isinstance(m, checked_types) else conf.parse(m) for m in items)
    with named_argument("question"):
        if question is not None:
            check_text(question, "The question", MAX_QUESTION_CHARS, allow_newlines=True)
    with named_argument("task"):
        spec = get_task(task, question)
    with named_argument("question"):
        if spec.key == "description" and not (question or "").strip():
            raise UserInputError("The question is empty: type a question about the molecule, or pick the "
                                 "'Describe the molecule' task.")
        if spec.key == "description" and MOL_TOKEN in question:
            raise UserInputError(f"The question may not contain {MOL_TOKEN}: the prompt adds the molecule "
                                 "tokens itself.")
    instruction, notes = instruction_for(spec, question)
    with named_argument("seed"):
        seed = conf.check_seed(seed)
    if decoding not in DECODINGS:
        raise UserInputError(f'decoding must be "official" (five beams, as the paper\'s evaluation) or "fast" '
                             f"(greedy, one beam); got {decoding!r:.40}.", argument="decoding")
    if decoding == "fast" and num_beams is None:
        notes.append(FAST_NOTE)
    with named_argument("num_beams"):
        beams = check_number(DECODINGS[decoding] if num_beams is None else num_beams, "num_beams", 1, whole=True)
    with named_argument("max_new_tokens"):
        most = check_number(spec.max_new_tokens if max_new_tokens is None else max_new_tokens,
                            "max_new_tokens", 1, whole=True)
    with named_argument("min_new_tokens"):
        least = (min(spec.min_new_tokens, most) if min_new_tokens is None
                 else check_number(min_new_tokens, "min_new_tokens", 0, most, whole=True))
    return MoLM3DInputs(checked, not batch, spec, instruction, tuple(notes), seed, beams, most, least)
