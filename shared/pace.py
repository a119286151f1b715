"""How long a unit of work takes on this server (a sampled program, an image, a denoising step), measured on its
recent runs, so a page can say how long a long run will take before it starts.

Per key (a weight set): a moving average of seconds per unit over the model calls themselves, loading excluded. Until
a key has run once there is no estimate (``None``): a page says nothing rather than a number it has not measured.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Pace:
    def __init__(self, weight_of_latest: float = 0.5):
        self.weight_of_latest = weight_of_latest
        self._seconds_per_unit: dict[str, float] = {}
        self._lock = threading.Lock()

    def record(self, key: str, seconds: float, units: int) -> None:
        if units <= 0 or seconds < 0:
            return
        latest = seconds / units
        with self._lock:
            before = self._seconds_per_unit.get(key)
            self._seconds_per_unit[key] = latest if before is None else (
                self.weight_of_latest * latest + (1 - self.weight_of_latest) * before)

    @contextmanager
    def timing(self, key: str, units: int) -> Iterator[None]:
        """Time the ``with`` body as ``units`` units of ``key``'s work (not recorded if it raises)."""
        start = time.perf_counter()
        yield
        self.record(key, time.perf_counter() - start, units)

    def estimate(self, key: str, units: int) -> float | None:
        """Seconds ``units`` units of ``key``'s work should take here; None before ``key`` has run once."""
        with self._lock:
            per_unit = self._seconds_per_unit.get(key)
        return None if per_unit is None else per_unit * units


def duration_text(seconds: float) -> str:
    """"about 40 s", "about 3 min": rounded, as a person reads an estimate."""
    if seconds < 90:
        return f"about {max(1, round(seconds / 5) * 5 if seconds >= 10 else round(seconds))} s"
    return f"about {round(seconds / 60)} min"
