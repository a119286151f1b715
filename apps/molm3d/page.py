"""The 3D-MoLM Gradio page: layout and wiring. SMILES or SDF in; 2D depiction, rotating 3D conformer, the model's
answer and RDKit reference values out. What each event does is in actions.py (shared with the Streamlit page).
The conformer, pictures and RDKit table need no model weights. torch and rdkit are imported only when an event runs.
"""

from __future__ import annotations

import json

import gradio as gr

from apps import ui
from apps.molm3d import actions
from apps.molm3d.tasks import DECODINGS
from shared.context import DemoContext
from shared.errors import log


def _inputs(ctx: DemoContext) -> dict[str, gr.components.Component]:
    smiles = gr.Textbox(label="SMILES", value=actions.EXAMPLES[0][0], max_lines=2)
    sdf = gr.File(label="…or an SDF/MOL file (used instead of the SMILES when given)", file_types=[".sdf", ".mol"],
                  type="filepath")
    task = gr.Dropdown(actions.TASK_CHOICES, value="caption", label="Task",
                       info="Property tasks use the trained instruction; 'Free question' uses yours.")
    question = gr.Textbox(label="Question (for 'Free question')",
                          placeholder="e.g. What is the solubility of this molecule?")
    weights = ui.weights_dropdown(ctx)  # the full width: the set's state is never cut by the arrow
    with gr.Row(equal_height=True):
        seed = gr.Number(actions.DEFAULT_SEED, precision=0, label="Conformer seed", min_width=120)
        show_btn = gr.Button("Show conformer")
    decoding = gr.Radio(list(DECODINGS), value="official", label="Decoding",
                        info="official: five beams, as the paper's evaluation; fast: one beam, about 5x less work "
                             "per word on a CPU (the answer may differ)")
    with gr.Accordion("Precision and speed", open=False):
        gr.Markdown(actions.precision_note())
    ask_btn = gr.Button("Ask 3D-MoLM", variant="primary")
    examples = gr.Examples(actions.EXAMPLES, inputs=[smiles, task])
    return {"smiles": smiles, "sdf": sdf, "task": task, "question": question, "weights": weights, "seed": seed,
            "decoding": decoding, "show_btn": show_btn, "ask_btn": ask_btn, "examples": examples}


def _outputs() -> dict[str, gr.components.Component]:
    from apps.molm3d.views import VIEWER_JS

    info = gr.Markdown()
    answer = gr.Markdown(label="Answer")
    with gr.Row():
        depiction = gr.HTML(label="2D depiction")
        viewer = gr.HTML(label="3D conformer", js_on_load=VIEWER_JS)
    return {"info": info, "answer": answer, "depiction": depiction, "viewer": viewer}


def build(ctx: DemoContext) -> gr.Blocks:
    with gr.Blocks(title=ctx.demo.title) as demo:
        ui.paper_card(ctx.demo)
        status = ui.WeightsView.new_banner(ctx, actions.WORKS_WITHOUT_WEIGHTS, ctx.default_weights())
        with gr.Row():
            with gr.Column(scale=1):
                i = _inputs(ctx)
            with gr.Column(scale=1):
                o = _outputs()
        table = gr.HTML()  # actions.table_html: no squeezed columns in a narrow page
        ui.embed_section(ctx, demo)
        _first_view(o["depiction"], o["viewer"], table, o["info"])

        @ui.user_errors
        def show(smiles, sdf, seed):
            return actions.page_outputs(actions.show(smiles, sdf, seed))

        @ui.model_call
        def ask_with_views(smiles, sdf, task, question, weights_name, seed, decoding, progress=gr.Progress()):
            """Streams the answer as it is written (every few words), then the views, the table and the answer."""
            progress(0, desc="Loading 3D-MoLM (the first time takes a while: ~14 GB)")
            for partial, done in ui.streamed(lambda on_text: actions.ask(
                    ctx, smiles, sdf, task, question, weights_name, seed,
                    callback=lambda step, total: progress((step, total), desc="Generating the answer", unit="steps"),
                    on_download=ui.download_progress(progress), decoding=decoding, on_text=on_text)):
                yield (*[gr.skip()] * len(shown), actions.partial_markdown(partial)) if done is None else \
                    actions.page_outputs(*done)

        shown = [o["depiction"], o["viewer"], table, o["info"]]
        view_inputs = [i["smiles"], i["sdf"], i["seed"]]
        # an example shows its molecule at once (its SMILES is in the box first)
        for trigger in (i["show_btn"].click, i["smiles"].submit, i["sdf"].upload, i["examples"].load_input_event.then):
            # First, in the browser: the views of the molecule before go as another is asked for, so a refused one
            # (its sentence beside its box; a validator's refusal runs no handler and ends the event) leaves none.
            trigger(None, None, shown, js=f"() => {json.dumps(list(actions.no_views()))}", queue=False)
            trigger(show, view_inputs, shown, validator=ui.validator(actions.check_show), api_visibility="private",
                    **ui.work_events(ctx))
        weights = ui.WeightsView(ctx, [i["weights"]], status, actions.WORKS_WITHOUT_WEIGHTS)
        weights.follow(i["ask_btn"].click(
            ask_with_views, [i["smiles"], i["sdf"], i["task"], i["question"], i["weights"], i["seed"], i["decoding"]],
            [*shown, o["answer"]], validator=ui.validator(actions.check_ask), api_visibility="private",
            **ui.model_events(ctx)))
        ui.serve_endpoints(ctx)
    return demo


def _first_view(*shown: gr.components.Component) -> None:
    """The first example's views, made once when the page is built (no model, no torch; RDKit, well under a second):
    a visitor's page opens with them drawn, with no spinner and no request."""
    try:
        values = actions.page_outputs(actions.show(actions.EXAMPLES[0][0]))
    except Exception:  # RDKit missing or broken here: the page still builds; Show conformer reports the problem
        log.warning("could not draw the first 3D-MoLM example at build time", exc_info=True)
        return
    for component, value in zip(shown, values, strict=True):
        component.value = value


if __name__ == "__main__":
    from apps.molm3d import DEMO

    build(DemoContext(DEMO)).launch()
