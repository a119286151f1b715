"""One running hub whose demos load tiny checkpoints in the official layouts (bundled PraX weights as shipped)."""

from __future__ import annotations

import pytest

from tests.conftest import free_port

POOL_BUDGET = 2_000_000_000


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory):
    from apps.molm3d.tiny import build_tiny_snapshot
    from apps.tag2text.checkpoint import write_tiny_checkpoint
    from tests.geodiffusion.tiny_checkpoint import build_tiny_checkpoint

    root = tmp_path_factory.mktemp("tiny-checkpoints")
    write_tiny_checkpoint(root / "tag2text" / "tag2text-swin-14m")
    build_tiny_snapshot(root / "molm3d" / "generalist")
    build_tiny_checkpoint(root / "geodiffusion" / "nuimages-256x256", dataset="nuimages")
    return root


@pytest.fixture(scope="session")
def robust_hub(tiny_root, tmp_path_factory):
    """(url, pool) of a hub launched through apps.hub.launch, offline, over the tiny checkpoints."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("empty-hf-cache")))
    mp.setenv("DEMOHUB_CHECKPOINTS", str(tiny_root))
    mp.setenv("DEMOHUB_GPU_CONCURRENCY", "4")
    mp.setenv("GRADIO_TEMP_DIR", str(tmp_path_factory.mktemp("gradio-tmp")))
    from apps import hub
    from shared.pool import ModelPool

    pool = ModelPool(budget_bytes=POOL_BUDGET)
    mp.setattr("shared.pool._default", pool)  # the pages' DemoContext and /pool_stats use this pool
    blocks, (_, url, _) = hub.launch(port=free_port(), prevent_thread_lock=True, pool=pool)
    yield url.rstrip("/"), pool
    blocks.close()
    mp.undo()
