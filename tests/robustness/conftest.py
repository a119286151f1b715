"""One running hub whose demos load tiny checkpoints in the official layouts (bundled PraX weights as shipped);
``tiny_root`` lives in tests/conftest.py."""

from __future__ import annotations

import pytest

from tests.conftest import tiny_hub_running

POOL_BUDGET = 2_000_000_000


@pytest.fixture(scope="session")
def robust_hub(tiny_root, tmp_path_factory):
    """(url, pool) of a hub launched through apps.hub.launch, offline, over the tiny checkpoints."""
    # Its load tests' visitors all arrive from loopback, one address: the share of one client would hold them back.
    with tiny_hub_running(tiny_root, tmp_path_factory, POOL_BUDGET, demo_concurrency=4, client_jobs=64,
                          client_streams=256) as running:
        yield running
