"""Tiny Tag2Text checkpoints in the official file layout, built once per session (no network, no mocks)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from PIL import Image

from apps.tag2text import DEMO
from apps.tag2text.checkpoint import CHECKPOINT_NAME
from apps.tag2text.config import CONFIG_NAME
from apps.tag2text.pipeline import Tag2TextPipeline
from shared.context import DemoContext
from shared.pool import ModelPool
from tests.fixtures.tiny_tag2text import write_tiny_checkpoint


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tag2text-tiny")
    write_tiny_checkpoint(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_pipe(tiny_dir):
    return Tag2TextPipeline.from_pretrained(tiny_dir)


@pytest.fixture(scope="session")
def two_images():
    """Two clearly different pictures: random noise and a flat red field."""
    noise = Image.fromarray(np.random.default_rng(0).integers(0, 256, (80, 100, 3), dtype=np.uint8))
    red = Image.new("RGB", (90, 70), (200, 30, 30))
    return noise, red


@pytest.fixture
def tiny_ctx(tmp_path, monkeypatch, tiny_dir):
    """The tiny checkpoint as the registered weight set, found the way the hub finds it (DEMOHUB_CHECKPOINTS)."""
    folder = tmp_path / "ckpt" / DEMO.id / DEMO.weight_set().name
    folder.mkdir(parents=True)
    for name in (CHECKPOINT_NAME, CONFIG_NAME):
        shutil.copy(tiny_dir / name, folder / name)
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "ckpt"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    return DemoContext(DEMO, pool=ModelPool(budget_bytes=10**9))


@pytest.fixture(scope="session")
def t2t_hub(tiny_root, tmp_path_factory):
    """(url, pool) of the real hub (``apps.hub.launch``, MCP on), offline, over the tiny checkpoints of
    ``tiny_root`` (the same root as tests/robustness' hub, so the two never disagree on DEMOHUB_CHECKPOINTS): what a
    visitor, a gradio_client caller and an MCP agent all reach."""
    from tests.conftest import tiny_hub_running

    with tiny_hub_running(tiny_root, tmp_path_factory, budget_bytes=10**9) as running:
        yield running


@pytest.fixture
def weightless_hub(tmp_path, monkeypatch):
    """The URL of a hub (``apps.hub.launch``) with no weights anywhere, for this test alone (a session hub may find
    the tiny checkpoints through another fixture's DEMOHUB_CHECKPOINTS)."""
    from apps import hub
    from apps.settings import ServeSettings
    from tests.conftest import free_port

    for name, folder in (("HF_HUB_CACHE", "empty-cache"), ("DEMOHUB_CHECKPOINTS", "no-checkpoints"),
                         ("GRADIO_TEMP_DIR", "gradio")):
        monkeypatch.setenv(name, str(tmp_path / folder))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    blocks, (_, url, _) = hub.launch(ServeSettings(port=free_port()), prevent_thread_lock=True)
    yield url.rstrip("/")
    blocks.close()


@pytest.fixture(scope="session")
def not_images(tmp_path_factory):
    """Files a visitor picks by mistake, each named like an image: name -> path."""
    folder = tmp_path_factory.mktemp("not-images")
    files = {"something.png": b"hello", "page.png": b"<!doctype html><title>saved page</title>",
             "notes.jpg": b"%PDF-1.4\n" + bytes(range(256)) * 8}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return {name: folder / name for name in files}
