"""What the 3D-MoLM page does, apart from any UI toolkit: the checks its validators run, building a molecule's
views, asking the model, and turning a ``MoLM3DOutput`` into what is shown (markdown, the comparison table).

The Gradio page (page.py) and the Streamlit page (streamlit_page.py) both call these. No gradio, no streamlit; torch
and rdkit are imported only when a function runs.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apps import views
from apps.molm3d import DEMO, checks
from apps.molm3d.checks import MoLM3DInputs
from apps.molm3d.conformer import DEFAULT_SEED, MAX_INPUT_CHARS
from apps.molm3d.tasks import TASKS
from shared.errors import UserInputError
from shared.pipeline import Callback

if TYPE_CHECKING:
    from apps.molm3d.conformer import Conformer
    from apps.molm3d.pipeline import MoLM3DOutput
    from shared.context import DemoContext

EXAMPLES = [
    ["CC(=O)Oc1ccccc1C(=O)O", "caption"],  # aspirin
    ["CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "molecular_weight"],  # caffeine
    ["CC(=O)OC(CC(=O)[O-])C[N+](C)(C)C", "logp"],  # acetylcarnitine, a zwitterion (the notebook's example)
    ["CS(=O)(=O)CCNCc1ccc(o1)-c1ccc2ncnc(Nc3ccc(OCc4cccc(F)c4)c(Cl)c3)c2c1", "tpsa"],  # lapatinib, 40 heavy atoms
]
TASK_CHOICES = [(t.label, t.key) for t in TASKS.values()]
WORKS_WITHOUT_WEIGHTS = ("The conformer, 2D/3D views and RDKit table work without them (Llama-2-7B, Uni-Mol and "
                         "the generalist checkpoint).")
TABLE_HEADERS = ("Property", "RDKit", "3D-MoLM", "3D-MoLM − RDKit", "Reference method")
MODEL_COLUMNS = (2, 3)  # shown only once the model gave a number for some property
EMPTY_CELL = "—"
# BENCHMARKS.md, "3D-MoLM: the language model at full size on a CPU" and "3D-MoLM's int8/int4 on a trained Llama"
# (tests/molm3d/test_quantize.py holds the figures)
QUANTIZE_TRADE_OFF = (
    "On a CPU the operator may opt in to int8 or int4 weights for the language model (`DEMOHUB_QUANTIZE`; "
    "`demohub doctor` says which run here). Measured at Llama-2-7B's size on a 2-core CPU with the fast decoding: "
    "int4 wrote a 128-token description in 34 s against bf16's 116 s and a 16-token property answer in 7.1 s, its "
    "first words after 4.2 s, in at most 4.9 GiB of memory, loading included, against bf16's 22.0 GiB; int8 wrote "
    "that answer in 7.8 s in 8.5 GiB. A question the server had not seen got its first token after 6.7 s (int4), 5.1 s "
    "(int8), 4.7 s (bf16). Neither keeps the model's answers: "
    "measured on a trained Llama of 135M parameters (SmolLM2-135M-Instruct; 3D-MoLM's own weights cannot be "
    "measured here), the most likely next token along a text was bf16's at 92.6% (int8) and 73.1% (int4) of the "
    "positions, and greedy answers kept 52.2% (int8) and 19.1% (int4) of bf16's tokens up to their first difference. "
    "bf16, the default, is the faithful option, with the official decoding.")
UTF8_MAX_BYTES = 4  # a file over MAX_INPUT_CHARS * 4 bytes cannot be MAX_INPUT_CHARS characters: not read at all


# -- checks (the page's validators; cheap: no weights) -------------------------------------------------------------


def precision_note() -> str:
    """The settings' line on precision, with the measured int8/int4 trade-off (torch is not imported)."""
    return views.precision_note(DEMO.cpu_dtype, DEMO.gpu_dtype, QUANTIZE_TRADE_OFF, quantizes=DEMO.quantizes)


def read_molecule(smiles: str | None, sdf_path: str | None) -> str:
    """The text to check and featurize: the uploaded SDF/MOL file when there is one, else the SMILES box."""
    if not sdf_path:
        return smiles or ""
    path = Path(sdf_path)
    size = path.stat().st_size
    if size > MAX_INPUT_CHARS * UTF8_MAX_BYTES:
        raise UserInputError(f"The file is {size:,} bytes; upload one molecule as SDF/MOL "
                             f"(at most {MAX_INPUT_CHARS:,} characters).", argument="sdf")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserInputError("The uploaded file is not a text SDF/MOL file; export it as .sdf or .mol.",
                             argument="sdf") from None


