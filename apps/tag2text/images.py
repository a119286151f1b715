"""Reading user images safely and preprocessing them the official way, without torchvision.

Official transform: convert to RGB -> Resize((384, 384)) -> ToTensor -> ImageNet Normalize. On a PIL image
``Resize`` is ``image.resize((384, 384), BILINEAR)``: a squash, no crop, so this module calls exactly that.
Deliberate differences, all for inputs the official code mishandles: EXIF orientation is applied, transparency is
composited on white (the official ``convert("RGB")`` shows whatever colour hides under transparent pixels), and
16-bit images are scaled to 8 bits instead of clipped.

Inputs are read in two steps, so that no limit depends on decoding anything. ``scan_images`` reads headers only
(an image file's or bytes' header; a zip's central directory, then each member's header; a PIL image's or array's
size): the size of a zip's directory (``MAX_ZIP_DIRECTORY_BYTES``), the number of images (``MAX_BATCH``), each
file's size (``MAX_FILE_BYTES``), the metadata read to find an image's size (``HEADER_BYTES``), each image's pixels
(``MAX_PIXELS``, ``MIN_SIDE``) and the pixels of the whole request (``MAX_TOTAL_PIXELS``) are all checked there.
``ImageBatch.decode`` then decodes one image at a time. Only the decoders in ``FORMATS`` are reachable, whatever a
file is named.

Large images are reduced while decoding, since the model only sees 384×384 (``reduction_factors``): by one integer
factor for both sides, keeping the aspect ratio, chosen so that every side stays at least 768 pixels
(``REDUCE_TO``, twice the model's 384) and, where possible, at most 1536. A side under 1536 pixels is therefore never
reduced, and a typical photo (640×480, 1280×960, 1600×1200, ...) is decoded exactly as before, bit for bit. Only an
image more than about twice as long as wide has its long side squeezed further, to at most 3072 pixels (the model
squashes it to a square anyway). JPEGs are decoded at 1/2, 1/4 or 1/8 size by DCT scaling (``draft``) when the factor
allows, then box-averaged by ``Image.reduce`` for the rest; other formats are decoded in full, one image at a time, and
box-averaged. Examples: 4000×3000 -> 1334×1000 (reduce 3), 6000×4000 -> 1500×1000 (JPEG: DCT 1/4), 7000×7000 ->
875×875 (JPEG: DCT 1/8). A reduced image's pixels differ slightly from a full decode. Measured on the final 384×384
preprocessed tensor (ImageNet-normalised units, where one 8-bit grey level is about 0.017), reduced vs full decode of
a smooth gradient plus noise:

    PNG  4000×3000, box reduce 3        mean |diff| 0.0047, max 0.035-0.052 (two to three grey levels)
    JPEG 4000×3000 (q92), box reduce 3  mean |diff| 0.0043, max 0.035-0.052
    JPEG 6000×4000 (q92), DCT 1/4       mean |diff| 0.0033, max 0.035
    PNG  6000×4000, box reduce 4        mean |diff| 0.0031, max 0.018
    1-bit (dithered) images differ more: mean 0.015, max 0.19
"""

from __future__ import annotations

import io
import math
import os
import struct
import warnings
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from shared.errors import UserInputError
from shared.uploads import open_zip
from shared.validation import kind_of

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
MAX_PIXELS = 50_000_000  # ~ a 50-megapixel photo; larger headers are refused before any pixel is decoded
MAX_TOTAL_PIXELS = 250_000_000  # all images of one request together, from their headers, before any is decoded
MIN_SIDE = 16
MAX_FILE_BYTES = 64 * 1024 * 1024  # one image file, or one member of a zip (its declared uncompressed size)
MAX_BATCH = 64
MAX_ZIP_DIRECTORY_BYTES = 1024 * 1024  # a zip's list of members (~10,000 entries), read before any member
HEADER_BYTES = 16 * 1024 * 1024  # what the scan may read of one image to find its size (metadata before the pixels)
REDUCE_TO = 768  # 2 × the model's 384: a reduced image keeps at least this many pixels along each side
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"}

Image.init()  # registers every plugin (WebP and TIFF are not preloaded), so FORMATS below can name them
# The only decoders an upload may reach, whatever its name (not EPS, which runs Ghostscript, nor PSD, ICO, ...).
# A multi-picture phone JPEG (MPO) opens through the JPEG decoder.
FORMATS = tuple(f for f in ("JPEG", "PNG", "WEBP", "BMP", "GIF", "TIFF") if f in Image.OPEN)

