"""Tiny GeoDiffusion checkpoints in the official folder layout (file names, state-dict keys, config fields).

A released repo is a diffusers ``StableDiffusionPipeline`` folder plus ``generation_config.json``; the tokenizer
folder is a transformers-4.2x save (vocab.json, merges.txt, added_tokens.json with the ``<lN>`` tokens, ...), and
the weights are pickled ``.bin`` files. Only the sizes here are tiny: a 4x4 location grid, 32-wide text encoder,
two-level UNet, and a VAE that still downsamples by 8.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clip_bpe"
BASE_VOCAB_SIZE = 49408

TEMPLATES = {
    "nuimages": "A driving scene image of {camera} camera with {bbox}",
    "nuimages-time-weather": "A {timeofday} {weather} driving scene image of {camera} camera with {bbox}",
    "coco_stuff": "An image with {bbox}",
}


def write_tokenizer(folder: Path, grid: tuple[int, int]) -> Path:
    """The official tokenizer/ folder: real CLIP BPE files plus ``<l0>``.. ``<l{Wb*Hb-1}>`` in added_tokens.json."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "vocab.json", folder / "vocab.json")
    shutil.copy(FIXTURES / "merges.txt", folder / "merges.txt")
    added = {f"<l{n}>": BASE_VOCAB_SIZE + n for n in range(grid[0] * grid[1])}
    (folder / "added_tokens.json").write_text(json.dumps(added), encoding="utf-8")
    special = {"bos_token": {"content": "<|startoftext|>", "lstrip": False, "normalized": True, "rstrip": False,
                             "single_word": False},
               "eos_token": {"content": "<|endoftext|>", "lstrip": False, "normalized": True, "rstrip": False,
                             "single_word": False},
               "pad_token": "<|endoftext|>",
               "unk_token": {"content": "<|endoftext|>", "lstrip": False, "normalized": True, "rstrip": False,
                             "single_word": False}}
    (folder / "special_tokens_map.json").write_text(json.dumps(special, indent=2), encoding="utf-8")
    config = {"add_prefix_space": False, "bos_token": special["bos_token"], "do_lower_case": True,
              "eos_token": special["eos_token"], "errors": "replace", "model_max_length": 77,
              "name_or_path": "openai/clip-vit-large-patch14", "pad_token": "<|endoftext|>",
              "special_tokens_map_file": None, "tokenizer_class": "CLIPTokenizer", "unk_token": special["unk_token"]}
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    return folder


def build_tiny_checkpoint(folder: str | Path, dataset: str = "coco_stuff", grid: int = 4, image_size: int = 64,
                          template: str | None = None, seed: int = 0) -> Path:
    """Write a tiny checkpoint; ``dataset`` is ``nuimages``, ``nuimages-time-weather`` or ``coco_stuff``."""
    import torch
    from diffusers import AutoencoderKL, PNDMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    coco = dataset == "coco_stuff"
    generation_config = {
        "dataset": "coco_stuff" if coco else "nuimages", "width": image_size, "height": image_size,
        "num_bucket_per_side": [grid, grid], "prompt_template": template or TEMPLATES[dataset],
        "cfg_scale": 4.0 if coco else 5.0, "num_inference_steps": 50 if coco else 100,
        "max_num_bbox": 18 if coco else 22,
    }
    (folder / "generation_config.json").write_text(json.dumps(generation_config, indent=2), encoding="utf-8")
    model_index = {
        "_class_name": "StableDiffusionPipeline", "_diffusers_version": "0.4.1",
        "feature_extractor": ["transformers", "CLIPFeatureExtractor"],
        "safety_checker": ["stable_diffusion", "StableDiffusionSafetyChecker"],
        "scheduler": ["diffusers", "PNDMScheduler"], "text_encoder": ["transformers", "CLIPTextModel"],
        "tokenizer": ["transformers", "CLIPTokenizer"], "unet": ["diffusers", "UNet2DConditionModel"],
        "vae": ["diffusers", "AutoencoderKL"],
    }
    (folder / "model_index.json").write_text(json.dumps(model_index, indent=2), encoding="utf-8")

    scheduler = PNDMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                              num_train_timesteps=1000, skip_prk_steps=True, set_alpha_to_one=False, steps_offset=1)
    scheduler.save_pretrained(folder / "scheduler")
    config_file = folder / "scheduler" / "scheduler_config.json"
    config = json.loads(config_file.read_text())
    config["_diffusers_version"] = "0.4.1"  # the released configs date from diffusers 0.4.1
    config_file.write_text(json.dumps(config, indent=2))

    write_tokenizer(folder / "tokenizer", (grid, grid))

    text_config = CLIPTextConfig(vocab_size=BASE_VOCAB_SIZE + grid * grid, hidden_size=32, intermediate_size=37,
                                 num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=77,
                                 projection_dim=32, hidden_act="quick_gelu", bos_token_id=0, eos_token_id=2,
                                 pad_token_id=1)
    text_encoder = CLIPTextModel(text_config)
    (folder / "text_encoder").mkdir(exist_ok=True)
    text_config.architectures = ["CLIPTextModel"]
    text_config.save_pretrained(folder / "text_encoder")
    torch.save(text_encoder.state_dict(), folder / "text_encoder" / "pytorch_model.bin")

    latent = image_size // 8
    unet = UNet2DConditionModel(
        sample_size=latent, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8, norm_num_groups=32)
    unet.save_pretrained(folder / "unet", safe_serialization=False)
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, layers_per_block=1, block_out_channels=(8, 8, 8, 8),
        down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4, norm_num_groups=4,
        sample_size=image_size)
    vae.save_pretrained(folder / "vae", safe_serialization=False)
    return folder


def install_in_hf_cache(checkpoint: Path, cache: Path, repo_id: str, sha: str = "0" * 39 + "1") -> Path:
    """Copy a checkpoint into a real HF cache layout: models--owner--name/snapshots/<sha>/..., refs/main."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / sha
    shutil.copytree(checkpoint, snapshot)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(sha)
    return snapshot
