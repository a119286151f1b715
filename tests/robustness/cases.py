"""Bad inputs per demo endpoint: (case id, api_name, args, words the error message must contain).

Payload files (binary, truncated, huge-header images) are written by ``make_files`` into a temp dir and named here
by the placeholder ``{file:NAME}``.
"""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path

import numpy as np
from gradio_client import handle_file
from PIL import Image

import apps
from shared.api import Endpoint, Input
from shared.weights import REPO_ROOT
from tests.endpoints import DECLARED
from tests.fixtures.images import png_header_only

LONG = "a" * 101
ODD_UNICODE = "\u202e\u200b\U0001F600\x00"


def make_files(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {}

    def write(name: str, data: bytes) -> None:
        files[name] = folder / name
        files[name].write_bytes(data)

    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), (200, 30, 30)).save(buffer, "JPEG")
    jpeg = buffer.getvalue()
    write("text.png", b"this is not an image at all")
    write("truncated.jpg", jpeg[: len(jpeg) // 3])
    write("bomb.png", png_header_only(20_000, 20_000))
    write("binary.jpg", bytes(range(256)) * 64)
    write("empty.png", b"")
    write("one_pixel.png", _save(Image.new("RGB", (1, 1))))
    write("ok.png", _save(Image.radial_gradient("L").convert("RGB").resize((96, 96))))
    write("not_a_mol.sdf", b"\x00\x01\x02binary")
    write("silence.wav", wav(24_000, 1, np.zeros((24_000, 1))))
    write("short.wav", wav(44_100, 1, tone(4_410, 1)))
    write("eight-channels.wav", wav(24_000, 8, tone(24_000, 8)))
    write("192khz.wav", wav(192_000, 1, tone(192_000, 1)))
    write("header-only.wav", wav(24_000, 1, tone(24_000, 1))[:30])
    return files


def tone(frames: int, channels: int) -> np.ndarray:
    return np.repeat(0.4 * np.sin(np.arange(frames) * 0.05)[:, None], channels, axis=1)


def wav(rate: int, channels: int, samples: np.ndarray) -> bytes:
    """A 16-bit PCM WAV file."""
    data = (samples * 32767).astype("<i2").tobytes()
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, 1, channels, rate, rate * channels * 2, channels * 2, 16) + b"data"
        + struct.pack("<I", len(data)) + data)


