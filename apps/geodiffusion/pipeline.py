"""GeoDiffusion inference: layout -> prompt -> fast location-token ids -> text encoder -> Stable Diffusion.

Wraps a diffusers ``StableDiffusionPipeline`` loaded from an official checkpoint folder. The slow tokenizer with its
65k/262k added tokens is never loaded: prompt embeddings come from ``LocationTokenizer`` ids fed to the text encoder,
with the empty prompt as the unconditional input (as in training and the official script).
"""

from __future__ import annotations

import json
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from apps.geodiffusion import checks
from apps.geodiffusion.layout import (
    GenerationConfig,
    Layout,
    encode_prompt,
    load_generation_config,
)
from apps.geodiffusion.tokens import BASE_VOCAB_SIZE, LocationTokenizer, cut_boxes_warning, truncated_boxes
from shared.pipeline import Callback, Pipeline, PipelineOutput


@dataclass(frozen=True)
class GeoDiffusionOutput(PipelineOutput):
    """One generation. ``to_dict()`` gives the images as PNG data URLs, the layout in the official format."""

    images: tuple  # PIL images, width x height each
    prompt: str
    layout: Layout
    seed: int
    num_inference_steps: int
    guidance_scale: float
    epsilon_scaling: float | None = None
    dropped_boxes: tuple[int, ...] = ()  # layout indices whose tokens the 77-token limit cut
    width: int = 0
    height: int = 0
    sampler: str = "default"  # "default" (the checkpoint's own scheduler) or "fast" (DPM-Solver++)
    scheduler: str = ""  # the diffusers scheduler class that ran, e.g. PNDMScheduler, DPMSolverMultistepScheduler

    @property
    def warnings(self) -> tuple[str, ...]:
        warning = cut_boxes_warning(self.layout, self.dropped_boxes)
        return (warning,) if warning else ()

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "warnings": list(self.warnings)}  # an API client learns of cut boxes too


