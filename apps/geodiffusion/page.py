"""The GeoDiffusion Gradio page: draw a layout (canvas, table or JSON), pick a checkpoint, generate, export as COCO.

The layout JSON textbox (the official input format) is the one source of truth: the canvas editor, the table, the
camera/time/weather controls and the examples all read and write it. No torch here: the pipeline loads lazily
through the shared pool.
"""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from apps.geodiffusion.export import draw_layout, export_coco_zip
from apps.geodiffusion.layout import (
    CAMERAS,
    KNOWN_CONFIGS,
    MAX_STEPS,
    TIMES_OF_DAY,
    WEATHERS,
    GenerationConfig,
    Layout,
    encode_prompt,
    load_generation_config,
    parse_layout,
)
from apps.ui import (
    download_progress,
    embed_section,
    model_call,
    model_events,
    output_folder,
    paper_card,
    user_errors,
    weights_dropdown,
    weights_notice,
)
from shared import weights
from shared.context import DemoContext
from shared.errors import UserInputError

EDITOR_JS = (Path(__file__).resolve().parent / "editor.js").read_text(encoding="utf-8")
EDITOR_HTML = """
<div class="geo-editor" style="display:flex;flex-direction:column;gap:6px">
  <div style="display:flex;flex-wrap:wrap;gap:8px;align-items:center">
    <label>Label <select class="geo-label" aria-label="Label for new or selected box"></select></label>
    <button type="button" class="geo-delete">Delete selected box</button>
    <button type="button" class="geo-clear">Clear all</button>
    <span class="geo-status" style="opacity:.8"></span>
  </div>
  <canvas class="geo-canvas" tabindex="0" width="512" height="512" aria-label="Layout canvas"
    style="width:100%;max-width:512px;aspect-ratio:1;border:1px solid #999;touch-action:none;cursor:crosshair"></canvas>
  <div style="font-size:.85em;opacity:.8">Drag on empty space to draw a box, drag a box to move it, drag a corner to
  resize it; pick a label first (or select a box and change its label); Delete removes the selected box.</div>
</div>
"""
TABLE_HEADERS = ["label", "x1", "y1", "x2", "y2"]
MAX_SEED = 2**63 - 1
WORKS_WITHOUT_WEIGHTS = "You can still draw layouts and see the prompt."

NUIMAGES_EXAMPLES = [
    ({"camera": "front", "bbox": [["car", 0.756875, 0.4622, 0.90375, 0.5844],
                                  ["car", 0.47625, 0.4822, 0.691875, 0.8011],
                                  ["car", 0.0, 0.4933, 0.223125, 0.9267], ["car", 0.273125, 0.4511, 0.47375, 0.6444],
                                  ["car", 0.7125, 0.6689, 0.999375, 1.0]]}, "nuimages-256x256"),
    ({"camera": "front left", "bbox": [["pedestrian", 0.12, 0.45, 0.18, 0.72], ["pedestrian", 0.2, 0.47, 0.25, 0.7],
                                       ["traffic_cone", 0.45, 0.62, 0.48, 0.7], ["barrier", 0.5, 0.58, 0.8, 0.7],
                                       ["truck", 0.6, 0.3, 0.95, 0.65]]}, "nuimages-512x512"),
    ({"camera": "back", "bbox": [["bus", 0.3, 0.25, 0.7, 0.7], ["bicycle", 0.05, 0.55, 0.15, 0.75],
                                 ["motorcycle", 0.8, 0.55, 0.9, 0.75], ["construction_vehicle", 0.72, 0.3, 0.99, 0.6]]},
     "nuimages-256x256"),
    ({"camera": "front", "timeofday": "night", "weather": "rain",
      "bbox": [["car", 0.4, 0.5, 0.6, 0.7], ["car", 0.05, 0.5, 0.3, 0.8], ["trailer", 0.65, 0.35, 0.98, 0.7]]},
     "nuimages-time-weather-512x512"),
]
COCO_EXAMPLES = [
    ({"bbox": [["truck", 0.1321, 0.3914, 0.7247, 0.7849], ["house", 0.0, 0.06875, 0.9046875, 0.5458],
               ["road", 0.0, 0.6, 1.0, 1.0], ["snow", 0.0, 0.4792, 1.0, 0.89375], ["tree", 0.0, 0.0, 1.0, 0.56875]]},
     "coco-stuff-256x256"),
    ({"bbox": [["sky-other", 0.0, 0.0, 1.0, 0.45], ["grass", 0.0, 0.55, 1.0, 1.0], ["tree", 0.6, 0.1, 0.95, 0.6],
               ["person", 0.2, 0.3, 0.4, 0.95], ["dog", 0.45, 0.65, 0.65, 0.9]]}, "coco-stuff-512x512"),
    ({"bbox": [["wall-other", 0.0, 0.0, 1.0, 0.5], ["dining table", 0.0, 0.5, 1.0, 1.0],
               ["pizza", 0.3, 0.55, 0.7, 0.85], ["cup", 0.75, 0.5, 0.88, 0.7], ["person", 0.05, 0.1, 0.35, 0.6]]},
     "coco-stuff-256x256"),
    ({"bbox": [["sky-other", 0.0, 0.0, 1.0, 0.4], ["grass", 0.0, 0.6, 1.0, 1.0], ["giraffe", 0.1, 0.1, 0.4, 0.9],
               ["zebra", 0.55, 0.5, 0.9, 0.85]]}, "coco-stuff-256x256"),
]


