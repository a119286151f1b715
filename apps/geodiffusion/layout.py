"""Layouts in the official input format, their validation, and the exact GeoDiffusion prompt.

A layout is ``{"bbox": [[label, x1, y1, x2, y2], ...], "camera": ..., "timeofday": ..., "weather": ...}`` with
corners in [0, 1] (top-left, bottom-right). Box corners become location tokens ``<lN>`` on the checkpoint's grid:
``x_d = int(round(x * (Wb - 1)))``, ``y_d = int(round(y * (Hb - 1)))``, ``N = y_d * Wb + x_d`` (row-major, Python's
round-half-even), and each box reads ``"<class text> <l{top-left}> <l{bottom-right}>"``.
"""

from __future__ import annotations

import functools
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.errors import UserInputError
from shared.validation import json_problem

NUIMAGES_CLASSES = ("car", "truck", "trailer", "bus", "construction_vehicle", "bicycle", "motorcycle", "pedestrian",
                    "traffic_cone", "barrier")
COCO_STUFF_CLASSES = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich",
    "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed",
    "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave", "oven",
    "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy bear", "hair drier", "toothbrush",
    "banner", "blanket", "branch", "bridge", "building-other", "bush", "cabinet", "cage", "cardboard", "carpet",
    "ceiling-other", "ceiling-tile", "cloth", "clothes", "clouds", "counter", "cupboard", "curtain", "desk-stuff",
    "dirt", "door-stuff", "fence", "floor-marble", "floor-other", "floor-stone", "floor-tile", "floor-wood", "flower",
    "fog", "food-other", "fruit", "furniture-other", "grass", "gravel", "ground-other", "hill", "house", "leaves",
    "light", "mat", "metal", "mirror-stuff", "moss", "mountain", "mud", "napkin", "net", "paper", "pavement", "pillow",
    "plant-other", "plastic", "platform", "playingfield", "railing", "railroad", "river", "road", "rock", "roof", "rug",
    "salad", "sand", "sea", "shelf", "sky-other", "skyscraper", "snow", "solid-other", "stairs", "stone", "straw",
    "structural-other", "table", "tent", "textile-other", "towel", "tree", "vegetable", "wall-brick", "wall-concrete",
    "wall-other", "wall-panel", "wall-stone", "wall-tile", "wall-wood", "water-other", "waterdrops", "window-blind",
    "window-other", "wood", "other",
)
# Class name -> the words the model was trained on.
CLASS_TEXT = {
    "nuimages": {**{c: c for c in NUIMAGES_CLASSES}, "construction_vehicle": "construction", "traffic_cone": "cone"},
    "coco_stuff": {c: c.replace("-", " ") for c in COCO_STUFF_CLASSES},
}
CLASSES = {"nuimages": NUIMAGES_CLASSES, "coco_stuff": COCO_STUFF_CLASSES}
CAMERAS = ("front", "front left", "front right", "back", "back left", "back right")
TIMES_OF_DAY = ("daytime", "night")
WEATHERS = ("sunny", "rain")
DEFAULTS = {"camera": "front", "timeofday": "daytime", "weather": "sunny"}

# The limits on a generation request, each defined here only (checked by GeoDiffusionPipeline.check_inputs; the pages
# read them for their controls).
MAX_STEPS = 200  # denoising steps, from 1
MAX_IMAGES = 8  # images per request, from 1
MAX_GUIDANCE = 30.0  # classifier-free guidance scale, from 0
EPSILON_SCALING_RANGE = (0.5, 1.5)  # Epsilon Scaling's lambda; the paper's useful values are just above 1
MAX_SEED = 2**63 - 1  # seeds from 0
MAX_LAYOUT_CHARS = 20_000  # characters of layout JSON text
LAYOUT_KEYS = {"bbox", "camera", "timeofday", "weather"}
# Samplers a request chooses from: "default" is the checkpoint's own scheduler and step count (the official loader's:
# PNDM for nuImages, DPM-Solver++ for COCO-Stuff); "fast" is DPM-Solver++ at FAST_SAMPLING_STEPS unless steps are set.
SAMPLERS = ("default", "fast")
FAST_SAMPLING_STEPS = 20


