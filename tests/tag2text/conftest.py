"""Tiny Tag2Text checkpoints in the official file layout, built once per session (no network, no mocks)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from apps.tag2text.checkpoint import write_tiny_checkpoint
from apps.tag2text.pipeline import Tag2TextPipeline


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