class GeoDiffusionPipeline(Pipeline):
    output_class = GeoDiffusionOutput
    components = ("sd",)  # a diffusers pipeline: its UNet, VAE and text encoder

    def __init__(self, sd_pipeline, tokenizer: LocationTokenizer, config: GenerationConfig, device: torch.device,
                 dtype: torch.dtype):
        self.sd = sd_pipeline
        self.tokenizer = tokenizer
        self.config = config
        self.device = device
        self.dtype = dtype
        # One diffusers pipeline per sampler, sharing the models; each has its own scheduler, whose state a call
        # changes, so the lock still serialises calls (scheduler state, hooks on the shared UNet).
        self.samplers = {"default": sd_pipeline, "fast": fast_sampling(sd_pipeline)}
        self._lock = threading.Lock()

    @classmethod
    def from_pretrained(cls, path: str | Path, *, device: str | torch.device = "cpu",
                        dtype: torch.dtype = torch.float32) -> GeoDiffusionPipeline:
        from diffusers import StableDiffusionPipeline
        from transformers import CLIPTokenizer

        folder = Path(path)
        te_config = json.loads((folder / "text_encoder" / "config.json").read_text(encoding="utf-8"))
        config = load_generation_config(folder)
        if te_config.get("vocab_size") != BASE_VOCAB_SIZE + config.num_location_tokens:
            raise ValueError(f"{folder}: text encoder vocab_size {te_config.get('vocab_size')} is not "
                             f"{BASE_VOCAB_SIZE} + {config.num_location_tokens} location tokens")
        tokenizer = LocationTokenizer.from_pretrained(folder / "tokenizer", config.num_location_tokens)
        # The base CLIP tokenizer (no added tokens) stands in for the slow one; we never tokenize through it.
        base_tokenizer = CLIPTokenizer(vocab=tokenizer.bpe.full_vocab(),
                                       merges=[tuple(m.split(" ")) for m in tokenizer.bpe.merges])
        with warnings.catch_warnings():  # torch_dtype works on every diffusers >= 0.30; newer ones prefer dtype
            warnings.simplefilter("ignore", FutureWarning)
            sd = StableDiffusionPipeline.from_pretrained(
                folder, torch_dtype=dtype, tokenizer=base_tokenizer, safety_checker=None, feature_extractor=None,
                requires_safety_checker=False)
        if config.dataset == "coco_stuff":  # the official loader swaps in DPM-Solver++ for COCO-Stuff
            sd.scheduler = _dpm_solver_pp(sd.scheduler.config)
        sd.set_progress_bar_config(disable=True)
        device = torch.device(device)
        sd.to(device)
        return cls(sd, tokenizer, config, device, dtype)

    def encode_ids(self, prompts: list[str]) -> torch.Tensor:
        return self.tokenizer(prompts)  # (B, 77) int64: BOS, words and <lN> ids, EOS, EOS padding

    @torch.no_grad()
    def prompt_embeddings(self, prompt: str) -> torch.Tensor:
        ids = self.encode_ids([prompt]).to(self.sd.text_encoder.device)  # (1, 77)
        return self.sd.text_encoder(ids)[0].to(self.dtype)  # last hidden state (1, 77, D), D = UNet cross-attn dim

    def dropped_boxes(self, layout: Layout, shuffle_seed: int | None = None) -> list[int]:
        return truncated_boxes(layout, self.config, self.tokenizer, shuffle_seed)

    check_inputs = staticmethod(checks.check_inputs)  # torch-free: apps/geodiffusion/checks.py

    def __call__(self, layout: str | dict | Layout, seed: int = 0, num_images: int = 1,
                 num_inference_steps: int | None = None, guidance_scale: float | None = None,
                 epsilon_scaling: float | None = None, shuffle_seed: int | None = None, sampler: str = "default",
                 *, callback: Callback | None = None) -> GeoDiffusionOutput:
        """Generate ``num_images`` images for ``layout``; defaults come from the checkpoint's generation_config.

        ``epsilon_scaling``: Epsilon Scaling's factor lambda (Ning et al., ICLR 2024), dividing the predicted noise by
        lambda at every step (uniform schedule); None or 1.0 leaves sampling unchanged. ``sampler``: "default" (the
        checkpoint's own scheduler) or "fast" (DPM-Solver++, ``FAST_SAMPLING_STEPS`` steps unless given).
        ``callback(step, total)`` is called after each denoising step; ``total`` counts the UNet evaluations, one more
        than the steps with PNDM (its first step is taken twice).
        """
        inputs = self.check_inputs(layout, seed, num_images, num_inference_steps, guidance_scale, epsilon_scaling,
                                   shuffle_seed, sampler, config=self.config)
        layout, steps, factor = inputs.layout, inputs.num_inference_steps, inputs.epsilon_scaling
        sd = self.samplers[inputs.sampler]
        prompt = encode_prompt(layout, self.config, shuffle_seed=inputs.shuffle_seed)
        with self._lock:
            cond = self.prompt_embeddings(prompt)  # (1, 77, D)
            uncond = self.prompt_embeddings("")  # (1, 77, D): the empty prompt, as in training
            generator = torch.Generator("cpu").manual_seed(inputs.seed)  # same noise on every device

            def on_step_end(pipe, step, timestep, kwargs):
                if callback is not None:
                    callback(step + 1, pipe.num_timesteps)
                return kwargs

            hook = None if factor is None else sd.unet.register_forward_hook(_epsilon_scaling_hook(factor))
            try:
                images = sd(
                    prompt_embeds=cond, negative_prompt_embeds=uncond, guidance_scale=inputs.guidance_scale,
                    num_inference_steps=steps, height=self.config.height, width=self.config.width,
                    num_images_per_prompt=inputs.num_images, generator=generator,
                    callback_on_step_end=on_step_end,
                ).images
            finally:
                if hook is not None:
                    hook.remove()
        return GeoDiffusionOutput(
            images=tuple(images), prompt=prompt, layout=layout, seed=inputs.seed, num_inference_steps=steps,
            guidance_scale=inputs.guidance_scale, epsilon_scaling=factor,
            dropped_boxes=tuple(self.dropped_boxes(layout, inputs.shuffle_seed)),
            width=self.config.width, height=self.config.height, sampler=inputs.sampler,
            scheduler=type(sd.scheduler).__name__)


def _dpm_solver_pp(scheduler_config):
    """DPM-Solver++ (diffusers' multistep solver) on a checkpoint's noise schedule and timestep spacing: COCO-Stuff's
    official sampler, and fast sampling for every checkpoint."""
    from diffusers import DPMSolverMultistepScheduler

    return DPMSolverMultistepScheduler.from_config(scheduler_config, algorithm_type="dpmsolver++")


def fast_sampling(sd_pipeline):
    """The same models with DPM-Solver++, built from the checkpoint's scheduler config (what a request with
    sampler="fast" runs; benchmarks/gpu_check.py times it too)."""
    fast = type(sd_pipeline)(**{**sd_pipeline.components, "scheduler": _dpm_solver_pp(sd_pipeline.scheduler.config)},
                             requires_safety_checker=False)
    fast.set_progress_bar_config(disable=True)
    return fast


def _epsilon_scaling_hook(factor: float):
    """A UNet forward hook returning eps / factor: with linear CFG this scales the guided noise by 1/factor too."""

    def hook(module, args, output):
        # output: the predicted noise eps, (2B, 4, H/8, W/8) with CFG (unconditional and conditional halves)
        if isinstance(output, tuple):
            return (output[0] / factor, *output[1:])
        output.sample = output.sample / factor
        return output

    return hook