@dataclass(frozen=True)
class GenerationConfig:
    """The fields of a checkpoint's ``generation_config.json`` that inference reads."""

    dataset: str
    prompt_template: str
    num_bucket_per_side: tuple[int, int]
    cfg_scale: float
    num_inference_steps: int
    max_num_bbox: int
    width: int
    height: int

    @classmethod
    def from_dict(cls, data: dict[str, Any], default_size: int = 512) -> GenerationConfig:
        dataset = data["dataset"]
        if dataset not in CLASSES:
            raise ValueError(f"generation_config.json names dataset {dataset!r}; expected one of {sorted(CLASSES)}")
        size = int(data.get("width", data.get("height", default_size)))
        return cls(dataset=dataset, prompt_template=data["prompt_template"],
                   num_bucket_per_side=tuple(int(v) for v in data["num_bucket_per_side"]),
                   cfg_scale=float(data["cfg_scale"]), num_inference_steps=int(data["num_inference_steps"]),
                   max_num_bbox=int(data["max_num_bbox"]), width=size, height=int(data.get("height", size)))

    @classmethod
    def from_file(cls, path: str | Path) -> GenerationConfig:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    @property
    def classes(self) -> tuple[str, ...]:
        return CLASSES[self.dataset]

    @property
    def num_location_tokens(self) -> int:
        return self.num_bucket_per_side[0] * self.num_bucket_per_side[1]

    @property
    def official_scheduler(self) -> str:
        """The scheduler the official loader samples this dataset's checkpoints with."""
        return "DPM-Solver++" if self.dataset == "coco_stuff" else "PNDM"

    def default_steps(self, sampler: str = "default") -> int:
        """The steps a request with no steps runs: the checkpoint's own, or FAST_SAMPLING_STEPS with "fast"."""
        return FAST_SAMPLING_STEPS if sampler == "fast" else self.num_inference_steps

    @property
    def uses_camera(self) -> bool:
        return "{camera}" in self.prompt_template

    @property
    def uses_time_weather(self) -> bool:
        return "{timeofday}" in self.prompt_template or "{weather}" in self.prompt_template


def load_generation_config(folder: str | Path) -> GenerationConfig:
    """A checkpoint's ``generation_config.json``. A missing grid is read off the text encoder's vocabulary
    (49408 + Wb*Hb, square), a missing image size off the UNet's sample size (latents are 1/8 of the image)."""
    folder = Path(folder)
    data = json.loads((folder / "generation_config.json").read_text(encoding="utf-8"))
    text_encoder = folder / "text_encoder" / "config.json"
    if "num_bucket_per_side" not in data and text_encoder.is_file():
        vocab_size = int(json.loads(text_encoder.read_text(encoding="utf-8"))["vocab_size"])
        side = int(round((vocab_size - 49408) ** 0.5))
        data["num_bucket_per_side"] = [side, side]
    default_size = 512
    unet = folder / "unet" / "config.json"
    if unet.is_file():
        default_size = 8 * int(json.loads(unet.read_text(encoding="utf-8")).get("sample_size", 64))
    return GenerationConfig.from_dict(data, default_size)


def _config(dataset: str, grid: int, size: int, cfg: float, steps: int, template: str) -> GenerationConfig:
    max_boxes = 22 if dataset == "nuimages" else 18
    return GenerationConfig(dataset, template, (grid, grid), cfg, steps, max_boxes, size, size)


_NUIMAGES = "A driving scene image of {camera} camera with {bbox}"
_COCO = "An image with {bbox}"
# The released generation_config.json of each official checkpoint (fact sheet), so a page can show the right controls
# before any weights are on disk. The nuimages-512x512 text is unconfirmed: the 256 config with the 512 grid.
KNOWN_CONFIGS = {
    "nuimages-256x256": _config("nuimages", 256, 256, 5.0, 100, _NUIMAGES),
    "nuimages-512x512": _config("nuimages", 512, 512, 5.0, 100, _NUIMAGES),
    "nuimages-time-weather-512x512": _config(
        "nuimages", 512, 512, 5.0, 100,
        "A {timeofday} {weather} driving scene image of {camera} camera with {bbox}"),
    "coco-stuff-256x256": _config("coco_stuff", 256, 256, 4.0, 50, _COCO),
    "coco-stuff-512x512": _config("coco_stuff", 256, 512, 4.5, 50, _COCO),
}


