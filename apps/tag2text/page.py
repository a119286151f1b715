"""The Tag2Text Gradio page: one image (tags with scores, caption, your tags) or a batch (table + CSV/JSON).

Layout and wiring only: what the page does is in actions.py. Every model event is checked before it is queued
(``actions.check_image_tab`` / ``check_batch_tab``, the pipeline's ``check_inputs``), and every upload as it arrives
(``actions.upload_problem``, the same check): a file that is not an image is taken out of the input and its sentence
shown beside it. The page's own sentences sit in the page, under the input (never a toast: at 720 px one covers the
inputs and results). The named API endpoints ``tag_image`` and ``tag_batch`` are declared in api.py and answer
``Tag2TextOutput.to_dict()``.
"""

from __future__ import annotations

import functools

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


def _note_box(name: str) -> gr.HTML:
    """Where a tab says what went wrong with its input or its run, under the input; no room taken while empty."""
    return gr.HTML("", elem_classes=[*ui.QUIET, f"t2t-{name}-note"])


def _errors_in_note(skipped: int):
    """A run handler whose exception becomes its sentence in the tab's note (its last output), the ``skipped`` other
    outputs left as they were; on success the note is emptied."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                shown = fn(*args, **kwargs)
            except Exception as error:
                return (*[gr.skip()] * skipped, ui.notice(ui.as_gradio_error(error).message, "error"))
            return (*shown, "")

        return run

    return wrap


def _clear_note() -> str:
    return ""


def _one_image_tab(ctx: DemoContext, selected, view: ui.WeightsView, threshold, user_tags) -> None:
    with gr.Row():
        with gr.Column():
            image = gr.Image(type="filepath", label="Image", sources=["upload", "clipboard"],
                             elem_classes="t2t-image")
            note = _note_box("image")
            run = gr.Button("Tag and caption", variant="primary")
            examples = ui.image_examples(ctx.demo, actions.example_images(), image)
        with gr.Column():
            chips = gr.HTML(label="Recognised tags")
            caption = gr.Textbox(label="Caption", interactive=False)
            echoed = gr.Textbox(label="Your tags used for the caption", interactive=False)
            with gr.Accordion("Tag scores", open=False):
                scores = gr.JSON(label="Scores of the shown tags")

    def screen_image(image):
        """A file that is not an image the page can read leaves the input (no broken preview) and says why."""
        problem = actions.upload_problem(image)
        return (None, ui.notice(problem, "error")) if problem else (gr.skip(), "")

    @ui.model_call
    @_errors_in_note(skipped=4)
    def tag_image_for_page(image, threshold, user_tags, weights_name, progress=gr.Progress()):
        output = actions.tag_image(ctx, image, threshold, user_tags, weights_name, _beam_progress(progress),
                                   ui.download_progress(progress))
        return actions.image_view(output)

    # preprocess=False: Gradio's own image preprocessing would open the file with PIL first and turn a truncated
    # file or a decompression bomb into an unreadable error; our reader gives a clear one (the handler gets FileData).
    # Queued (light work, no model): a file reference naming a web address is refused at the queue's door like any
    # other event's (an unqueued event would skip that door, and the server would try to fetch it).
    image.upload(screen_image, image, [image, note], preprocess=False, show_progress="hidden",
                 api_visibility="private")
    for cleared in (image.clear, examples.click):
        cleared(_clear_note, None, note, queue=False, show_progress="hidden", api_visibility="private")
    view.follow(run.click(tag_image_for_page, [image, threshold, user_tags, selected],
                          [chips, caption, echoed, scores, note], preprocess=False,
                          validator=ui.validator(actions.check_image_tab), api_visibility="private",
                          **ui.model_events(ctx)))


def _batch_tab(ctx: DemoContext, selected, view: ui.WeightsView, threshold, user_tags) -> None:
    files = gr.File(label="Images or a zip of images", file_count="multiple",
                    file_types=[*actions.UPLOAD_TYPES, ".zip"], elem_classes="t2t-files")
    files_note = _note_box("files")
    run = gr.Button("Tag and caption all", variant="primary")
    note = gr.Markdown()
    table = gr.Dataframe(headers=actions.TABLE_HEADERS, label="Results", wrap=True, interactive=False)
    downloads = gr.File(label="Download CSV / JSON", file_count="multiple", interactive=False)

    def screen_files(files):
        """Files that are not images the page can read leave the batch; the note names each, and the rest stay."""
        kept, problems = actions.screen_uploads(files)
        if not problems:
            return gr.skip(), ""
        return kept or None, ui.notice(actions.left_out_note(problems, len(kept)), "warning" if kept else "error")

    @ui.model_call
    @_errors_in_note(skipped=3)
    def tag_batch_for_page(files, threshold, user_tags, weights_name, progress=gr.Progress()):
        output = actions.tag_batch(ctx, files, threshold, user_tags, weights_name, _beam_progress(progress),
                                   ui.download_progress(progress))
        exports = actions.write_exports(output, ui.output_folder("tag2text"))
        return actions.batch_table(output), [str(p) for p in exports], actions.batch_note(output)

    files.upload(screen_files, files, [files, files_note], show_progress="hidden", api_visibility="private")
    files.clear(_clear_note, None, files_note, queue=False, show_progress="hidden", api_visibility="private")
    view.follow(run.click(tag_batch_for_page, [files, threshold, user_tags, selected],
                          [table, downloads, note, files_note], validator=ui.validator(actions.check_batch_tab),
                          api_visibility="private", **ui.model_events(ctx)))


if __name__ == "__main__":
    from apps.tag2text import DEMO

    build(DemoContext(DEMO)).launch()
