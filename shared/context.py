"""What a page gets: its demo record, the shared pool, whether it may download, and one way to run a pipeline."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from shared import weights
from shared.errors import WeightsUnavailable
from shared.pipeline import Pipeline
from shared.pool import ModelPool, default_pool
from shared.registry import Demo, WeightSet

# One load, or one import of model code, at a time in the process: transformers' lazy imports are not thread-safe
# (two threads importing from it at once can fail with ImportError: a cold hub's warm-up importing every pipeline
# module while the first visitor's model loaded did, "cannot import name 'LlamaForCausalLM'"), and loading one model
# after another bounds the memory peak.
_LOAD_LOCK = threading.Lock()


def import_pipeline_class(demo: Demo) -> type:
    """The demo's pipeline class, its module (torch, transformers, diffusers) imported under the load lock."""
    with _LOAD_LOCK:
        return demo.pipeline_class()


def load_pipeline(demo: Demo, ws: WeightSet, folder: Path | None = None) -> Pipeline:
    """``Pipeline.from_pretrained(folder, device=..., dtype=...)`` (and ``quantization=`` where the demo takes
    ``DEMOHUB_QUANTIZE`` and runs on a CPU); without ``folder`` the weights are resolved first,
    downloading if needed (operator commands: eval, benchmarks). Downloads never hold the load lock."""
    from shared.device import pick_device, pick_dtype, quantize_setting

    folder = folder or weights.resolve(demo.id, ws, allow_download=True)
    with _LOAD_LOCK:
        device = pick_device()
        dtype = pick_dtype(device, demo.cpu_dtype, demo.gpu_dtype)
        options = {}
        if demo.quantizes and device == "cpu" and (mode := quantize_setting()) != "none":
            options["quantization"] = mode  # DEMOHUB_QUANTIZE: a GPU keeps its dtype
        return demo.pipeline_class().from_pretrained(folder, device=device, dtype=dtype, **options)


@dataclass(eq=False)  # one context is one demo's serving state: compared and hashed by identity
class DemoContext:
    demo: Demo
    pool: ModelPool = field(default_factory=default_pool)
    downloads: bool = False  # may a request download missing weights? The operator decides (apps/settings.py).
    operator_here: bool = False  # only this machine reaches the hub: its visitor is the operator, who may read commands
    concurrency: int = 1  # model calls of this demo that may run at once (its own queue group)
    public_url: str | None = None  # where the world reaches the hub (embed snippets); None: the visitor's address

    def pipeline(self, weights_name: str | None = None, on_download: weights.Progress | None = None) -> Pipeline:
        """The loaded pipeline for a weight set, from the pool (loaded at most once per process).

        Order: a pool hit; else the weights are found on disk (or downloaded, if this context may) outside every lock;
        only then does the pool make room and load, so a request that fails on missing weights unloads nothing.
        """
        ws = self.demo.weight_set(weights_name or self.default_weights())
        key = (self.demo.id, ws.name)
        found = self.pool.lookup(key)
        if found is not None:
            return found
        if self.weight_state(ws) is weights.WeightState.UNAVAILABLE:  # the sentence the page's banner shows
            raise WeightsUnavailable(self.weights_message(ws.name))
        folder = weights.resolve(self.demo.id, ws, allow_download=self.downloads, progress=on_download)
        return self.pool.get(key, lambda: load_pipeline(self.demo, ws, folder),
                             size_hint=weights.folder_bytes(folder, ws))

    @contextmanager
    def compute(self, weights_name: str | None = None,
                on_download: weights.Progress | None = None) -> Iterator[Pipeline]:
        """``with ctx.compute(name) as pipe: pipe(...)``: load (or download, reporting bytes to ``on_download``)
        first, then hold the device only for the model call, so one demo's load or download never blocks another
        demo's compute."""
        from shared.device import device_slot

        pipe = self.pipeline(weights_name, on_download)
        if not self.pool.computes_here:  # a RayPool: each replica holds its own device
            yield pipe
            return
        with device_slot():
            yield pipe

    def download(self, weights_name: str | None = None, on_download: weights.Progress | None = None) -> Path:
        """Fetch a weight set now (a page's Download button); refused unless this context may download."""
        ws = self.demo.weight_set(weights_name or self.default_weights())
        return weights.resolve(self.demo.id, ws, allow_download=self.downloads, progress=on_download)

    def weight_state(self, ws: WeightSet) -> weights.WeightState:
        """The state a visitor sees: "downloadable" only where this context may download (and the Hub answers);
        a context that may not download never contacts the Hub."""
        return weights.state(self.demo.id, ws, ask_hub=self.downloads)

    def weight_states(self) -> dict[str, weights.WeightState]:
        return {ws.name: self.weight_state(ws) for ws in self.demo.weight_sets}

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
        st = self.weight_state(ws)
        return None if st.here else (ws, st)

    def weights_message(self, name: str | None = None, works_without: str = "") -> str:
        """The one sentence a page shows when the chosen weights are not here, from their state (what still works;
        for the operator, why and the command that fetches them); "" when they are. Gradio shows it as a banner
        (apps/ui.py), Streamlit as a warning, and a model call that needs them raises it."""
        missing = self.missing_weights(name)
        if missing is None:
            return ""
        ws, st = missing
        what = f"The {self.demo.id} weights '{ws.name}' ({ws.size_text})"
        rest = f" {works_without}" if works_without else ""
        if st is weights.WeightState.DOWNLOADABLE:
            return f"{what} are not downloaded yet; they download when the demo first runs.{rest}"
        retry = weights.retry_minutes(self.demo.id, ws) if self.downloads else None
        if retry is not None:
            log = " The server log has the error." if self.operator_here else ""
            return (f"{what} are not on this server: their download failed, and this server tries again in {retry} "
                    f"minute(s).{rest}{log}")
        return f"{what} are not on this server.{rest}{self._operator_hint(ws)}"

    def _operator_hint(self, ws: WeightSet) -> str:
        """Why the weights cannot be had and how to fetch them: only for the operator (commands mean nothing to a
        visitor of a public hub, and the reasons name the server's setup)."""
        if not self.operator_here:
            return ""
        if not ws.repo_id:
            return f" Set DEMOHUB_CHECKPOINTS to a folder holding {self.demo.id}/{ws.name}/."
        why = weights.hub_problem()
        why = (f" This machine cannot reach the Hugging Face Hub: {why}." if why else
               " Downloads from the page are off on this hub." if not self.downloads else "")
        return f"{why} Fetch them with `{weights.download_command(self.demo.id, ws)}` where the Hub is reachable."

    def weight_label(self, ws: WeightSet) -> str:
        """The weight set's state in a few words: loaded, on disk, downloadable (size) or not on this server."""
        if (self.demo.id, ws.name) in self.pool:
            return "loaded"
        st = self.weight_state(ws)
        if st.here:
            return "on disk"
        if st is weights.WeightState.DOWNLOADABLE:
            return f"downloadable, {ws.size_text}"
        return "not on this server"

    def weight_choices(self) -> list[tuple[str, str]]:
        """(label, value) pairs for a weights selector: each set's name and ``weight_label``."""
        return [(f"{ws.name} ({self.weight_label(ws)})", ws.name) for ws in self.demo.weight_sets]
