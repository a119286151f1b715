"""ModelPool: lazy loading, one load per key under concurrency, LRU eviction under a memory budget."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import asdict, dataclass, field
from typing import Any

from shared.errors import ModelTooLarge
from shared.pipeline import Pipeline
from shared.registry import human_bytes


def estimate_bytes(obj: Any) -> int:
    """Bytes held by the tensors of ``obj``: an ``nn.Module``, or a ``Pipeline`` (its declared ``components``); shared
    storage is counted once. The one memory estimate of the hub."""
    if "torch" not in sys.modules:
        return 0
    import torch

    seen: set[int] = set()
    total = 0
    modules = [obj] if isinstance(obj, torch.nn.Module) else obj.modules() if isinstance(obj, Pipeline) else []
    for module in modules:
        for tensor in [*module.parameters(), *module.buffers()]:
            if tensor.device.type == "meta":
                continue
            storage = tensor.untyped_storage()
            if storage.data_ptr() not in seen:
                seen.add(storage.data_ptr())
                total += storage.nbytes()
    return total


def default_budget() -> int:
    """``DEMOHUB_POOL_BYTES``, else 90% of GPU memory on CUDA, else half the machine's RAM."""
    if os.environ.get("DEMOHUB_POOL_BYTES"):
        return int(float(os.environ["DEMOHUB_POOL_BYTES"]))
    if "torch" in sys.modules:
        import torch

        if torch.cuda.is_available():
            return int(torch.cuda.get_device_properties(0).total_memory * 0.9)
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 0.5)


@dataclass
class PoolStats:
    loaded: dict[str, int] = field(default_factory=dict)  # key -> bytes, least recently used first
    hits: int = 0
    misses: int = 0
    loads: int = 0
    evictions: int = 0
    budget_bytes: int = 0

    @property
    def used_bytes(self) -> int:
        return sum(self.loaded.values())

    def as_dict(self) -> dict:
        """JSON-ready (what `demohub stats` prints)."""
        return {**asdict(self), "used_bytes": self.used_bytes}


class ModelPool:
    computes_here = True  # models run in this process (a RayPool's run in Serve replicas)

    def __init__(self, budget_bytes: int | None = None):
        self.budget_bytes = default_budget() if budget_bytes is None else budget_bytes
        self._models: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._key_locks: dict[Hashable, threading.Lock] = {}
        self._lock = threading.Lock()
        self._hits = self._misses = self._loads = self._evictions = 0

    def lookup(self, key: Hashable) -> Any | None:
        """The loaded model for ``key`` (counted as a hit), or None without loading anything."""
        with self._lock:
            return self._hit(key)

    def get(self, key: Hashable, loader: Callable[[], Any], size_hint: int = 0) -> Any:
        """The model for ``key``, calling ``loader()`` only if no thread has loaded it yet.

        ``size_hint`` (bytes) makes room before the load; a hint above the whole budget is refused with
        ``ModelTooLarge`` and unloads nothing. Call this once the weights are on disk: eviction happens right before
        ``loader()`` runs, never for a request that fails earlier.
        """
        found = self.lookup(key)
        if found is not None:
            return found
        if size_hint > self.budget_bytes:
            raise ModelTooLarge(
                f"The model {_key_text(key)} needs about {human_bytes(size_hint)} of memory, more than this server's "
                f"model budget of {human_bytes(self.budget_bytes)}, so it was not loaded (the models already loaded "
                "stay). The operator can raise DEMOHUB_POOL_BYTES on a machine with more memory."
            )
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                found = self._hit(key)  # another thread may have loaded it while we waited
                if found is not None:
                    return found
                self._misses += 1
                self._evict_until(self.budget_bytes - size_hint)
            model = loader()
            size = estimate_bytes(model) or size_hint
            with self._lock:
                self._loads += 1
                self._models[key] = (model, size)
                self._evict_until(self.budget_bytes, keep=key)
            return model

    def evict(self, key: Hashable) -> bool:
        with self._lock:
            if key not in self._models:
                return False
            self._drop(key)
        release_memory()
        return True

    def clear(self) -> None:
        with self._lock:
            for key in list(self._models):
                self._drop(key)
        release_memory()

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._models

    def stats(self) -> PoolStats:
        with self._lock:
            return PoolStats(
                loaded={_key_text(k): size for k, (_, size) in self._models.items()},
                hits=self._hits, misses=self._misses, loads=self._loads, evictions=self._evictions,
                budget_bytes=self.budget_bytes,
            )

    def _hit(self, key: Hashable) -> Any | None:
        """The model for ``key`` as a hit, or None (caller holds ``_lock``)."""
        if key not in self._models:
            return None
        self._hits += 1
        self._models.move_to_end(key)
        return self._models[key][0]

    def _evict_until(self, limit: int, keep: Hashable | None = None) -> None:
        """Drop least recently used models until the total fits ``limit`` (caller holds ``_lock``)."""
        dropped = False
        while self._models and sum(s for _, s in self._models.values()) > limit:
            victim = next((k for k in self._models if k != keep), None)
            if victim is None:
                break
            self._drop(victim)
            dropped = True
        if dropped:
            release_memory()

    def _drop(self, key: Hashable) -> None:
        model, _ = self._models.pop(key)
        self._evictions += 1
        del model


def release_memory() -> None:
    """Give freed memory back to the system: Python's reference cycles collected, glibc's free heap pages returned
    (tensors under its 32 MB mmap threshold, e.g. a 7B model's int4 layers, are freed into the heap, which would
    otherwise stay resident while the next model fills other pages), CUDA's cached blocks emptied."""
    gc.collect()
    trim_heap()
    if "torch" in sys.modules:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def trim_heap() -> None:
    """Give glibc's free heap pages back to the system (``malloc_trim``; a fraction of a millisecond when little is
    free): what a finished request freed stops counting in the process's memory, and the next request's peak starts
    from the model's, not from the last one's leftovers."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _key_text(key: Hashable) -> str:
    return "/".join(map(str, key)) if isinstance(key, tuple) else str(key)


_default: ModelPool | None = None
_default_lock = threading.Lock()


def default_pool() -> ModelPool:
    """The process-wide pool every front end shares."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ModelPool()
        return _default
