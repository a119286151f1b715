"""3D-MoLM's prompt template, instructions and per-task decoding settings (fact sheet), and answer parsing.

Light: no torch, no rdkit, so the page can list tasks without loading anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from shared.errors import UserInputError
from shared.validation import kind_of

NUM_MOL_TOKENS = 8
MOL_TOKEN = "<mol>"
PROMPT_TEMPLATE = (
    "Below is an instruction that describes a task, paired with an input molecule. Write a response that "
    "appropriately completes the request.\nInstruction: {}\nInput molecule: {} " + MOL_TOKEN * NUM_MOL_TOKENS
    + ".\nResponse: "
)
MAX_PROMPT_SMILES = 96
MAX_DESCRIPTION_INSTRUCTION = 64
MAX_QUESTION_CHARS = 2000  # longer is cut to 64 characters anyway; refuse payloads, not questions
PROPERTY_SUFFIX = "If uncertain, provide an estimate. Respond with the numerical value only."
NUMBER = re.compile(r"-?\d+\.\d+")


@dataclass(frozen=True)
class Task:
    key: str
    label: str
    max_new_tokens: int
    min_new_tokens: int = 16
    property_name: str | None = None  # as the training instructions name it
    unit: str = ""

    @property
    def numeric(self) -> bool:
        return self.property_name is not None


def _prop(key: str, name: str, unit: str = "") -> Task:
    return Task(key, name, 64, property_name=name, unit=unit)


TASKS: dict[str, Task] = {t.key: t for t in (
    Task("caption", "Describe the molecule", 128),
    Task("description", "Free question", 64),
    _prop("molecular_weight", "Molecular Weight", "g/mol"),
    _prop("logp", "LogP"),
    _prop("tpsa", "Topological Polar Surface Area", "Å²"),
    _prop("complexity", "Complexity"),
    _prop("homo", "HOMO", "eV"),
    _prop("lumo", "LUMO", "eV"),
    _prop("homo_lumo_gap", "HOMO-LUMO Gap", "eV"),
    _prop("scf_energy", "SCF Energy"),
)}
EVAL_DECODING = {"num_beams": 5, "repetition_penalty": 1.2, "length_penalty": 0.8}
# Beams per decoding: "official" as the paper's stage-3 evaluation; "fast" greedy (one beam: about a fifth of the work
# per new token, answers may differ), the same repetition penalty and token limits.
DECODINGS = {"official": EVAL_DECODING["num_beams"], "fast": 1}
FAST_NOTE = "Fast decoding: one beam (greedy) instead of the official five, so the answer may differ."
QUANTIZED_NOTE = ("Quantised weights: the language model's weights are {mode} on this server (DEMOHUB_QUANTIZE), not "
                  "its full-precision ones, so the answer may differ.")


def get_task(task: str | None, question: str | None) -> Task:
    """``task`` by key or label; with no task, a question means a free question and no question a caption."""
    if not task:
        return TASKS["description"] if isinstance(question, str) and question.strip() else TASKS["caption"]
    if not isinstance(task, str):
        raise UserInputError(f"The task must be text (one of: {', '.join(TASKS)}), not {kind_of(task)}.")
    for t in TASKS.values():
        if task.strip().lower() in (t.key, t.label.lower()):
            return t
    raise UserInputError(f"Unknown task {task!r}; choose one of: {', '.join(TASKS)}.")


def instruction_for(task: Task, question: str | None = None) -> tuple[str, list[str]]:
    """The instruction text the model was trained on for ``task``, and notes about changes made to it.

    ``question`` is one ``MoLM3DPipeline.check_inputs`` accepted; a free question is cut to 64 characters, as in
    training (with a note saying so).
    """
    notes: list[str] = []
    if task.key == "caption":
        return "Describe the input molecule.", notes
    if task.numeric:
        return f"What is the {task.property_name} of this molecule? {PROPERTY_SUFFIX}", notes
    question = " ".join((question or "").split())
    if len(question) > MAX_DESCRIPTION_INSTRUCTION:
        notes.append(f"3D-MoLM was trained with description instructions cut to {MAX_DESCRIPTION_INSTRUCTION} "
                     f"characters, so the question was shortened to {question[:MAX_DESCRIPTION_INSTRUCTION]!r}.")
        question = question[:MAX_DESCRIPTION_INSTRUCTION]
    return question, notes


def build_prompt(instruction: str, smiles: str) -> str:
    return PROMPT_TEMPLATE.format(instruction, smiles[:MAX_PROMPT_SMILES])


# int4's calibration (shared.quantize.input_statistics): every task's prompt, each about another of these molecules
CALIBRATION_MOLECULES = ("CC(=O)Oc1ccccc1C(=O)O", "CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "CCO", "c1ccccc1",
                         "OC[C@H]1OC(O)[C@H](O)[C@@H](O)[C@@H]1O")


def calibration_requests() -> list[tuple[str, str]]:
    """(instruction, SMILES) for every task, the molecules in turn; the free question asks what it is used for."""
    return [(instruction_for(task, "What is this molecule used for?")[0],
             CALIBRATION_MOLECULES[i % len(CALIBRATION_MOLECULES)]) for i, task in enumerate(TASKS.values())]


def parse_number(text: str) -> float | None:
    """The first decimal number in an answer (as ``read_generalist_results.py`` scores), or None."""
    match = NUMBER.search(text)
    return float(match.group()) if match else None
