"""A file that is not an image (a text file named ``something.png``): one sentence, from the pipeline's own check,
beside the page's input as soon as it is uploaded, and to every API caller (gradio_client, MCP); the hub keeps serving
and the next honest request works. The same flows in Chromium are in test_not_an_image_browser.py."""

from __future__ import annotations

import base64
import json
import re
from concurrent.futures import ThreadPoolExecutor

import gradio as gr
import pytest

from apps import ui
from apps.tag2text import DEMO, actions, checks
from shared.errors import UserInputError
from tests.conftest import page_events
from tests.fixtures.images import png_header_only

SENTENCE = "something.png is not an image Tag2Text can read; upload a JPEG, PNG or WebP file."
LIBRARY_WORDS = ("cannot identify", "PIL", "Pillow", "UnidentifiedImageError", "Traceback", "Errno", "/tmp")


def not_an_image(name: str) -> str:
    return f"{name} is not an image Tag2Text can read; upload a JPEG, PNG or WebP file."


def examples() -> dict[str, str]:
    return {p.rsplit("/", 1)[-1]: p for p in actions.example_images()}


# -- the check the page runs on upload is the pipeline's own --------------------------------------------------------


def test_an_upload_that_is_not_an_image_gets_the_pipelines_sentence(not_images):
    fake = not_images["something.png"]
    assert actions.upload_problem(fake) == SENTENCE
    assert actions.upload_problem({"path": str(fake)}) == SENTENCE  # the page's FileData form
    with pytest.raises(UserInputError) as refused:
        checks.check_inputs(fake)  # what the Run button's validator, the API and the pipeline run
    assert str(refused.value) == SENTENCE and refused.value.argument == "images"
    for name, path in not_images.items():
        assert actions.upload_problem(path) == not_an_image(name)
    assert actions.upload_problem(examples()["beach.png"]) is None
    assert actions.upload_problem(None) is None


def test_a_batch_upload_keeps_the_images_in_order_and_names_each_file_left_out(not_images, tmp_path):
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    beach, car = examples()["beach.png"], examples()["car.png"]
    kept, problems = actions.screen_uploads([beach, not_images["something.png"], car, str(empty)])
    assert kept == [beach, car]
    assert problems == [SENTENCE, "empty.png is an empty file; upload a JPEG, PNG or WebP image."]
    assert actions.left_out_note(problems[:1], 2) == ("Left out of this batch (the other 2 files will be tagged): "
                                                       + SENTENCE)
    assert actions.left_out_note(problems[:1], 1) == ("Left out of this batch (the other file will be tagged): "
                                                       + SENTENCE)
    assert actions.left_out_note(problems, 0) == " ".join(problems)
    assert actions.left_out_note([], 3) == ""
    assert actions.screen_uploads(None) == ([], [])


def test_the_page_screens_each_upload_and_clears_a_file_that_is_not_an_image(not_images, tmp_path, monkeypatch):
    fns = page_events(DEMO, tmp_path, monkeypatch)
    events = {f.name: f for f in fns}
    image, files = events["screen_image"], events["screen_files"]
    assert (image.targets[0][1], files.targets[0][1]) == ("upload", "upload")
    emptying = {f.targets[0]: f.outputs for f in fns if f.name == "_clear_note"}  # (block id, event) -> outputs
    image_id, files_id = image.inputs[0]._id, files.inputs[0]._id
    assert emptying.pop((image_id, "clear")) == [image.outputs[1]] and emptying.pop((files_id, "clear")) == [
        files.outputs[1]], "clearing an input empties its sentence"
    assert [(event, outputs) for (_, event), outputs in emptying.items()] == [("click", [image.outputs[1]])], (
        "an example click empties it too")
    assert not image.preprocess, "Gradio's own reader would open the file with PIL before our check"
    for event in (image, files):
        assert event.api_visibility == "private" and event.concurrency_id != DEMO.id  # no model slot
        assert event.inputs[0] is event.outputs[0], "the input itself is given back (cleared or filtered)"
    fake, beach, car = str(not_images["something.png"]), examples()["beach.png"], examples()["car.png"]
    assert image.fn({"path": fake}) == (None, ui.notice(SENTENCE, "error"))
    assert image.fn({"path": beach}) == (gr.skip(), "")
    kept, note = files.fn([beach, fake, car])
    assert kept == [beach, car] and note == ui.notice(actions.left_out_note([SENTENCE], 2), "warning")
    assert files.fn([fake]) == (None, ui.notice(SENTENCE, "error"))
    assert files.fn([beach, car]) == (gr.skip(), "")


# -- API callers read the same sentence; the hub keeps serving --------------------------------------------------------


