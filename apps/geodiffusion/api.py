"""GeoDiffusion's API functions, declared once (``shared.api``): ``/generate`` (the model) and ``/encode_layout`` (the
prompt, no weights), each also an MCP tool."""

from __future__ import annotations

import json
from typing import Any
from weakref import WeakKeyDictionary

from apps.geodiffusion import checks
from apps.geodiffusion.actions import GeoDiffusionPage
from apps.geodiffusion.layout import (
    FAST_SAMPLING_STEPS,
    KNOWN_CONFIGS,
    MAX_GUIDANCE,
    MAX_LAYOUT_CHARS,
    MAX_SEED,
    MAX_STEPS,
    Layout,
    parse_layout,
)
from shared.api import Endpoint, Input
from shared.context import DemoContext

LAYOUT = {"camera": "front", "bbox": [["car", 0.1, 0.4, 0.3, 0.6]]}
LAYOUT_TEXT = (f"the layout as JSON text in the official format, e.g. {json.dumps(LAYOUT)}: each box is [label, x1, "
               "y1, x2, y2] with coordinates as fractions of the image in [0, 1] (x1, y1 top-left; x2, y2 "
               "bottom-right), labels from the checkpoint's classes (nuImages: car, truck, pedestrian, ...; "
               "COCO-Stuff: the 171 COCO-Stuff classes); camera (front, front left, front right, back, back left, "
               "back right), timeofday (daytime, night) and weather (sunny, rain) apply to the nuImages checkpoints; "
               "at most 22 boxes (nuImages) or 18 (COCO-Stuff)")
CHECKPOINTS = "the checkpoint (only those whose weights are on this server can run)"
PAGE_LAYOUT = ("The boxes to draw, as the official layouts write them: each box is [label, x1, y1, x2, y2], corners as "
               "fractions of the image (0 to 1, top-left then bottom-right), labels from the checkpoint's classes; "
               "nuImages layouts also name a camera, a time and the weather.")

ENDPOINTS = (
    Endpoint(
        name="generate",
        summary="Generate an image from a layout of labelled boxes with an official GeoDiffusion checkpoint (Stable "
                "Diffusion reading the boxes as location tokens); needs the checkpoint's weights.",
        inputs=(
            Input("layout_json", "text", LAYOUT_TEXT, max_length=MAX_LAYOUT_CHARS, argument="layout",
                  example=json.dumps(LAYOUT), label="Layout", multiline=True, help=PAGE_LAYOUT),
            Input("checkpoint", "weights", CHECKPOINTS, example="nuimages-256x256"),
            Input("seed", "integer", "random seed (same seed, same image)", default=0, minimum=0, maximum=MAX_SEED,
                  example=0),
            Input("steps", "integer", "denoising steps; null: the checkpoint's (100 nuImages, 50 COCO-Stuff), or "
                  f"{FAST_SAMPLING_STEPS} with sampler \"fast\"", default=None, minimum=1, maximum=MAX_STEPS,
                  argument="num_inference_steps", example=2, label="Denoising steps",
                  help=f"Leave empty for the checkpoint's own (100 nuImages, 50 COCO-Stuff; {FAST_SAMPLING_STEPS} "
                       f"with fast sampling)."),
            Input("cfg", "number", "classifier-free guidance scale; null: the checkpoint's (5.0 nuImages, 4.0 or 4.5 "
                  "COCO-Stuff)", default=None, minimum=0.0, maximum=MAX_GUIDANCE, argument="guidance_scale",
                  example=5.0, label="Guidance scale",
                  help="Classifier-free guidance; leave empty for the checkpoint's own (5.0 nuImages, 4.0 or 4.5 "
                       "COCO-Stuff)."),
            Input("sampler", "choice", "\"default\" (the checkpoint's official scheduler: PNDM for nuImages, "
                  "DPM-Solver++ for COCO-Stuff) or \"fast\" (DPM-Solver++, "
                  f"{FAST_SAMPLING_STEPS} steps unless steps are given: 2.4x (COCO-Stuff) to 4.8x (nuImages) less "
                  "time per image on the CPU; the same seed gives a different image than the official one's)",
                  default="default", choices=("default", "fast"), example="default",
                  choice_labels=("The checkpoint's official sampler", f"Fast sampling ({FAST_SAMPLING_STEPS} steps)"),
                  help="Fast sampling takes 2.4x to 4.8x less time on a CPU; the same seed then gives another image "
                       "than the paper's sampler."),
        ),
        returns='{"images": [one PNG data URL], "prompt", "layout" (official format), "seed", "num_inference_steps", '
                '"guidance_scale", "epsilon_scaling" (null), "dropped_boxes" (indices of boxes CLIP\'s 77 tokens '
                'cut), "width", "height", "sampler", "scheduler" (the diffusers scheduler that ran), "warnings"}',
        run="apps.geodiffusion.api:generate",
        check="apps.geodiffusion.api:check_generate",
    ),
    Endpoint(
        name="encode_layout",
        summary="The exact prompt GeoDiffusion reads for a layout, its CLIP token count and which boxes the 77-token "
                "limit cuts; needs no model weights (check a layout before generating).",
        inputs=(
            Input("layout_json", "text", "the layout as JSON text, in the same format as generate's, e.g. "
                  f"{json.dumps(LAYOUT)} (boxes [label, x1, y1, x2, y2], coordinates fractions in [0, 1])",
                  max_length=MAX_LAYOUT_CHARS, argument="layout", example=json.dumps(LAYOUT), label="Layout",
                  multiline=True, help=PAGE_LAYOUT),
            Input("checkpoint", "weights", "the checkpoint whose generation config sets the prompt template, the "
                  "location-token grid and the classes", default=None, preference=tuple(KNOWN_CONFIGS)[:1],
                  example="nuimages-256x256"),
        ),
        returns='{"checkpoint", "prompt", "layout", "generation_config" ("checkpoint": its file here; "released": '
                'the published values), "location_grid", "width", "height", "token_count" (with BOS and EOS; null '
                'when the checkpoint\'s tokenizer is not on this server), "max_tokens" (77), "input_ids" (the 77 ids '
                'the text encoder reads), "dropped_boxes", "warnings"}',
        run="apps.geodiffusion.api:encode_layout",
        check="apps.geodiffusion.api:check_encode",
        work="light",  # no model and no GPU: outside the demo's model queue group
    ),
)
_PAGES: WeakKeyDictionary[DemoContext, GeoDiffusionPage] = WeakKeyDictionary()


def page_of(ctx: DemoContext) -> GeoDiffusionPage:
    """One ``GeoDiffusionPage`` per context (it keeps the checkpoints' tokenizers)."""
    if ctx not in _PAGES:
        _PAGES[ctx] = GeoDiffusionPage(ctx)
    return _PAGES[ctx]


def check_generate(ctx: DemoContext, layout_json, checkpoint, seed, steps, cfg, sampler) -> checks.GeoDiffusionInputs:
    return page_of(ctx).check_generate(layout_json, checkpoint, seed, steps, cfg, sampler=sampler)


def generate(ctx: DemoContext, layout_json, checkpoint, seed, steps, cfg, sampler) -> dict[str, Any]:
    return page_of(ctx).generate(layout_json, checkpoint, seed, steps, cfg, sampler=sampler).to_dict()


def check_encode(ctx: DemoContext, layout_json, checkpoint) -> Layout:
    return parse_layout(layout_json, page_of(ctx).config(checkpoint))


def encode_layout(ctx: DemoContext, layout_json, checkpoint) -> dict[str, Any]:
    return page_of(ctx).encode_layout(layout_json, checkpoint).to_dict()
