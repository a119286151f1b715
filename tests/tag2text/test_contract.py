"""Tag2Text keeps the one pipeline contract (shared/pipeline.py): keyword-only device/dtype, ``check_inputs`` without
weights naming the bad argument, ``callback(step, total)``, a frozen JSON-ready output that the ``tag_image`` /
``tag_batch`` endpoints return as is, validation before queueing, and UI-free actions."""

from __future__ import annotations

import dataclasses
import inspect
import io
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

from apps import ui
from apps.tag2text import DEMO, actions
from apps.tag2text.checks import MAX_USER_TAG_CHARS, Tag2TextInputs
from apps.tag2text.config import OFFICIAL_THRESHOLD
from apps.tag2text.images import MAX_BATCH, MAX_FILE_BYTES
from apps.tag2text.pipeline import Tag2TextOutput, Tag2TextPipeline
from shared.errors import UserInputError
from shared.pool import estimate_bytes
from shared.weights import REPO_ROOT
from tests.conftest import page_events, serve_page
from tests.fixtures.images import png_header_only

WS = DEMO.weight_set().name


def png(width: int = 40, height: int = 30) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (120, 30, 200)).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def no_weights(no_weights_touched):
    """Any attempt to find or load weights fails the test."""


# -- from_pretrained -----------------------------------------------------------------------------------------------


def test_from_pretrained_has_keyword_only_cpu_float32_defaults():
    params = inspect.signature(Tag2TextPipeline.from_pretrained).parameters
    assert list(params)[0] == "path"
    assert params["device"].kind is inspect.Parameter.KEYWORD_ONLY and params["device"].default == "cpu"
    assert params["dtype"].kind is inspect.Parameter.KEYWORD_ONLY and params["dtype"].default is torch.float32


def test_loaded_pipeline_reports_cpu_float32(tiny_pipe):
    assert (str(tiny_pipe.device), tiny_pipe.dtype) == ("cpu", torch.float32)
    assert {(p.device.type, p.dtype) for p in tiny_pipe.model.parameters()} == {("cpu", torch.float32)}


def test_estimate_bytes_is_what_memory_bytes_was(tiny_pipe):
    seen, before = set(), 0  # the removed Tag2TextPipeline.memory_bytes, verbatim
    for t in [*tiny_pipe.model.parameters(), *tiny_pipe.model.buffers()]:
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            before += t.numel() * t.element_size()
    assert estimate_bytes(tiny_pipe) == before > 0


def test_model_forward_gives_tag_logits_and_image_tokens(tiny_pipe, two_images):
    pixels = tiny_pipe.pixel_values(list(two_images))
    logits, embeds = tiny_pipe.model(pixels)
    c = tiny_pipe.config
    side = c.image_size // (c.patch_size * 2 ** (len(c.depths) - 1))  # the last Swin stage's map (12 at 384 px)
    assert logits.shape == (2, c.num_tags) and embeds.shape == (2, 1 + side**2, c.vision_width)
    assert torch.equal(logits, tiny_pipe.model.tag_logits(tiny_pipe.model.visual_encoder(pixels)))


# -- check_inputs --------------------------------------------------------------------------------------------------


def bad_inputs(tmp_path):
    text = tmp_path / "notes.png"
    text.write_text("not a picture")
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_header_only(20_000, 20_000))
    empty_zip = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty_zip, "w") as zf:
        zf.writestr("readme.txt", "no images here")
    return {
        "no-image": ((None,), "images", "No images"),
        "empty-list": (([],), "images", "No images"),
        "missing-file": ((str(tmp_path / "gone.png"),), "images", "not found"),
        "not-an-image": ((str(text),), "images", "not an image"),
        "bomb-header": ((str(bomb),), "images", "too large"),
        "one-pixel": ((png(1, 1),), "images", "1×1 pixels"),
        "empty-bytes": ((b"",), "images", "empty file"),
        "too-large-bytes": ((bytes(MAX_FILE_BYTES + 1),), "images", "larger than"),
        "array-shape": ((np.zeros((2, 20, 30, 3, 1), np.uint8),), "images", "shape"),
        "too-many": (([png()] * (MAX_BATCH + 1),), "images", f"At most {MAX_BATCH}"),
        "zip-without-images": ((str(empty_zip),), "images", "None of the uploaded files"),
        "wrong-type": ((42,), "images", "give an image file"),
        "threshold-high": ((png(), 1.5), "threshold", "between 0 and 1"),
        "threshold-negative": ((png(), -0.1), "threshold", "between 0 and 1"),
        "threshold-nan": ((png(), float("nan")), "threshold", "between 0 and 1"),
        "threshold-text": ((png(), "high"), "threshold", "number"),
        "tags-too-long": ((png(), None, "x," * 600), "user_tags", f"{MAX_USER_TAG_CHARS:,} characters"),
        "tags-invisible": ((png(), None, "dog\u200b"), "user_tags", "invisible"),
        "tags-not-text": ((png(), None, 5), "user_tags", "must be text"),
        "tags-per-image-count": (([png(), png()], None, ["cat"]), "user_tags", "one tag list per image"),
    }