_ORIENTATION = 0x0112
_SIXTEEN_BIT = ("I;16", "I;16L", "I;16B", "I;16N")
_REDUCIBLE = ("L", "LA", "La", "RGB", "RGBA", "RGBa", "RGBX", "CMYK", "YCbCr", "LAB", "I", "F")
# What decoders raise on damaged or crafted files (Image.open itself turns some of these into UnidentifiedImageError).
_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, struct.error, IndexError, KeyError, ZeroDivisionError,
                  zlib.error)
_ZIP_ERRORS = (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError, EOFError, zlib.error)


@dataclass
class NamedImage:
    name: str
    image: Image.Image
    index: int = 0  # its position in the scanned batch (``ImageBatch.images``)


@dataclass(frozen=True)
class ScannedImage:
    """One image of the input, known from its header only."""

    name: str  # as shown to the person: the file name, the member's path inside its zip, or "Image N"
    source: Any  # the image file's or the zip archive's Path, or the image itself (bytes, PIL image, array)
    member: zipfile.ZipInfo | None  # the zip member; None for anything else
    size: tuple[int, int]  # (width, height) from the header, as stored (before EXIF rotation)

    @property
    def pixels(self) -> int:
        return self.size[0] * self.size[1]


@dataclass
class ImageBatch:
    """An upload whose headers passed every limit; nothing of it is decoded until ``decode``/``iter_decode``."""

    images: list[ScannedImage]
    skipped: list[str] = field(default_factory=list)  # a note per file left out; decoding may add more

    def __len__(self) -> int:
        return len(self.images)

    @property
    def total_pixels(self) -> int:
        return sum(im.pixels for im in self.images)

    def iter_decode(self) -> Iterator[NamedImage]:
        """Decode (and reduce) one image at a time. An unreadable zip member is skipped with a note in ``skipped``;
        any other unreadable image raises. Raises at the end if no image could be decoded at all."""
        decoded = 0
        with ExitStack() as stack:
            archives: dict[Path, zipfile.ZipFile] = {}
            for index, item in enumerate(self.images):
                if item.member is None:
                    image = load_image(item.source, item.name)
                else:
                    try:
                        if item.source not in archives:
                            archives[item.source] = stack.enter_context(_open_zip(item.source))
                        image = load_image(_read_member(archives[item.source], item.member), item.name)
                    except UserInputError as error:
                        self.skipped.append(f"{item.name} ({error})")
                        continue
                decoded += 1
                yield NamedImage(item.name, image, index)
        if not decoded:
            raise _nothing_readable(self.skipped)

    def decode(self) -> list[NamedImage]:
        """All images, decoded one at a time and reduced (see the module docstring); notes go to ``skipped``."""
        return list(self.iter_decode())


def scan_images(sources: Sequence[Any]) -> ImageBatch:
    """Images -> an ``ImageBatch``, reading headers only. A source is an image file or a zip archive of images (a
    path), an encoded image (bytes), a PIL image or an H×W(×C) array.

    Every limit is checked here, before any pixel is decoded: the number of images (zip entries are counted from the
    archive's directory, before any member is read), file sizes, each image's pixels, and the pixels of all images
    together. Unusable members of a zip are skipped with a note; any other unusable image raises, since the person
    chose that file on purpose.
    """
    if not sources:
        raise UserInputError("No images were given; upload at least one image or a zip of images.")
    entries: list[tuple[str, Any, zipfile.ZipInfo | None]] = []
    skipped: list[str] = []
    images: list[ScannedImage] = []
    with ExitStack() as stack:
        archives: dict[Path, zipfile.ZipFile] = {}
        for position, source in enumerate(sources):
            if isinstance(source, (str, os.PathLike)):
                path = Path(source)
                if path.suffix.lower() == ".zip":
                    archives[path] = stack.enter_context(_open_zip(path))
                    entries += _zip_entries(archives[path], path, skipped)
                else:
                    _check_file(path, path.name)
                    entries.append((path.name, path, None))
            else:
                entries.append((f"Image {position + 1}", source, None))
        if len(entries) > MAX_BATCH:  # counted from names alone: no member has been read yet
            raise UserInputError(f"At most {MAX_BATCH} images per batch, and this upload holds {len(entries)}; "
                                 "split it into smaller batches.")
        for name, source, member in entries:
            if member is None:
                size = _source_size(source, name)
                _check_pixels(size, name)
            else:
                try:
                    size = _member_header_size(archives[source], member, name)
                    _check_pixels(size, name)
                except UserInputError as error:
                    skipped.append(f"{name} ({error})")
                    continue
            images.append(ScannedImage(name, source, member, size))
    if not images:
        raise _nothing_readable(skipped)
    total = sum(im.pixels for im in images)
    if total > MAX_TOTAL_PIXELS:
        raise UserInputError(_too_many_pixels(len(images), total))
    return ImageBatch(images, skipped)


