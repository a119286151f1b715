"""The Gradio page: builds without weights, runs the real pipeline on tiny weights, and serves the named API."""

from __future__ import annotations

import csv
import json
import urllib.request
import zipfile

import gradio as gr
import pytest

from apps.tag2text import DEMO, actions
from apps.tag2text.actions import example_images, tag_chips
from apps.tag2text.page import build
from apps.tag2text.pipeline import Tag
from shared.context import DemoContext
from shared.errors import WeightsUnavailable
from shared.pool import ModelPool


@pytest.fixture
def no_weights(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "no-checkpoints"))
    return DemoContext(DEMO, pool=ModelPool(budget_bytes=10**9))


def run_batch(ctx, files, threshold, user_tags, folder):
    """What the page's batch button does: the run, then the table, the CSV/JSON downloads and the note."""
    output = actions.tag_batch(ctx, files, threshold, user_tags)
    folder.mkdir(parents=True)
    exports = actions.write_exports(output, folder)
    return actions.batch_table(output), [str(p) for p in exports], actions.batch_note(output)


def test_page_builds_without_weights_and_says_so(no_weights, answering_hub, monkeypatch):
    demo = build(no_weights)
    assert isinstance(demo, gr.Blocks)
    config = json.dumps(demo.get_config_file(), default=str)
    assert "are not on this server" in config and "4.48 GB" in config
    assert "demohub download" not in config, "a visitor of a public hub reads no operator command"
    assert "Download tag2text" not in config, "visitors get no download button unless the operator allows downloads"
    operator = DemoContext(DEMO, pool=no_weights.pool, operator_here=True)
    assert "demohub download tag2text --weights tag2text-swin-14m" in json.dumps(build(operator).get_config_file(),
                                                                                  default=str)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # the Hub answers (a local server)...
    downloading = json.dumps(build(DemoContext(DEMO, pool=no_weights.pool, downloads=True)).get_config_file(),
                             default=str)  # ...and the operator lets visitors download
    assert "Download tag2text-swin-14m (4.48 GB)" in downloading and "(downloadable, 4.48 GB)" in downloading
    endpoints = demo.get_api_info()["named_endpoints"]
    assert [p["parameter_name"] for p in endpoints["/tag_image"]["parameters"]] == ["image", "threshold", "user_tags"]
    assert set(endpoints) == {"/tag_image", "/tag_batch"}
    _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200
    finally:
        demo.close()


def test_running_without_weights_is_a_clear_error(no_weights):
    with pytest.raises(WeightsUnavailable, match="^The tag2text weights 'tag2text-swin-14m' .* not on this server"):
        actions.tag_image(no_weights, example_images()[0], 0.68, "")


def test_four_drawn_examples_exist():
    assert len(example_images()) >= 4


def test_tag_image_through_the_page(tiny_ctx):
    chips, caption, echoed, scores = actions.image_view(
        actions.tag_image(tiny_ctx, example_images()[0], 0.5, "boat, sea"))
    assert caption and echoed == "boat, sea"
    assert chips.count('class="t2t-chip"') == len(scores) > 0
    first = next(iter(scores))
    assert first.split(" (#")[0] in chips


def test_tag_batch_writes_table_csv_and_json(tiny_ctx, tmp_path):
    archive = tmp_path / "pics.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(example_images()[1], "house.png")
        zf.writestr("notes.txt", "not a picture")
    table, files, note = run_batch(tiny_ctx, [example_images()[0], str(archive)], 0.68, "", tmp_path / "out")
    assert [row[0] for row in table] == ["beach.png", "house.png"]
    assert "notes.txt" in note
    csv_path, json_path = files
    with open(csv_path, encoding="utf-8") as fh:
        assert list(csv.reader(fh))[1:] == table
    data = json.loads(open(json_path, encoding="utf-8").read())
    assert [im["caption"] for im in data["results"]] == [row[2] for row in table]
    assert [", ".join(t["name"] for t in im["tags"]) for im in data["results"]] == [row[1] for row in table]
    assert all(0.0 <= t["score"] <= 1.0 for im in data["results"] for t in im["tags"])
    assert data["skipped"] == ["notes.txt (not an image file)"]


def test_tag_chips_escape_names():
    html_text = tag_chips([Tag(0, "<script>x</script>", 0.9)])
    assert "<script>" not in html_text and "&lt;script&gt;" in html_text
    assert "0.90" in html_text
    assert "No tag passed" in tag_chips([])