@dataclass(frozen=True)
class Box:
    label: str  # the dataset's class name (construction_vehicle, sky-other), not the prompt text
    x1: float
    y1: float
    x2: float
    y2: float

    def as_list(self) -> list:
        return [self.label, self.x1, self.y1, self.x2, self.y2]


@dataclass(frozen=True)
class Layout:
    boxes: tuple[Box, ...] = ()
    camera: str = DEFAULTS["camera"]
    timeofday: str = DEFAULTS["timeofday"]
    weather: str = DEFAULTS["weather"]

    def to_dict(self) -> dict[str, Any]:
        """The official input format."""
        return {"bbox": [b.as_list() for b in self.boxes], "camera": self.camera, "timeofday": self.timeofday,
                "weather": self.weather}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


@functools.cache
def _aliases(dataset: str) -> dict[str, str]:
    """Lowercased accepted spellings -> class name: the class name, its prompt text, and the class name with its
    ``_`` or its ``-`` written as a space ("traffic_cone", "cone", "traffic cone"; "sky-other", "sky other").

    ``parse_layout`` looks labels up stripped and lowercased, so any case matches; other separators do not
    ("traffic-cone", "sky_other" are unknown labels)."""
    table: dict[str, str] = {}
    for name, text in CLASS_TEXT[dataset].items():
        for spelling in (name, text, name.replace("_", " "), name.replace("-", " ")):
            table.setdefault(spelling.lower(), name)
    return table


def load_layout_data(data: str | dict | list | Layout | None) -> dict:
    """A layout as the official dict, its boxes unchecked (what an editor shows while a person types): JSON text is
    parsed, a bare list of boxes becomes ``{"bbox": [...]}``, empty text or None an empty layout."""
    if isinstance(data, Layout):
        return data.to_dict()
    if data is None:
        return {"bbox": []}
    if isinstance(data, str):
        text = data.strip()
        if len(text) > MAX_LAYOUT_CHARS:
            raise UserInputError(f"The layout JSON is {len(text):,} characters long; the limit is "
                                 f"{MAX_LAYOUT_CHARS:,} characters, far more than any layout needs.")
        if not text:
            return {"bbox": []}
        try:
            data = json.loads(data)
        except json.JSONDecodeError as error:
            raise UserInputError(json_problem(error, "The layout", example_field="bbox")) from None
        except RecursionError:  # thousands of nested brackets: Python's JSON reader gives up
            raise UserInputError('The layout JSON is nested far too deeply; a layout is {"bbox": [[label, x1, y1, '
                                 'x2, y2], ...]} and needs three levels.') from None
        except ValueError:  # an integer of over 4,300 digits: Python refuses to convert it
            raise UserInputError("The layout JSON holds a number of thousands of digits; coordinates are fractions "
                                 "of the image size such as 0.25.") from None
    if isinstance(data, list):
        data = {"bbox": data}
    if not isinstance(data, dict):
        raise UserInputError('The layout must be a JSON object such as {"bbox": [["car", 0.1, 0.4, 0.3, 0.6]]}.')
    return data


def parse_layout(data: str | dict | Layout | None, config: GenerationConfig) -> Layout:
    """Validate a layout (JSON text, dict or Layout) against a checkpoint; raise UserInputError saying what to fix
    (a ``BoxProblem`` for a box the checkpoint cannot take)."""
    data = load_layout_data(data)
    unknown = sorted(set(data) - LAYOUT_KEYS)
    if unknown:
        raise UserInputError(f"Unknown layout field(s) {', '.join(map(repr, unknown[:5]))}; a layout has only "
                             f"{', '.join(sorted(LAYOUT_KEYS))}.")
    raw_boxes = data.get("bbox", [])
    if raw_boxes is None:
        raw_boxes = []
    if not isinstance(raw_boxes, list):
        raise UserInputError('"bbox" must be a list of boxes, each [label, x1, y1, x2, y2].')
    if len(raw_boxes) > config.max_num_bbox:
        raise UserInputError(
            f"This checkpoint takes at most {config.max_num_bbox} boxes, but the layout has {len(raw_boxes)}; "
            f"remove {len(raw_boxes) - config.max_num_bbox}.")
    boxes = tuple(check_box(i, raw, config) for i, raw in enumerate(raw_boxes))
    values = {}
    for key, allowed, used in (("camera", CAMERAS, config.uses_camera), ("timeofday", TIMES_OF_DAY,
                               config.uses_time_weather), ("weather", WEATHERS, config.uses_time_weather)):
        value = data.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            value = DEFAULTS[key]
        value = str(value).strip().lower().replace("_", " ")
        if used and value not in allowed:
            raise UserInputError(f"{key} must be one of {', '.join(allowed)}; got {value!r}.")
        values[key] = value
    return Layout(boxes=boxes, **values)