def _check(smiles: str | None, sdf: str | None, **request: Any) -> MoLM3DInputs:
    """``MoLM3DPipeline.check_inputs`` on the page's inputs; a bad molecule names the box it came from."""
    text = read_molecule(smiles, sdf)
    try:
        return checks.check_inputs(text, **request)
    except UserInputError as error:
        if error.argument != "molecule":
            raise
        raise UserInputError(str(error), argument="sdf" if sdf else "smiles") from None


def check_show(smiles: str | None, sdf: str | None = None, seed: int | None = DEFAULT_SEED) -> MoLM3DInputs:
    """The "Show conformer" event's check: the molecule and the seed."""
    return _check(smiles, sdf, seed=seed)


def check_ask(smiles: str | None, sdf: str | None, task: str | None, question: str | None = "",
              weights_name: str | None = None, seed: int | None = DEFAULT_SEED,
              decoding: str = "official") -> MoLM3DInputs:
    """The "Ask 3D-MoLM" event's check (parameter names = the event's inputs): molecule, task, question, seed,
    decoding."""
    return _check(smiles, sdf, task=task, question=question, seed=seed, decoding=decoding)


# -- running ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MoleculeView:
    """What the page shows of a molecule before any model runs."""

    conformer: Conformer
    seed: int
    depiction: str  # RDKit 2D drawing, SVG
    viewer: str  # the rotating 3D viewer, HTML (made live by views.VIEWER_JS)
    info: str  # markdown: SMILES, heavy atoms, how the conformer was made, warnings


def _view(inputs: MoLM3DInputs) -> MoleculeView:
    from apps.molm3d import views
    from apps.molm3d.conformer import featurize

    conf = featurize(inputs.molecules[0], seed=inputs.seed)
    return MoleculeView(conf, inputs.seed, views.depiction_svg(conf), views.viewer_html(conf),
                        views.info_markdown(conf, inputs.seed))


def show(smiles: str | None, sdf: str | None = None, seed: int | None = DEFAULT_SEED) -> MoleculeView:
    """The molecule's conformer and pictures; needs no model weights."""
    return _view(check_show(smiles, sdf, seed))


def answer(ctx: DemoContext, view: MoleculeView, task: str | None, question: str | None = "",
           weights_name: str | None = None, callback: Callback | None = None, on_download=None,
           decoding: str = "official", on_text=None) -> MoLM3DOutput:
    """The model's answer about a molecule already shown (``on_text``: the answer so far, as it grows). The request
    is checked before the weights are loaded (or downloaded)."""
    checks.check_inputs(view.conformer, question, task, seed=view.seed, decoding=decoding)
    with ctx.compute(weights_name, on_download) as pipe:
        return pipe(view.conformer, question, task, seed=view.seed, decoding=decoding, callback=callback,
                    on_text=on_text)


def ask(ctx: DemoContext, smiles: str | None, sdf: str | None, task: str | None, question: str | None = "",
        weights_name: str | None = None, seed: int | None = DEFAULT_SEED, callback: Callback | None = None,
        on_download=None, decoding: str = "official", on_text=None) -> tuple[MoleculeView, MoLM3DOutput]:
    """Views plus the model's answer; everything is checked first."""
    view = _view(check_ask(smiles, sdf, task, question, weights_name, seed, decoding))
    return view, answer(ctx, view, task, question, weights_name, callback, on_download, decoding, on_text)


# -- display ---------------------------------------------------------------------------------------------------


def _with_unit(number: str, unit: str) -> str:
    return f"{number} {unit}" if unit else number


def partial_markdown(text: str) -> str:
    """The answer while it is written: the best text so far, marked as unfinished."""
    return f"**3D-MoLM, writing:** {views.text(text)} ▍"


