"""GeoDiffusion's input checks, torch-free (a layout and numbers against a checkpoint's generation config, no
weights): a page's validator and an API call's first check import this module only, so the first call after start
does not wait for torch (``GeoDiffusionPipeline.check_inputs`` is ``check_inputs``)."""

from __future__ import annotations

import math
from typing import Any

from apps.geodiffusion.layout import (
    EPSILON_SCALING_RANGE,
    MAX_GUIDANCE,
    MAX_IMAGES,
    MAX_SEED,
    MAX_STEPS,
    SAMPLERS,
    GenerationConfig,
    Layout,
    parse_layout,
)
from shared.errors import UserInputError


def check_inputs(layout: str | dict | Layout | None, seed: Any = 0, num_images: Any = 1,
                 num_inference_steps: Any = None, guidance_scale: Any = None, epsilon_scaling: Any = None,
                 shuffle_seed: Any = None, sampler: Any = "default", *,
                 config: GenerationConfig) -> dict[str, Any]:
    """Every check on a generation request, against a checkpoint's generation ``config`` (no weights needed).

    Returns ``__call__``'s arguments normalised (a ``Layout``, ints and floats, a sampler of ``SAMPLERS``, the
    sampler's steps and the checkpoint's guidance where None was given); raises ``UserInputError`` naming the
    argument at fault.
    """
    try:
        layout = parse_layout(layout, config)
    except UserInputError as error:
        raise UserInputError(str(error), argument="layout") from None
    sampler = _sampler(sampler)
    if num_inference_steps is None:
        num_inference_steps = config.default_steps(sampler)
    if guidance_scale is None:
        guidance_scale = config.cfg_scale
    low, high = EPSILON_SCALING_RANGE
    return {
        "layout": layout,
        "seed": _number(seed, "The seed", "seed", 0, MAX_SEED, whole=True),
        "num_images": _number(num_images, "The number of images", "num_images", 1, MAX_IMAGES, whole=True),
        "num_inference_steps": _number(num_inference_steps, "Steps", "num_inference_steps", 1, MAX_STEPS,
                                       whole=True),
        "guidance_scale": _number(guidance_scale, "The guidance scale (cfg)", "guidance_scale", 0.0,
                                  MAX_GUIDANCE),
        "epsilon_scaling": None if epsilon_scaling is None else _number(
            epsilon_scaling, "The Epsilon Scaling factor", "epsilon_scaling", low, high, hint=" (try 1.005)"),
        "shuffle_seed": None if shuffle_seed is None else _number(
            shuffle_seed, "The shuffle seed", "shuffle_seed", 0, MAX_SEED, whole=True),
        "sampler": sampler,
    }


def _sampler(value: Any) -> str:
    """``value`` as one of SAMPLERS (None is "default"), else a UserInputError naming ``sampler``."""
    name = "default" if value is None else value.strip().lower() if isinstance(value, str) else value
    if name not in SAMPLERS:
        raise UserInputError(f'The sampler must be "default" (the checkpoint\'s own scheduler and steps) or "fast" '
                             f"(DPM-Solver++, fewer steps); got {value!r}.", argument="sampler")
    return name


def _number(value: Any, what: str, argument: str, low: float, high: float, *, whole: bool = False,
            hint: str = "") -> Any:
    """``value`` as an int (``whole``) or float within [low, high], else a UserInputError naming ``argument``."""
    if isinstance(value, bool) or value is None:
        number = math.nan
    elif isinstance(value, int):
        number = value  # exact: a float would round seeds near 2**63
    else:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
    span = f"between {_text(low)} and {_text(high)}{hint}"
    if isinstance(number, float) and (not math.isfinite(number) or (whole and not number.is_integer())):
        kind = "a whole number" if whole else "a number"
        raise UserInputError(f"{what} must be {kind} {span}; got {value!r}.", argument=argument)
    if not low <= number <= high:  # an int is compared exactly: one of thousands of digits has no float
        side = "below the minimum" if number < low else "above the maximum"
        raise UserInputError(f"{what} must be {span}; got {value}, {side}.", argument=argument)
    return int(number) if whole else float(number)


def _text(limit: float) -> str:
    return f"{limit:g}" if isinstance(limit, float) else f"{limit:,}"
