"""A private hub on 127.0.0.1 (downloads "auto" -> on) against the local Hub server: a real download through
huggingface_hub, the free-disk check, one download at a time, a failure remembered, and other demos serving
meanwhile (downloads hold neither the load lock nor the device)."""

from __future__ import annotations

import re
import threading
import time

import pytest
import requests

from shared import weights
from tests.conftest import free_port
from tests.security import raw
from tests.security.conftest import PRAX_OFFICIAL, assert_clean, honest_request_works

SPEC = [{"string": "ab1", "label": "+"}, {"string": "cd2", "label": "+"}, {"string": "x", "label": "-"}]
LITERAL_OFFICIAL = "pragmatic-programs/listener-suffix-idx-300k"


@pytest.fixture(scope="module")
def local_hub(tiny_root, hub_server, tmp_path_factory):
    from apps import hub
    from apps.settings import ServeSettings
    from shared.pool import ModelPool

    mp = pytest.MonkeyPatch()
    hub_server.patch_client(mp)
    cache = tmp_path_factory.mktemp("local-hub-cache")
    mp.setenv("HF_HUB_CACHE", str(cache))
    mp.setenv("DEMOHUB_CHECKPOINTS", str(tiny_root))
    mp.setenv("DEMOHUB_CONVERTED_CACHE", str(tmp_path_factory.mktemp("converted")))
    mp.setenv("DEMOHUB_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    mp.setenv("GRADIO_TEMP_DIR", str(tmp_path_factory.mktemp("gradio")))
    settings = ServeSettings(port=free_port())  # 127.0.0.1, downloads "auto"
    assert settings.downloads_allowed
    blocks, (_, url, _) = hub.launch(settings, prevent_thread_lock=True, pool=ModelPool(budget_bytes=2 * 10**9))
    yield url.rstrip("/"), cache
    blocks.close()
    mp.undo()


@pytest.fixture(autouse=True)
def fresh_rules(hub_server):
    hub_server.reset_faults()
    weights._downloads.failures.clear()
    yield
    hub_server.reset_faults()


def gets(hub_server, repo_id: str) -> list[str]:
    return hub_server.downloads(repo_id)


def test_a_visitor_download_fetches_exactly_the_allowed_files_then_runs(local_hub, hub_server):
    url, cache = local_hub
    answer = raw.call(url, "synthesize", [SPEC, "pragmatic-ft-listener", 3])
    assert answer.ok, answer.message
    assert answer.data[0]["weights"] == "pragmatic-ft-listener" and answer.data[0]["n_samples"] > 0
    assert sorted(gets(hub_server, PRAX_OFFICIAL)) == ["config.json", "pytorch_model.bin"]  # not README.md
    snapshot = next(cache.glob("models--pragmatic-programs--pragmatic-ft-listener/snapshots/*"))
    assert snapshot.name == hub_server.repo_sha(PRAX_OFFICIAL), "the commit that was sized is the one downloaded"
    assert sorted(p.name for p in snapshot.iterdir()) == ["config.json", "pytorch_model.bin"]


def test_not_enough_disk_is_refused_before_any_byte(local_hub, hub_server):
    url, cache = local_hub
    hub_server.report_size(LITERAL_OFFICIAL, "pytorch_model.bin", 10**15, head=True)  # a 1 PB file
    answer = raw.call(url, "synthesize", [SPEC, "listener-suffix-idx-300k", 3])
    assert not answer.ok
    sentence = re.sub(r" \(error id \w+\)$", "", answer.message)
    match = re.fullmatch(
        r"Not enough free disk for the prax weights 'listener-suffix-idx-300k': the download is 1000 TB, so it "
        r"needs 1100 TB free \(size \+ 10 % \+ 1 GB\), and the disk has ([\d.]+ [KMGT]?B)\. The operator can free "
        r"disk space or point HF_HUB_CACHE at a larger disk\.", sentence)
    assert match, sentence
    assert_clean(answer.message, cache)
    assert gets(hub_server, LITERAL_OFFICIAL) == [], "refused before downloading anything"
    assert not list(cache.glob("models--pragmatic-programs--listener-suffix-idx-300k/blobs/*"))
    honest_request_works(url)


def test_a_failed_download_is_remembered_for_ten_minutes(local_hub, hub_server):
    url, cache = local_hub
    hub_server.fail("listener-suffix-idx-300k", status=500, times=None)
    first = raw.call(url, "synthesize", [SPEC, "listener-suffix-idx-300k", 3])
    assert not first.ok and "could not be reached or refused the request" in first.message
    assert_clean(first.message, cache)
    seen = len(hub_server.requests)
    second = raw.call(url, "synthesize", [SPEC, "listener-suffix-idx-300k", 3])
    assert not second.ok and second.message.startswith(
        "The prax weights 'listener-suffix-idx-300k' (1.20 GB) are not on this server: their download failed, and "
        "this server tries again in 10 minute(s)."), second.message  # the sentence the page's banner now shows
    assert len(hub_server.requests) == seen, "the remembered failure does not ask the Hub again"
    honest_request_works(url)


def test_one_download_at_a_time_and_other_demos_keep_serving(local_hub, hub_server):
    url, cache = local_hub
    hub_server.add_repo("pragmatic-programs/human-data-ft-listener", hub_server.repo_files(PRAX_OFFICIAL))
    gate = hub_server.hold("human-data-ft-listener/resolve", method="GET")  # the download runs until released
    slow: list[raw.Answer] = []
    downloading = threading.Thread(
        target=lambda: slow.append(raw.call(url, "synthesize", [SPEC, "human-data-ft-listener", 3])))
    downloading.start()
    deadline = time.monotonic() + 30
    while not any("human-data-ft-listener/resolve" in path and method == "GET"
                  for method, path in hub_server.requests):
        assert time.monotonic() < deadline, "the download never started"
        time.sleep(0.1)
    layout = '{"camera": "front", "bbox": [["car", 0.1, 0.4, 0.3, 0.6]]}'
    other = raw.call(url, "generate", [layout, "nuimages-256x256", 0, 2, 5.0, "default"])
    assert other.ok, f"GeoDiffusion waited for PraX's download: {other.message}"
    second = raw.call(url, "generate", [layout, "nuimages-512x512", 0, 2, 5.0, "default"])
    assert second.message.startswith(
        "Another download is running on this server, so the geodiffusion weights 'nuimages-512x512' (4.91 GB) "
        "cannot start now; try again in a few minutes.")
    assert downloading.is_alive(), "the download should still be running"
    gate.set()
    downloading.join(timeout=120)
    assert slow and slow[0].ok, slow[0].message if slow else "no answer"


def test_download_progress_reaches_the_page(local_hub, hub_server):
    """A GeoDiffusion checkpoint downloaded for a visitor: the page's progress bar hears the bytes."""
    url, _ = local_hub
    config = requests.get(f"{url}/config", timeout=30).json()
    hub_server.delay("geodiffusion-coco-stuff-256x256/resolve", 0.3, method="GET", times=None)
    session, seen = raw.session(), []
    status, event_id = raw.join(url, raw.fn_index(config, "generate_on_page"),  # the page's Generate button
                                ['{"bbox": [["giraffe", 0.1, 0.1, 0.4, 0.9]]}', "coco-stuff-256x256", 0, 2, 4.0,
                                 1, None, "default"], session)
    assert status == 200
    answer = raw.results(url, session, 1, seen=seen)[event_id]
    assert answer.ok, answer.message
    steps = [p for m in seen if m.get("msg") == "progress" for p in m.get("progress_data") or []]
    downloads = [p for p in steps if p.get("desc") == "Downloading weights"]
    assert downloads and all(p["unit"] == "bytes" and 0 <= p["index"] <= p["length"] for p in downloads)
    assert max(p["length"] for p in downloads) > 100_000, "the total is the checkpoint's size in bytes"
    assert any(p.get("desc") == "Denoising" for p in steps), "then the model ran"
