"""The 3D-MoLM Gradio page: SMILES or SDF in; 2D depiction, rotating 3D conformer, the model's answer and RDKit
reference values out. The conformer, pictures and RDKit table need no model weights. torch and rdkit are
imported only when an event runs.
"""

from __future__ import annotations

import html
from pathlib import Path

import gradio as gr

from apps.molm3d.tasks import TASKS, get_task
from apps.ui import (
    download_progress,
    embed_section,
    model_call,
    model_events,
    paper_card,
    user_errors,
    weights_dropdown,
    weights_notice,
)
from shared.context import DemoContext
from shared.errors import UserInputError

EXAMPLES = [
    ["CC(=O)Oc1ccccc1C(=O)O", "caption"],  # aspirin
    ["CN1C=NC2=C1C(=O)N(C(=O)N2C)C", "molecular_weight"],  # caffeine
    ["CC(=O)OC(CC(=O)[O-])C[N+](C)(C)C", "logp"],  # acetylcarnitine, a zwitterion (the notebook's example)
    ["CS(=O)(=O)CCNCc1ccc(o1)-c1ccc2ncnc(Nc3ccc(OCc4cccc(F)c4)c(Cl)c3)c2c1", "tpsa"],  # lapatinib, 40 heavy atoms
]
TABLE_HEADERS = ["Property", "RDKit", "3D-MoLM", "3D-MoLM − RDKit", "Reference method"]
MAX_FILE_BYTES = 5_000_000


WORKS_WITHOUT_WEIGHTS = ("The conformer, 2D/3D views and RDKit table work without them (Llama-2-7B, Uni-Mol and "
                         "the generalist checkpoint).")


def read_molecule(smiles: str | None, sdf_path: str | None) -> str:
    """The text to featurize: the uploaded SDF/MOL file when there is one, else the SMILES box."""
    if sdf_path:
        path = Path(sdf_path)
        if path.stat().st_size > MAX_FILE_BYTES:
            raise UserInputError(f"The file is over {MAX_FILE_BYTES // 1_000_000} MB; upload one molecule as SDF/MOL.")
        try:
            return path.read_text()
        except UnicodeDecodeError:
            raise UserInputError("The uploaded file is not a text SDF/MOL file; export it as .sdf or .mol.") from None
    return smiles or ""


class MoLM3DPage:
    """The page's actions, apart from the widgets, so tests and the API call the same code."""

    def __init__(self, ctx: DemoContext):
        self.ctx = ctx

    def show(self, smiles: str | None, sdf_path: str | None = None, seed: int = 42):
        """Conformer only: (2D depiction, 3D viewer, RDKit table rows, info markdown)."""
        from apps.molm3d import views
        from apps.molm3d.conformer import featurize
        from apps.molm3d.properties import reference_rows

        seed = 42 if seed in (None, "") else int(seed)
        conf = featurize(read_molecule(smiles, sdf_path), seed=seed)
        return (views.depiction_svg(conf), views.viewer_html(conf), reference_rows(conf.mol),
                views.info_markdown(conf, seed), conf)

    def ask(self, smiles: str | None, sdf_path: str | None, task: str, question: str = "",
            weights_name: str | None = None, seed: int = 42, on_step=None, on_download=None):
        """Conformer views plus the model's answer: (depiction, viewer, table rows, info, answer markdown)."""
        from apps.molm3d.properties import reference_rows

        step = on_step or (lambda fraction, text: None)
        step(0.0, "Building the 3D conformer")
        depiction, viewer, _, info, conf = self.show(smiles, sdf_path, seed)
        spec = get_task(task, question)
        step(0.1, "Loading 3D-MoLM (the first time takes a while: ~14 GB)")
        with self.ctx.compute(weights_name, on_download) as pipe:
            step(0.5, "Generating the answer (5-beam search)")
            answer = pipe.ask(conf, question, spec.key)
        rows = reference_rows(conf.mol, {spec.key: answer.value} if spec.numeric else None)
        return depiction, viewer, rows, info, answer_markdown(answer)

    def ask_api(self, smiles: str, question: str = "") -> dict:
        """``question`` may name a task (e.g. 'logp', 'Molecular Weight', 'caption'); else it is a free question."""
        task = None
        if question.strip():
            try:
                task = get_task(question, None).key
            except UserInputError:
                task = "description"
        _, _, _, _, conf = self.show(smiles, None)
        with self.ctx.compute() as pipe:
            answer = pipe.ask(conf, question, task)
        ref = answer.reference
        return {"smiles": answer.smiles, "task": answer.task, "instruction": answer.instruction, "answer": answer.text,
                "value": answer.value, "unit": answer.unit, "rdkit_reference": ref.value if ref else None,
                "difference": answer.difference, "notes": answer.notes}


