"""Uploads a stranger can send the public hub: too big, too many, lying about their size, decompression bombs in a
zip, web addresses instead of files. Each is refused with a sentence, memory stays flat, and the hub keeps serving."""

from __future__ import annotations

import http.client
import io
import socket
import threading
import zipfile
from pathlib import Path

import pytest
import requests
from gradio_client import Client, handle_file
from PIL import Image

from apps.serving import UPLOAD_NO_SIZE, UPLOAD_TOO_BIG, URL_REFUSED
from tests.security import raw
from tests.security.conftest import assert_clean, honest_request_works

MB = 1_000_000


@pytest.fixture(scope="module")
def bomb_zip(tmp_path_factory) -> Path:
    """12 real PNGs of 7000×7000 (one colour, so each compresses to a few hundred KB), zipped."""
    folder = tmp_path_factory.mktemp("bomb")
    buffer = io.BytesIO()
    Image.new("RGB", (7000, 7000), (30, 120, 200)).save(buffer, "PNG", compress_level=9)
    path = folder / "photos.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(12):
            archive.writestr(f"photo_{i:02d}.png", buffer.getvalue())
    return path


@pytest.fixture(scope="module")
def small_png(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("small") / "ok.png"
    Image.radial_gradient("L").convert("RGB").resize((96, 96)).save(path)
    return path


def test_a_zip_of_huge_images_is_refused_before_decoding(public_hub, bomb_zip):
    assert bomb_zip.stat().st_size < 3 * MB
    files = raw.upload(public_hub.url, bomb_zip)
    public_hub.reset_peak_memory()
    rss_before = public_hub.status("VmRSS")
    answer = raw.call(public_hub.url, "tag_batch", [files, 0.68, ""])
    growth_mb = (public_hub.status("VmHWM") - rss_before) / 1000
    assert not answer.ok
    assert answer.message == ("These 12 images have 588 megapixels in all; at most 250 per request. Split them into "
                              "smaller batches or downscale them.")
    assert growth_mb < 300, f"peak RSS grew by {growth_mb:.0f} MB"
    honest_request_works(public_hub.url)


def test_more_images_than_a_batch_holds(public_hub, small_png, tmp_path):
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(65):
            archive.write(small_png, f"img_{i:02d}.png")
    answer = raw.call(public_hub.url, "tag_batch", [raw.upload(public_hub.url, path), 0.68, ""])
    assert not answer.ok and answer.message.startswith("At most 64 images per batch, and this upload holds 65")
    assert_clean(answer.message, public_hub.root)
    honest_request_works(public_hub.url)


def test_a_file_over_the_size_limit_is_not_stored(public_hub, tmp_path):
    big = tmp_path / "big.png"
    big.write_bytes(b"\x89PNG" + bytes(26 * MB))
    r = requests.post(f"{public_hub.url}/gradio_api/upload", files=[("files", ("big.png", big.read_bytes()))],
                      timeout=60)
    assert r.status_code == 413 and "25000000 bytes" in r.text
    assert not [p for p in public_hub.files_under("gradio") if p.stat().st_size > 20 * MB]
    honest_request_works(public_hub.url)


def test_an_upload_declaring_a_huge_size_is_refused_unread(public_hub):
    host, port = public_hub.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.putrequest("POST", "/gradio_api/upload")
    connection.putheader("Content-Type", "multipart/form-data; boundary=x")
    connection.putheader("Content-Length", str(300 * MB))
    connection.endheaders()  # no body is sent: the refusal must not wait for 300 MB
    response = connection.getresponse()
    assert response.status == 413
    assert response.read().decode() == UPLOAD_TOO_BIG.format(size="300 MB", limit="200 MB")
    connection.close()
    honest_request_works(public_hub.url)


def test_an_upload_without_a_declared_size_is_refused(public_hub):
    def chunks():
        yield b"--x\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.png\"\r\n\r\n"
        yield b"\0" * 1000
        yield b"\r\n--x--\r\n"

    r = requests.post(f"{public_hub.url}/gradio_api/upload", data=chunks(),
                      headers={"Content-Type": "multipart/form-data; boundary=x"}, timeout=30)
    assert r.status_code == 411 and r.text == UPLOAD_NO_SIZE
    honest_request_works(public_hub.url)


@pytest.fixture
def listener():
    """A local TCP listener that counts the connections it gets: a fetch of its address cannot go unseen (offline, a
    fetch of a remote address would just fail and leave no trace)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    accepted, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            accepted.append(connection)
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", accepted
    stop.set()
    thread.join(timeout=5)
    server.close()


@pytest.mark.parametrize("path", ["/cat.png", "/latest/meta-data/"])
def test_file_inputs_never_fetch_web_addresses(public_hub, public_config, listener, path):
    address, accepted = listener
    url = address + path
    session = raw.session()
    status, detail = raw.join(public_hub.url, raw.fn_index(public_config, "tag_image"),
                              [raw.file_data(url, url=url), 0.68, "", None], session)
    assert status == 422 and detail == URL_REFUSED.format(url=url)
    answer = raw.call(public_hub.url, "tag_batch", [[raw.file_data(url)], 0.68, ""])
    assert not answer.ok and answer.status == 422 and URL_REFUSED.format(url=url) in answer.message
    honest_request_works(public_hub.url)
    assert accepted == [], "the hub connected to the address a visitor named"
    assert not [p for p in public_hub.files_under("gradio") if "cat" in p.name or "meta-data" in p.name]


def test_gradio_client_gets_the_url_sentence(public_hub):
    client = Client(public_hub.url, verbose=False)
    with pytest.raises(ValueError) as info:  # gradio_client's ValidationError, not a timeout
        client.predict(handle_file("https://example.com/cat.png"), 0.68, "", api_name="/tag_image")
    client.close()
    assert "does not fetch files from web addresses" in str(info.value)


def test_outputs_live_in_gradios_cache(public_hub, public_config, small_png):
    """The batch tab's CSV/JSON downloads are written under Gradio's cache, nowhere else."""
    session = raw.session()
    files = raw.upload(public_hub.url, small_png, small_png)
    status, event_id = raw.join(public_hub.url, raw.fn_index(public_config, "tag_batch_for_page"),
                                [files, 0.68, "", None], session)
    assert status == 200, event_id
    answer = raw.results(public_hub.url, session, 1)[event_id]
    assert answer.ok, answer.message
    table, downloads, note, files_note = answer.data  # files_note: the batch's sentence under its input, none here
    assert len(table["data"]) == 2 and note == "2 image(s) processed." and files_note == ""
    assert [Path(f["path"]).name for f in downloads] == ["tag2text.csv", "tag2text.json"]
    outputs = [p for p in public_hub.files_under("gradio") if "demohub-outputs" in p.parts]
    assert {p.name for p in outputs} >= {"tag2text.csv", "tag2text.json"}
    assert public_hub.files_under("cwd") == []
