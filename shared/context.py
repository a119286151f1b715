"""What a page gets: its demo record and the shared pool, and one way to load a pipeline through them."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from shared import weights
from shared.pool import ModelPool, default_pool
from shared.registry import Demo, WeightSet

# One load at a time in the process: transformers' lazy imports are not thread-safe (two pipelines importing from it
# at once can fail with ImportError), and loading one model after another bounds the memory peak.
_LOAD_LOCK = threading.Lock()


def load_pipeline(demo: Demo, ws: WeightSet) -> Any:
    """Resolve the weights, then ``Pipeline.from_pretrained(folder, device=..., dtype=...)``."""
    from shared.device import pick_device, pick_dtype

    with _LOAD_LOCK:
        folder = weights.resolve(demo.id, ws)
        device = pick_device()
        dtype = pick_dtype(device, demo.cpu_dtype, demo.gpu_dtype)
        return demo.pipeline_class().from_pretrained(folder, device=device, dtype=dtype)


@dataclass
class DemoContext:
    demo: Demo
    pool: ModelPool = field(default_factory=default_pool)

    def pipeline(self, weights_name: str | None = None) -> Any:
        """The loaded pipeline for a weight set, from the pool (loaded at most once per process)."""
        ws = self.demo.weight_set(weights_name or self.default_weights())
        # The registered size describes the official download; a local folder (bundled, or tiny test weights) may
        # be far smaller, so only official downloads make room in advance (the real size is measured after loading).
        hint = 0 if weights.local_folder(self.demo.id, ws) else ws.size_bytes
        return self.pool.get((self.demo.id, ws.name), lambda: load_pipeline(self.demo, ws), size_hint=hint)

    def weight_states(self) -> dict[str, weights.WeightState]:
        return {ws.name: weights.state(self.demo.id, ws) for ws in self.demo.weight_sets}

    def default_weights(self, prefer: tuple[str, ...] = ()) -> str:
        """The first weight set here without a download: from ``prefer`` first, then in the demo's order."""
        states = self.weight_states()
        for name in (*prefer, *states):
            if states.get(name) is not None and states[name].here:
                return name
        return self.demo.weight_sets[0].name

    def missing_weights(self, name: str | None = None) -> tuple[WeightSet, weights.WeightState] | None:
        """The weight set and its state when it needs a download (or cannot be had); None when it is here."""
        ws = self.demo.weight_set(name or self.default_weights())
        st = weights.state(self.demo.id, ws)
        return None if st.here else (ws, st)

    def weight_choices(self) -> list[tuple[str, str]]:
        """(label, value) pairs for a weights selector: name, state, and size where a download is needed."""
        choices = []
        for ws in self.demo.weight_sets:
            st = weights.state(self.demo.id, ws)
            if (self.demo.id, ws.name) in self.pool:
                label = "loaded"
            elif st in (weights.WeightState.DOWNLOADABLE, weights.WeightState.UNAVAILABLE):
                label = f"{st.value}, {ws.size_text}"
            else:
                label = st.value
            choices.append((f"{ws.name} ({label})", ws.name))
        return choices
