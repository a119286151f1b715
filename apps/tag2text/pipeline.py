"""Tag2Text inference: images -> tags with scores + a caption guided by those tags (or by the user's own tags).

UI-free; the pages' actions (Gradio and Streamlit), Ray replicas, the benchmarks and the tests call this. Fixes
relative to the official code: the threshold is honoured per call (upstream's setter is ignored), each image in a
batch gets its own caption (upstream gives every image image 0's caption under transformers >= 4.28), and decoding
uses a KV cache.

One call, one output: ``pipe(images, threshold, user_tags)`` takes one image or a list of them (image files, zip
archives of images, encoded bytes, PIL images or arrays) and returns one ``Tag2TextOutput``: ``results`` holds one
``Tag2TextImageResult`` per image read, in input order (a single image is ``out.results[0]``), and ``skipped`` notes
the zip members that could not be read. The page's API endpoints ``tag_image`` and ``tag_batch`` both answer
``out.to_dict()``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import torch
from PIL import Image

from apps.tag2text import checks
from apps.tag2text.checkpoint import load_model
from apps.tag2text.config import VOCAB_FILE, Tag2TextConfig
from apps.tag2text.decoding import beam_search
from apps.tag2text.images import NamedImage, preprocess, scan_images
from apps.tag2text.model import Tag2Text
from shared.pipeline import Callback, Pipeline, PipelineOutput

DEC, ENC = "[DEC]", "[ENC]"


@dataclass(frozen=True)
class Tag:
    index: int
    name: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "name": self.name, "score": round(self.score, 4)}


@dataclass(frozen=True)
class Tag2TextImageResult:
    """One image's result. ``tags`` are in tag-index order (as upstream), deleted tags removed."""

    name: str  # the file name, the member's path inside its zip, or "Image N"
    tags: tuple[Tag, ...]
    caption: str
    user_tags: tuple[str, ...]
    caption_tags: tuple[str, ...]  # what the caption was guided by: the user's tags if any, else the shown tags
    scores: tuple[float, ...] = field(repr=False)  # every tag's score, by tag index (left out of to_dict)

    @property
    def tag_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tags)

    @property
    def tag_text(self) -> str:
        return " | ".join(self.tag_names)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the shown tags with scores rounded to 4 places; the full score list is left out."""
        return {"name": self.name, "tags": [t.to_dict() for t in self.tags], "caption": self.caption,
                "user_tags": list(self.user_tags), "caption_tags": list(self.caption_tags)}


class Prediction(NamedTuple):
    """One image's raw prediction (``predict_pixels``), before it becomes a ``Tag2TextImageResult``."""

    indices: list[int]  # the shown tags, by tag index
    scores: torch.Tensor  # (num_tags,) every tag's probability
    tags: tuple[str, ...]  # the shown tags' names
    caption_tags: list[str]  # what guided the caption
    caption: str


@dataclass(frozen=True)
class Tag2TextOutput(PipelineOutput):
    results: tuple[Tag2TextImageResult, ...]  # one per image read, in input order
    threshold: float  # the base threshold used (per-class thresholds of the config stay on top)
    skipped: tuple[str, ...] = ()  # a note per zip member left out




def class_thresholds(config: Tag2TextConfig, threshold: float | None = None) -> torch.Tensor:
    """Per-tag thresholds: ``threshold`` (default: the config's 0.68) with the config's per-class ones
    (person/man/woman 0.7) on top, exactly as the official constructor builds them."""
    thresholds = torch.full((config.num_tags,), float(config.threshold if threshold is None else threshold))
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