CASES = ["no-image", "empty-list", "missing-file", "not-an-image", "bomb-header", "one-pixel", "empty-bytes",
         "too-large-bytes", "array-shape", "too-many", "zip-without-images", "wrong-type", "threshold-high",
         "threshold-negative", "threshold-nan", "threshold-text", "tags-too-long", "tags-invisible", "tags-not-text",
         "tags-per-image-count"]


@pytest.mark.parametrize("case", CASES)
def test_check_inputs_names_the_bad_argument_without_weights(no_weights, tmp_path, case):
    args, argument, fragment = bad_inputs(tmp_path)[case]
    with pytest.raises(UserInputError) as info:
        Tag2TextPipeline.check_inputs(*args)
    assert info.value.argument == argument
    assert argument in inspect.signature(Tag2TextPipeline.__call__).parameters
    assert fragment in str(info.value)


def test_check_inputs_returns_the_normalised_inputs(no_weights, tmp_path):
    archive = tmp_path / "two.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a.png", png())
        zf.writestr("b/c.png", png(50, 60))
    checked = Tag2TextPipeline.check_inputs([str(archive), png()], "0.5", " dog ,, red car ")
    assert isinstance(checked, Tag2TextInputs)
    assert [(im.name, im.size) for im in checked.batch.images] == [("a.png", (40, 30)), ("b/c.png", (50, 60)),
                                                                    ("Image 2", (40, 30))]
    assert checked.threshold == 0.5
    assert checked.user_tags == (("dog", "red car"),) * 3
    default = Tag2TextPipeline.check_inputs(png(), None, ["None"])
    assert default.threshold == OFFICIAL_THRESHOLD and default.user_tags == ((),)


# -- __call__ and its output ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_size", [8, 1], ids=["one-chunk", "two-chunks"])
def test_callback_reports_increasing_integer_steps_ending_at_total(tiny_pipe, two_images, batch_size):
    pipe = Tag2TextPipeline(tiny_pipe.model, tiny_pipe.tokenizer, batch_size=batch_size)
    calls = []
    out = pipe(list(two_images), callback=lambda step, total: calls.append((step, total)))
    assert len(out.results) == 2 and len(calls) >= 2
    assert all(type(s) is int and type(t) is int for s, t in calls)
    steps = [s for s, _ in calls]
    assert steps == sorted(set(steps)) and steps[0] >= 1
    assert {t for _, t in calls} == {calls[-1][1]} and steps[-1] == calls[-1][1]


def test_output_is_frozen_and_json_ready(tiny_pipe, two_images):
    out = tiny_pipe(list(two_images), threshold=0.3, user_tags=["dog", None])
    assert isinstance(out, Tag2TextOutput) and dataclasses.is_dataclass(out)
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.threshold = 0.9
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.results[0].caption = "changed"
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.results[0].tags[0].score = 1.0
    assert all(isinstance(v, tuple) for r in out.results for v in (r.tags, r.user_tags, r.caption_tags, r.scores))
    data = out.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert list(data) == ["results", "threshold", "skipped"] and data["threshold"] == 0.3
    assert [r["name"] for r in data["results"]] == ["Image 1", "Image 2"]
    assert data["results"][0]["user_tags"] == ["dog"] and "scores" not in data["results"][0]


def test_a_zip_member_unreadable_after_its_header_is_a_note_not_an_error(tiny_pipe, tmp_path):
    good = png(64, 48)
    archive = tmp_path / "mixed.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("cut.png", png(64, 64)[:60])  # its header reads, its pixels do not
        zf.writestr("good.png", good)
    calls = []
    out = tiny_pipe([str(archive)], user_tags=["cat", "dog"], callback=lambda s, t: calls.append((s, t)))
    assert [r.name for r in out.results] == ["good.png"] and out.results[0].caption_tags == ("dog",)
    assert len(out.skipped) == 1 and out.skipped[0].startswith("cut.png (")
    assert calls[-1][0] == calls[-1][1]


# -- the page: validators, named endpoints -------------------------------------------------------------------------


@pytest.fixture
def served(tiny_ctx):
    """The page launched in-process over the tiny checkpoint: (url, ctx)."""
    from apps.tag2text.page import build

    with serve_page(build(tiny_ctx)) as url:
        yield url, tiny_ctx


def test_endpoints_return_the_pipeline_output_to_dict(served, tmp_path):
    from gradio_client import Client, handle_file

    url, ctx = served
    examples = actions.example_images()
    archive = tmp_path / "more.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(examples[3], "inside/house.png")
        zf.writestr("notes.txt", "skipped")
    client = Client(url, verbose=False)
    one = client.predict(handle_file(examples[1]), 0.4, "red car", api_name="/tag_image")
    batch = client.predict([handle_file(examples[0]), handle_file(str(archive))], 0.5, "", api_name="/tag_batch")
    client.close()
    pipe = ctx.pipeline()  # the pipeline the endpoints used (a pool hit)
    assert one == pipe(examples[1], 0.4, "red car").to_dict()
    assert batch == pipe([examples[0], str(archive)], 0.5, "").to_dict()
    assert [r["name"] for r in batch["results"]] == ["beach.png", "inside/house.png"]
    assert batch["skipped"] == ["notes.txt (not an image file)"]


