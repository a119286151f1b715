"""A tiny 3D-MoLM snapshot in the official layout, built once per session and loaded through the real loader."""

from __future__ import annotations

import pytest
import torch

from apps.molm3d.pipeline import MoLM3DPipeline
from apps.molm3d.tiny import build_tiny_snapshot


@pytest.fixture(scope="session")
def tiny_snapshot(tmp_path_factory):
    return build_tiny_snapshot(tmp_path_factory.mktemp("molm3d-tiny"))


@pytest.fixture(scope="session")
def tiny_pipe(tiny_snapshot):
    return MoLM3DPipeline.from_pretrained(tiny_snapshot, device="cpu", dtype=torch.float32)