class Tag2TextPipeline(Pipeline):
    output_class = Tag2TextOutput
    components = ("model",)

    def __init__(self, model: Tag2Text, tokenizer=None, *, device: str | torch.device = "cpu",
                 dtype: torch.dtype = torch.float32, weights_file: Path | None = None, batch_size: int = 8):
        self.device, self.dtype = torch.device(device), dtype
        self.model = model.to(device=self.device, dtype=dtype).eval()
        self.model.prepare_for_inference()  # after the move: moving or casting replaces what it fuses and derives
        self.batch_size = batch_size  # images per forward pass: bounds memory for big uploads
        self.config: Tag2TextConfig = model.config
        self.tokenizer = tokenizer or load_tokenizer()
        self.weights_file = weights_file
        self.enc_token_id = self.tokenizer.convert_tokens_to_ids(ENC)
        prompt = self.tokenizer(self.config.prompt).input_ids[:-1]  # [CLS] a picture of -> [DEC] a picture of
        self.prompt_ids = [self.tokenizer.convert_tokens_to_ids(DEC), *prompt[1:]]

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, *, device: str | torch.device = "cpu",
                        dtype: torch.dtype = torch.float32) -> Tag2TextPipeline:
        """Load from a folder holding ``tag2text_swin_14m.pth`` (plus ``config.json`` for non-official sizes)."""
        model, read_from = load_model(path, device=device, dtype=dtype)
        return cls(model, device=device, dtype=dtype, weights_file=read_from)

    check_inputs = staticmethod(checks.check_inputs)  # torch-free: apps/tag2text/checks.py

    @torch.inference_mode()
    def __call__(self, images: Any, threshold: float | None = None, user_tags: str | Sequence[str | None] | None = None,
                 *, callback: Callback | None = None) -> Tag2TextOutput:
        """Tag and caption ``images`` (one image or a list: paths, zips, bytes, PIL images or arrays).

        ``threshold`` replaces the default 0.68 for this call; ``user_tags`` (comma-separated text, one for all
        images or a list with one per image) replace the predicted tags when captioning. ``callback(step, total)``
        follows the caption decoding of all images together.
        """
        inputs = self.check_inputs(images, threshold, user_tags, config=self.config)
        thresholds = class_thresholds(self.config, inputs.threshold)
        per_chunk = self.config.max_length - len(self.prompt_ids)  # beam-search steps of one chunk at most
        progress = _Progress(callback, per_chunk * math.ceil(len(inputs.batch) / self.batch_size))
        results: list[Tag2TextImageResult] = []
        chunk: list[NamedImage] = []

        def run_chunk() -> None:
            done = len(results) // self.batch_size * per_chunk
            results.extend(self._tag_and_caption(chunk, [inputs.user_tags[im.index] for im in chunk], thresholds,
                                                 lambda step, _: progress(done + step)))
            progress(done + per_chunk)  # the search may stop early: the chunk is done either way
            chunk.clear()

        for image in inputs.batch.iter_decode():  # one chunk decoded at a time
            chunk.append(image)
            if len(chunk) == self.batch_size:
                run_chunk()
        if chunk:
            run_chunk()
        progress(progress.total)  # zip members skipped while decoding leave fewer chunks than counted
        return Tag2TextOutput(results=tuple(results), threshold=inputs.threshold, skipped=tuple(inputs.batch.skipped))

    def _tag_and_caption(self, images: list[NamedImage], user_tags: list[tuple[str, ...]], thresholds: torch.Tensor,
                         callback: Callback | None) -> list[Tag2TextImageResult]:
        predictions = self.predict_pixels(self._pixels([im.image for im in images]), user_tags, thresholds, callback)
        names = self.config.tags
        return [
            Tag2TextImageResult(name=im.name, tags=tuple(Tag(i, names[i], float(p.scores[i])) for i in p.indices),
                                caption=p.caption, user_tags=user, caption_tags=tuple(p.caption_tags),
                                scores=tuple(p.scores.tolist()))
            for im, user, p in zip(images, user_tags, predictions, strict=True)
        ]

    @torch.inference_mode()
    def predict_pixels(self, pixels: torch.Tensor, user_tags: Sequence[Sequence[str]], thresholds: torch.Tensor,
                       callback: Callback | None = None) -> list[Prediction]:
        """(B, 3, S, S) model input -> one ``Prediction`` per image: tags, then the caption guided by them (or by
        that image's ``user_tags`` when given). ``thresholds``: (num_tags,) from ``class_thresholds``."""
        tag_logits, image_embeds = self.model(pixels)
        probs = torch.sigmoid(tag_logits.float()).cpu()  # (B, num_tags)
        chosen = probs > thresholds
        chosen[:, list(self.config.delete_tag_index)] = False  # these tags disturb captioning and are never shown
        names = self.config.tags
        indices = [row.nonzero().flatten().tolist() for row in chosen]
        caption_tags = [list(user) or [names[i] for i in idx] for user, idx in zip(user_tags, indices, strict=True)]
        captions = self.caption(image_embeds, caption_tags, callback=callback)
        return [Prediction(idx, probs[b], tuple(names[i] for i in idx), caption_tags[b], captions[b])
                for b, idx in enumerate(indices)]

    def _pixels(self, rgb: list[Image.Image]) -> torch.Tensor:
        """Decoded RGB images -> (B, 3, S, S) on the pipeline's device, in its dtype."""
        return torch.from_numpy(preprocess(rgb, self.config.image_size)).to(device=self.device, dtype=self.dtype)

    def pixel_values(self, images: Sequence[Any]) -> torch.Tensor:
        """Images (anything ``scan_images`` reads) -> the model's (B, 3, S, S) input."""
        return self._pixels([im.image for im in scan_images(list(images)).decode()])

    def encode_tags(self, image_embeds: torch.Tensor, tags: list[list[str]]) -> torch.Tensor:
        """The tag encoder over ' | '-joined tags (40 tokens, first token [ENC]) cross-attending to the image."""
        tokens = self.tokenizer([" | ".join(t) for t in tags], padding="max_length", truncation=True,
                                max_length=self.config.max_tag_tokens, return_tensors="pt")
        input_ids = tokens.input_ids.to(self.device)
        input_ids[:, 0] = self.enc_token_id
        return self.model.encode_tags(input_ids, tokens.attention_mask.to(self.device), image_embeds)

    @torch.inference_mode()
    def caption(self, image_embeds: torch.Tensor, tags: list[list[str]], use_cache: bool = True,
                callback: Callback | None = None) -> list[str]:
        c = self.config
        sequences = beam_search(
            self.model.text_decoder, self.encode_tags(image_embeds, tags), self.prompt_ids,
            num_beams=c.num_beams, max_length=c.max_length, min_length=c.min_length,
            eos_token_id=self.tokenizer.sep_token_id, pad_token_id=self.tokenizer.pad_token_id,
            use_cache=use_cache, callback=callback,
        )
        texts = self.tokenizer.batch_decode(sequences, skip_special_tokens=True)
        return [t[len(c.prompt):] for t in texts]  # as upstream: drop the prompt by its character length


class _Progress:
    """``callback(step, total)`` with steps that only ever increase (each step reported once)."""

    def __init__(self, callback: Callback | None, total: int):
        self.callback, self.total, self.last = callback, total, 0

    def __call__(self, step: int) -> None:
        if self.callback is not None and step > self.last:
            self.last = step
            self.callback(step, self.total)
