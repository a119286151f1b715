"""Reading user images safely and preprocessing them the official way, without torchvision.

Official transform: convert to RGB -> Resize((384, 384)) -> ToTensor -> ImageNet Normalize. On a PIL image
``Resize`` is ``image.resize((384, 384), BILINEAR)``: a squash, no crop, so this module calls exactly that.
Deliberate differences, all for inputs the official code mishandles: EXIF orientation is applied, transparency is
composited on white (the official ``convert("RGB")`` shows whatever colour hides under transparent pixels), and
16-bit images are scaled to 8 bits instead of clipped.
"""

from __future__ import annotations

import io
import os
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from shared.errors import UserInputError

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
MAX_PIXELS = 50_000_000  # ~ a 50-megapixel photo; larger headers are refused before any pixel is decoded
MIN_SIDE = 16
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_BATCH = 64
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"}


@dataclass
class NamedImage:
    name: str
    image: Image.Image


def _open(source: Any, name: str) -> Image.Image:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise UserInputError(f"{name}: the file was not found; upload it again.")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise UserInputError(f"{name} is larger than {MAX_FILE_BYTES // 2**20} MB; upload a smaller image.")
        source = path.read_bytes()
    if isinstance(source, (bytes, bytearray)):
        if not source:
            raise UserInputError(f"{name} is an empty file; upload a JPEG, PNG or WebP image.")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                image = Image.open(io.BytesIO(source))
        except (Image.DecompressionBombError, Image.DecompressionBombWarning):
            raise UserInputError(_too_big(name)) from None
        except UnidentifiedImageError:
            raise UserInputError(f"{name} is not an image Tag2Text can read; "
                                 "upload a JPEG, PNG or WebP file.") from None
        except (OSError, SyntaxError, ValueError) as error:  # e.g. a JPEG cut inside its headers
            raise UserInputError(_damaged(name, error)) from None
        return image
    if isinstance(source, np.ndarray):
        array = source
        if array.ndim == 3 and array.shape[-1] == 1:
            array = array[..., 0]
        if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[-1] not in (3, 4)):
            raise UserInputError(f"{name} has shape {array.shape}; give an H×W, H×W×3 or H×W×4 image array.")
        if array.dtype != np.uint8:
            scale = 255.0 if array.dtype.kind == "f" and array.max(initial=0) <= 1.0 else 1.0
            array = np.clip(array.astype(np.float64) * scale, 0, 255).astype(np.uint8)
        return Image.fromarray(array)
    if isinstance(source, Image.Image):
        return source
    raise UserInputError(f"{name} is a {type(source).__name__}; give an image file, a PIL image or a numpy array.")


def _too_big(name: str) -> str:
    return (f"{name} is too large to process safely (over {MAX_PIXELS // 1_000_000} megapixels); "
            "resize it below that and try again.")


def _damaged(name: str, error: BaseException) -> str:
    return (f"{name} is damaged or incomplete and could not be decoded ({error}); "
            "re-save or re-download it and try again.")


def _to_rgb(image: Image.Image) -> Image.Image:
    if image.mode in ("I;16", "I;16L", "I;16B", "I;16N", "I"):
        array = np.asarray(image, dtype=np.float64)
        if image.mode != "I" or array.max(initial=0) > 255:
            array = array / 257.0
        image = Image.fromarray(np.clip(np.rint(array), 0, 255).astype(np.uint8))
    elif image.mode == "F":
        array = np.asarray(image, dtype=np.float64)
        peak = array.max(initial=0)
        image = Image.fromarray(np.clip(np.rint(array * (255.0 if peak <= 1.0 else 1.0)), 0, 255).astype(np.uint8))
    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    if image.mode in ("RGBA", "LA", "PA", "La", "RGBa"):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB") if image.mode != "RGB" else image


def load_image(source: Any, name: str = "The image") -> Image.Image:
    """Any image-like input -> an RGB PIL image, upright per EXIF; ``UserInputError`` with a reason otherwise."""
    image = _open(source, name)
    width, height = image.size
    if width * height > MAX_PIXELS:
        raise UserInputError(_too_big(name))
    if min(width, height) < MIN_SIDE:
        raise UserInputError(f"{name} is only {width}×{height} pixels; use an image at least "
                             f"{MIN_SIDE}×{MIN_SIDE} pixels (Tag2Text looks at it at 384×384).")
    try:
        image.load()
        image = ImageOps.exif_transpose(image) or image
        return _to_rgb(image)
    except (OSError, SyntaxError, ValueError) as error:
        raise UserInputError(_damaged(name, error)) from None


def preprocess(images: list[Image.Image], size: int) -> np.ndarray:
    """RGB PIL images -> (B, 3, size, size) float32, squash-resized (bilinear) and ImageNet-normalised."""
    batch = [np.asarray(im.resize((size, size), Image.BILINEAR), dtype=np.float32) / 255.0 for im in images]
    return ((np.stack(batch) - MEAN) / STD).transpose(0, 3, 1, 2).copy()


def _zip_images(path: Path) -> tuple[list[NamedImage], list[str]]:
    images, skipped = [], []
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise UserInputError(f"{path.name} is not a readable zip archive; zip the images again and retry.") from None
    with archive:
        for info in archive.infolist():
            member = info.filename
            base = member.rsplit("/", 1)[-1]
            if info.is_dir() or member.startswith("__MACOSX/") or base.startswith("."):
                continue
            if Path(base).suffix.lower() not in IMAGE_SUFFIXES:
                skipped.append(f"{member} (not an image file)")
                continue
            if info.file_size > MAX_FILE_BYTES:
                skipped.append(f"{member} (larger than {MAX_FILE_BYTES // 2**20} MB)")
                continue
            try:
                images.append(NamedImage(member, load_image(archive.read(member), member)))
            except UserInputError as error:
                skipped.append(f"{member} ({error})")
    return images, skipped


def collect_images(paths: list[str | os.PathLike]) -> tuple[list[NamedImage], list[str]]:
    """Uploaded files (images and/or zip archives) -> named RGB images, plus a note for each file skipped.

    Unreadable members of a zip are skipped with a note; a single unreadable image raises, since the
    person chose that file on purpose.
    """
    if not paths:
        raise UserInputError("No images were given; upload at least one image or a zip of images.")
    images: list[NamedImage] = []
    skipped: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.suffix.lower() == ".zip":
            found, missed = _zip_images(path)
            images += found
            skipped += missed
        else:
            images.append(NamedImage(path.name, load_image(path, path.name)))
        if len(images) > MAX_BATCH:
            raise UserInputError(f"At most {MAX_BATCH} images per batch; split the upload into smaller batches.")
    if not images:
        raise UserInputError("None of the uploaded files is a readable image: " + "; ".join(skipped) + ".")
    return images, skipped