def test_gradio_client_gets_the_same_sentence_and_the_next_honest_call_works(t2t_hub, not_images):
    from gradio_client import Client, handle_file
    from gradio_client.exceptions import ValidationError

    url, _ = t2t_hub
    client = Client(url, verbose=False)
    try:
        with pytest.raises(ValidationError) as one:
            client.predict(handle_file(str(not_images["something.png"])), 0.5, "", api_name="/tag_image")
        assert f"- image: {SENTENCE}" in str(one.value)
        with pytest.raises(ValidationError) as batch:
            client.predict([handle_file(examples()["beach.png"]), handle_file(str(not_images["something.png"]))],
                           0.5, "", api_name="/tag_batch")
        assert f"- files: {SENTENCE}" in str(batch.value)
        answer = client.predict(handle_file(examples()["beach.png"]), 0.5, "", api_name="/tag_image")
    finally:
        client.close()
    assert [r["name"] for r in answer["results"]] == ["beach.png"] and answer["results"][0]["caption"]


def test_a_hostile_visitor_gets_sentences_and_the_hub_keeps_serving(t2t_hub, not_images, tmp_path):
    """Files dressed as images, sent many at once: each refused with our sentence (no library's words, no server
    path), nothing loaded for them; then an honest visitor's image is tagged, and the page still loads."""
    import urllib.request

    from gradio_client import Client, handle_file
    from gradio_client.exceptions import ValidationError

    url, pool = t2t_hub
    hostile = dict(not_images)
    for name, data in {"empty.png": b"", "noise.png": bytes(range(256)) * 4096,
                       "bomb.png": png_header_only(40_000, 40_000),
                       "inside.png": b"PK\x03\x04" + b"\x00" * 64}.items():
        hostile[name] = tmp_path / name
        hostile[name].write_bytes(data)
    client = Client(url, verbose=False)
    try:
        jobs = {name: client.submit(handle_file(str(path)), 0.5, "", api_name="/tag_image")
                for name, path in hostile.items()}
        sentences = {}
        for name, job in jobs.items():
            with pytest.raises(ValidationError) as refused:
                job.result(timeout=120)
            sentences[name] = str(refused.value)
        with ThreadPoolExecutor(4) as threads:  # and the batch endpoint, from several threads at once
            batches = list(threads.map(lambda path: _refusal(client, [handle_file(examples()["car.png"]),
                                                                      handle_file(str(path))]), hostile.values()))
        answer = client.predict(handle_file(examples()["beach.png"]), 0.5, "sky", api_name="/tag_image")
    finally:
        client.close()
    for name in not_images:
        assert not_an_image(name) in sentences[name]
    assert "empty.png is an empty file" in sentences["empty.png"] and "too large" in sentences["bomb.png"]
    for text in [*sentences.values(), *batches]:
        assert text.startswith("1 parameter(s) failed validation") and not any(w in text for w in LIBRARY_WORDS)
    assert all(name in text for name, text in zip(hostile, batches, strict=True))
    assert answer["results"][0]["name"] == "beach.png" and answer["results"][0]["user_tags"] == ["sky"]
    with urllib.request.urlopen(f"{url}/tag2text", timeout=30) as page:
        assert page.status == 200


def _refusal(client, files) -> str:
    from gradio_client.exceptions import ValidationError

    try:
        client.predict(files, 0.5, "", api_name="/tag_batch")
    except ValidationError as error:
        return str(error)
    raise AssertionError("a batch holding a file that is not an image was tagged")


def test_an_mcp_agent_gets_the_same_sentence_and_its_next_call_works(t2t_hub):
    from tests.mcp.conftest import run_async

    url, _ = t2t_hub

    async def calls():
        from mcp import ClientSession
        from mcp.client.streamable_http import streamablehttp_client

        hello = "data:image/png;base64," + base64.b64encode(b"hello").decode()
        with open(examples()["beach.png"], "rb") as fh:
            beach = "data:image/png;base64," + base64.b64encode(fh.read()).decode()
        async with streamablehttp_client(f"{url}/gradio_api/mcp/") as (read, write, _), \
                ClientSession(read, write) as session:
            await session.initialize()
            refused = await session.call_tool("tag_image", {"image": hello})
            honest = await session.call_tool("tag_image", {"image": beach, "threshold": 0.5})
        return refused, honest

    refused, honest = run_async(calls())
    assert refused.isError
    text = refused.content[0].text
    assert re.search(r"- image: [^/\s]+\.png is not an image Tag2Text can read; upload a JPEG, PNG or WebP file\.",
                     text), text
    assert not any(w in text for w in LIBRARY_WORDS), text
    assert not honest.isError, honest.content[0].text
    assert len(json.loads(honest.content[0].text)["results"]) == 1
