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
