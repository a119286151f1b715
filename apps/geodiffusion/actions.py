"""What the GeoDiffusion pages do, apart from any UI toolkit (no gradio, no streamlit, no torch at import).

The Gradio page (page.py) and the Streamlit page (streamlit_page.py) both call ``GeoDiffusionPage``: the checkpoint's
generation config (limits and defaults), the check a request passes before it is queued, the generation itself,
and what a result looks like on a page (gallery items, summary, COCO export). The layout JSON text is the one
source of truth of a page; the helpers below turn it into the canvas editor's value and the table's rows and back.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apps.geodiffusion import checks
from apps.geodiffusion.export import draw_layout, export_coco_zip
from apps.geodiffusion.layout import (
    CAMERAS,
    FAST_SAMPLING_STEPS,
    KNOWN_CONFIGS,
    TIMES_OF_DAY,
    WEATHERS,
    BoxProblem,
    GenerationConfig,
    Layout,
    check_box,
    encode_prompt,
    load_generation_config,
    load_layout_data,
    parse_layout,
)
from apps.views import text
from shared import weights
from shared.context import DemoContext
from shared.errors import UserInputError, page_inputs
from shared.pipeline import Callback

if TYPE_CHECKING:
    from apps.geodiffusion.pipeline import GeoDiffusionOutput
    from apps.geodiffusion.tokens import LayoutEncoding

WORKS_WITHOUT_WEIGHTS = "You can still draw layouts and see the prompt."
TABLE_HEADERS = ["label", "x1", "y1", "x2", "y2"]
PAGE_MAX_IMAGES = 4  # what the pages offer at once (the API takes up to layout.MAX_IMAGES)
LAYOUT_FIELDS = (("camera", CAMERAS), ("timeofday", TIMES_OF_DAY), ("weather", WEATHERS))
SCHEDULER_NAMES = {"PNDMScheduler": "PNDM", "DPMSolverMultistepScheduler": "DPM-Solver++"}
# Seconds per 256² / 512² image on 2 CPU cores (fp32, full-size models): (fixed part, per UNet evaluation), as
# benchmarks/geodiffusion_sampling.py estimates them from short calls (BENCHMARKS.md, "GeoDiffusion: fast sampling";
# tests/geodiffusion/test_sampling.py holds these to that table); the settings' trade-off line.
CPU_SECONDS = {256: (2.4, 1.87), 512: (9.74, 6.17)}

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


def examples_for(dataset: str | None = None) -> list[tuple[dict, str]]:
    """(layout, checkpoint) examples, all or only those of one dataset's checkpoints (their labels fit it)."""
    return [(layout, name) for layout, name in NUIMAGES_EXAMPLES + COCO_EXAMPLES
            if dataset is None or KNOWN_CONFIGS[name].dataset == dataset]


@dataclass(frozen=True)
class Generated:
    """What a page keeps of a generation (Gradio state, Streamlit session state), for its gallery and export."""

    output: GeoDiffusionOutput
    dataset: str  # the checkpoint's dataset: its class list numbers the COCO categories