def test_named_api_over_http(tiny_ctx):
    from gradio_client import Client, handle_file

    demo = build(tiny_ctx)
    _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        client = Client(url, verbose=False)
        answer = client.predict(handle_file(example_images()[2]), 0.5, "red car", api_name="/tag_image")
        result = answer["results"][0]
        assert result["caption"] and result["user_tags"] == ["red car"] and answer["threshold"] == 0.5
        assert result["name"] == "fruit.png" and all(set(t) == {"index", "name", "score"} for t in result["tags"])
        with pytest.raises(Exception, match="1,000 characters"):  # our UserInputError sentence reaches the client
            client.predict(handle_file(example_images()[2]), 0.5, "x," * 600, api_name="/tag_image")
        # the server keeps serving after a bad request
        assert client.predict(handle_file(example_images()[2]), 0.5, "", api_name="/tag_image")["results"][0]["caption"]
        batch = client.predict([handle_file(p) for p in example_images()[:2]], 0.5, "", api_name="/tag_batch")
        assert [r["name"] for r in batch["results"]] == ["beach.png", "car.png"] and batch["skipped"] == []
    finally:
        demo.close()


def test_tag_batch_gives_each_image_its_own_caption_and_files_hold_exactly_the_rows(tiny_ctx, tmp_path, two_images):
    """Upstream captions every image of a batch with image 0's caption; through the page each row must be the image's
    own single-image result, in the order given, and the CSV/JSON downloads hold exactly the table's rows."""
    paths = []
    for name, image in zip(("noise.png", "red.png"), two_images, strict=True):
        image.save(tmp_path / name)
        paths.append(str(tmp_path / name))
    singles = [actions.image_view(actions.tag_image(tiny_ctx, path, 0.5, "")) for path in paths]
    single_captions = [caption for _, caption, _, _ in singles]
    single_tags = [", ".join(key.split(" (#")[0] for key in scores) for *_, scores in singles]
    assert single_captions[0] != single_captions[1]  # the two pictures really get different captions

    table, files, note = run_batch(tiny_ctx, paths, 0.5, "", tmp_path / "out")
    assert note == "2 image(s) processed."
    assert table == [["noise.png", single_tags[0], single_captions[0]], ["red.png", single_tags[1], single_captions[1]]]
    reversed_table, _, _ = run_batch(tiny_ctx, paths[::-1], 0.5, "", tmp_path / "reversed")
    assert reversed_table == table[::-1]  # each caption follows its image, not its position

    csv_path, json_path = files
    assert (csv_path.endswith("tag2text.csv"), json_path.endswith("tag2text.json")) == (True, True)
    with open(csv_path, newline="", encoding="utf-8") as fh:
        assert list(csv.reader(fh)) == [["file", "tags", "caption"], *table]
    data = json.loads(open(json_path, encoding="utf-8").read())
    assert list(data) == ["results", "threshold", "skipped"] and len(data["results"]) == len(table)
    assert [[im["name"], ", ".join(t["name"] for t in im["tags"]), im["caption"]] for im in data["results"]] == table
    assert data["threshold"] == 0.5 and all(im["user_tags"] == [] for im in data["results"])


def test_a_failed_download_redraws_the_dropdown_banner_and_button(no_weights, answering_hub, monkeypatch):
    """The Hub answers but the download fails (it holds nothing): after the Download event, the page's redraw says
    "not on this server" in the dropdown and the banner, and the button is gone (no "downloadable" left)."""
    from shared import weights

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(weights._downloads, "failures", {})
    ctx = DemoContext(DEMO, pool=no_weights.pool, downloads=True)
    blocks = build(ctx)
    events = {f.name: f for f in blocks.fns.values()}
    name = DEMO.weight_sets[0].name
    assert ("tag2text-swin-14m (downloadable, 4.48 GB)", name) in ctx.weight_choices()
    with pytest.raises(WeightsUnavailable, match="could not be reached or refused"):
        events["download"].fn(name)
    labels, banner, button = events["redraw"].fn(name)
    assert labels["choices"] == [("tag2text-swin-14m (not on this server)", name)]
    assert "are not on this server" in banner and "not downloaded yet" not in banner
    assert button == {"__type__": "update", "visible": False}