class BoxProblem(UserInputError):
    """A box the checkpoint cannot take: the sentence, the box's ``index`` (from 0) and ``mark``, a few words a
    drawing of the box is labelled with ("unknown label", "inverted", ...)."""

    def __init__(self, message: str, index: int, mark: str):
        super().__init__(message)
        self.index = index
        self.mark = mark


def check_box(index: int, raw: Any, config: GenerationConfig) -> Box:
    """Box ``index`` (from 0) of a layout as the checkpoint reads it, or a ``BoxProblem`` saying what to fix."""
    where = f"Box {index + 1}"
    if not isinstance(raw, (list, tuple)) or len(raw) != 5:
        raise BoxProblem(f"{where} must be [label, x1, y1, x2, y2]; got {_as_json(raw)}.", index, "not a box")
    label, *coords = raw
    aliases = _aliases(config.dataset)
    if not isinstance(label, str) or label.strip().lower() not in aliases:
        quoted = repr(label) if isinstance(label, str) else _as_json(label)
        examples = ", ".join(config.classes[:6])
        raise BoxProblem(
            f"{where} has label {quoted}, which the {config.dataset} checkpoint does not know; use one of its "
            f"{len(config.classes)} classes (e.g. {examples}).", index, "unknown label")
    try:
        x1, y1, x2, y2 = (float(v) for v in coords)
    except (TypeError, ValueError):
        raise BoxProblem(f"{where} ({label}): coordinates must be numbers; got {_as_json(coords)}.", index,
                         "not a box") from None
    if not all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in (x1, y1, x2, y2)):
        raise BoxProblem(
            f"{where} ({label}): coordinates must be fractions of the image size between 0 and 1; "
            f"got {[x1, y1, x2, y2]}.", index, "outside the image")
    if x2 <= x1 or y2 <= y1:
        raise BoxProblem(
            f"{where} ({label}): the bottom-right corner must lie right of and below the top-left one "
            f"(x2 > x1 and y2 > y1); got x1={x1}, y1={y1}, x2={x2}, y2={y2}.", index,
            "inverted" if x2 < x1 or y2 < y1 else "no area")
    return Box(aliases[label.strip().lower()], x1, y1, x2, y2)


def _as_json(value: Any) -> str:
    """A value of the layout quoted back as JSON, the way the person wrote it (not as Python prints it)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def location_token(x: float, y: float, num_bucket_per_side: tuple[int, int]) -> str:
    """``<lN>`` for a point: round-half-even onto the grid, row-major."""
    wb, hb = num_bucket_per_side
    return f"<l{int(round(y * (hb - 1))) * wb + int(round(x * (wb - 1)))}>"


def box_phrases(layout: Layout, config: GenerationConfig) -> list[str]:
    """One ``"<class text> <l..> <l..>"`` phrase per box, in the layout's order."""
    text = CLASS_TEXT[config.dataset]
    grid = config.num_bucket_per_side
    return [f"{text[b.label]} {location_token(b.x1, b.y1, grid)} {location_token(b.x2, b.y2, grid)}"
            for b in layout.boxes]


def box_order(n: int, shuffle_seed: int | None) -> list[int]:
    """The order boxes appear in the prompt: as given, or a reproducible shuffle (training shuffles too)."""
    order = list(range(n))
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(order)
    return order


def encode_prompt(layout: str | dict | Layout, generation_config: GenerationConfig | dict,
                  shuffle_seed: int | None = None) -> str:
    """The exact prompt the official code builds for ``layout`` (``prompt_template.format(**layout)``)."""
    config = generation_config if isinstance(generation_config, GenerationConfig) else \
        GenerationConfig.from_dict(generation_config)
    layout = parse_layout(layout, config)
    phrases = box_phrases(layout, config)
    bbox = " ".join(phrases[i] for i in box_order(len(phrases), shuffle_seed))
    return config.prompt_template.format(bbox=bbox, camera=layout.camera, timeofday=layout.timeofday,
                                         weather=layout.weather)
