"""Image reading and preprocessing: the official transform, and every kind of bad input a person can upload."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
from PIL import Image

from apps.tag2text.images import MAX_BATCH, MEAN, STD, collect_images, load_image, preprocess
from shared.errors import UserInputError
from tests.fixtures.images import png_header_only


def png_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def test_preprocess_is_squash_bilinear_resize_and_imagenet_normalisation():
    rng = np.random.default_rng(1)
    image = Image.fromarray(rng.integers(0, 256, (50, 120, 3), dtype=np.uint8))
    out = preprocess([image], 384)
    assert out.shape == (1, 3, 384, 384) and out.dtype == np.float32
    expected = np.asarray(image.resize((384, 384), Image.BILINEAR), dtype=np.float32) / 255.0
    expected = ((expected - MEAN) / STD).transpose(2, 0, 1)
    assert np.allclose(out[0], expected, atol=1e-6)
    assert not np.allclose(out[0], ((np.asarray(image.resize((384, 384), Image.BICUBIC)) / 255.0 - MEAN) / STD)
                           .transpose(2, 0, 1), atol=1e-3)


def test_exif_orientation_is_honoured():
    image = Image.new("RGB", (60, 30), (0, 0, 0))
    image.paste((255, 0, 0), (0, 0, 30, 30))  # left half red
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    buf = io.BytesIO()
    image.save(buf, format="JPEG", exif=exif.tobytes(), quality=95)
    upright = load_image(buf.getvalue())
    assert upright.size == (30, 60)
    top, bottom = np.asarray(upright)[5, 15], np.asarray(upright)[55, 15]
    assert top[0] > 200 and bottom[0] < 60  # the red half is now on top


@pytest.mark.parametrize("mode", ["L", "CMYK", "RGBA", "LA", "P", "I;16", "I", "F", "1"])
def test_other_modes_are_converted_to_rgb(mode):
    image = Image.new("RGB", (40, 32), (120, 60, 200)).convert(mode)
    if mode == "I;16":
        image = Image.fromarray(np.full((32, 40), 65535, dtype=np.uint16))
    data = png_bytes(image) if mode not in ("CMYK", "F") else None
    rgb = load_image(data if data is not None else image)
    assert rgb.mode == "RGB" and rgb.size == (40, 32)
    if mode == "I;16":
        assert np.asarray(rgb).min() == 255  # full-scale 16-bit white stays white, not clipped garbage


def test_transparent_pixels_become_white():
    image = Image.new("RGBA", (20, 20), (0, 0, 0, 0))
    assert np.asarray(load_image(png_bytes(image))).min() == 255


def test_numpy_arrays_are_accepted():
    assert load_image(np.zeros((20, 30, 3), dtype=np.uint8)).size == (30, 20)
    assert np.asarray(load_image(np.ones((20, 30), dtype=np.float32))).max() == 255
    with pytest.raises(UserInputError, match="shape"):
        load_image(np.zeros((2, 20, 30, 3), dtype=np.uint8))


def test_non_image_file_is_refused(tmp_path):
    path = tmp_path / "notes.jpg"
    path.write_text("this is not a picture")
    with pytest.raises(UserInputError, match="not an image"):
        load_image(path, path.name)


def test_truncated_jpeg_is_refused():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8))
    buf = io.BytesIO()
    image.save(buf, format="JPEG")
    with pytest.raises(UserInputError, match="damaged or incomplete"):
        load_image(buf.getvalue()[:800])


def test_tiny_image_is_refused_with_its_size():
    with pytest.raises(UserInputError, match="1×1 pixels"):
        load_image(png_bytes(Image.new("RGB", (1, 1))))


def test_decompression_bomb_header_is_refused_without_decoding():
    with pytest.raises(UserInputError, match="too large"):
        load_image(png_header_only(20_000, 20_000))
    with pytest.raises(UserInputError, match="too large"):
        load_image(png_header_only(8_000, 8_000))  # 64 MP: under PIL's own limit, over ours


def test_empty_inputs_are_refused(tmp_path):
    with pytest.raises(UserInputError, match="No images"):
        collect_images([])
    with pytest.raises(UserInputError, match="empty file"):
        load_image(b"")
    with pytest.raises(UserInputError, match="not found"):
        load_image(tmp_path / "gone.png")


def test_zip_with_non_images_keeps_the_images_and_names_the_rest(tmp_path):
    path = tmp_path / "batch.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.png", png_bytes(Image.new("RGB", (32, 32), (255, 0, 0))))
        zf.writestr("sub/b.jpg", png_bytes(Image.new("L", (32, 32), 128)))  # a PNG misnamed .jpg still reads
        zf.writestr("readme.txt", "hello")
        zf.writestr("broken.png", b"\x89PNG garbage")
        zf.writestr("__MACOSX/._a.png", b"junk")
    images, skipped = collect_images([path])
    assert [im.name for im in images] == ["a.png", "sub/b.jpg"]
    assert len(skipped) == 2
    assert skipped[0].startswith("readme.txt (not an image")
    assert skipped[1].startswith("broken.png (")


def test_zip_without_images_and_bad_zip_are_refused(tmp_path):
    path = tmp_path / "text.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(UserInputError, match="None of the uploaded files.*readme.txt"):
        collect_images([path])
    bad = tmp_path / "bad.zip"
    bad.write_bytes(b"PK not really")
    with pytest.raises(UserInputError, match="not a readable zip"):
        collect_images([bad])


def test_batch_size_limit(tmp_path):
    path = tmp_path / "many.zip"
    small = png_bytes(Image.new("RGB", (16, 16)))
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(MAX_BATCH + 1):
            zf.writestr(f"{i}.png", small)
    with pytest.raises(UserInputError, match=f"At most {MAX_BATCH}"):
        collect_images([path])


def test_jpeg_cut_inside_its_headers_is_refused():
    from io import BytesIO

    buffer = BytesIO()
    Image.new("RGB", (64, 64), (200, 30, 30)).save(buffer, "JPEG")
    with pytest.raises(UserInputError, match="damaged or incomplete"):
        load_image(buffer.getvalue()[: len(buffer.getvalue()) // 3])


@pytest.mark.parametrize("cut", ["inside the JPEG headers", "inside the PNG pixels"])
def test_damaged_file_message_is_ours_alone(cut, tmp_path):
    """Visitors read our sentence, never the decoder's exception text ("broken data stream", "truncated", ...)."""
    picture = Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8))
    if cut == "inside the JPEG headers":
        data = io.BytesIO()
        picture.save(data, format="JPEG")
        data = data.getvalue()[:300]
    else:
        data = png_bytes(picture)
        data = data[: len(data) // 2]
    sentence = "is damaged or incomplete and could not be decoded; re-save or re-download it and try again."
    with pytest.raises(UserInputError) as caught:
        load_image(data, "photo.png")
    assert str(caught.value) == f"photo.png {sentence}"
    path = tmp_path / "batch.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("photo.png", data)
        zf.writestr("fine.png", png_bytes(picture))
    images, skipped = collect_images([path])
    assert [im.name for im in images] == ["fine.png"] and skipped == [f"photo.png (photo.png {sentence})"]
