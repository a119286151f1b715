"""A tiny 3D-MoLM snapshot in the official layout, built once per session and loaded through the real loader."""

from __future__ import annotations

import pytest
import torch

from apps.molm3d.pipeline import MoLM3DPipeline
from tests.fixtures.tiny_molm3d import build_tiny_snapshot


@pytest.fixture(scope="session")
def tiny_snapshot(tmp_path_factory):
    return build_tiny_snapshot(tmp_path_factory.mktemp("molm3d-tiny"))


@pytest.fixture(autouse=True)
def own_conversion_cache(tmp_path, monkeypatch):
    """Each test quantises (and caches) into a cache of its own: a quantised model another test cached is not read."""
    monkeypatch.setenv("DEMOHUB_CONVERTED_CACHE", str(tmp_path / "converted"))


@pytest.fixture(scope="session")
def tiny_pipe(tiny_snapshot):
    return MoLM3DPipeline.from_pretrained(tiny_snapshot, device="cpu", dtype=torch.float32)


@pytest.fixture
def tiny_as_bundled(tiny_snapshot, tmp_path, monkeypatch):
    """The tiny snapshot served as the demo's weights through DEMOHUB_CHECKPOINTS/molm3d/generalist, on CPU fp32."""
    bundled = tmp_path / "checkpoints" / "molm3d" / "generalist"
    bundled.parent.mkdir(parents=True)
    bundled.symlink_to(tiny_snapshot, target_is_directory=True)
    monkeypatch.setenv("DEMOHUB_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("DEMOHUB_DEVICE", "cpu")
    monkeypatch.setenv("DEMOHUB_DTYPE", "float32")
    return bundled