@pytest.mark.parametrize(("api_name", "args", "name", "fragment"), [
    ("/tag_image", ("{ok}", 1.5, ""), "threshold", "between 0 and 1"),
    ("/tag_image", ("{ok}", 0.5, "x," * 600), "user_tags", "1,000 characters"),
    ("/tag_image", ("{text}", 0.5, ""), "image", "not an image"),
    ("/tag_batch", (["{ok}"] * (MAX_BATCH + 1), 0.5, ""), "files", f"At most {MAX_BATCH} images"),
    ("/tag_batch", (["{ok}"], "high", ""), "threshold", "number between 0 and 1"),
], ids=["threshold", "user-tags", "not-an-image", "too-many", "threshold-text"])
def test_bad_api_input_is_refused_before_queueing(served, monkeypatch, tmp_path, api_name, args, name, fragment):
    from gradio_client import Client, handle_file
    from gradio_client.exceptions import ValidationError

    url, ctx = served
    ok, text = tmp_path / "ok.png", tmp_path / "text.png"
    ok.write_bytes(png())
    text.write_text("not a picture")
    files = {"{ok}": str(ok), "{text}": str(text)}

    def fill(value):
        if isinstance(value, list):
            return [fill(v) for v in value]
        return handle_file(files[value]) if value in files else value

    ran = []
    monkeypatch.setattr(actions, "tag_image", lambda *args, **kwargs: ran.append(args))  # what the handlers call
    monkeypatch.setattr(actions, "tag_batch", lambda *args, **kwargs: ran.append(args))
    client = Client(url, verbose=False)
    with pytest.raises(ValidationError) as info:
        client.predict(*[fill(a) for a in args], api_name=api_name)
    client.close()
    message = str(info.value)
    assert message.startswith("1 parameter(s) failed validation") and f"- {name}: " in message
    assert fragment in message
    assert ran == [] and (DEMO.id, WS) not in ctx.pool and ctx.pool.stats().misses == 0


def test_model_events_use_their_checks(tmp_path, monkeypatch):
    """Which check guards which event (that every model event has one is tests/shared/test_contract_all.py)."""
    fns = page_events(DEMO, tmp_path, monkeypatch)
    checks = {f.name: inspect.unwrap(f.validator) for f in fns if f.validator is not None}
    assert checks.pop("tag_image_for_page") is actions.check_image_tab
    assert checks.pop("tag_batch_for_page") is actions.check_batch_tab
    assert {name: check.__name__ for name, check in checks.items()} == {"tag_image": "tag_image",
                                                                        "tag_batch": "tag_batch"}  # declared


@pytest.mark.parametrize(("check", "inputs", "marked", "fragment"), [
    (actions.check_image_tab, (None, 0.68, "", WS), 0, "No images"),
    (actions.check_image_tab, ({"path": "/nowhere/x.png"}, 0.68, "", WS), 0, "not found"),
    (actions.check_image_tab, ({"path": "{ok}"}, 2.0, "", WS), 1, "between 0 and 1"),
    (actions.check_image_tab, ({"path": "{ok}"}, 0.68, "a\x00b", WS), 2, "invisible"),
    (actions.check_batch_tab, ([], 0.68, "", WS), 0, "No images"),
    (actions.check_batch_tab, (["{ok}"], 0.68, "x," * 600, WS), 2, "1,000 characters"),
], ids=["no-image", "missing-image", "threshold", "tags", "no-files", "batch-tags"])
def test_page_validators_mark_the_input_at_fault(tmp_path, check, inputs, marked, fragment):
    ok = tmp_path / "ok.png"
    ok.write_bytes(png())

    def fill(value):
        if isinstance(value, dict):
            return {"path": str(ok) if value["path"] == "{ok}" else value["path"]}
        if isinstance(value, list):
            return [str(ok) if v == "{ok}" else v for v in value]
        return value

    results = ui.validator(check)(*[fill(v) for v in inputs])
    assert [r["is_valid"] for r in results] == [i != marked for i in range(len(inputs))]
    assert fragment in results[marked]["message"]
    good = ui.validator(check)(fill({"path": "{ok}"}) if check is actions.check_image_tab else [str(ok)], 0.5, "", WS)
    assert all(r["is_valid"] for r in good)


# -- imports ---------------------------------------------------------------------------------------------------------


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)


def test_actions_import_no_ui_library_and_no_torch():
    result = run_python("import sys, apps.tag2text.actions; "
                        "print(sorted(m for m in ('gradio', 'streamlit', 'torch') if m in sys.modules))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_gradio_page_imports_no_torch():
    result = run_python("import sys, apps.tag2text.page; print('torch' in sys.modules, 'gradio' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False True"


def test_streamlit_page_imports_no_gradio():
    """Importing the page runs its Streamlit calls in bare mode (warnings only); gradio must stay out."""
    result = run_python("import sys, apps.tag2text.streamlit_page; print('gradio' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False"
