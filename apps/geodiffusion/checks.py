"""GeoDiffusion's input checks, torch-free (a layout and numbers against a checkpoint's generation config, no
weights): a page's validator and an API call's first check import this module only, so the first call after start
does not wait for torch (``GeoDiffusionPipeline.check_inputs`` is ``check_inputs``)."""

from __future__ import annotations

from dataclasses import dataclass, fields
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
from shared.validation import check_number


@dataclass(frozen=True)
class GeoDiffusionInputs:
    """What ``check_inputs`` returns: ``__call__``'s arguments normalised, ready to run."""

    layout: Layout
    seed: int
    num_images: int
    num_inference_steps: int
    guidance_scale: float
    epsilon_scaling: float | None
    shuffle_seed: int | None
    sampler: str

    def arguments(self) -> dict[str, Any]:
        """``__call__``'s keyword arguments (shallow: the ``Layout`` stays one)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def check_inputs(layout: str | dict | Layout | None, seed: Any = 0, num_images: Any = 1,
                 num_inference_steps: Any = None, guidance_scale: Any = None, epsilon_scaling: Any = None,
                 shuffle_seed: Any = None, sampler: Any = "default", *,
                 config: GenerationConfig) -> GeoDiffusionInputs:
    """Every check on a generation request, against a checkpoint's generation ``config`` (no weights needed).

    Returns ``__call__``'s arguments normalised (a ``Layout``, ints and floats, a sampler of ``SAMPLERS``, the
    sampler's steps and the checkpoint's guidance where None was given); raises ``UserInputError`` naming the
    argument at fault.
    """
    layout = check_layout(layout, config=config)
    sampler = _sampler(sampler)
    if num_inference_steps is None:
        num_inference_steps = config.default_steps(sampler)
    if guidance_scale is None:
        guidance_scale = config.cfg_scale
    low, high = EPSILON_SCALING_RANGE
    return GeoDiffusionInputs(
        layout=layout,
        seed=check_number(seed, "The seed", 0, MAX_SEED, whole=True, argument="seed"),
        num_images=check_number(num_images, "The number of images", 1, MAX_IMAGES, whole=True,
                                argument="num_images"),
        num_inference_steps=check_number(num_inference_steps, "Steps", 1, MAX_STEPS, whole=True,
                                         argument="num_inference_steps"),
        guidance_scale=check_number(guidance_scale, "The guidance scale (cfg)", 0.0, MAX_GUIDANCE,
                                    argument="guidance_scale"),
        epsilon_scaling=None if epsilon_scaling is None else check_number(
            epsilon_scaling, "The Epsilon Scaling factor", low, high, hint=" (try 1.005)", argument="epsilon_scaling"),
        shuffle_seed=None if shuffle_seed is None else check_number(
            shuffle_seed, "The shuffle seed", 0, MAX_SEED, whole=True, argument="shuffle_seed"),
        sampler=sampler,
    )


def check_layout(layout: str | dict | Layout | None, *, config: GenerationConfig) -> Layout:
    """``check_inputs``'s check of the layout alone (a page runs it at every change of its layout text): the
    ``Layout``, or a UserInputError naming ``layout``."""
    try:
        return parse_layout(layout, config)
    except UserInputError as error:
        raise UserInputError(str(error), argument="layout") from None


def _sampler(value: Any) -> str:
    """``value`` as one of SAMPLERS (None is "default"), else a UserInputError naming ``sampler``."""
    name = "default" if value is None else value.strip().lower() if isinstance(value, str) else value
    if name not in SAMPLERS:
        raise UserInputError(f'The sampler must be "default" (the checkpoint\'s own scheduler and steps) or "fast" '
                             f"(DPM-Solver++, fewer steps); got {value!r}.", argument="sampler")
    return name