class GeoDiffusionPage:
    """The pages' actions on one ``DemoContext``: configs, checks, generation, and the text a page shows."""

    def __init__(self, ctx: DemoContext):
        self.ctx = ctx
        self._tokenizers: dict = {}

    def folder(self, name: str | None) -> Path | None:
        """The checkpoint's folder if it is on disk (bundled or in the HF cache), without downloading."""
        ws = self.ctx.demo.weight_set(name or self.ctx.default_weights())
        return weights.local_folder(self.ctx.demo.id, ws) or weights.cached_folder(self.ctx.demo.id, ws)

    def config(self, name: str | None) -> GenerationConfig:
        """The checkpoint's own generation_config.json when on disk (what the pipeline will use), else the released
        values from the fact sheet, so a page shows the right controls, limits and defaults before any download."""
        ws = self.ctx.demo.weight_set(name or self.ctx.default_weights())
        return self.checkpoint_config(ws.name) or KNOWN_CONFIGS[ws.name]

    def checkpoint_config(self, name: str | None) -> GenerationConfig | None:
        """The checkpoint's generation_config.json if the checkpoint is on disk and it reads, else None."""
        folder = self.folder(name)
        if folder is not None:
            try:
                return load_generation_config(folder)
            except (OSError, ValueError, KeyError):
                pass
        return None

    def start_layout(self, name: str | None) -> str:
        """The first example of the checkpoint's dataset, as layout JSON text."""
        return json.dumps(examples_for(self.config(name).dataset)[0][0])

    @page_inputs(weights="checkpoint", layout="layout_json", num_inference_steps="steps", guidance_scale="cfg")
    def check_generate(self, layout_json: str | None, checkpoint: str | None, seed: Any = 0, steps: Any = None,
                       cfg: Any = None, num_images: Any = 1, epsilon_scaling: Any = None,
                       sampler: Any = "default") -> checks.GeoDiffusionInputs:
        """``GeoDiffusionPipeline.check_inputs`` for the page's Generate inputs, before any weights load: the
        pipeline's arguments, normalised. An error names the pipeline's argument (``num_inference_steps``); the
        validator marks the page's input (``steps``, from ``page_inputs``)."""
        return checks.check_inputs(layout_json, seed, 1 if num_images is None else num_images, steps, cfg,
                                   epsilon_scaling, None, sampler, config=self.config(checkpoint))

    @page_inputs(weights="checkpoint", layout="layout_json")
    def check_layout(self, layout_json: str | None, checkpoint: str | None) -> Layout:
        """Generate's check of the layout alone, run at every change of the layout text (the page's validator puts
        its sentence beside the layout box)."""
        return checks.check_layout(layout_json, config=self.config(checkpoint))

    def generate(self, layout_json: str | None, checkpoint: str | None, seed: Any = 0, steps: Any = None,
                 cfg: Any = None, num_images: Any = 1, epsilon_scaling: Any = None, sampler: Any = "default",
                 callback: Callback | None = None, on_download: weights.Progress | None = None) -> GeoDiffusionOutput:
        """Check (no weights needed), then load the checkpoint (or download it, reporting bytes) and generate."""
        inputs = self.check_generate(layout_json, checkpoint, seed, steps, cfg, num_images, epsilon_scaling, sampler)
        with self.ctx.compute(checkpoint, on_download) as pipe:
            return pipe(**inputs.arguments(), callback=callback)

    def encode_layout(self, layout_json: str | None, checkpoint: str | None) -> LayoutEncoding:
        """The exact prompt for a layout and, where the checkpoint's tokenizer is on this server, its CLIP token count,
        input ids and the boxes the 77-token limit cuts; needs no weights."""
        from apps.geodiffusion.tokens import encode_layout

        layout = parse_layout(layout_json, self.config(checkpoint))
        name = self.ctx.demo.weight_set(checkpoint or self.ctx.default_weights()).name
        try:
            tokenizer = self.tokenizer(name)
        except (OSError, ValueError):  # the checkpoint is here, its tokenizer files are not (or not GeoDiffusion's)
            tokenizer = None
        return encode_layout(layout, self.config(name), name, tokenizer, self.checkpoint_config(name) is not None)

    def tokenizer(self, name: str | None):
        """The fast tokenizer of a checkpoint that is already on disk (no download, no torch), else None."""
        ws = self.ctx.demo.weight_set(name or self.ctx.default_weights())
        if ws.name not in self._tokenizers:
            folder = self.folder(ws.name)
            if folder is None:
                return None
            from apps.geodiffusion.tokens import LocationTokenizer

            config = self.config(ws.name)
            self._tokenizers[ws.name] = LocationTokenizer.from_pretrained(folder / "tokenizer",
                                                                          config.num_location_tokens)
        return self._tokenizers[ws.name]

    def preview_prompt(self, layout_json: str | None, name: str | None) -> str:
        """The prompt the model would read, or why the layout is not ready yet."""
        try:
            return encode_prompt(layout_json or "", self.config(name))
        except UserInputError as error:
            return f"(layout not ready: {error})"

    def budget_note(self, layout_json: str | None, name: str | None) -> str:
        """How many of CLIP's 77 tokens the prompt uses, and which boxes the limit would cut (checkpoint on disk)."""
        try:
            config = self.config(name)
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

    def result(self, output: GeoDiffusionOutput, checkpoint: str | None) -> Generated:
        return Generated(output, self.config(checkpoint).dataset)


def sampler_choices(config: GenerationConfig) -> list[tuple[str, str]]:
    """(label, value) of each sampler for a checkpoint: its official scheduler and steps, and fast sampling."""
    return [(f"Official ({config.official_scheduler}, {config.num_inference_steps} steps)", "default"),
            (f"Fast sampling (DPM-Solver++, {FAST_SAMPLING_STEPS} steps)", "fast")]


def unet_evaluations(scheduler: str, steps: int) -> int:
    """UNet evaluations of a call: PNDM (as released, without Runge-Kutta steps) takes its first step twice."""
    return steps + 1 if scheduler == "PNDM" else steps


