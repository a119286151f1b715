"""Tag2Text inference: images -> tags with scores + a caption guided by those tags (or by the user's own tags).

UI-free; the page, the CLI and the tests call this. Fixes relative to the official code: the threshold is
honoured per call (upstream's setter is ignored), each image in a batch gets its own caption (upstream gives
every image image 0's caption under transformers >= 4.28), and decoding uses a KV cache.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from apps.tag2text.checkpoint import load_model
from apps.tag2text.config import VOCAB_FILE, Tag2TextConfig
from apps.tag2text.decoding import beam_search
from apps.tag2text.images import MAX_BATCH, load_images, preprocess
from apps.tag2text.model import Tag2Text
from shared.errors import UserInputError
from shared.validation import check_text

DEC, ENC = "[DEC]", "[ENC]"
NO_TAGS = {"", "none"}  # upstream treats '', 'none' and 'None' as "no user tags"


@dataclass(frozen=True)
class Tag:
    index: int
    name: str
    score: float


@dataclass
class Tag2TextResult:
    """One image's result. ``tags`` are in tag-index order (as upstream), deleted tags removed."""

    tags: list[Tag]
    caption: str
    user_tags: list[str]
    caption_tags: list[str]
    scores: list[float] = field(repr=False)
    threshold: float

    @property
    def tag_names(self) -> list[str]:
        return [t.name for t in self.tags]

    @property
    def tag_text(self) -> str:
        return " | ".join(self.tag_names)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (shown tags with scores; the full score list is left out)."""
        return {"tags": [{"index": t.index, "name": t.name, "score": round(t.score, 4)} for t in self.tags],
                "caption": self.caption, "user_tags": self.user_tags, "caption_tags": self.caption_tags,
                "threshold": self.threshold}


def parse_user_tags(text: str | Sequence[str] | None) -> list[str]:
    """"dog, red car" -> ["dog", "red car"]; None / "" / "none" -> [] (upstream splits on commas)."""
    if text is None:
        return []
    if not isinstance(text, str):
        return [t for item in text for t in parse_user_tags(item)]
    if text.strip().lower() in NO_TAGS:
        return []
    if len(text) > 1000:
        raise UserInputError("Your tags are over 1,000 characters; give a few comma-separated tags instead.")
    check_text(text, "Your tags", 1000)
    return [t.strip() for t in text.split(",") if t.strip()]


def class_thresholds(config: Tag2TextConfig, threshold: float | None = None) -> torch.Tensor:
    """Per-tag thresholds: ``threshold`` (default 0.68) with the config's per-class ones (person/man/woman 0.7) on
    top, exactly as the official constructor builds them."""
    base = config.threshold if threshold is None else _check_threshold(threshold)
    thresholds = torch.full((config.num_tags,), float(base))
    for index, value in config.class_thresholds.items():
        thresholds[index] = value
    return thresholds


def load_tokenizer(vocab_file: Path = VOCAB_FILE):
    """bert-base-uncased + [DEC] (id 30522) and [ENC] (id 30523), as the official model sets it up."""
    from transformers import BertTokenizer

    tokenizer = BertTokenizer(str(vocab_file))
    tokenizer.add_special_tokens({"bos_token": DEC})
    tokenizer.add_special_tokens({"additional_special_tokens": [ENC]})
    return tokenizer


class Tag2TextPipeline:
    def __init__(self, model: Tag2Text, tokenizer=None, weights_file: Path | None = None, batch_size: int = 8):
        self.model = model.eval()
        self.batch_size = batch_size  # images per forward pass: bounds memory for big uploads
        self.config: Tag2TextConfig = model.config
        self.tokenizer = tokenizer or load_tokenizer()
        self.weights_file = weights_file
        self.enc_token_id = self.tokenizer.convert_tokens_to_ids(ENC)
        prompt = self.tokenizer(self.config.prompt).input_ids[:-1]  # [CLS] a picture of -> [DEC] a picture of
        self.prompt_ids = [self.tokenizer.convert_tokens_to_ids(DEC), *prompt[1:]]

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, device: str | None = None, dtype=None) -> Tag2TextPipeline:
        """Load from a folder holding ``tag2text_swin_14m.pth`` (plus ``config.json`` for non-official sizes)."""
        device = device or "cpu"
        model, read_from = load_model(path, device=device, dtype=dtype or torch.float32)
        return cls(model, weights_file=read_from)

    @property
    def device(self) -> torch.device:
        return self.model.fc.W.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.fc.W.dtype

    def pixel_values(self, images: Sequence[Any]) -> torch.Tensor:
        rgb = load_images(images, [_name(im, i) for i, im in enumerate(images)])
        return torch.from_numpy(preprocess(rgb, self.config.image_size)).to(device=self.device, dtype=self.dtype)

    @torch.inference_mode()
    def __call__(self, images: Any, threshold: float | None = None, user_tags: str | Sequence[str | None] | None = None,
                 on_step: Callable[[int, int], None] | None = None) -> list[Tag2TextResult]:
        """Tag and caption ``images`` (one image or a list: paths, bytes, PIL images or arrays).

        ``threshold`` replaces the default 0.68 for this call; ``user_tags`` (comma-separated text, one for all
        images or a list with one per image) replace the predicted tags when captioning.
        """
        images = _as_list(images)
        if not images:
            raise UserInputError("No images were given; upload at least one image.")
        if len(images) > MAX_BATCH:
            raise UserInputError(f"At most {MAX_BATCH} images per call; split them into smaller batches.")
        base = self.config.threshold if threshold is None else _check_threshold(threshold)
        thresholds = class_thresholds(self.config, base)
        per_image_user_tags = _per_image(user_tags, len(images))
        rgb = load_images(images, [_name(im, i) for i, im in enumerate(images)])  # all headers checked before decoding
        results: list[Tag2TextResult] = []
        for start in range(0, len(rgb), self.batch_size):
            chunk = slice(start, start + self.batch_size)
            results += self._run(rgb[chunk], per_image_user_tags[chunk], thresholds, base, on_step)
        return results

    def _run(self, rgb, user_tags, thresholds, base, on_step) -> list[Tag2TextResult]:
        pixels = torch.from_numpy(preprocess(rgb, self.config.image_size)).to(device=self.device, dtype=self.dtype)
        image_embeds = self.model.visual_encoder(pixels)
        probs = torch.sigmoid(self.model.tag_logits(image_embeds).float()).cpu()
        chosen = probs > thresholds
        chosen[:, list(self.config.delete_tag_index)] = False  # these tags disturb captioning and are never shown
        names = self.config.tags
        indices = [row.nonzero().flatten().tolist() for row in chosen]
        caption_tags = [user or [names[i] for i in idx] for user, idx in zip(user_tags, indices, strict=True)]
        captions = self.caption(image_embeds, caption_tags, on_step=on_step)
        return [
            Tag2TextResult(tags=[Tag(i, names[i], float(probs[b, i])) for i in indices[b]], caption=captions[b],
                           user_tags=user_tags[b], caption_tags=caption_tags[b], scores=probs[b].tolist(),
                           threshold=base)
            for b in range(len(rgb))
        ]

    def encode_tags(self, image_embeds: torch.Tensor, tags: list[list[str]]) -> torch.Tensor:
        """The tag encoder over ' | '-joined tags (40 tokens, first token [ENC]) cross-attending to the image."""
        tokens = self.tokenizer([" | ".join(t) for t in tags], padding="max_length", truncation=True,
                                max_length=self.config.max_tag_tokens, return_tensors="pt")
        input_ids = tokens.input_ids.to(self.device)
        input_ids[:, 0] = self.enc_token_id
        return self.model.encode_tags(input_ids, tokens.attention_mask.to(self.device), image_embeds)

    @torch.inference_mode()
    def caption(self, image_embeds: torch.Tensor, tags: list[list[str]], use_cache: bool = True,
                on_step: Callable[[int, int], None] | None = None) -> list[str]:
        c = self.config
        sequences = beam_search(
            self.model.text_decoder, self.encode_tags(image_embeds, tags), self.prompt_ids,
            num_beams=c.num_beams, max_length=c.max_length, min_length=c.min_length,
            eos_token_id=self.tokenizer.sep_token_id, pad_token_id=self.tokenizer.pad_token_id,
            use_cache=use_cache, on_step=on_step,
        )
        texts = self.tokenizer.batch_decode(sequences, skip_special_tokens=True)
        return [t[len(c.prompt):] for t in texts]  # as upstream: drop the prompt by its character length

    def memory_bytes(self) -> int:
        seen, total = set(), 0
        for t in [*self.model.parameters(), *self.model.buffers()]:
            if t.data_ptr() not in seen:
                seen.add(t.data_ptr())
                total += t.numel() * t.element_size()
        return total


def _check_threshold(value: Any) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise UserInputError(f"The threshold must be a number between 0 and 1, not {value!r}.") from None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise UserInputError(f"The threshold must be between 0 and 1 (you gave {value}); 0.68 is the official default.")
    return value


def _as_list(images: Any) -> list[Any]:
    if images is None:
        return []
    if isinstance(images, (list, tuple)):
        return list(images)
    if isinstance(images, np.ndarray) and images.ndim == 4:
        return list(images)
    return [images]


def _per_image(user_tags, n: int) -> list[list[str]]:
    if user_tags is None or isinstance(user_tags, str):
        tags = parse_user_tags(user_tags)
        return [tags] * n
    user_tags = list(user_tags)
    if len(user_tags) != n:
        raise UserInputError(f"Give one tag list per image: {len(user_tags)} tag lists for {n} images.")
    return [parse_user_tags(t) for t in user_tags]


def _name(image: Any, index: int) -> str:
    if isinstance(image, (str, os.PathLike)):
        return Path(image).name
    return f"Image {index + 1}"
