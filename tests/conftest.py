"""Shared fixtures: a running hub on a free port, offline, with a private model pool."""

from __future__ import annotations

import atexit
import contextlib
import functools
import http.server
import importlib
import importlib.util
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# Hermetic: no test reads the user's real Hugging Face cache or leaves a hub's operator file in their home. Set at
# import, before huggingface_hub reads its constants; fixtures that need a specific cache set their own.
_SCRATCH = tempfile.mkdtemp(prefix="demohub-tests-")
atexit.register(shutil.rmtree, _SCRATCH, True)
os.environ["HF_HOME"] = os.path.join(_SCRATCH, "hf-home")
os.environ.pop("HF_HUB_CACHE", None)
os.environ["DEMOHUB_STATE_DIR"] = os.path.join(_SCRATCH, "state")
_WEIGHTS_LOCK = os.path.join(_SCRATCH, "state", "weights.lock")
os.environ["DEMOHUB_WEIGHTS_LOCK"] = _WEIGHTS_LOCK  # never the checkout's


@pytest.fixture(autouse=True)
def _fresh_hub_probe():
    """Each test asks the Hub (or the local server it points HF_ENDPOINT at) afresh."""
    from shared import weights

    weights.forget_hub_probe()


@pytest.fixture
def answering_hub(monkeypatch):
    """HF_ENDPOINT pointed at a local server that answers every request with 404 (the Hub "reachable", holding
    nothing); ``answering_hub.requests`` counts what reached it."""
    class Answer(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):
            server.requests += 1
            self.send_response(404)
            self.end_headers()

        do_GET = do_HEAD

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Answer)
    server.requests = 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    yield server
    server.shutdown()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_page(blocks):
    """``blocks`` queued and launched on a free local port for the ``with`` body; yields its URL."""
    blocks.queue()
    _, url, _ = blocks.launch(server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        yield url
    finally:
        blocks.close()


def page_events(demo, tmp_path, monkeypatch) -> list:
    """The Gradio events (BlockFunctions) of ``demo``'s page, built offline with no weights anywhere."""
    import importlib

    from shared.context import DemoContext
    from shared.pool import ModelPool

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "none"))
    blocks = importlib.import_module(demo.page_module).build(DemoContext(demo, ModelPool(budget_bytes=0)))
    return list(blocks.fns.values())


@contextlib.contextmanager
def tiny_hub_running(tiny_root, tmp_path_factory, budget_bytes: int, **settings):
    """A real hub (``apps.hub.launch``), offline, whose demos find the tiny checkpoints through DEMOHUB_CHECKPOINTS
    (PraX on its bundled weights); yields (url, pool)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("empty-hf-cache")))
    mp.setenv("DEMOHUB_CHECKPOINTS", str(tiny_root))
    mp.setenv("GRADIO_TEMP_DIR", str(tmp_path_factory.mktemp("gradio-tmp")))
    from apps import hub
    from apps.settings import ServeSettings
    from shared.pool import ModelPool

    pool = ModelPool(budget_bytes=budget_bytes)
    blocks, (_, url, _) = hub.launch(ServeSettings(port=free_port(), **settings), prevent_thread_lock=True,
                                     pool=pool)
    try:
        yield url.rstrip("/"), pool
    finally:
        blocks.close()
        mp.undo()


@pytest.fixture
def no_weights_touched(monkeypatch):
    """Any attempt to find, download or load a demo's weights fails the test (for ``check_inputs``, validators)."""
    import apps
    from shared import weights

    def refuse(*args, **kwargs):
        raise AssertionError("weights were looked for")

    monkeypatch.setattr(weights, "resolve", refuse)
    monkeypatch.setattr(weights, "download", refuse)
    for demo in apps.DEMOS:
        monkeypatch.setattr(demo.pipeline_class(), "from_pretrained", classmethod(refuse))


@pytest.fixture(autouse=True)
def nothing_pinned():
    """Each test starts with no weights pinned: a download in one test (which records its commit in the weights lock)
    must not pin the weights another test resolves."""
    Path(_WEIGHTS_LOCK).unlink(missing_ok=True)


@pytest.fixture(autouse=True, scope="session")
def one_torch_thread():
    """Tiny models gain nothing from threads, and on a shared 2-core machine two threads can run 10-30x slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def hub_url(tmp_path_factory):
    """Launch the real hub (``apps.hub.launch``) once for the session and yield its URL."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("hf-cache")))
    mp.setenv("GRADIO_TEMP_DIR", str(tmp_path_factory.mktemp("gradio-tmp")))
    from apps import hub
    from apps.settings import ServeSettings

    blocks, (_, url, _) = hub.launch(ServeSettings(port=free_port()), prevent_thread_lock=True)
    yield url.rstrip("/")
    blocks.close()
    mp.undo()


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory):
    """A ``DEMOHUB_CHECKPOINTS`` root with a tiny checkpoint of each demo's default weights in the official layout:
    ``tests/fixtures/tiny_<demo>.py``'s ``build_default(folder)`` makes it (Tag2Text, 3D-MoLM, GeoDiffusion's
    nuImages 256; PraX's hub runs on its bundled listeners). A new demo is found from its builder: no list here."""
    import apps
    from shared.context import import_pipeline_class

    root = tmp_path_factory.mktemp("tiny-checkpoints")
    for demo in apps.DEMOS:  # the model code first, under the load lock: a session hub's warm-up may import it now
        import_pipeline_class(demo)  # (transformers' and diffusers' lazy imports break when two threads run them)
    for demo in apps.DEMOS:
        module = f"tests.fixtures.tiny_{demo.id}"
        builder = getattr(importlib.import_module(module), "build_default", None) if importlib.util.find_spec(
            module) else None
        if builder is not None:
            builder(root / demo.id / demo.weight_sets[0].name)
    return root


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def paper_site(tmp_path):
    """A paper's project page on its own origin: ``put(html)`` serves the page, returning its URL."""
    site = tmp_path / "paper-site"
    site.mkdir()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", free_port()), functools.partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def put(body: str) -> str:
        (site / "index.html").write_text(f"<!doctype html><html><head><meta charset='utf-8'><link rel='icon' "
                                         f"href='data:,'></head><body style='margin:0 16px'><h1>Our paper</h1>"
                                         f"{body}<p id='after'>After the demo.</p></body></html>")
        return f"http://127.0.0.1:{server.server_address[1]}/index.html"

    yield put
    server.shutdown()


CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser():
    """One Debian Chromium for the whole session (Playwright's sync API allows one driver at a time)."""
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (`apt-get install -y chromium`); "
                    "scripts/test does.")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-background-networking",
                                                              "--disable-gpu", "--disable-component-update"])
        yield b
        b.close()