def checkpoint_folder(ctx: DemoContext, name: str | None) -> Path | None:
    """The checkpoint's folder if it is on disk (bundled or in the HF cache), without downloading."""
    ws = ctx.demo.weight_set(name or ctx.default_weights())
    return weights.local_folder(ctx.demo.id, ws) or weights.cached_folder(ctx.demo.id, ws)


def checkpoint_config(ctx: DemoContext, name: str | None) -> GenerationConfig:
    """The checkpoint's own generation_config.json when on disk (what the pipeline will use), else the released
    defaults from the fact sheet, so the page shows the right controls before any download."""
    ws = ctx.demo.weight_set(name or ctx.default_weights())
    folder = checkpoint_folder(ctx, ws.name)
    if folder is not None:
        try:
            return load_generation_config(folder)
        except (OSError, ValueError, KeyError):
            pass
    return KNOWN_CONFIGS[ws.name]


def load_layout_json(text: str) -> dict:
    """Parse without checking labels (the editor and table show whatever the user has), raising a clear error."""
    if not (text or "").strip():
        return {"bbox": []}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserInputError(f"The layout is not valid JSON ({error.msg} at line {error.lineno}, column "
                             f"{error.colno}).") from None
    if isinstance(data, list):
        data = {"bbox": data}
    if not isinstance(data, dict):
        raise UserInputError('The layout must be a JSON object such as {"bbox": [["car", 0.1, 0.4, 0.3, 0.6]]}.')
    return data


def editor_value(layout_json: str, classes: list[str]) -> str:
    try:
        layout = load_layout_json(layout_json)
    except UserInputError:
        layout = {"bbox": []}
    return json.dumps({"layout": layout, "classes": list(classes)})


def layout_from_editor(value: str, current: str) -> str:
    """The editor's layout as JSON text, or ``current`` unchanged when it is the same layout."""
    try:
        layout = json.loads(value or "{}").get("layout", {"bbox": []})
    except (json.JSONDecodeError, AttributeError):
        return current
    try:
        if load_layout_json(current) == layout:
            return current
    except UserInputError:
        pass
    return json.dumps(layout)


def table_from_layout(layout_json: str) -> list[list]:
    try:
        boxes = load_layout_json(layout_json).get("bbox") or []
    except UserInputError:
        return []
    return [list(b) for b in boxes if isinstance(b, (list, tuple)) and len(b) == 5]


def layout_from_table(rows, layout_json: str) -> str:
    """Replace the layout's boxes by the table's rows (empty rows skipped)."""
    layout = load_layout_json(layout_json)
    values = rows.values.tolist() if hasattr(rows, "values") else list(rows or [])
    boxes = []
    for row in values:
        cells = list(row)[:5]
        if all(c is None or str(c).strip() == "" for c in cells):
            continue
        try:
            boxes.append([str(cells[0]).strip(), *(float(c) for c in cells[1:5])])
        except (TypeError, ValueError, IndexError):
            raise UserInputError(f"Table row {len(boxes) + 1} must be a label and four numbers; got {cells}.") from None
    layout["bbox"] = boxes
    return json.dumps(layout)


def set_layout_field(layout_json: str, key: str, value: str) -> str:
    try:
        layout = load_layout_json(layout_json)
    except UserInputError:
        return layout_json
    if layout.get(key) == value:
        return layout_json
    layout[key] = value
    return json.dumps(layout)