def collect_images(paths: Sequence[str | os.PathLike]) -> tuple[list[NamedImage], list[str]]:
    """Uploaded files (images and/or zip archives) -> named RGB images, plus a note for each file skipped.

    ``scan_images(paths)`` (every limit, headers only), then ``decode()``. Unreadable members of a zip are skipped
    with a note; a single unreadable image raises, since the person chose that file on purpose.
    """
    batch = scan_images(paths)
    images = batch.decode()
    return images, batch.skipped


def load_image(source: Any, name: str = "The image", *, reduce: bool = True) -> Image.Image:
    """Any image-like input -> an RGB PIL image, upright per EXIF; ``UserInputError`` with a reason otherwise.

    The header's size is checked before any pixel is decoded. With ``reduce`` (the default) a large image comes back
    reduced (see the module docstring); images with both sides under 1536 pixels are never changed by it.
    """
    image, ours = _open(source, name)
    try:
        _check_pixels(image.size, name)
        return _decode(image, name, reduce=reduce, may_draft=ours)
    finally:
        if ours:
            image.close()


def preprocess(images: list[Image.Image], size: int) -> np.ndarray:
    """RGB PIL images -> (B, 3, size, size) float32, squash-resized (bilinear) and ImageNet-normalised."""
    batch = [np.asarray(im.resize((size, size), Image.BILINEAR), dtype=np.float32) / 255.0 for im in images]
    return ((np.stack(batch) - MEAN) / STD).transpose(0, 3, 1, 2).copy()


