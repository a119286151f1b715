"""GeoDiffusionPipeline on tiny official-layout checkpoints: loading, defaults, generation, Epsilon Scaling, cache."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from apps.geodiffusion import DEMO
from apps.geodiffusion.pipeline import GeoDiffusionPipeline
from shared import weights
from shared.context import DemoContext
from shared.errors import UserInputError
from shared.pool import ModelPool
from tests.fixtures.tiny_geodiffusion import install_in_hf_cache

LAYOUT = {"bbox": [["car", 0.1, 0.2, 0.5, 0.6], ["sky-other", 0.0, 0.0, 1.0, 0.3]]}
NU_LAYOUT = {"camera": "front left", "timeofday": "night", "weather": "rain",
             "bbox": [["construction_vehicle", 0.1, 0.2, 0.5, 0.6], ["traffic_cone", 0.6, 0.6, 0.7, 0.9]]}


def pixels(out):
    return np.stack([np.asarray(im, dtype=np.int16) for im in out.images])


def test_loads_official_layout_with_checkpoint_defaults(coco_pipeline, nuimages_pipeline):
    assert coco_pipeline.sd.text_encoder.config.vocab_size == 49408 + 16
    assert type(coco_pipeline.sd.scheduler).__name__ == "DPMSolverMultistepScheduler"  # COCO-Stuff: DPM-Solver++
    assert type(nuimages_pipeline.sd.scheduler).__name__ == "PNDMScheduler"  # nuImages keeps the released PNDM
    assert nuimages_pipeline.sd.scheduler.config.skip_prk_steps is True
    assert (coco_pipeline.config.cfg_scale, coco_pipeline.config.num_inference_steps) == (4.0, 50)
    assert (nuimages_pipeline.config.cfg_scale, nuimages_pipeline.config.num_inference_steps) == (5.0, 100)
    assert coco_pipeline.sd.safety_checker is None and coco_pipeline.dtype == torch.float32
    assert len(coco_pipeline.sd.tokenizer) == 49408  # the slow tokenizer with added tokens is never loaded


def test_generates_images_end_to_end_with_progress(coco_pipeline):
    steps = []
    out = coco_pipeline(LAYOUT, seed=1, num_images=2, num_inference_steps=2, callback=lambda i, n: steps.append((i, n)))
    assert len(out.images) == 2 and out.images[0].size == (64, 64)
    assert steps == [(1, 2), (2, 2)]
    assert out.prompt == "An image with car <l4> <l10> sky other <l0> <l7>"
    assert out.guidance_scale == 4.0 and out.dropped_boxes == () and out.warnings == ()
    assert pixels(out).std() > 0  # not a blank image


def test_nuimages_time_weather_prompt_and_defaults(nuimages_pipeline):
    out = nuimages_pipeline(NU_LAYOUT, num_inference_steps=2)
    assert out.prompt == ("A night rain driving scene image of front left camera with construction <l4> <l10> "
                          "cone <l10> <l14>")
    assert out.guidance_scale == 5.0 and len(out.images) == 1


def test_same_seed_same_images_other_seed_differs(coco_pipeline):
    a = pixels(coco_pipeline(LAYOUT, seed=3, num_inference_steps=2))
    b = pixels(coco_pipeline(LAYOUT, seed=3, num_inference_steps=2))
    c = pixels(coco_pipeline(LAYOUT, seed=4, num_inference_steps=2))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_epsilon_scaling_one_is_identity_and_above_one_changes_output(coco_pipeline):
    off = pixels(coco_pipeline(LAYOUT, seed=5, num_inference_steps=3))
    one = pixels(coco_pipeline(LAYOUT, seed=5, num_inference_steps=3, epsilon_scaling=1.0))
    scaled = pixels(coco_pipeline(LAYOUT, seed=5, num_inference_steps=3, epsilon_scaling=1.2))
    assert np.array_equal(off, one)
    assert np.abs(off - scaled).max() > 0
    again = pixels(coco_pipeline(LAYOUT, seed=5, num_inference_steps=3))
    assert np.array_equal(off, again)  # the hook is removed after the call


def test_epsilon_scaling_divides_the_noise_prediction(coco_pipeline):
    unet = coco_pipeline.sd.unet
    x = torch.randn(1, 4, 8, 8)
    ctx = torch.randn(1, 77, 32)
    base = unet(x, 10, encoder_hidden_states=ctx, return_dict=False)[0]
    from apps.geodiffusion.pipeline import _epsilon_scaling_hook

    handle = unet.register_forward_hook(_epsilon_scaling_hook(1.25))
    try:
        scaled = unet(x, 10, encoder_hidden_states=ctx, return_dict=False)[0]
    finally:
        handle.remove()
    assert torch.allclose(scaled, base / 1.25)


def test_fast_ids_match_diffusers_with_the_official_tokenizer(coco_checkpoint, coco_pipeline):
    """Our prompt embeddings path gives the same images as diffusers tokenizing with the added-token tokenizer."""
    from diffusers import StableDiffusionPipeline
    from transformers import CLIPTokenizer

    official_tokenizer = CLIPTokenizer.from_pretrained(coco_checkpoint / "tokenizer")
    components = {**coco_pipeline.sd.components, "tokenizer": official_tokenizer}
    reference = StableDiffusionPipeline(**components, requires_safety_checker=False)
    reference.set_progress_bar_config(disable=True)
    ours = coco_pipeline(LAYOUT, seed=7, num_inference_steps=2)
    theirs = reference([ours.prompt], guidance_scale=4.0, num_inference_steps=2, height=64, width=64,
                       generator=torch.Generator("cpu").manual_seed(7), output_type="pil").images
    ids = official_tokenizer(ours.prompt, padding="max_length", max_length=77, truncation=True).input_ids
    assert coco_pipeline.encode_ids([ours.prompt])[0].tolist() == ids
    assert np.array_equal(pixels(ours), np.stack([np.asarray(im, dtype=np.int16) for im in theirs]))


def test_loads_through_hf_cache_resolve_and_pool(coco_checkpoint, tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    snapshot = install_in_hf_cache(coco_checkpoint, cache, "KaiChen1998/geodiffusion-coco-stuff-256x256")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("DEMOHUB_CHECKPOINTS", raising=False)
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    ws = DEMO.weight_set("coco-stuff-256x256")
    assert weights.state(DEMO.id, ws) is weights.WeightState.CACHED
    assert weights.resolve(DEMO.id, ws, allow_download=False) == snapshot
    missing = DEMO.weight_set("nuimages-256x256")
    assert weights.state(DEMO.id, missing) is weights.WeightState.UNAVAILABLE
    ctx = DemoContext(DEMO, ModelPool(budget_bytes=10**9))
    pipe = ctx.pipeline("coco-stuff-256x256")
    assert isinstance(pipe, GeoDiffusionPipeline) and ctx.pipeline("coco-stuff-256x256") is pipe
    out = pipe(LAYOUT, num_inference_steps=2)
    assert out.images[0].size == (64, 64)


def test_the_registry_asks_fp16_on_cuda_as_the_official_loader_and_fp32_on_cpu(monkeypatch):
    from shared.device import pick_dtype

    monkeypatch.delenv("DEMOHUB_DTYPE", raising=False)
    assert (DEMO.cpu_dtype, DEMO.gpu_dtype) == (None, "float16")
    assert pick_dtype("cuda", DEMO.cpu_dtype, DEMO.gpu_dtype) == pick_dtype("cuda:1", None, "float16") == torch.float16
    assert pick_dtype("cpu", DEMO.cpu_dtype, DEMO.gpu_dtype) == torch.float32


def test_missing_grid_and_size_are_read_from_the_models(coco_checkpoint, tmp_path):
    from apps.geodiffusion.layout import load_generation_config

    data = json.loads((coco_checkpoint / "generation_config.json").read_text())
    del data["num_bucket_per_side"], data["width"], data["height"]
    (tmp_path / "generation_config.json").write_text(json.dumps(data))
    (tmp_path / "unet").mkdir()
    (tmp_path / "unet" / "config.json").write_text(json.dumps({"sample_size": 32}))
    (tmp_path / "text_encoder").mkdir()
    (tmp_path / "text_encoder" / "config.json").write_text(json.dumps({"vocab_size": 49408 + 16}))
    config = load_generation_config(tmp_path)
    assert config.num_bucket_per_side == (4, 4) and (config.width, config.height) == (256, 256)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"num_inference_steps": 201}, "Steps must be a whole number between 1 and 200"),
    ({"num_inference_steps": 0}, "Steps must be a whole number between 1 and 200"),
    ({"num_images": 9}, "number of images"),
    ({"guidance_scale": -1}, "guidance scale"),
    ({"epsilon_scaling": 3.0}, "Epsilon Scaling factor"),
])
def test_bad_generation_settings_are_user_errors(coco_pipeline, kwargs, match):
    with pytest.raises(UserInputError, match=match):
        coco_pipeline(LAYOUT, **kwargs)
