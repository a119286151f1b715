"""64 concurrent gradio_client requests (16 visitors with 4 each, the per-session limit) at PraX and Tag2Text on one
running hub: all answered correctly, none lost, each model loaded once, memory under the pool budget."""

from __future__ import annotations

import pytest
from gradio_client import Client, handle_file

from tests.robustness.cases import examples, make_files
from tests.robustness.conftest import POOL_BUDGET

PRAX_SPEC = examples(("ab1", "+"), ("cd2", "+"), ("x", "-"))


@pytest.mark.slow
def test_64_concurrent_requests(robust_hub, tmp_path):
    url, pool = robust_hub
    image = str(make_files(tmp_path)["ok.png"])
    pool.clear()
    before = pool.stats()
    clients = [Client(url, verbose=False, httpx_kwargs={"timeout": 300}) for _ in range(16)]
    jobs = [clients[i % 16].submit(handle_file(image), 0.0, f"tag{i}", api_name="/tag_image") if i % 2 else
            clients[i % 16].submit(PRAX_SPEC, "tiny-literal", 3, api_name="/synthesize")
            for i in range(64)]  # all in flight
    results = [job.result(timeout=600) for job in jobs]
    for client in clients:
        client.close()
    assert len(results) == 64 and all(r is not None for r in results), "no request lost"
    for i, result in enumerate(results):
        if i % 2:
            chips, caption, echoed, scores = result
            assert caption.strip() and echoed == f"tag{i}", "each request got its own answer"
        else:
            assert result, "PraX answered"
    stats = pool.stats()
    loaded = {key for key in stats.loaded}
    assert {"tag2text/tag2text-swin-14m", "prax/tiny-literal"} <= loaded
    assert stats.loads - before.loads == len(loaded), f"each model loaded once: {stats}"
    assert stats.used_bytes <= POOL_BUDGET
