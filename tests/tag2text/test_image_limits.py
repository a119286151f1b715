"""Upload limits checked from headers before any pixel is decoded, and large images reduced while decoding."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageFile

from apps.tag2text.images import (
    MAX_BATCH,
    MAX_FILE_BYTES,
    MAX_TOTAL_PIXELS,
    collect_images,
    load_image,
    preprocess,
    scan_images,
)
from benchmarks.common import proc_status, restart_peak
from shared.errors import UserInputError
from tests.fixtures.images import png_header_only


def encoded(image: Image.Image, fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format=fmt, **options)
    return buf.getvalue()


def natural(width: int, height: int, seed: int = 0) -> Image.Image:
    """A smooth colour gradient plus sensor-like noise: closer to a photo than a flat or random image."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    r = 128 + 100 * np.sin(x / width * 3.1 + y / height * 1.3)
    g = 40 + 180 * (y / height)
    b = 128 + 90 * np.cos((x - y) / (width + height) * 6.0)
    pixels = np.stack([r, g, b], -1) + 12 * rng.standard_normal((height, width, 3), dtype=np.float32)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


@pytest.fixture
def decodes(monkeypatch):
    """The size of every image PIL decodes from a file (``ImageFile.load``), in order."""
    sizes: list[tuple[int, int]] = []
    original = ImageFile.ImageFile.load

    def load(self):
        if self.tile:  # not yet decoded
            sizes.append(self.size)
        return original(self)

    monkeypatch.setattr(ImageFile.ImageFile, "load", load)
    return sizes