def reduction_factors(size: tuple[int, int]) -> tuple[int, int]:
    """Integer (x, y) factors to reduce an image of ``size`` (width, height) by while decoding it.

    One factor for both sides, so the aspect ratio is kept: the largest that leaves every side at least
    ``REDUCE_TO`` (so a side under ``2 * REDUCE_TO`` is never reduced), and no smaller than needed to bring every side
    to ``2 * REDUCE_TO`` or less when that is possible; within that range one with a large power of two (JPEG DCT
    scaling does it), then the larger. Only an image whose long side would still be over ``4 * REDUCE_TO`` (more
    than about twice as long as wide) is squeezed further along that side, down to at least ``2 * REDUCE_TO``.
    """
    low = [-(-side // (2 * REDUCE_TO)) for side in size]  # smallest factor leaving the side at most 2 * REDUCE_TO
    high = [max(1, side // REDUCE_TO) for side in size]  # largest factor leaving the side at least REDUCE_TO
    top = min(high)
    factor = max(range(min(max(low), top), top + 1), key=lambda f: (min(f & -f, 8), f))
    return max(factor, -(-size[0] // (4 * REDUCE_TO))), max(factor, -(-size[1] // (4 * REDUCE_TO)))


# -- opening and decoding ---------------------------------------------------------------------------------------------


def _check_file(path: Path, name: str) -> None:
    try:
        found = path.is_file()
    except OSError:  # e.g. a name longer than the file system allows
        found = False
    if not found:
        raise UserInputError(f"{name}: the file was not found; upload it again.")
    _check_bytes(path.stat().st_size, name)


def _open_image(fp: Any, name: str) -> Image.Image:
    """``Image.open``: lazy, so only the header is read; our sentence for anything that is not a usable image."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            return Image.open(fp, formats=FORMATS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise UserInputError(_too_big(name)) from None
    except UnidentifiedImageError:
        raise UserInputError(f"{name} is not an image Tag2Text can read; upload a JPEG, PNG or WebP file.") from None
    except _HeaderTooLong:
        raise UserInputError(f"{name} has over {HEADER_BYTES // 2**20} MB of metadata before its pixels; "
                             "re-save it without the extra metadata and try again.") from None
    except _DECODE_ERRORS:  # e.g. a JPEG cut inside its headers
        raise UserInputError(_damaged(name)) from None


def _open(source: Any, name: str) -> tuple[Image.Image, bool]:
    """-> (image, whether we opened it): files and bytes are opened lazily, so only their header has been read."""
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        _check_file(path, name)
        return _open_image(path, name), True
    if isinstance(source, (bytes, bytearray)):
        _check_bytes(len(source), name)
        return _open_image(io.BytesIO(source), name), True
    if isinstance(source, np.ndarray):
        array = _image_array(source, name)
        _check_pixels((array.shape[1], array.shape[0]), name)
        if array.dtype != np.uint8:
            scale = 255.0 if array.dtype.kind == "f" and array.max(initial=0) <= 1.0 else 1.0
            array = np.clip(array.astype(np.float64) * scale, 0, 255).astype(np.uint8)
        return Image.fromarray(array), False
    if isinstance(source, Image.Image):
        return source, False
    raise _not_an_image_type(source, name)


def _source_size(source: Any, name: str) -> tuple[int, int]:
    """(width, height) of an image file, bytes, PIL image or array, from its header or shape: nothing decoded."""
    if isinstance(source, Path):  # already checked by ``_check_file``
        with open(source, "rb") as fp:
            return _header_size(fp, name)
    if isinstance(source, (bytes, bytearray)):
        _check_bytes(len(source), name)
        return _header_size(io.BytesIO(source), name)
    if isinstance(source, Image.Image):
        return source.size
    if isinstance(source, np.ndarray):
        array = _image_array(source, name)
        return array.shape[1], array.shape[0]
    raise _not_an_image_type(source, name)


def _check_bytes(size: int, name: str) -> None:
    """An image file (or encoded image) of ``size`` bytes: not empty, at most ``MAX_FILE_BYTES``."""
    if size > MAX_FILE_BYTES:
        raise UserInputError(f"{name} is larger than {MAX_FILE_BYTES // 2**20} MB; upload a smaller image.")
    if size == 0:
        raise UserInputError(_empty(name))


def _image_array(array: np.ndarray, name: str) -> np.ndarray:
    """An H×W, H×W×3 or H×W×4 array (H×W×1 squeezed to H×W); ``UserInputError`` for any other shape."""
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[-1] not in (3, 4)):
        raise UserInputError(f"{name} has shape {array.shape}; give an H×W, H×W×3 or H×W×4 image array.")
    return array


def _not_an_image_type(source: Any, name: str) -> UserInputError:
    return UserInputError(f"{name} is {kind_of(source)}, not an image; give an image file, a PIL image or a numpy "
                          "array.")


def _check_pixels(size: tuple[int, int], name: str) -> None:
    width, height = size
    if width * height > MAX_PIXELS:
        raise UserInputError(_too_big(name))
    if min(width, height) < MIN_SIDE:
        raise UserInputError(f"{name} is only {width}×{height} pixels; use an image at least "
                             f"{MIN_SIDE}×{MIN_SIDE} pixels (Tag2Text looks at it at 384×384).")


def _decode(image: Image.Image, name: str, reduce: bool, may_draft: bool) -> Image.Image:
    try:
        factors = reduction_factors(image.size) if reduce else (1, 1)
        if may_draft and factors != (1, 1):
            factors = _draft(image, factors)
        image.load()
        sixteen_bit = image.mode in _SIXTEEN_BIT
        if factors != (1, 1):
            exif = image.getexif()  # read before reducing: a TIFF keeps its orientation in tags the copy lacks
            image = _reducible(image).reduce(factors)
            if exif.get(_ORIENTATION, 1) != 1 and "exif" not in image.info:
                image.info["exif"] = exif.tobytes()  # so exif_transpose below rotates (once) and drops the tag
        image = ImageOps.exif_transpose(image) or image  # reduction factors follow the stored axes, so rotate after
        return _to_rgb(image, sixteen_bit)
    except _DECODE_ERRORS:
        raise UserInputError(_damaged(name)) from None


def _draft(image: Image.Image, factors: tuple[int, int]) -> tuple[int, int]:
    """JPEG DCT scaling by the largest power of two (at most 8) dividing both factors -> the factors left to reduce."""
    common = math.gcd(*factors)
    scale = min(common & -common, 8)
    if scale == 1 or image.format not in ("JPEG", "MPO"):
        return factors
    width, height = image.size
    image.draft(image.mode, (width // scale, height // scale))
    for done in (scale, 1):
        if image.size == (-(-width // done), -(-height // done)):
            return factors[0] // done, factors[1] // done
    return reduction_factors(image.size)  # not expected: start again from what the decoder will give


def _reducible(image: Image.Image) -> Image.Image:
    """A mode ``Image.reduce`` averages correctly (not palette indices), converted the way ``_to_rgb`` would."""
    if image.mode == "P":
        return image.convert("RGBA" if "transparency" in image.info else "RGB")
    if image.mode == "PA":
        return image.convert("RGBA")
    if image.mode == "1":
        return image.convert("L")
    if image.mode in _SIXTEEN_BIT:
        return image.convert("I")
    return image if image.mode in _REDUCIBLE else image.convert("RGB")


def _to_rgb(image: Image.Image, sixteen_bit: bool = False) -> Image.Image:
    if image.mode in (*_SIXTEEN_BIT, "I"):
        array = np.asarray(image, dtype=np.float64)
        if image.mode != "I" or sixteen_bit or array.max(initial=0) > 255:
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


# -- headers -----------------------------------------------------------------------------------------------------------


class _HeaderTooLong(OSError):
    pass


class _HeaderOnly(io.RawIOBase):
    """A seekable read-only view of a stream that hands out at most ``budget`` bytes: enough for ``Image.open`` to
    parse a header, never a whole large image."""

    def __init__(self, raw: Any, budget: int = HEADER_BYTES):
        super().__init__()
        self._raw, self._left = raw, budget

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = self._left + 1 if size is None or size < 0 else min(size, self._left + 1)
        data = self._raw.read(want)
        self._left -= len(data)
        if self._left < 0:
            raise _HeaderTooLong
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()


def _header_size(fp: Any, name: str) -> tuple[int, int]:
    start = fp.read(12)
    fp.seek(0)
    webp = start[:4] == b"RIFF" and start[8:12] == b"WEBP"  # Pillow's WebP reader takes the whole file to parse it
    image = _open_image(_HeaderOnly(fp, MAX_FILE_BYTES if webp else HEADER_BYTES), name)
    try:
        return image.size
    finally:
        image.close()


def _open_zip(path: Path) -> zipfile.ZipFile:
    return open_zip(path, MAX_ZIP_DIRECTORY_BYTES, f"zip only the images, at most {MAX_BATCH}")


def _zip_entries(archive: zipfile.ZipFile, path: Path, skipped: list[str]) -> list[tuple[str, Path, zipfile.ZipInfo]]:
    """The image members of a zip, from its central directory alone (no member is read); notes for the rest."""
    entries = []
    for info in archive.infolist():
        member = info.filename
        base = member.rsplit("/", 1)[-1]
        if info.is_dir() or member.startswith("__MACOSX/") or base.startswith("."):
            continue
        if Path(base).suffix.lower() not in IMAGE_SUFFIXES:
            skipped.append(f"{member} (not an image file)")
        elif info.file_size > MAX_FILE_BYTES:
            skipped.append(f"{member} (larger than {MAX_FILE_BYTES // 2**20} MB)")
        elif info.flag_bits & 0x1:
            skipped.append(f"{member} (encrypted; zip the images again without a password)")
        else:
            entries.append((member, path, info))
    return entries


def _member_header_size(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> tuple[int, int]:
    try:
        with archive.open(info) as fp:
            return _header_size(fp, name)
    except _ZIP_ERRORS:
        raise UserInputError(_unreadable_member(name)) from None


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    try:
        return archive.read(info)  # at most the declared size, which the scan checked against MAX_FILE_BYTES
    except _ZIP_ERRORS:
        raise UserInputError(_unreadable_member(info.filename)) from None


# -- messages (our sentences only: never a library's exception text) --------------------------------------------------


def _too_big(name: str) -> str:
    return (f"{name} is too large to process safely (over {MAX_PIXELS // 1_000_000} megapixels); "
            "resize it below that and try again.")


def _too_many_pixels(count: int, total: int) -> str:
    return (f"These {count} images have {math.ceil(total / 1_000_000)} megapixels in all; at most "
            f"{MAX_TOTAL_PIXELS // 1_000_000} per request. Split them into smaller batches or downscale them.")


def _damaged(name: str) -> str:
    return f"{name} is damaged or incomplete and could not be decoded; re-save or re-download it and try again."


def _empty(name: str) -> str:
    return f"{name} is an empty file; upload a JPEG, PNG or WebP image."


def _unreadable_member(name: str) -> str:
    return (f"{name} could not be read from the zip archive (damaged, or compressed in a way Python cannot read); "
            "zip the images again and retry.")


def _nothing_readable(skipped: list[str]) -> UserInputError:
    return UserInputError("None of the uploaded files is a readable image: " + "; ".join(skipped) + ".")