def _save(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def examples(*pairs) -> list[dict]:
    return [{"string": s, "label": label} for s, label in pairs]


TAG2TEXT = [
    ("text-file", "/tag_image", ("{file:text.png}", 0.68, ""), ["image"]),
    ("truncated-jpeg", "/tag_image", ("{file:truncated.jpg}", 0.68, ""), ["damaged"]),
    ("decompression-bomb", "/tag_image", ("{file:bomb.png}", 0.68, ""), ["pixels"]),
    ("binary-garbage", "/tag_image", ("{file:binary.jpg}", 0.68, ""), ["image"]),
    ("empty-file", "/tag_image", ("{file:empty.png}", 0.68, ""), ["image"]),
    ("no-image", "/tag_image", (None, 0.68, ""), ["image"]),
    ("one-pixel", "/tag_image", ("{file:one_pixel.png}", 0.68, ""), ["pixels"]),
    ("threshold-above-1", "/tag_image", ("{file:ok.png}", 1.5, ""), ["threshold"]),
    ("threshold-negative", "/tag_image", ("{file:ok.png}", -0.1, ""), ["threshold"]),
    ("threshold-string", "/tag_image", ("{file:ok.png}", "high", ""), ["threshold"]),
    ("huge-user-tags", "/tag_image", ("{file:ok.png}", 0.68, "tag, " * 5000), ["tags"]),
    ("odd-unicode-tags", "/tag_image", ("{file:ok.png}", 0.68, ODD_UNICODE * 50), ["invisible"]),
    ("empty-batch", "/tag_batch", ([], 0.68, ""), ["image"]),
    ("batch-of-non-images", "/tag_batch", (["{file:text.png}", "{file:binary.jpg}"], 0.68, ""), ["image"]),
    ("batch-with-bomb", "/tag_batch", (["{file:bomb.png}"], 0.68, ""), ["pixels"]),
    ("batch-threshold-string", "/tag_batch", (["{file:ok.png}"], "high", ""), ["threshold", "high"]),
]

MOLM3D = [
    ("invalid-smiles", "/ask", ("C1CC", ""), ["SMILES"]),
    ("empty", "/ask", ("", ""), ["molecule"]),
    ("whitespace", "/ask", ("   \n ", ""), ["molecule"]),
    ("too-many-atoms", "/ask", ("C" * 300, ""), ["256"]),
    ("not-an-element", "/ask", ("[Xx]", ""), ["SMILES"]),
    ("garbage-chars", "/ask", ("}{%$#@!", ""), ["SMILES"]),
    ("odd-unicode", "/ask", (ODD_UNICODE, ""), ["SMILES"]),
    ("binary-molblock", "/ask", ("\x00\x01\x02\n  V2000\nM  END\n", ""), ["SDF"]),
    ("malformed-molblock", "/ask", ("not a molecule\n  V2000\nM  END\n", ""), ["read"]),
    ("huge-smiles", "/ask", ("C" * 100_000, ""), ["256"]),
    ("huge-question", "/ask", ("CCO", "why? " * 20_000), ["question", "2,000"]),
    ("control-characters-question", "/ask", ("CCO", "\x00\x00"), ["question", "invisible"]),
    ("pentavalent-carbon", "/ask", ("C(C)(C)(C)(C)C", ""), ["SMILES"]),
    ("unbalanced-brackets", "/ask", ("C[NH4+", ""), ["SMILES"]),
    ("reaction-smiles", "/ask", ("CCO>>CC=O", ""), ["SMILES"]),
]

PRAX = [
    ("no-examples", "/synthesize", ([], "tiny-pragmatic", 5), ["example"]),
    ("same-string-both-labels", "/synthesize", (examples(("abc", "+"), ("abc", "-")), "tiny-pragmatic", 5), ["abc"]),
    ("too-long-string", "/synthesize", (examples((LONG, "+")), "tiny-pragmatic", 5), ["100"]),
    ("too-many-examples", "/synthesize", (examples(*[(f"a{i}", "+") for i in range(31)]), "tiny-pragmatic", 5),
     ["30"]),
    ("500-examples", "/synthesize", (examples(*[(f"b{i}", "-") for i in range(500)]), "tiny-pragmatic", 5), ["30"]),
    ("non-printable", "/synthesize", (examples(("a\x07b", "+")), "tiny-pragmatic", 5), ["printable"]),
    ("odd-unicode", "/synthesize", (examples((ODD_UNICODE, "+")), "tiny-pragmatic", 5), ["character"]),
    ("bad-label", "/synthesize", (examples(("abc", "maybe")), "tiny-pragmatic", 5), ["label"]),
    ("missing-label", "/synthesize", ([{"string": "abc"}], "tiny-pragmatic", 5), ["label"]),
    ("missing-string", "/synthesize", ([{"label": "+"}], "tiny-pragmatic", 5), ["string"]),
    ("wrong-type-examples", "/synthesize", ([42], "tiny-pragmatic", 5), ["example"]),
    ("unknown-weights", "/synthesize", (examples(("abc", "+")), "gpt-17", 5), ["weight"]),
    ("k-zero", "/synthesize", (examples(("abc", "+")), "tiny-pragmatic", 0), ["k"]),
    ("k-huge", "/synthesize", (examples(("abc", "+")), "tiny-pragmatic", 10_000), ["k"]),
    ("suggest-nothing", "/suggest", ([],), ["example"]),
    ("suggest-contradiction", "/suggest", (examples(("x", "+"), ("x", "-")),), ["x"]),
]

GEODIFFUSION = [
    ("malformed-json", "/generate", ("{not json", "nuimages-256x256", 0, 2, 5.0), ["JSON"]),
    ("json-list", "/generate", ("[1, 2, 3]", "nuimages-256x256", 0, 2, 5.0), ["box"]),
    ("inverted-box", "/generate", (json.dumps({"camera": "front", "bbox": [["car", 0.5, 0.5, 0.2, 0.8]]}),
                                   "nuimages-256x256", 0, 2, 5.0), ["x2"]),
    ("zero-area-box", "/generate", (json.dumps({"camera": "front", "bbox": [["car", 0.2, 0.5, 0.2, 0.5]]}),
                                    "nuimages-256x256", 0, 2, 5.0), ["x2"]),
    ("out-of-range", "/generate", (json.dumps({"camera": "front", "bbox": [["car", -0.1, 0.5, 0.2, 1.5]]}),
                                   "nuimages-256x256", 0, 2, 5.0), ["between 0 and 1"]),
    ("unknown-label", "/generate", (json.dumps({"camera": "front", "bbox": [["unicorn", 0.1, 0.1, 0.2, 0.2]]}),
                                    "nuimages-256x256", 0, 2, 5.0), ["unicorn"]),
    ("too-many-boxes", "/generate", (json.dumps({"camera": "front", "bbox": [["car", 0.1, 0.1, 0.2, 0.2]] * 23}),
                                     "nuimages-256x256", 0, 2, 5.0), ["22"]),
    ("steps-over-200", "/generate", (json.dumps({"camera": "front", "bbox": []}), "nuimages-256x256", 0, 201, 5.0),
     ["200"]),
    ("steps-zero", "/generate", (json.dumps({"camera": "front", "bbox": []}), "nuimages-256x256", 0, 0, 5.0),
     ["steps"]),
    ("unknown-camera", "/generate", (json.dumps({"camera": "roof", "bbox": []}), "nuimages-256x256", 0, 2, 5.0),
     ["roof"]),
    ("box-not-a-list", "/generate", (json.dumps({"camera": "front", "bbox": "car"}), "nuimages-256x256", 0, 2, 5.0),
     ["bbox"]),
    ("box-short", "/generate", (json.dumps({"camera": "front", "bbox": [["car", 0.1]]}), "nuimages-256x256", 0, 2,
                                5.0), ["box"]),
    ("box-strings", "/generate", (json.dumps({"camera": "front", "bbox": [["car", "a", "b", "c", "d"]]}),
                                  "nuimages-256x256", 0, 2, 5.0), ["number"]),
    ("huge-json", "/generate", (json.dumps({"camera": "front", "bbox": [], "pad": "x" * 300_000}),
                                "nuimages-256x256", 0, 2, 5.0), ["20,000"]),  # under the 1 MB body budget
    ("unknown-field", "/generate", (json.dumps({"camera": "front", "bbox": [], "wether": "rain"}),
                                    "nuimages-256x256", 0, 2, 5.0), ["wether"]),
    ("cfg-negative", "/generate", (json.dumps({"camera": "front", "bbox": []}), "nuimages-256x256", 0, 2, -3.0),
     ["-3.0", "minimum"]),
    ("odd-unicode-label", "/generate", (json.dumps({"camera": "front", "bbox": [[ODD_UNICODE, 0.1, 0.1, 0.2, 0.2]]}),
                                        "nuimages-256x256", 0, 2, 5.0), ["label"]),
]


def fill(value, files):
    """Replace ``{file:NAME}`` placeholders (also inside lists) by uploaded files: a payload of ``make_files``, or a
    file of the repository (a demo's declared example)."""
    if isinstance(value, str) and value.startswith("{file:"):
        name = value[6:-1]
        return handle_file(str(files[name] if name in files else REPO_ROOT / name))
    if isinstance(value, list) and value and isinstance(value[0], str) and value[0].startswith("{file:"):
        return [fill(v, files) for v in value]
    return value


def honest_args(endpoint: Endpoint) -> tuple:
    """Every input at its declared example; a file input its example file (a path in the repository; a files input
    a list of them, as the forms read it), else the ``ok.png`` payload."""
    def file(path: str | None) -> str:
        return f"{{file:{path or 'ok.png'}}}"

    files = {"file": lambda i: file(i.example), "files": lambda i: [file(path) for path in i.example or [None]]}
    return tuple(files[i.kind](i) if i.kind in files else i.example for i in endpoint.inputs)


def outside_limits(i: Input) -> list[tuple[str, object]]:
    """Values just outside what input ``i`` declares (its kind, limits, choices), by name: generated, so a declared
    input is tried the day it is declared."""
    wrong_kind = [("wrong-kind", ["a list"] if i.kind != "records" else "text")]
    if i.kind in ("integer", "number"):
        step = 1 if i.kind == "integer" else 0.5
        below = [("below-minimum", i.minimum - step)]
        above = [("above-maximum", i.maximum + step)] if i.maximum is not None else []
        fraction = [("fraction", i.minimum + 0.5)] if i.kind == "integer" else []
        return below + above + fraction + [("text", "many")]
    if i.kind == "text" and i.max_length is not None:
        return [("over-max-length", "x" * (i.max_length + 1))] + wrong_kind
    if i.kind == "choice":
        return [("not-a-choice", "no-such-choice")] + wrong_kind
    if i.kind == "choices":
        return [("not-a-choice", ["no-such-choice"]), ("none-chosen", []), ("wrong-kind", 42)]
    if i.kind == "weights":
        return [("unknown-weights", "no-such-weights")] + wrong_kind
    if i.kind == "records":
        return wrong_kind
    return []


# (demo, case id, api_name, args, the input the message must name): one per declared input and way out of its limits
DECLARED_CASES = [(demo.id, f"{endpoint.name}-{i.name}-{case}", f"/{endpoint.name}",
                   tuple(value if j is i else honest
                         for j, honest in zip(endpoint.inputs, honest_args(endpoint), strict=True)),
                   i.name)
                  for _, (demo, endpoint) in DECLARED.items() for i in endpoint.inputs
                  for case, value in outside_limits(i)]
MERT = [
    ("text-file", "/describe_music", ("{file:text.png}", "", None), ["not audio"]),
    ("empty-file", "/describe_music", ("{file:empty.png}", "", None), ["not audio"]),
    ("binary-garbage", "/describe_music", ("{file:binary.jpg}", "", None), ["not audio"]),
    ("an-image", "/describe_music", ("{file:ok.png}", "", None), ["not audio"]),
    ("no-audio", "/describe_music", (None, "", None), ["no audio"]),
    ("silence", "/describe_music", ("{file:silence.wav}", "", None), ["silent"]),
    ("too-short", "/describe_music", ("{file:short.wav}", "", None), ["0.10 s"]),
    ("eight-channels", "/describe_music", ("{file:eight-channels.wav}", "", None), ["8 channels"]),
    ("192-khz", "/describe_music", ("{file:192khz.wav}", "", None), ["192,000 Hz"]),
    ("header-only", "/describe_music", ("{file:header-only.wav}", "", None), ["audio"]),
    ("unknown-task", "/describe_music", ("{file:apps/mert/examples/sine-chord.flac}", "GS, Tempo", None), ["Tempo"]),
    ("huge-tasks", "/describe_music", ("{file:apps/mert/examples/sine-chord.flac}", "GS, " * 100, None),
     ["300 characters"]),
    ("tasks-not-text", "/describe_music", ("{file:apps/mert/examples/sine-chord.flac}", [3], None), ["tasks"]),
    ("window-too-short", "/describe_music", ("{file:apps/mert/examples/sine-chord.flac}", "", 1), ["window"]),
    ("window-too-long", "/describe_music", ("{file:apps/mert/examples/sine-chord.flac}", "", 100), ["60"]),
    ("window-text", "/describe_music", ("{file:apps/mert/examples/sine-chord.flac}", "", "long"), ["window"]),
]

VALID = {demo.id: (f"/{demo.endpoints()[0].name}", honest_args(demo.endpoints()[0])) for demo in apps.DEMOS
         if demo.endpoints()}

CATALOGUE = {"tag2text": TAG2TEXT, "molm3d": MOLM3D, "prax": PRAX, "geodiffusion": GEODIFFUSION, "mert": MERT}