@pytest.fixture
def member_reads(monkeypatch):
    """The zip members opened for reading (``ZipFile.read`` goes through ``ZipFile.open`` too)."""
    opened: list[str] = []
    original = zipfile.ZipFile.open

    def open_member(self, name, mode="r", *args, **kwargs):
        if mode == "r":  # not the test writing its archive
            opened.append(getattr(name, "filename", name))
        return original(self, name, mode, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", open_member)
    return opened


def peak_growth(call) -> tuple[int, object]:
    """(growth of this process's peak RSS during ``call()`` in bytes, what it returned or raised)."""
    try:
        restart_peak()  # VmHWM (the peak) from the current RSS
    except OSError:
        pytest.skip("this system cannot reset a process's peak RSS (/proc/self/clear_refs)")
    before = proc_status("VmRSS")
    try:
        outcome = call()
    except Exception as error:  # noqa: BLE001 - handed back to the test
        outcome = error
    return proc_status("VmHWM") - before, outcome


# -- the batch count, from the zip's directory --------------------------------------------------------------------


def test_too_many_zip_entries_are_refused_before_any_member_is_read(tmp_path, member_reads, decodes):
    fake = b"\x89PNG\r\n\x1a\n" + b"not an image beyond its signature" * 4
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(MAX_BATCH + 1):
            zf.writestr(f"{i}.png", fake)
    with pytest.raises(UserInputError, match=f"At most {MAX_BATCH} images per batch, and this upload holds "
                                             f"{MAX_BATCH + 1};"):
        scan_images([path])
    assert member_reads == [] and decodes == []
    # Control: one entry fewer, and every header is read, which would have given a different message.
    fewer = tmp_path / "fewer.zip"
    with zipfile.ZipFile(fewer, "w") as zf:
        for i in range(MAX_BATCH):
            zf.writestr(f"{i}.png", fake)
    with pytest.raises(UserInputError, match="None of the uploaded files is a readable image"):
        scan_images([fewer])
    assert len(member_reads) == MAX_BATCH and decodes == []


def test_zip_with_a_huge_directory_is_refused_before_python_parses_it(tmp_path, monkeypatch):
    path = tmp_path / "listing.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(5000):  # 5,000 × ~250 bytes of directory: ZipFile would build 5,000 objects
            zf.writestr(f"{'folder/' * 28}{i:05}.txt", b"")
    parsed = []
    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents", lambda self: parsed.append(self))
    with pytest.raises(UserInputError, match="listing.zip lists too many files .* over 1 MB"):
        scan_images([path])
    assert parsed == []


def test_batch_count_adds_uploaded_files_and_zip_entries(tmp_path, member_reads):
    small = encoded(Image.new("RGB", (32, 32), (10, 200, 30)), "PNG")
    archive = tmp_path / "part.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(MAX_BATCH - 1):
            zf.writestr(f"{i}.png", small)
        zf.writestr("notes.txt", "not counted")
    files = []
    for i in range(2):
        files.append(tmp_path / f"extra{i}.png")
        files[-1].write_bytes(small)
    assert len(scan_images([archive, files[0]])) == MAX_BATCH
    member_reads.clear()
    with pytest.raises(UserInputError, match=f"holds {MAX_BATCH + 1}"):
        scan_images([files[0], archive, files[1]])
    assert member_reads == []


def test_member_declared_too_large_is_skipped_without_reading_it(tmp_path, member_reads):
    path = tmp_path / "big.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("huge.png", bytes(MAX_FILE_BYTES + 1))  # compresses to ~64 KB
        zf.writestr("ok.png", encoded(Image.new("RGB", (32, 32)), "PNG"))
    batch = scan_images([path])
    assert [im.name for im in batch.images] == ["ok.png"]
    assert batch.skipped == [f"huge.png (larger than {MAX_FILE_BYTES // 2**20} MB)"]
    assert member_reads == ["ok.png"]


# -- pixels of the whole request, from headers ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bomb_zip(tmp_path_factory) -> Path:
    """The security review's upload: 12 real PNGs of 7000×7000 (single colour, so ~160 KB each) in a ~1.9 MB zip."""
    png = encoded(Image.new("RGB", (7000, 7000), (90, 140, 200)), "PNG", compress_level=9)
    path = tmp_path_factory.mktemp("bomb") / "photos.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(12):
            zf.writestr(f"photo{i:02}.png", png)
    assert path.stat().st_size < 3 * 2**20
    return path


def test_twelve_7000_square_pngs_are_refused_from_headers_in_little_memory(bomb_zip, decodes):
    growth, outcome = peak_growth(lambda: collect_images([bomb_zip]))
    assert isinstance(outcome, UserInputError)
    assert str(outcome) == ("These 12 images have 588 megapixels in all; at most 250 per request. "
                            "Split them into smaller batches or downscale them.")
    assert decodes == []
    assert growth < 100 * 2**20, f"peak RSS grew {growth / 2**20:.0f} MiB"


def test_total_pixels_add_up_across_uploaded_files_and_zips(tmp_path, decodes):
    files = []
    for i in range(3):  # 3 × 49 MP, each under MAX_PIXELS
        files.append(tmp_path / f"scan{i}.png")
        files[-1].write_bytes(png_header_only(7000, 7000))
    two = tmp_path / "two.zip"
    with zipfile.ZipFile(two, "w") as zf:
        zf.writestr("a.png", png_header_only(7000, 7000))
        zf.writestr("b/b.png", png_header_only(7000, 7000))
    one = tmp_path / "one.zip"
    with zipfile.ZipFile(one, "w") as zf:
        zf.writestr("c.png", png_header_only(3000, 3000))
    batch = scan_images([*files, two])  # 245 MP: accepted from headers (these have no pixels to decode)
    assert batch.total_pixels == 245_000_000 <= MAX_TOTAL_PIXELS
    assert [im.name for im in batch.images] == ["scan0.png", "scan1.png", "scan2.png", "a.png", "b/b.png"]
    assert batch.images[3].size == (7000, 7000)
    with pytest.raises(UserInputError, match="These 6 images have 254 megapixels in all; at most 250 per request"):
        scan_images([files[0], two, files[1], one, files[2]])
    assert decodes == []


def test_bytes_and_arrays_total_pixels_are_checked_before_decoding(decodes):
    sources = [png_header_only(7000, 7000)] * 6
    with pytest.raises(UserInputError, match="These 6 images have 294 megapixels"):
        scan_images(sources)
    assert decodes == []
    batch = scan_images([encoded(Image.new("RGB", (40, 30), (1, 2, 3)), "PNG"), np.zeros((20, 30, 3), np.uint8),
                         Image.new("RGB", (50, 16))])
    assert [(im.name, im.size) for im in batch.images] == [("Image 1", (40, 30)), ("Image 2", (30, 20)),
                                                           ("Image 3", (50, 16))]
    assert decodes == []  # sizes from the PNG header and the array's shape
    pictures = batch.decode()
    assert [p.image.size for p in pictures] == [(40, 30), (30, 20), (50, 16)]
    assert [p.index for p in pictures] == [0, 1, 2]


def test_oversized_header_skips_a_zip_member_but_refuses_an_uploaded_file(tmp_path, decodes):
    path = tmp_path / "mixed.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("giant.png", png_header_only(8000, 8000))
        zf.writestr("ok.png", encoded(Image.new("RGB", (32, 32)), "PNG"))
    images, skipped = collect_images([path])
    assert [im.name for im in images] == ["ok.png"]
    assert len(skipped) == 1 and skipped[0].startswith("giant.png (giant.png is too large")
    assert decodes == [(32, 32)]
    single = tmp_path / "giant.png"
    single.write_bytes(png_header_only(8000, 8000))
    with pytest.raises(UserInputError, match="too large"):
        scan_images([single])


def test_a_member_damaged_after_its_header_is_skipped_while_decoding(tmp_path):
    good = encoded(natural(64, 48), "PNG")
    path = tmp_path / "cut.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("cut.png", good[: len(good) // 2])
        zf.writestr("good.png", good)
    batch = scan_images([path])
    assert len(batch) == 2 and batch.skipped == []  # the header of the cut file is fine
    images = batch.decode()
    assert [im.name for im in images] == ["good.png"]
    assert batch.skipped == ["cut.png (cut.png is damaged or incomplete and could not be decoded; "
                             "re-save or re-download it and try again.)"]
    lone = tmp_path / "cut.png"
    lone.write_bytes(good[: len(good) // 2])
    with pytest.raises(UserInputError, match="damaged or incomplete"):
        scan_images([lone]).decode()


def test_scan_reads_at_most_16_mb_of_metadata_per_image(tmp_path):
    small = encoded(Image.new("RGB", (64, 48), (1, 2, 3)), "JPEG")
    padding = (b"\xff\xef" + struct.pack(">H", 65535) + bytes(65533)) * 260  # 17 MB of APP15 segments
    path = tmp_path / "meta.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("fat.jpg", small[:2] + padding + small[2:])
        zf.writestr("ok.jpg", small)
        zf.writestr("ok.webp", encoded(Image.new("RGB", (64, 48), (1, 2, 3)), "WEBP"))  # read whole by Pillow
    batch = scan_images([path])
    assert [(im.name, im.size) for im in batch.images] == [("ok.jpg", (64, 48)), ("ok.webp", (64, 48))]
    assert batch.skipped == ["fat.jpg (fat.jpg has over 16 MB of metadata before its pixels; "
                             "re-save it without the extra metadata and try again.)"]


def test_only_the_listed_decoders_are_reachable(tmp_path):
    ppm = tmp_path / "photo.png"  # a format PIL reads, under an image name
    ppm.write_bytes(encoded(Image.new("RGB", (32, 32)), "PPM"))
    with pytest.raises(UserInputError, match="not an image Tag2Text can read"):
        load_image(ppm, ppm.name)


# -- reduction while decoding -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def photo_4000x3000() -> Image.Image:
    return natural(4000, 3000)


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_large_images_are_reduced_to_between_768_and_1536_keeping_the_aspect(photo_4000x3000, fmt, decodes):
    data = encoded(photo_4000x3000, fmt, **({"quality": 92} if fmt == "JPEG" else {"compress_level": 1}))
    image = load_image(data)
    assert image.mode == "RGB"
    assert all(768 <= side <= 2 * 768 for side in image.size), image.size
    assert image.size == (1334, 1000)


def test_jpeg_is_decoded_at_a_fraction_of_its_size(decodes):
    picture = Image.new("RGB", (6000, 4000), (200, 180, 40))
    picture.paste((20, 40, 160), (1000, 1000, 4000, 3000))
    data = encoded(picture, "JPEG", quality=90)
    assert load_image(data).size == (1500, 1000)
    assert decodes == [(1500, 1000)]  # DCT scaling by 4: the full 6000×4000 was never decoded


def test_reduced_jpeg_decode_stays_small_in_memory(tmp_path):
    path = tmp_path / "big.jpg"
    Image.new("RGB", (7000, 7000), (30, 120, 220)).save(path, quality=90)
    growth, image = peak_growth(lambda: load_image(path, path.name))
    assert isinstance(image, Image.Image) and image.size == (875, 875)
    assert growth < 40 * 2**20, f"peak RSS grew {growth / 2**20:.0f} MiB"  # a full decode alone is 140 MiB


@pytest.mark.parametrize(("fmt", "size"), [("PNG", (640, 480)), ("JPEG", (640, 480)), ("PNG", (1600, 1200)),
                                           ("JPEG", (1535, 3000))])
def test_images_with_a_side_under_1536_are_not_reduced(fmt, size):
    data = encoded(natural(*size), fmt)
    image = load_image(data)
    assert np.array_equal(np.asarray(image), np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))


@pytest.mark.parametrize(("fmt", "orientation"), [("JPEG", 6), ("JPEG", 8), ("TIFF", 6), ("PNG", 3)])
def test_exif_rotated_large_image_comes_out_upright_and_reduced(fmt, orientation):
    stored = Image.new("RGB", (4000, 3000), (0, 0, 0))
    stored.paste((255, 0, 0), (0, 0, 2000, 1500))  # stored top-left quadrant red
    exif = Image.Exif()
    exif[0x0112] = orientation
    data = encoded(stored, fmt, exif=exif if fmt == "TIFF" else exif.tobytes())
    image = load_image(data)
    # 6: rotate 90° clockwise to display, 8: counter-clockwise, 3: 180°
    width, height = (1000, 1334) if orientation in (6, 8) else (1334, 1000)
    assert image.size == (width, height)
    red_corner = {6: (0.75, 0.25), 8: (0.25, 0.75), 3: (0.75, 0.75)}[orientation]
    pixels = np.asarray(image)
    for fx in (0.25, 0.75):
        for fy in (0.25, 0.75):
            red = pixels[int(fy * height), int(fx * width), 0] > 200
            assert red == ((fx, fy) == red_corner), (fx, fy)
    full = load_image(data, reduce=False)
    assert full.size == ((3000, 4000) if orientation in (6, 8) else (4000, 3000))
    assert np.abs(preprocess([image], 384) - preprocess([full], 384)).mean() < 0.01
    again = load_image(image)  # the pipeline loads the batch's images again: no second rotation
    assert again.size == image.size and np.array_equal(np.asarray(again), pixels)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG"])
def test_preprocessing_a_reduced_image_is_close_to_the_full_decode(photo_4000x3000, fmt):
    data = encoded(photo_4000x3000, fmt, **({"quality": 92} if fmt == "JPEG" else {"compress_level": 1}))
    reduced, full = load_image(data), load_image(data, reduce=False)
    assert full.size == (4000, 3000) and reduced.size == (1334, 1000)
    diff = np.abs(preprocess([reduced], 384) - preprocess([full], 384))
    assert diff.mean() < 0.01  # measured 0.0047 (PNG) and 0.0043 (JPEG); one grey level is ~0.017
    assert diff.max() < 0.1  # measured 0.035-0.052 (two to three grey levels)


@pytest.mark.parametrize("mode", ["L", "P", "RGBA", "LA", "1", "I;16", "CMYK"])
def test_reduction_keeps_every_conversion(mode):
    base = natural(1600, 1600)
    if mode == "I;16":
        image = Image.fromarray(np.asarray(base.convert("L")).astype(np.uint16) * 257)
    elif mode == "RGBA":
        image = base.convert("RGBA")
        image.putalpha(Image.new("L", base.size, 0))  # fully transparent: white after compositing
    else:
        image = base.convert(mode)
    data = encoded(image, "JPEG" if mode == "CMYK" else "PNG")
    reduced, full = load_image(data), load_image(data, reduce=False)
    assert reduced.mode == "RGB" and reduced.size == (800, 800) and full.size == (1600, 1600)
    assert abs(np.asarray(reduced, dtype=float).mean() - np.asarray(full, dtype=float).mean()) < 1.0
    if mode == "RGBA":
        assert np.asarray(reduced).min() == 255
