"""64 concurrent gradio_client requests (16 visitors with 4 each, the per-session limit) at PraX and Tag2Text on one
running hub: all answered correctly, none lost, each model loaded once, memory under the pool budget. Then the same
hub with a budget that holds one of the two models: each request evicts the other, and an evicted model reloads
with the same answer."""

from __future__ import annotations

import pytest
from gradio_client import Client, handle_file

from apps.prax.dsl import Example, consistent
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
    spec = [Example(e["string"], e["label"]) for e in PRAX_SPEC]
    for i, result in enumerate(results):
        if i % 2:
            answer = result["results"][0]
            assert answer["caption"].strip() and answer["user_tags"] == [f"tag{i}"], "each request got its own answer"
            assert answer["tags"] == results[1]["results"][0]["tags"], "the same image got other tags"
        else:  # ranked regexes from the page's 100 samples, each agreeing with every example
            assert (result["weights"], result["n_samples"]) == ("tiny-literal", 100) and result["candidates"], result
            assert all(consistent(c["program"], spec) for c in result["candidates"])
    stats = pool.stats()
    loaded = {key for key in stats.loaded}
    assert {"tag2text/tag2text-swin-14m", "prax/tiny-literal"} <= loaded
    assert stats.loads - before.loads == len(loaded), f"each model loaded once: {stats}"
    assert stats.used_bytes <= POOL_BUDGET


PRAX_KEY, TAG2TEXT_KEY = "prax/tiny-literal", "tag2text/tag2text-swin-14m"


def size_hint(demo_id: str, weights_name: str) -> int:
    """What the pool is told before loading (the weight files' bytes), as DemoContext.pipeline computes it."""
    from apps import get_demo
    from shared import weights

    ws = get_demo(demo_id).weight_set(weights_name)
    return weights.folder_bytes(weights.resolve(demo_id, ws, allow_download=False), ws)


def test_a_budget_for_one_model_evicts_the_other_and_reloads_it(robust_hub, tmp_path, monkeypatch):
    url, pool = robust_hub
    image = handle_file(str(make_files(tmp_path)["ok.png"]))
    client = Client(url, verbose=False, httpx_kwargs={"timeout": 300})
    try:
        pool.clear()
        client.predict(PRAX_SPEC, "tiny-literal", 3, api_name="/synthesize")
        client.predict(image, 0.0, "", api_name="/tag_image")
        sizes = pool.stats().loaded  # both fit the session's budget: their real sizes
        assert set(sizes) == {PRAX_KEY, TAG2TEXT_KEY}, sizes
        # the smallest budget that loads either one (its measured size and its size hint) but not both together
        budget = max(*sizes.values(), size_hint("prax", "tiny-literal"), size_hint("tag2text", "tag2text-swin-14m"))
        assert budget < sum(sizes.values()) <= POOL_BUDGET, (budget, sizes)
        monkeypatch.setattr(pool, "budget_bytes", budget)  # the running hub's pool; restored after the test
        pool.clear()
        start = pool.stats()

        first = client.predict(PRAX_SPEC, "tiny-literal", 3, api_name="/synthesize")
        after_prax = pool.stats()
        assert list(after_prax.loaded) == [PRAX_KEY] and after_prax.evictions == start.evictions
        assert first["candidates"], first  # the bundled literal listener finds regexes for this spec
        spec = [Example(e["string"], e["label"]) for e in PRAX_SPEC]
        assert all(consistent(c["program"], spec) for c in first["candidates"])

        caption = client.predict(image, 0.0, "", api_name="/tag_image")["results"][0]["caption"]
        after_tag2text = pool.stats()
        assert caption.strip()
        assert list(after_tag2text.loaded) == [TAG2TEXT_KEY], "loading Tag2Text evicted PraX"
        assert after_tag2text.evictions == after_prax.evictions + 1
        assert after_tag2text.used_bytes <= budget

        again = client.predict(PRAX_SPEC, "tiny-literal", 3, api_name="/synthesize")
        after_reload = pool.stats()
        assert list(after_reload.loaded) == [PRAX_KEY], "PraX came back and Tag2Text made room"
        assert after_reload.loads == after_tag2text.loads + 1 and after_reload.evictions == after_tag2text.evictions + 1
        assert again == first, "the reloaded listener gives the same answer (seed 0)"
    finally:
        client.close()
        pool.clear()