def sampler_info(config: GenerationConfig) -> str:
    """The trade-off of fast sampling for a checkpoint, with the time per image estimated from CPU timings."""
    size = min(CPU_SECONDS, key=lambda side: abs(side - max(config.width, config.height)))
    fixed, per_evaluation = CPU_SECONDS[size]
    official = fixed + per_evaluation * unet_evaluations(config.official_scheduler, config.num_inference_steps)
    fast = fixed + per_evaluation * FAST_SAMPLING_STEPS
    return (f"Fast sampling takes {official / fast:.1f}× less time per image than the official "
            f"{config.num_inference_steps} {config.official_scheduler} steps (estimated from short timed calls on 2 "
            f"CPU cores at {size}²). "
            "The same seed gives a different image, and the paper's results use the official sampler. Choosing "
            f"it sets Steps to {FAST_SAMPLING_STEPS} unless you changed them.")


def steps_for_sampler(sampler: str, steps: Any, config: GenerationConfig) -> Any:
    """The Steps a page shows after the sampler changes: the new sampler's default where Steps still hold the other
    sampler's default, else the person's own number."""
    other = "default" if sampler == "fast" else "fast"
    return config.default_steps(sampler) if steps == config.default_steps(other) else steps


def summary(output: GeoDiffusionOutput) -> str:
    """One markdown paragraph on what was generated, then a paragraph per warning."""
    scheduler = SCHEDULER_NAMES.get(output.scheduler, output.scheduler)
    sampler = f"fast sampling ({scheduler})" if output.sampler == "fast" else f"{scheduler} (the checkpoint's sampler)"
    lines = [f"{len(output.images)} image(s), {output.width}x{output.height}, {output.num_inference_steps} steps, "
             f"cfg {output.guidance_scale}, seed {output.seed}, {sampler}"
             + (f", Epsilon Scaling λ={output.epsilon_scaling}" if output.epsilon_scaling else "") + "."]
    lines += [f"⚠️ {w}" for w in output.warnings]
    return "\n\n".join(lines)


def gallery_items(result: Generated | None, show_boxes: bool) -> list:
    """(image, caption) pairs for a gallery, with the layout's boxes drawn over the images or not."""
    if not result:
        return []
    out = result.output
    return [(draw_layout(im, out.layout) if show_boxes else im, f"seed {out.seed} #{i + 1}")
            for i, im in enumerate(out.images)]


def export_dataset(result: Generated | None, folder: str | Path | Callable[[], Path]) -> Path:
    """The generated images and their layout as a COCO detection dataset zip in ``folder`` (or in the folder a
    function makes, called only when there is something to export)."""
    if not result:
        raise UserInputError("Generate images first, then export them as a COCO dataset.")
    out = result.output
    folder = Path(folder() if callable(folder) else folder)
    return export_coco_zip(out.images, out.layout, result.dataset, folder / "geodiffusion_coco.zip",
                           prompt=out.prompt)


def export_bytes(result: Generated | None) -> bytes:
    """The same COCO zip, in memory (a download button's data)."""
    if not result:
        raise UserInputError("Generate images first, then export them as a COCO dataset.")
    out = result.output
    buffer = io.BytesIO()
    export_coco_zip(out.images, out.layout, result.dataset, buffer, prompt=out.prompt)
    return buffer.getvalue()


def load_layout_json(text: str | None) -> dict:
    """The layout text as a dict without checking labels or boxes (the editor and table show whatever the person
    has); a UserInputError only when it is not a JSON layout at all."""
    return load_layout_data(text or "")


def editor_value(layout_json: str | None, config: GenerationConfig, shown: str | None = None) -> str:
    """The canvas editor's value: the layout, the labels to offer, each box's mark (the few words of the check that
    refuses it, None for a box the checkpoint takes) and a note that says what the marks mean. While the text is not
    a layout the editor keeps ``shown``'s layout (the last one it could read), says so, and takes no edits."""
    try:
        layout, readable = load_layout_json(layout_json), True
    except UserInputError:
        layout, readable = _editor_layout(shown), False
    marks = box_marks(layout, config)
    return json.dumps({"layout": layout, "classes": list(config.classes), "marks": marks, "readable": readable,
                       "note": editor_note(layout, marks, readable)})


def _editor_layout(value: str | None) -> dict:
    """The layout an editor value holds (an empty one where it holds none)."""
    try:
        layout = json.loads(value or "{}").get("layout")
    except (ValueError, TypeError, AttributeError, RecursionError):  # not an editor value: nothing to keep
        layout = None
    return layout if isinstance(layout, dict) else {"bbox": []}


def box_marks(layout: dict, config: GenerationConfig) -> list[str | None]:
    """Per box of a layout, the few words its drawing is marked with where the checkpoint refuses it (the pipeline's
    own check of the box, ``check_box``), else None."""
    boxes = layout.get("bbox")
    marks: list[str | None] = []
    for index, raw in enumerate(boxes if isinstance(boxes, list) else []):
        try:
            check_box(index, raw, config)
            marks.append(None)
        except BoxProblem as problem:
            marks.append(problem.mark)
    return marks


