"""Tag2Text's input checks, torch-free (image headers only, no weights, no decoding): a page's validator and an API
call's first check import this module only, so the first call after start does not wait for torch
(``Tag2TextPipeline.check_inputs`` is ``check_inputs``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from apps.tag2text.config import OFFICIAL_THRESHOLD, Tag2TextConfig
from apps.tag2text.images import ImageBatch, scan_images
from shared.errors import UserInputError
from shared.validation import check_number, check_text

NO_TAGS = {"", "none"}  # upstream treats '', 'none' and 'None' as "no user tags"
MAX_USER_TAG_CHARS = 1000  # one image's comma-separated tags


class Tag2TextInputs(NamedTuple):
    """What ``check_inputs`` returns: the images as scanned (headers only), the threshold, each image's user tags."""

    batch: ImageBatch
    threshold: float
    user_tags: tuple[tuple[str, ...], ...]


def parse_user_tags(text: str | None) -> list[str]:
    """"dog, red car" -> ["dog", "red car"]; None / "" / "none" -> [] (upstream splits on commas). No checks here:
    ``Tag2TextPipeline.check_inputs`` checks the text first."""
    if text is None or text.strip().lower() in NO_TAGS:
        return []
    return [t.strip() for t in text.split(",") if t.strip()]


def check_inputs(images: Any, threshold: Any = None, user_tags: Any = None, *,
                 config: Tag2TextConfig | None = None) -> Tag2TextInputs:
    """Every check on a call's inputs, reading image headers only (no weights, no decoding).

    ``images``: one image or a list (see the module docstring); ``threshold``: a number in [0, 1] (default: the
    config's, officially 0.68); ``user_tags``: comma-separated text for all images, or a list with one text (or
    None) per image. Raises ``UserInputError`` naming the argument; returns ``Tag2TextInputs``.
    """
    base = config.threshold if config is not None else OFFICIAL_THRESHOLD
    threshold = base if threshold is None else check_number(threshold, "The threshold", 0.0, 1.0,
                                                            argument="threshold")
    per_image = isinstance(user_tags, (list, tuple))
    texts = list(user_tags) if per_image else [user_tags]
    tags = tuple(tuple(parse_user_tags(_check_user_tags(text))) for text in texts)
    try:
        batch = scan_images(_as_list(images))
    except UserInputError as error:
        raise UserInputError(str(error), argument="images") from None
    if per_image and len(tags) != len(batch):
        raise UserInputError(f"Give one tag list per image: {len(tags)} tag lists for {len(batch)} images.",
                             argument="user_tags")
    return Tag2TextInputs(batch, threshold, tags if per_image else tags * len(batch))


def _check_user_tags(text: Any) -> str | None:
    if text is None:
        return None
    if isinstance(text, str) and len(text) > MAX_USER_TAG_CHARS:
        raise UserInputError(f"Your tags are over {MAX_USER_TAG_CHARS:,} characters; give a few comma-separated tags "
                             "instead.", argument="user_tags")
    try:
        return check_text(text, "Your tags", MAX_USER_TAG_CHARS)
    except UserInputError as error:
        raise UserInputError(str(error), argument="user_tags") from None


def _as_list(images: Any) -> list[Any]:
    if images is None:
        return []
    if isinstance(images, (list, tuple)):
        return list(images)
    if isinstance(images, np.ndarray) and images.ndim == 4:
        return list(images)
    return [images]