def answer_markdown(answer) -> str:
    lines = [f"**Instruction:** {html.escape(answer.instruction)}", f"**3D-MoLM:** {html.escape(answer.text)}"]
    if answer.value is not None:
        lines.append(f"**Parsed value:** {answer.value:g} {answer.unit}".rstrip())
    if answer.reference is not None:
        ref = answer.reference
        lines.append(f"**RDKit reference:** {ref.value:.2f} {ref.unit} (difference {answer.difference:+.2f})"
                     if ref.value is not None and answer.value is not None else f"**RDKit reference:** {ref.method}")
    lines += [f"⚠️ {html.escape(n)}" for n in answer.notes]
    return "\n\n".join(lines)


def build(ctx: DemoContext) -> gr.Blocks:
    from apps.molm3d.views import VIEWER_JS

    page = MoLM3DPage(ctx)
    with gr.Blocks(title=ctx.demo.title) as demo:
        paper_card(ctx.demo)
        status = gr.HTML(weights_notice(ctx, None, WORKS_WITHOUT_WEIGHTS))
        with gr.Row():
            with gr.Column(scale=1):
                smiles = gr.Textbox(label="SMILES", value=EXAMPLES[0][0], max_lines=2)
                sdf = gr.File(label="…or an SDF/MOL file (used instead of the SMILES when given)",
                              file_types=[".sdf", ".mol"], type="filepath")
                task = gr.Dropdown([(t.label, t.key) for t in TASKS.values()], value="caption", label="Task",
                                   info="Property tasks use the trained instruction; 'Free question' uses yours.")
                question = gr.Textbox(label="Question (for 'Free question')",
                                      placeholder="e.g. What is the solubility of this molecule?")
                with gr.Row():
                    chooser = weights_dropdown(ctx)
                    seed = gr.Number(42, precision=0, label="Conformer seed")
                with gr.Row():
                    show_btn = gr.Button("Show conformer")
                    ask_btn = gr.Button("Ask 3D-MoLM", variant="primary")
                gr.Examples(EXAMPLES, inputs=[smiles, task])
            with gr.Column(scale=1):
                info = gr.Markdown()
                answer = gr.Markdown(label="Answer")
                with gr.Row():
                    depiction = gr.HTML(label="2D depiction")
                    viewer = gr.HTML(label="3D conformer", js_on_load=VIEWER_JS)
        table = gr.Dataframe(headers=TABLE_HEADERS, label="RDKit reference values", interactive=False, wrap=True)
        embed_section(ctx.demo)

        @user_errors
        def show(smiles, sdf, seed):
            return page.show(smiles, sdf, seed)[:4]

        @model_call
        def ask_with_views(smiles, sdf, task, question, weights_name, seed, progress=gr.Progress()):
            return page.ask(smiles, sdf, task, question, weights_name, seed,
                            lambda fraction, text: progress(fraction, desc=text), download_progress(progress))

        @model_call
        def ask_endpoint(smiles: str, question: str = "") -> dict:
            """Ask 3D-MoLM about a molecule.

            Args:
                smiles: the molecule as a SMILES string.
                question: a free question, or a task name ('caption', 'molecular_weight', 'logp', 'tpsa',
                    'complexity', 'homo', 'lumo', 'homo_lumo_gap', 'scf_energy'); empty asks for a description.
            """
            return page.ask_api(smiles, question)

        outputs = [depiction, viewer, table, info]
        for trigger in (show_btn.click, smiles.submit, sdf.upload):
            trigger(show, [smiles, sdf, seed], outputs, api_visibility="private")
        ask_btn.click(ask_with_views, [smiles, sdf, task, question, chooser, seed], [*outputs, answer],
                      api_visibility="private", **model_events(ctx))
        chooser.change(lambda name: weights_notice(ctx, name, WORKS_WITHOUT_WEIGHTS), chooser, status,
                       api_visibility="private")
        gr.api(ask_endpoint, api_name="ask", **model_events(ctx))
        demo.load(show, [smiles, sdf, seed], outputs, api_visibility="private")
    return demo


if __name__ == "__main__":
    from apps.molm3d import DEMO

    build(DemoContext(DEMO)).launch()
