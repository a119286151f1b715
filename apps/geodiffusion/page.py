"""The GeoDiffusion Gradio page: draw a layout (canvas, table or JSON), pick a checkpoint, generate, export as COCO.

Layout and wiring only; what the page does is in actions.py (shared with the Streamlit page). The layout JSON textbox
(the official input format) is the one source of truth: the canvas editor, the table, the camera/time/weather
controls and the examples all read and write it. No torch here: the pipeline loads lazily through the shared pool.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from types import SimpleNamespace

import gradio as gr

from apps import ui
from apps.geodiffusion import actions
from apps.geodiffusion.actions import WORKS_WITHOUT_WEIGHTS, GeoDiffusionPage
from apps.geodiffusion.layout import (
    CAMERAS,
    MAX_GUIDANCE,
    MAX_STEPS,
    TIMES_OF_DAY,
    WEATHERS,
)
from shared.context import DemoContext

EDITOR_JS = (Path(__file__).resolve().parent / "editor.js").read_text(encoding="utf-8")
EDITOR_HTML = """
<div class="geo-editor" style="display:flex;flex-direction:column;gap:6px">
  <div style="display:flex;flex-wrap:wrap;gap:8px;align-items:center">
    <label>Label <select class="geo-label" aria-label="Label for new or selected box"></select></label>
    <button type="button" class="geo-delete">Delete selected box</button>
    <button type="button" class="geo-clear">Clear all</button>
    <span class="geo-status" style="opacity:.8"></span>
  </div>
  <div class="geo-note" role="status" hidden style="color:var(--error-text-color);font-size:.9em"></div>
  <canvas class="geo-canvas" tabindex="0" width="512" height="512" aria-label="Layout canvas"
    style="width:100%;max-width:512px;aspect-ratio:1;border:1px solid #999;touch-action:none;cursor:crosshair"></canvas>
  <div style="font-size:.85em;opacity:.8">Drag on empty space to draw a box, drag a box to move it, drag a corner to
  resize it; pick a label first (or select a box and change its label); Delete removes the selected box.</div>
