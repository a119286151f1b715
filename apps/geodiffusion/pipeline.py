"""GeoDiffusion inference: layout -> prompt -> fast location-token ids -> text encoder -> Stable Diffusion.

Wraps a diffusers ``StableDiffusionPipeline`` loaded from an official checkpoint folder. The slow tokenizer with its
65k/262k added tokens is never loaded: prompt embeddings come from ``LocationTokenizer`` ids fed to the text encoder,
with the empty prompt as the unconditional input (as in training and the official script).
"""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from apps.geodiffusion.layout import (
    MAX_IMAGES,
    MAX_STEPS,
    GenerationConfig,
    Layout,
    encode_prompt,
    load_generation_config,
    parse_layout,
)
from apps.geodiffusion.tokens import BASE_VOCAB_SIZE, LocationTokenizer, truncated_boxes
from shared.errors import UserInputError


@dataclass
class GeoDiffusionOutput:
    images: list  # PIL images
    prompt: str
    layout: Layout
    seed: int
    num_inference_steps: int
    guidance_scale: float
    epsilon_scaling: float | None = None
    dropped_boxes: list[int] = field(default_factory=list)  # layout indices whose tokens the 77-token limit cut
    width: int = 0
    height: int = 0

    @property
    def warnings(self) -> list[str]:
        if not self.dropped_boxes:
            return []
        names = ", ".join(f"#{i + 1} ({self.layout.boxes[i].label})" for i in self.dropped_boxes)
        return [f"The prompt is longer than CLIP's 77 tokens, so box(es) {names} were cut and ignored by the model; "
                "use fewer boxes or shorter labels."]


def default_dtype(device: str) -> torch.dtype:
    """fp16 on CUDA (as the official loader), fp32 elsewhere."""
    return torch.float16 if str(device).startswith("cuda") else torch.float32


class GeoDiffusionPipeline:
    def __init__(self, sd_pipeline, tokenizer: LocationTokenizer, config: GenerationConfig, device: str,
                 dtype: torch.dtype):
        self.sd = sd_pipeline
        self.tokenizer = tokenizer
        self.config = config
        self.device = device
        self.dtype = dtype
        self._lock = threading.Lock()  # a diffusers pipeline (scheduler state, hooks) serves one call at a time

    @classmethod
    def from_pretrained(cls, path: str | Path, device: str | None = None, dtype: torch.dtype | None = None
                        ) -> GeoDiffusionPipeline:
        from diffusers import DPMSolverMultistepScheduler, StableDiffusionPipeline
        from transformers import CLIPTokenizer

        folder = Path(path)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = dtype or default_dtype(device)
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
            sd.scheduler = DPMSolverMultistepScheduler.from_config(sd.scheduler.config)
        sd.set_progress_bar_config(disable=True)
        sd.to(device)
        return cls(sd, tokenizer, config, str(device), dtype)

    def memory_bytes(self) -> int:
        return sum(p.numel() * p.element_size() for m in (self.sd.unet, self.sd.vae, self.sd.text_encoder)
                   for p in m.parameters())

    @property
    def scheduler_name(self) -> str:
        return type(self.sd.scheduler).__name__

    def encode_ids(self, prompts: list[str]) -> torch.Tensor:
        return self.tokenizer(prompts)

    @torch.no_grad()
    def prompt_embeddings(self, prompt: str) -> torch.Tensor:
        ids = self.encode_ids([prompt]).to(self.sd.text_encoder.device)
        return self.sd.text_encoder(ids)[0].to(self.dtype)

    def dropped_boxes(self, layout: Layout, shuffle_seed: int | None = None) -> list[int]:
        return truncated_boxes(layout, self.config, self.tokenizer, shuffle_seed)

    def __call__(self, layout: str | dict | Layout, seed: int = 0, num_images: int = 1,
                 num_inference_steps: int | None = None, guidance_scale: float | None = None,
                 epsilon_scaling: float | None = None, shuffle_seed: int | None = None,
                 progress: Callable[[int, int], Any] | None = None) -> GeoDiffusionOutput:
        """Generate ``num_images`` images for ``layout``; defaults come from the checkpoint's generation_config.

        ``epsilon_scaling``: Epsilon Scaling's factor lambda (Ning et al., ICLR 2024), dividing the predicted noise by
        lambda at every step (uniform schedule); None or 1.0 leaves sampling unchanged. ``progress(step, total)`` is
        called after each denoising step.
        """
        layout = parse_layout(layout, self.config)
        steps = self.config.num_inference_steps if num_inference_steps is None else int(num_inference_steps)
        cfg = self.config.cfg_scale if guidance_scale is None else float(guidance_scale)
        if not 1 <= steps <= MAX_STEPS:
            raise UserInputError(f"Steps must be between 1 and {MAX_STEPS}; got {steps}.")
        if not 1 <= int(num_images) <= MAX_IMAGES:
            raise UserInputError(f"The number of images must be between 1 and {MAX_IMAGES}; got {num_images}.")
        if not 0 <= cfg <= 30:
            raise UserInputError(f"The guidance scale (cfg) must be between 0 and 30; got {cfg}.")
        if epsilon_scaling is not None and not 0.5 <= float(epsilon_scaling) <= 1.5:
            raise UserInputError(f"The Epsilon Scaling factor must be between 0.5 and 1.5 (try 1.005); "
                                 f"got {epsilon_scaling}.")
        prompt = encode_prompt(layout, self.config, shuffle_seed=shuffle_seed)
        with self._lock:
            cond = self.prompt_embeddings(prompt)
            uncond = self.prompt_embeddings("")
            generator = torch.Generator("cpu").manual_seed(int(seed))  # same noise on every device

            def on_step(pipe, step, timestep, kwargs):
                if progress is not None:
                    progress(step + 1, steps)
                return kwargs

            hook = None
            if epsilon_scaling is not None:
                hook = self.sd.unet.register_forward_hook(_epsilon_scaling_hook(float(epsilon_scaling)))
            try:
                images = self.sd(
                    prompt_embeds=cond, negative_prompt_embeds=uncond, guidance_scale=cfg,
                    num_inference_steps=steps, height=self.config.height, width=self.config.width,
                    num_images_per_prompt=int(num_images), generator=generator, callback_on_step_end=on_step,
                ).images
            finally:
                if hook is not None:
                    hook.remove()
        return GeoDiffusionOutput(
            images=images, prompt=prompt, layout=layout, seed=int(seed), num_inference_steps=steps,
            guidance_scale=cfg, epsilon_scaling=epsilon_scaling, dropped_boxes=self.dropped_boxes(layout, shuffle_seed),
            width=self.config.width, height=self.config.height)


def _epsilon_scaling_hook(factor: float):
    """A UNet forward hook returning eps / factor: with linear CFG this scales the guided noise by 1/factor too."""

    def hook(module, args, output):
        if isinstance(output, tuple):
            return (output[0] / factor, *output[1:])
        output.sample = output.sample / factor
        return output

    return hook