def gallery_items(result: dict | None, show_boxes: bool) -> list:
    if not result:
        return []
    layout = Layout(**{**result["layout_fields"], "boxes": tuple(result["boxes"])})
    return [(draw_layout(im, layout) if show_boxes else im, f"seed {result['seed']} #{i + 1}")
            for i, im in enumerate(result["images"])]


class GeoDiffusionPage:
    """The page's actions, apart from the widgets, so tests and the API call the same code."""

    def __init__(self, ctx: DemoContext):
        self.ctx = ctx
        self._tokenizers: dict = {}

    def check(self, layout_json: str, checkpoint: str | None, seed, steps, cfg) -> tuple[Layout, str]:
        """Validate everything a person typed before any weights load; returns the layout and the prompt."""
        config = checkpoint_config(self.ctx, checkpoint)
        layout = parse_layout(layout_json or "", config)
        if steps is None or not 1 <= int(steps) <= MAX_STEPS:
            raise UserInputError(f"Steps must be between 1 and {MAX_STEPS}; got {steps}.")
        if cfg is None or not 0 <= float(cfg) <= 30:
            raise UserInputError(f"The guidance scale (cfg) must be between 0 and 30; got {cfg}.")
        if seed is None or not 0 <= int(seed) <= MAX_SEED:
            raise UserInputError(f"The seed must be a whole number between 0 and {MAX_SEED}; got {seed}.")
        return layout, encode_prompt(layout, config)

    def generate(self, layout_json: str, checkpoint: str | None, seed: int = 0, steps: int | None = None,
                 cfg: float | None = None, num_images: int = 1, epsilon_scaling: float | None = None, on_step=None,
                 on_download=None):
        config = checkpoint_config(self.ctx, checkpoint)
        steps = config.num_inference_steps if steps is None else steps
        cfg = config.cfg_scale if cfg is None else cfg
        layout, _ = self.check(layout_json, checkpoint, seed, steps, cfg)
        with self.ctx.compute(checkpoint, on_download) as pipe:
            return pipe(layout, seed=int(seed), num_images=int(num_images), num_inference_steps=int(steps),
                        guidance_scale=float(cfg), epsilon_scaling=epsilon_scaling, progress=on_step)

    def tokenizer(self, name: str | None):
        """The fast tokenizer of a checkpoint that is already on disk (no download, no torch), else None."""
        ws = self.ctx.demo.weight_set(name or self.ctx.default_weights())
        if ws.name not in self._tokenizers:
            folder = checkpoint_folder(self.ctx, ws.name)
            if folder is None:
                return None
            from apps.geodiffusion.tokens import LocationTokenizer

            config = checkpoint_config(self.ctx, ws.name)
            self._tokenizers[ws.name] = LocationTokenizer.from_pretrained(folder / "tokenizer",
                                                                          config.num_location_tokens)
        return self._tokenizers[ws.name]

    def budget_note(self, layout_json: str, name: str | None) -> str:
        """How many of CLIP's 77 tokens the prompt uses, and which boxes the limit would cut (checkpoint on disk)."""
        try:
            config = checkpoint_config(self.ctx, name)
            layout = parse_layout(layout_json or "", config)
            tokenizer = self.tokenizer(name)
        except (UserInputError, OSError, ValueError):
            return ""
        if tokenizer is None:
            return ""
        from apps.geodiffusion.tokens import truncated_boxes

        used = len(tokenizer.content_ids(encode_prompt(layout, config))) + 2
        dropped = truncated_boxes(layout, config, tokenizer)
        if not dropped:
            return f"The prompt uses {used} of CLIP's 77 tokens."
        names = ", ".join(f"#{i + 1} ({layout.boxes[i].label})" for i in dropped)
        return (f"⚠️ The prompt needs {used} tokens but CLIP reads 77: box(es) {names} would be cut. "
                "Remove boxes or use shorter labels.")