</div>
"""
PRIVATE = {"api_visibility": "private"}
def build(ctx: DemoContext) -> gr.Blocks:
    page = GeoDiffusionPage(ctx)
    first = ctx.default_weights()
    config, start = page.config(first), page.start_layout(first)
    w = SimpleNamespace()
    with gr.Blocks(title=ctx.demo.title, analytics_enabled=False) as blocks:
        ui.paper_card(ctx.demo)
        w.checkpoint = ui.weights_dropdown(ctx, label="Checkpoint")  # the full width: names are never truncated
        w.weight_note = ui.WeightsView.new_banner(ctx, WORKS_WITHOUT_WEIGHTS, first)
        with gr.Row():
            with gr.Column(scale=1):
                (w.editor, w.camera, w.timeofday, w.weather, w.layout_json, w.table,
                 w.apply_table) = _layout_column(start, config)
            with gr.Column(scale=1):
                w.seed, w.steps, w.cfg, w.sampler, w.num_images, w.use_es, w.es_factor = _settings(config)
                w.run = gr.Button("Generate", variant="primary")
                w.show_boxes = gr.Checkbox(True, label="Draw layout boxes over the images")
                w.gallery = gr.Gallery(label="Generated images", columns=2, height="auto", format="png",
                                       elem_id="geo-gallery", visible=False)  # shown with the first images
                w.prompt = gr.Textbox(page.preview_prompt(start, first), label="Prompt the model reads",
                                      interactive=False, elem_id="geo-prompt")
                w.notes = gr.Markdown(page.budget_note(start, first))
                w.export = gr.Button("Export as COCO dataset", interactive=False)  # until there are images
                w.export_file = gr.File(label="COCO detection dataset (images + annotations/instances.json)",
                                        elem_id="geo-export", visible=False)
        w.n_state, w.es_state, w.result = gr.State(1), gr.State(None), gr.State(None)
        _examples(w.layout_json, w.checkpoint)
        ui.embed_section(ctx, blocks)
        readers = _wire_layout(page, w)
        _wire_generation(ctx, page, w)
        _check_layout(page, w, readers)
        ui.serve_endpoints(ctx)
    return blocks


def _wire_layout(page: GeoDiffusionPage, w: SimpleNamespace) -> list:
    """The layout JSON is the one source of truth: the checkpoint, the canvas, the table and the camera/time/weather
    controls write it, and every change of it redraws the others, the prompt and the budget note. Returns the events
    that read the layout text and may leave it as it was (for ``_check_layout``)."""

    def on_checkpoint(name, text, sampler_, shown=None):
        cfg_ = page.config(name)
        text = actions.layout_for_checkpoint(text, cfg_)
        return (text, actions.editor_value(text, cfg_, shown), gr.update(visible=cfg_.uses_camera),
                gr.update(visible=cfg_.uses_time_weather), gr.update(visible=cfg_.uses_time_weather),
                gr.update(value=cfg_.default_steps(sampler_)), gr.update(value=cfg_.cfg_scale),
                gr.update(choices=actions.sampler_choices(cfg_), info=actions.sampler_info(cfg_)),
                page.preview_prompt(text, name), page.budget_note(text, name))

    def on_sampler(sampler_, n_steps, name):
        return actions.steps_for_sampler(sampler_, n_steps, page.config(name))

    def on_layout(text, name, shown):
        fields = actions.layout_fields(text)
        return (actions.editor_value(text, page.config(name), shown), actions.table_from_layout(text),
                page.preview_prompt(text, name), *(gr.update(value=fields[k]) if k in fields else gr.update()
                                                  for k, _ in actions.LAYOUT_FIELDS), page.budget_note(text, name))

    w.checkpoint.change(on_checkpoint, [w.checkpoint, w.layout_json, w.sampler, w.editor],
                        [w.layout_json, w.editor, w.camera, w.timeofday, w.weather, w.steps, w.cfg, w.sampler,
                         w.prompt, w.notes], **PRIVATE)
    w.sampler.input(on_sampler, [w.sampler, w.steps, w.checkpoint], w.steps, **PRIVATE)
    w.layout_json.change(on_layout, [w.layout_json, w.checkpoint, w.editor],
                         [w.editor, w.table, w.prompt, w.camera, w.timeofday, w.weather, w.notes], **PRIVATE)
    readers = [w.editor.input(actions.layout_from_editor, [w.editor, w.layout_json], w.layout_json, **PRIVATE),
               w.apply_table.click(ui.user_errors(actions.layout_from_table), [w.table, w.layout_json],
                                   w.layout_json, **PRIVATE)]
    for control, key in ((w.camera, "camera"), (w.timeofday, "timeofday"), (w.weather, "weather")):
        readers.append(control.input(lambda t, v, key=key: actions.set_layout_field(t, key, v),
                                     [w.layout_json, control], w.layout_json, **PRIVATE))
    return readers


def _check_layout(page: GeoDiffusionPage, w: SimpleNamespace, readers: list) -> None:
    """The layout's sentence beside the layout box: Generate's layout check, as a validator, after every change of
    the layout text or of the checkpoint, and after the ``readers`` (events that read the text and may leave it as it
    was). Gradio runs the events of one trigger one after another (none after one its validator refused), and clears
    an input's sentence when an event that reads the input starts or when a later event ends: so the check is
    registered last (after the weights banner's event too), as each trigger's last event."""

    def mark_layout(text, name):
        """Nothing to do: its validator puts the layout's sentence beside the layout box."""

    mark = {"fn": mark_layout, "inputs": [w.layout_json, w.checkpoint], "outputs": None, "trigger_mode": "always_last",
            "validator": ui.validator(page.check_layout), **PRIVATE}
    w.layout_json.change(**mark)
    w.checkpoint.change(**mark)
    for event in readers:
        event.then(**mark)


def _wire_generation(ctx: DemoContext, page: GeoDiffusionPage, w: SimpleNamespace) -> None:
    """Generate (checked before it is queued), the gallery and the export that appear with the first images, and
    the weights view that follows every model call."""

    def show_images(result_, boxes):
        """The gallery appears with the first images, and export becomes possible once there are some."""
        return (gr.update(value=actions.gallery_items(result_, boxes), visible=result_ is not None),
                gr.update(interactive=result_ is not None))

    @ui.model_call
    def generate_on_page(layout_json, checkpoint, seed, steps, cfg, num_images=1, epsilon_scaling=None,
                         sampler="default", progress=gr.Progress()):
        progress(0, desc="Loading the checkpoint")
        out = page.generate(layout_json, checkpoint, seed, steps, cfg, num_images, epsilon_scaling, sampler,
                            callback=lambda i, n: progress((i, n), desc="Denoising", unit="steps"),
                            on_download=ui.download_progress(progress))
        return out.prompt, actions.summary(out), page.result(out, checkpoint)

    @ui.user_errors
    def export_dataset(result):
        return gr.update(value=str(actions.export_dataset(result, lambda: ui.output_folder("geodiffusion-coco"))),
                         visible=True)

    w.num_images.change(int, w.num_images, w.n_state, **PRIVATE)
    gr.on([w.use_es.change, w.es_factor.change], lambda on, lam: float(lam) if on else None, [w.use_es, w.es_factor],
          w.es_state, **PRIVATE)
    w.use_es.change(lambda on: gr.update(visible=on), w.use_es, w.es_factor, **PRIVATE)
    generated = w.run.click(generate_on_page, [w.layout_json, w.checkpoint, w.seed, w.steps, w.cfg, w.n_state,
                                               w.es_state, w.sampler], [w.prompt, w.notes, w.result],
                            api_name="generate_on_page", validator=ui.validator(page.check_generate), **PRIVATE,
                            **ui.model_events(ctx))
    generated.success(show_images, [w.result, w.show_boxes], [w.gallery, w.export], **PRIVATE)
    ui.WeightsView(ctx, [w.checkpoint], w.weight_note, WORKS_WITHOUT_WEIGHTS).follow(generated)
    w.show_boxes.change(actions.gallery_items, [w.result, w.show_boxes], w.gallery, **PRIVATE)
    w.export.click(export_dataset, w.result, w.export_file, **PRIVATE)


def _layout_column(start: str, config):
    """The canvas editor, camera/time/weather, the layout JSON and the table of boxes."""
    editor = gr.HTML(value=actions.editor_value(start, config), html_template=EDITOR_HTML,
                     js_on_load=EDITOR_JS, elem_id="geo-layout-editor")
    with gr.Row():
        camera = gr.Dropdown(list(CAMERAS), value="front", label="Camera view", visible=config.uses_camera)
        timeofday = gr.Radio(list(TIMES_OF_DAY), value="daytime", label="Time of day",
                             visible=config.uses_time_weather)
        weather = gr.Radio(list(WEATHERS), value="sunny", label="Weather", visible=config.uses_time_weather)
    layout_json = gr.Textbox(start, label="Layout (official JSON format, coordinates in [0, 1])", lines=3,
                             elem_id="geo-layout-json")
    with gr.Accordion("Edit boxes as a table", open=False):
        table = gr.Dataframe(actions.table_from_layout(start), headers=actions.TABLE_HEADERS,
                             datatype=["str", "number", "number", "number", "number"], column_count=(5, "fixed"),
                             interactive=True, label="Boxes")
        apply_table = gr.Button("Apply table to layout")
    return editor, camera, timeofday, weather, layout_json, table, apply_table


def _settings(config):
    """Seed, steps and guidance (the checkpoint's defaults preset), sampler, number of images, Epsilon Scaling."""
    with gr.Row():
        seed = gr.Number(0, label="Seed", precision=0, minimum=0)
        steps = gr.Number(config.num_inference_steps, precision=0, label="Steps",
                          info=f"1 to {MAX_STEPS}; the checkpoint's default is preset")
        cfg = gr.Slider(0, MAX_GUIDANCE, value=config.cfg_scale, step=0.5, label="Guidance scale (cfg)")
    sampler = gr.Radio(actions.sampler_choices(config), value="default", label="Sampler",
                       info=actions.sampler_info(config), elem_id="geo-sampler")
    with gr.Row():
        num_images = gr.Slider(1, actions.PAGE_MAX_IMAGES, value=1, step=1, label="Images")
        use_es = gr.Checkbox(False, label="Epsilon Scaling (ICLR 2024)")
        es_factor = gr.Slider(1.0, 1.02, value=1.005, step=0.001, label="λ (divides the predicted noise)",
                              visible=False)  # with Epsilon Scaling only
    return seed, steps, cfg, sampler, num_images, use_es, es_factor


def _examples(layout_json, checkpoint) -> gr.Dataset:
    """Every example as a small picture of its layout with its checkpoint's name; a click loads both."""
    items = actions.examples_for()
    samples = [[f'<div class="geo-example">{actions.layout_svg(layout, 96, 96)}<br><small>{html.escape(name)}'
                "</small></div>"] for layout, name in items]
    dataset = gr.Dataset(components=[gr.HTML(visible=False)], samples=samples, type="index",
                         label="Examples (click one: its layout and checkpoint)", samples_per_page=len(samples))
    dataset.click(lambda index: (json.dumps(items[index][0]), items[index][1]), dataset, [layout_json, checkpoint],
                  **PRIVATE)
    return dataset