def answer_markdown(answer: MoLM3DOutput) -> str:
    """Instruction, the model's text, the number read from it, and RDKit's value beside it where RDKit has one."""
    lines = [f"**Instruction:** {views.text(answer.instruction)}", f"**3D-MoLM:** {views.text(answer.text)}"]
    if answer.value is not None:
        lines.append(f"**Parsed value:** {html.escape(_with_unit(f'{answer.value:g}', answer.unit))}")
    ref = answer.reference
    if ref is not None and ref.value is None:
        lines.append(f"**RDKit reference:** {html.escape(ref.method)}")
    elif ref is not None:
        difference = f" (difference {answer.difference:+.2f})" if answer.difference is not None else ""
        lines.append(f"**RDKit reference:** {html.escape(_with_unit(f'{ref.value:.2f}', ref.unit))}{difference}"
                     f" · {html.escape(ref.method)}")
    lines += [f"⚠️ {views.text(n)}" for n in answer.notes]
    return "\n\n".join(lines)


def table_rows(view: MoleculeView, answer: MoLM3DOutput | None = None) -> list[list[str]]:
    """RDKit's values for every property task, with the model's number and the difference for the asked one."""
    from apps.molm3d.properties import reference_rows

    model = {answer.task: answer.value} if answer is not None and answer.value is not None else None
    return reference_rows(view.conformer.mol, model)


def comparison_table(rows: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """(headers, rows) as shown: the model's columns only where some row has a value in them, "—" in empty cells,
    so no column is ever empty (an empty column is squeezed to one letter per line in a narrow page)."""
    keep = [i for i in range(len(TABLE_HEADERS)) if i not in MODEL_COLUMNS or any(row[i] for row in rows)]
    return (tuple(TABLE_HEADERS[i] for i in keep),
            tuple(tuple(str(row[i]) or EMPTY_CELL for i in keep) for row in rows))


def table_html(rows: Sequence[Sequence[str]], title: str = "RDKit reference values") -> str:
    """The comparison table as HTML: the rows with a value first (RDKit's or the model's); the properties neither has
    a value for are folded under one line below, each with why. Names, values and headers never wrap (the table
    scrolls sideways in a narrow page instead of squeezing a column); only the last column (how the value is
    computed) wraps, at 10em or more, between words and after the dots of a dotted name."""
    valued = [row for row in rows if row[1] != EMPTY_CELL or row[2]]
    missing = [row for row in rows if row[1] == EMPTY_CELL and not row[2]]
    headers, body = comparison_table(valued)
    last = len(headers) - 1

    def cell(tag: str, text: str, i: int) -> str:
        if i == last:  # breaks between words and after a dotted name's dots, never inside a name (CalcTPSA)
            style, shown = "min-width:10em;overflow-wrap:break-word", html.escape(text).replace(".", ".<wbr>")
        else:
            style, shown = "white-space:nowrap", html.escape(text)
        return f'<{tag} style="{style};text-align:left;padding:4px 8px">{shown}</{tag}>'

    head = "".join(cell("th", h, i) for i, h in enumerate(headers))
    lines = "".join("<tr>" + "".join(cell("td", c, i) for i, c in enumerate(row)) + "</tr>" for row in body)
    folded = ""
    if missing:
        names = ", ".join(row[0].split(" (")[0] for row in missing)
        reasons = "".join(f"<li><strong>{html.escape(row[0])}</strong>: {html.escape(row[4])}</li>" for row in missing)
        folded = (f'<details class="molm3d-missing"><summary>{len(missing)} more with no RDKit value '
                  f"({html.escape(names)})</summary><ul>{reasons}</ul></details>")
    return (f'<div class="molm3d-table" style="overflow-x:auto"><table style="border-collapse:collapse;width:100%">'
            f'<caption style="text-align:left;font-weight:600">{html.escape(title)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{lines}</tbody></table>{folded}</div>")


def no_views() -> tuple[str, ...]:
    """The Gradio page's views (depiction, viewer, table, info) once the molecule in the box was refused: empty, so
    nothing on the page belongs to another molecule."""
    return "", "", "", ""


def page_outputs(view: MoleculeView, answer: MoLM3DOutput | None = None) -> tuple[str, ...]:
    """The Gradio page's outputs: (2D depiction, 3D viewer, table HTML, info) and, after a question, the answer."""
    shown = (view.depiction, view.viewer, table_html(table_rows(view, answer)), view.info)
    return shown if answer is None else (*shown, answer_markdown(answer))


def preview() -> str:
    """The hub card's picture: RDKit's drawing of the first example molecule (no conformer needed)."""
    from apps.molm3d.views import smiles_svg

    return smiles_svg(EXAMPLES[0][0], 224, 126)
