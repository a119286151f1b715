"""shared.pool: one load per key under concurrency, LRU eviction under a byte budget, memory released."""

import gc
import threading
import time
import weakref

import pytest
import torch

from shared.pool import ModelPool, estimate_bytes


class Model(torch.nn.Module):
    def __init__(self, n_floats: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(n_floats))


def test_32_threads_load_once():
    pool = ModelPool(budget_bytes=10**9)
    calls = []

    def loader():
        calls.append(1)
        time.sleep(0.2)  # long enough that every thread arrives while the load is in flight
        return Model(10)

    results = []
    barrier = threading.Barrier(32)

    def worker():
        barrier.wait()
        results.append(pool.get("m", loader))

    threads = [threading.Thread(target=worker) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(results) == 32 and all(r is results[0] for r in results)
    stats = pool.stats()
    assert stats.loads == 1 and stats.misses == 1 and stats.hits == 31


def test_lru_eviction_frees_memory():
    one = estimate_bytes(Model(1000))
    assert one == 4000
    pool = ModelPool(budget_bytes=2 * one + 100)  # fits 2 of 3
    a = pool.get("a", lambda: Model(1000))
    ref_a = weakref.ref(a)
    pool.get("b", lambda: Model(1000))
    del a
    pool.get("c", lambda: Model(1000))
    gc.collect()
    assert ref_a() is None, "the evicted model must be released"
    stats = pool.stats()
    assert list(stats.loaded) == ["b", "c"]
    assert stats.evictions == 1
    assert stats.used_bytes <= pool.budget_bytes


def test_recently_used_survives():
    pool = ModelPool(budget_bytes=8100)
    pool.get("a", lambda: Model(1000))
    pool.get("b", lambda: Model(1000))
    pool.get("a", lambda: pytest.fail("a is cached"))  # touch a: b becomes least recently used
    pool.get("c", lambda: Model(1000))
    assert "a" in pool and "c" in pool and "b" not in pool


def test_size_hint_makes_room_before_loading():
    pool = ModelPool(budget_bytes=8100)
    pool.get("a", lambda: Model(1000))
    pool.get("b", lambda: Model(1000))
    seen_during_load = []
    pool.get("big", lambda: seen_during_load.append(pool.stats().used_bytes) or Model(1500), size_hint=6000)
    assert seen_during_load == [0]


def test_failed_load_is_not_cached_and_can_retry():
    pool = ModelPool(budget_bytes=10**6)
    with pytest.raises(RuntimeError):
        pool.get("x", lambda: (_ for _ in ()).throw(RuntimeError("broken")))
    assert pool.get("x", lambda: Model(1)) is not None
    assert pool.stats().loads == 1


def test_tied_weights_counted_once():
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10, bias=False))
    model[1].weight = model[0].weight
    assert estimate_bytes(model) == 10 * 4 * 4


def test_budget_from_env(monkeypatch):
    monkeypatch.setenv("DEMOHUB_POOL_BYTES", "12345")
    assert ModelPool().budget_bytes == 12345


def test_a_model_above_the_budget_is_refused_and_unloads_nothing():
    from shared.errors import ModelTooLarge

    pool = ModelPool(budget_bytes=1000)
    pool.get("small", lambda: Model(100))  # 400 bytes
    with pytest.raises(ModelTooLarge, match=r"needs about 14 GB of memory, more than this server's model budget"):
        pool.get("huge", lambda: pytest.fail("never loaded"), size_hint=14_000_000_000)
    stats = pool.stats()
    assert list(stats.loaded) == ["small"] and stats.evictions == 0 and stats.loads == 1


def test_room_is_made_only_as_needed_right_before_the_load():
    pool = ModelPool(budget_bytes=1000)
    pool.get("a", lambda: Model(100))  # 400 bytes
    pool.get("b", lambda: Model(100))  # 400 bytes: 800 in all
    seen = []
    pool.get("c", lambda: seen.append(sorted(pool.stats().loaded)) or Model(25), size_hint=100)
    assert seen == [["a", "b"]], "a 100-byte hint fits beside both, so nothing was evicted before the load"
    pool.get("d", lambda: seen.append(sorted(pool.stats().loaded)) or Model(100), size_hint=400)
    assert seen[-1] == ["b", "c"], "the least recently used model made room for the 400-byte hint"


def test_lookup_never_loads():
    pool = ModelPool(budget_bytes=1000)
    assert pool.lookup("m") is None and pool.stats().loads == 0
    model = pool.get("m", lambda: Model(10))
    assert pool.lookup("m") is model and pool.stats().hits == 1