def editor_note(layout: dict, marks: list[str | None], readable: bool = True) -> str:
    """What the editor says above its canvas: that it shows the last readable layout, or which boxes are marked."""
    if not readable:
        return ("Showing the last readable layout: the layout text below cannot be read (its message says why). "
                "Boxes can be drawn here again once it can.")
    marked = [f"box {i + 1}{_label(layout['bbox'][i])} ({mark})" for i, mark in enumerate(marks) if mark]
    if not marked:
        return ""
    return (f"Dashed red: {'; '.join(marked)}. The checkpoint cannot take {'it' if len(marked) == 1 else 'them'}; "
            "the message at the layout text below says what to change.")


def _label(box: Any) -> str:
    """A box's label as a note names it, after a space and quoted as written ("" where it has no text label)."""
    label = box[0] if isinstance(box, (list, tuple)) and box else None
    return f" {json.dumps(label, ensure_ascii=False)}" if isinstance(label, str) else ""


def layout_from_editor(value: str | None, current: str) -> str:
    """The editor's layout as JSON text, or ``current`` unchanged when it is the same layout, or when the editor
    shows the last readable layout (the text, which it could not read, is the person's to fix)."""
    try:
        value = json.loads(value or "{}")
        layout = value.get("layout", {"bbox": []})
    except (json.JSONDecodeError, AttributeError):
        return current
    if value.get("readable") is False:
        return current
    try:
        if load_layout_json(current) == layout:
            return current
    except UserInputError:
        pass
    return json.dumps(layout)


def table_from_layout(layout_json: str | None) -> list[list]:
    """The layout's boxes as table rows [label, x1, y1, x2, y2] (rows of any other shape left out)."""
    try:
        boxes = load_layout_json(layout_json).get("bbox") or []
    except UserInputError:
        return []
    return [list(b) for b in boxes if isinstance(b, (list, tuple)) and len(b) == 5]


def layout_from_table(rows, layout_json: str | None) -> str:
    """Replace the layout's boxes by the table's rows (a DataFrame or lists; empty rows skipped)."""
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


def set_layout_field(layout_json: str | None, key: str, value: str) -> str:
    """The layout text with ``key`` (camera, timeofday, weather) set; unchanged when it is not a layout yet."""
    try:
        layout = load_layout_json(layout_json)
    except UserInputError:
        return layout_json or ""
    if layout.get(key) == value:
        return layout_json or ""
    layout[key] = value
    return json.dumps(layout)


def layout_for_checkpoint(layout_json: str | None, config: GenerationConfig) -> str:
    """The layout text without the fields the checkpoint does not read (a COCO-Stuff checkpoint has no camera, time
    or weather); unchanged when it is not a layout yet or has none of them."""
    try:
        layout = load_layout_json(layout_json)
    except UserInputError:
        return layout_json or ""
    unread = ({"camera"} if not config.uses_camera else set()) | (
        {"timeofday", "weather"} if not config.uses_time_weather else set())
    if not unread & set(layout):
        return layout_json or ""
    return json.dumps({key: value for key, value in layout.items() if key not in unread})


def layout_fields(layout_json: str | None) -> dict[str, str]:
    """The camera / timeofday / weather values the layout text sets to a known value (for the page's controls)."""
    try:
        data = load_layout_json(layout_json)
    except UserInputError:
        return {}
    return {key: data[key] for key, allowed in LAYOUT_FIELDS if data.get(key) in allowed}


def layout_svg(layout: dict, width: int = 224, height: int = 126) -> str:
    """A layout as a small picture: each box outlined in a colour of its label, the label inside (the hub's card;
    coordinates are the layout's own, 0-1, on a 16:9 frame)."""
    shapes = []
    for label, x0, y0, x1, y1 in layout.get("bbox", []):
        hue = sum(map(ord, str(label))) * 67 % 360
        x, y, w, h = x0 * width, y0 * height, max(1.0, (x1 - x0) * width), max(1.0, (y1 - y0) * height)
        shapes.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="hsl({hue} 70% 50% / .18)" '
                      f'stroke="hsl({hue} 70% 40%)" stroke-width="1.5"/>'
                      f'<text x="{x + 3:.1f}" y="{y + 11:.1f}" font-size="9" font-family="sans-serif" '
                      f'fill="hsl({hue} 70% 30%)">{text(label)}</text>')
    return (f'<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
            f'aria-label="a layout of {len(shapes)} boxes"><rect width="{width}" height="{height}" fill="#f1f5f9"/>'
            + "".join(shapes) + "</svg>")


def preview() -> str:
    """The hub card's picture: the first example layout."""
    return layout_svg(examples_for()[0][0])
