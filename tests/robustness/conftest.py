"""One running hub whose demos load tiny checkpoints in the official layouts (bundled PraX weights as shipped);
``tiny_root`` lives in tests/conftest.py."""

from __future__ import annotations

import pytest

from tests.conftest import free_port

POOL_BUDGET = 2_000_000_000


@pytest.fixture(scope="session")
def robust_hub(tiny_root, tmp_path_factory):
    """(url, pool) of a hub launched through apps.hub.launch, offline, over the tiny checkpoints."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HUB_CACHE", str(tmp_path_factory.mktemp("empty-hf-cache")))
    mp.setenv("DEMOHUB_CHECKPOINTS", str(tiny_root))
    mp.setenv("GRADIO_TEMP_DIR", str(tmp_path_factory.mktemp("gradio-tmp")))
    from apps import hub
    from apps.settings import ServeSettings
    from shared.pool import ModelPool

    pool = ModelPool(budget_bytes=POOL_BUDGET)
    blocks, (_, url, _) = hub.launch(ServeSettings(port=free_port(), demo_concurrency=4), prevent_thread_lock=True,
                                     pool=pool)
    yield url.rstrip("/"), pool
    blocks.close()
    mp.undo()
