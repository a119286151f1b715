"""Helpers shared by the benchmark scripts."""

from __future__ import annotations

import socket
import statistics
import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], repeats: int, warmup: bool = False) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs (after one uncounted run if ``warmup``)."""
    if warmup:
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def free_port() -> int:
    """A free TCP port on loopback (benchmarks serve only on this machine)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
