"""A tiny 3D-MoLM snapshot in the official layout, built once per session and loaded through the real loader."""

from __future__ import annotations

import pytest
import torch

from apps.molm3d.pipeline import MoLM3DPipeline
from apps.molm3d.tiny import build_tiny_snapshot


@pytest.fixture(autouse=True, scope="package")
def one_torch_thread():
    """Tiny models gain nothing from threads, and on a shared 2-core machine two threads can be much slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_snapshot(tmp_path_factory):
    return build_tiny_snapshot(tmp_path_factory.mktemp("molm3d-tiny"))


@pytest.fixture(scope="session")
def tiny_pipe(tiny_snapshot):
    return MoLM3DPipeline.from_pretrained(tiny_snapshot, device="cpu", dtype=torch.float32)