def build(ctx: DemoContext) -> gr.Blocks:
    page = GeoDiffusionPage(ctx)
    first = ctx.default_weights()
    config = checkpoint_config(ctx, first)
    start_layout = json.dumps(NUIMAGES_EXAMPLES[0][0] if config.dataset == "nuimages" else COCO_EXAMPLES[0][0])

    with gr.Blocks(title=ctx.demo.title, analytics_enabled=False) as blocks:
        paper_card(ctx.demo)
        with gr.Row():
            checkpoint = weights_dropdown(ctx, label="Checkpoint")
            weight_note = gr.HTML(weights_notice(ctx, first, WORKS_WITHOUT_WEIGHTS))
        with gr.Row():
            with gr.Column(scale=1):
                editor = gr.HTML(value=editor_value(start_layout, config.classes), html_template=EDITOR_HTML,
                                 js_on_load=EDITOR_JS, elem_id="geo-layout-editor")
                with gr.Row():
                    camera = gr.Dropdown(list(CAMERAS), value="front", label="Camera view",
                                         visible=config.uses_camera)
                    timeofday = gr.Radio(list(TIMES_OF_DAY), value="daytime", label="Time of day",
                                         visible=config.uses_time_weather)
                    weather = gr.Radio(list(WEATHERS), value="sunny", label="Weather",
                                       visible=config.uses_time_weather)
                layout_json = gr.Textbox(start_layout, label="Layout (official JSON format, coordinates in [0, 1])",
                                         lines=3, elem_id="geo-layout-json")
                with gr.Accordion("Edit boxes as a table", open=False):
                    table = gr.Dataframe(table_from_layout(start_layout), headers=TABLE_HEADERS,
                                         datatype=["str", "number", "number", "number", "number"],
                                         column_count=(5, "fixed"), interactive=True, label="Boxes")
                    apply_table = gr.Button("Apply table to layout")
            with gr.Column(scale=1):
                with gr.Row():
                    seed = gr.Number(0, label="Seed", precision=0, minimum=0)
                    steps = gr.Number(config.num_inference_steps, precision=0, label="Steps",
                                      info=f"1 to {MAX_STEPS}; the checkpoint's default is preset")
                    cfg = gr.Slider(0, 30, value=config.cfg_scale, step=0.5, label="Guidance scale (cfg)")
                with gr.Row():
                    num_images = gr.Slider(1, 4, value=1, step=1, label="Images")
                    use_es = gr.Checkbox(False, label="Epsilon Scaling (ICLR 2024)")
                    es_factor = gr.Slider(1.0, 1.02, value=1.005, step=0.001, label="λ (divides the predicted noise)")
                run = gr.Button("Generate", variant="primary")
                show_boxes = gr.Checkbox(True, label="Draw layout boxes over the images")
                gallery = gr.Gallery(label="Generated images", columns=2, height="auto", format="png",
                                     elem_id="geo-gallery")
                prompt = gr.Textbox(encode_prompt(start_layout, config), label="Prompt the model reads",
                                    interactive=False, elem_id="geo-prompt")
                notes = gr.Markdown(page.budget_note(start_layout, first))
                export = gr.Button("Export as COCO dataset")
                export_file = gr.File(label="COCO detection dataset (images + annotations/instances.json)",
                                      elem_id="geo-export")
        boxes_state = gr.State(True)
        n_state = gr.State(1)
        es_state = gr.State(None)
        result = gr.State(None)
        with gr.Row():
            with gr.Column():
                gr.Examples([[json.dumps(lay), ck] for lay, ck in NUIMAGES_EXAMPLES], [layout_json, checkpoint],
                            label="nuImages driving scenes")
            with gr.Column():
                gr.Examples([[json.dumps(lay), ck] for lay, ck in COCO_EXAMPLES], [layout_json, checkpoint],
                            label="COCO-Stuff scenes")
        embed_section(ctx.demo)

        def on_checkpoint(name, text):
            cfg_ = checkpoint_config(ctx, name)
            return (editor_value(text, cfg_.classes), gr.update(visible=cfg_.uses_camera),
                    gr.update(visible=cfg_.uses_time_weather), gr.update(visible=cfg_.uses_time_weather),
                    gr.update(value=cfg_.num_inference_steps), gr.update(value=cfg_.cfg_scale),
                    weights_notice(ctx, name, WORKS_WITHOUT_WEIGHTS), preview_prompt(text, name),
                    page.budget_note(text, name))

        def preview_prompt(text, name):
            try:
                return encode_prompt(text or "", checkpoint_config(ctx, name))
            except UserInputError as error:
                return f"(layout not ready: {error})"

        def on_layout(text, name):
            fields = {}
            try:
                data = load_layout_json(text)
                fields = {k: gr.update(value=data[k]) for k, allowed in
                          (("camera", CAMERAS), ("timeofday", TIMES_OF_DAY), ("weather", WEATHERS))
                          if data.get(k) in allowed}
            except UserInputError:
                pass
            return (editor_value(text, checkpoint_config(ctx, name).classes), table_from_layout(text),
                    preview_prompt(text, name), fields.get("camera", gr.update()),
                    fields.get("timeofday", gr.update()), fields.get("weather", gr.update()),
                    page.budget_note(text, name))

        @model_call
        def generate(layout_json: str, checkpoint: str, seed: float, steps: float, cfg: float, num_images=1,
                     epsilon_scaling=None, show_boxes=True, progress=gr.Progress()):
            """Generate images from a layout with an official GeoDiffusion checkpoint.

            Args:
                layout_json: the layout in the official format, e.g. {"camera": "front", "bbox": [["car", 0.1, 0.4,
                    0.3, 0.6]]}; coordinates are fractions of the image in [0, 1] (x1, y1 top-left; x2, y2
                    bottom-right); camera/timeofday/weather apply to the nuImages checkpoints.
                checkpoint: one of nuimages-256x256, nuimages-512x512, nuimages-time-weather-512x512,
                    coco-stuff-256x256, coco-stuff-512x512.
                seed: random seed (same seed, same images).
                steps: denoising steps, 1 to 200 (checkpoint default: 100 nuImages, 50 COCO-Stuff).
                cfg: classifier-free guidance scale (checkpoint default: 5.0 nuImages, 4.0/4.5 COCO-Stuff).
            """
            progress(0, desc="Loading the checkpoint")
            out = page.generate(layout_json, checkpoint, seed, steps, cfg, num_images=num_images or 1,
                                epsilon_scaling=epsilon_scaling,
                                on_step=lambda i, n: progress((i, n), desc="Denoising", unit="steps"),
                                on_download=download_progress(progress))
            state = {"images": out.images, "boxes": list(out.layout.boxes), "seed": out.seed, "prompt": out.prompt,
                     "dataset": checkpoint_config(ctx, checkpoint).dataset,
                     "layout_fields": {"camera": out.layout.camera, "timeofday": out.layout.timeofday,
                                       "weather": out.layout.weather}}
            lines = [f"{len(out.images)} image(s), {out.width}x{out.height}, {out.num_inference_steps} steps, "
                     f"cfg {out.guidance_scale}, seed {out.seed}"
                     + (f", Epsilon Scaling λ={out.epsilon_scaling}" if out.epsilon_scaling else "") + "."]
            lines += [f"⚠️ {w}" for w in out.warnings]
            return gallery_items(state, show_boxes), out.prompt, "\n\n".join(lines), state

        @user_errors
        def export_dataset(state):
            if not state:
                raise UserInputError("Generate images first, then export them as a COCO dataset.")
            folder = output_folder("geodiffusion-coco")
            layout = Layout(**{**state["layout_fields"], "boxes": tuple(state["boxes"])})
            return str(export_coco_zip(state["images"], layout, state["dataset"], folder / "geodiffusion_coco.zip",
                                       prompt=state["prompt"]))

        @user_errors
        def apply_rows(rows, text):
            return layout_from_table(rows, text)

        private = {"api_visibility": "private"}
        checkpoint.change(on_checkpoint, [checkpoint, layout_json],
                          [editor, camera, timeofday, weather, steps, cfg, weight_note, prompt, notes], **private)
        layout_json.change(on_layout, [layout_json, checkpoint],
                           [editor, table, prompt, camera, timeofday, weather, notes], **private)
        editor.input(layout_from_editor, [editor, layout_json], layout_json, **private)
        apply_table.click(apply_rows, [table, layout_json], layout_json, **private)
        camera.input(lambda t, v: set_layout_field(t, "camera", v), [layout_json, camera], layout_json, **private)
        timeofday.input(lambda t, v: set_layout_field(t, "timeofday", v), [layout_json, timeofday], layout_json,
                        **private)
        weather.input(lambda t, v: set_layout_field(t, "weather", v), [layout_json, weather], layout_json, **private)
        num_images.change(lambda n: int(n), num_images, n_state, **private)
        for trigger in (use_es.change, es_factor.change):
            trigger(lambda on, lam: float(lam) if on else None, [use_es, es_factor], es_state, **private)
        show_boxes.change(bool, show_boxes, boxes_state, **private)
        run.click(generate, [layout_json, checkpoint, seed, steps, cfg, n_state, es_state, boxes_state],
                  [gallery, prompt, notes, result], api_name="generate", **model_events(ctx))
        show_boxes.change(gallery_items, [result, show_boxes], gallery, **private)
        export.click(export_dataset, result, export_file, **private)
    return blocks
