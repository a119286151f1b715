"""The Tag2Text Gradio page: one image (tags with scores, caption, your tags) or a batch (table + CSV/JSON).

Layout and wiring only: what the page does is in actions.py. Every model event is checked before it is queued
(``actions.check_image_tab`` / ``check_batch_tab``, the pipeline's ``check_inputs``). The named API endpoints
``tag_image`` and ``tag_batch`` are declared in api.py and answer ``Tag2TextOutput.to_dict()``.
"""

from __future__ import annotations

import gradio as gr

from apps import ui
from apps.tag2text import actions
from shared.context import DemoContext


def build(ctx: DemoContext) -> gr.Blocks:
    with gr.Blocks(title=ctx.demo.title) as demo:
        ui.paper_card(ctx.demo)
        view = ui.weights_section(ctx, actions.WORKS_WITHOUT_WEIGHTS)
        selected = view.selectors[0]
        threshold = gr.Slider(0.0, 1.0, value=actions.DEFAULT_THRESHOLD, step=0.01, label="Tag threshold",
                              info="A tag is shown when its score is above this (official default 0.68; "
                                   "person/man/woman keep 0.7).")
        user_tags = gr.Textbox(label="Your tags (optional)", placeholder="e.g. dog, beach, frisbee",
                               info="Comma-separated; when given, the caption follows these instead of the "
                                    "recognised tags.")
        with gr.Accordion("Precision and speed", open=False):
            gr.Markdown(actions.precision_note())
        with gr.Tab("One image"):
            _one_image_tab(ctx, selected, view, threshold, user_tags)
        with gr.Tab("Batch"):
            _batch_tab(ctx, selected, view, threshold, user_tags)
        ui.serve_endpoints(ctx)
        ui.embed_section(ctx, demo)
    return demo


def _beam_progress(progress: gr.Progress):
    return lambda step, total: progress((step, total), desc="Beam search")


def _one_image_tab(ctx: DemoContext, selected, view: ui.WeightsView, threshold, user_tags) -> None:
    with gr.Row():
        with gr.Column():
            image = gr.Image(type="filepath", label="Image", sources=["upload", "clipboard"])
            run = gr.Button("Tag and caption", variant="primary")
            ui.image_examples(ctx.demo, actions.example_images(), image)
        with gr.Column():
            chips = gr.HTML(label="Recognised tags")
            caption = gr.Textbox(label="Caption", interactive=False)
            echoed = gr.Textbox(label="Your tags used for the caption", interactive=False)
            with gr.Accordion("Tag scores", open=False):
                scores = gr.JSON(label="Scores of the shown tags")

    @ui.model_call
    def tag_image_for_page(image, threshold, user_tags, weights_name, progress=gr.Progress()):
        output = actions.tag_image(ctx, image, threshold, user_tags, weights_name, _beam_progress(progress),
                                   ui.download_progress(progress))
        return actions.image_view(output)

    # preprocess=False: Gradio's own image preprocessing would open the file with PIL first and turn a truncated
    # file or a decompression bomb into an unreadable error; our reader gives a clear one (the handler gets FileData).
    view.follow(run.click(tag_image_for_page, [image, threshold, user_tags, selected], [chips, caption, echoed, scores],
                          preprocess=False, validator=ui.validator(actions.check_image_tab), api_visibility="private",
                          **ui.model_events(ctx)))


def _batch_tab(ctx: DemoContext, selected, view: ui.WeightsView, threshold, user_tags) -> None:
    files = gr.File(label="Images or a zip of images", file_count="multiple",
                    file_types=[*actions.UPLOAD_TYPES, ".zip"])
    run = gr.Button("Tag and caption all", variant="primary")
    note = gr.Markdown()
    table = gr.Dataframe(headers=actions.TABLE_HEADERS, label="Results", wrap=True, interactive=False)
    downloads = gr.File(label="Download CSV / JSON", file_count="multiple", interactive=False)

    @ui.model_call
    def tag_batch_for_page(files, threshold, user_tags, weights_name, progress=gr.Progress()):
        output = actions.tag_batch(ctx, files, threshold, user_tags, weights_name, _beam_progress(progress),
                                   ui.download_progress(progress))
        exports = actions.write_exports(output, ui.output_folder("tag2text"))
        return actions.batch_table(output), [str(p) for p in exports], actions.batch_note(output)

    view.follow(run.click(tag_batch_for_page, [files, threshold, user_tags, selected], [table, downloads, note],
                          validator=ui.validator(actions.check_batch_tab), api_visibility="private",
                          **ui.model_events(ctx)))


if __name__ == "__main__":
    from apps.tag2text import DEMO

    build(DemoContext(DEMO)).launch()
